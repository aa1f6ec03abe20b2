// leaselog report: one job's lease timeline as a plotly figure, drawn from the report's columnar table
// (render/timeline_table.py). It follows render/timeline.py, lanes.py and markers.py step for step, and a
// test draws jobs both ways and compares the figures: change one, change the other.
// Every string of the table is log text: esc() before plotly sees it (plotly reads a subset of HTML).
var leaselogTimeline = (function () {
  "use strict";
  var T, C, L, SEV, RANK = {error: 0, warning: 1, info: 2};

  // ------------------------------------------------------------------ text
  function esc(v) {
    if (v === null || v === undefined) { return ""; }
    return String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function chars(s) { return Array.from(s); }  // code points, as Python counts them
  function grouped(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function pad(n, w) { var s = String(n); while (s.length < w) { s = "0" + s; } return s; }
  // Python's format(x, ".Nf"): exact decimal value, ties to even
  // (toFixed rounds the exact value too, but a tie up): only an exact tie, 5 then zeros, goes to even
  function fixed(x, f) {
    var exact = x.toFixed(f + 40);
    if (/^50*$/.test(exact.slice(exact.length - 40))) {
      var p = Math.pow(10, f), fl = Math.floor(x * p);
      return ((fl % 2 === 0 ? fl : fl + 1) / p).toFixed(f);
    }
    return x.toFixed(f);
  }
  function duration(ms) {  // durations.format_duration
    if (ms === null || ms === undefined || !isFinite(ms)) { return "?"; }
    var neg = ms < 0, out;
    ms = Math.abs(ms);
    if (ms < 1000 && fixed(ms, 0) !== "1000") {
      out = fixed(ms, 0) + "ms";
    } else if (ms < 60000 && fixed(ms / 1000, 1) !== "60.0") {
      out = fixed(Math.max(ms, 1000) / 1000, 1) + "s";
    } else if (ms < 60000) {
      out = "1m";
    } else if (ms < 3600000) {
      var rest = ms % 60000, minutes = (ms - rest) / 60000, secs = fixed(rest / 1000, 1);
      if (secs === "60.0") { minutes += 1; secs = "0.0"; }
      if (secs.slice(-2) === ".0") { secs = secs.slice(0, -2); }
      var whole = secs === "0" ? minutes + "m" : minutes + "m" + secs + "s";
      out = minutes === 60 ? "1h00m" : whole;
    } else {
      var r = ms % 3600000, hours = (ms - r) / 3600000;
      out = hours + "h" + pad(Math.floor(r / 60000), 2) + "m";
    }
    return neg ? "-" + out : out;
  }
  function wrap(text, width) {  // plotting.wrap
    width = width || 90;
    var out = [], line = "";
    text.split(" ").forEach(function (word) {
      if (line && chars(line).length + chars(word).length + 1 > width) { out.push(line); line = word; }
      else { line = line ? line + " " + word : word; }
    });
    out.push(line);
    return out.join("<br>");
  }

  // ------------------------------------------------------------------ time: plotting.Axis
  function stamp(us) {
    var ms = Math.floor(us / 1000), d = new Date(ms);
    return {date: d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1, 2) + "-" + pad(d.getUTCDate(), 2),
            time: pad(d.getUTCHours(), 2) + ":" + pad(d.getUTCMinutes(), 2) + ":" + pad(d.getUTCSeconds(), 2),
            micro: (ms % 1000) * 1000 + (us - ms * 1000)};
  }
  function Axis(wall, dated) { this.wall = wall; this.dated = !!dated; }
  Axis.prototype.x = function (us) {
    if (us === null || us === undefined) { return null; }
    if (this.wall) { var s = stamp(us); return s.date + " " + s.time + "." + pad(s.micro, 6); }
    return (us - T.epoch) / 1e6;
  };
  Axis.prototype.span = function (a, b) {
    var ms = Math.max(((b - a) / 1e6) * 1000, 0.0);
    return this.wall ? ms : ms / 1000;
  };
  Axis.prototype.when = function (us) {
    if (us === null || us === undefined) { return "?"; }
    if (this.wall) {
      var s = stamp(us);
      return (this.dated ? s.date + " " : "") + s.time + "." + pad(Math.floor(s.micro / 1000), 3);
    }
    return "+" + fixed(Math.max((us - T.epoch) / 1e6, 0.0), 3) + "s";
  };
  Axis.prototype.whenExpr = function (us) {  // Axis.when_expr: milliseconds cut, not rounded
    if (this.wall) { return this.when(us); }
    var ms = Math.max(Math.trunc((us - T.epoch) / 1000), 0);
    return "+" + Math.floor(ms / 1000) + "." + pad(ms % 1000, 3) + "s";
  };
  Axis.prototype.title = function (day) {
    if (!this.wall) { return "seconds on the log-order timeline"; }
    return this.dated || day === null || day === undefined ? "UTC" : "UTC, " + stamp(day).date;
  };
  // timedelta arithmetic rounds to a microsecond, half to even (Python's round), not half up
  function half(us) {
    var r = Math.round(us);
    return (Math.abs(us % 1) === 0.5 && r % 2 !== 0) ? r - 1 : r;
  }

  function label(x, y, text, o) {  // plotting.label
    o = o || {};
    var d = {x: x, y: y, xref: o.xref || "x", yref: o.yref || "y", xanchor: o.xanchor || "left", text: text,
             showarrow: false, font: {size: o.size || 11, color: o.colour || C.dim}};
    Object.keys(o).forEach(function (k) {
      if (["xref", "yref", "xanchor", "size", "colour"].indexOf(k) < 0) { d[k] = o[k]; }
    });
    return d;
  }
  function note(text) {
    return label(0.5, 0.5, esc(text), {xref: "paper", yref: "paper", xanchor: "center", size: 12});
  }

  // ------------------------------------------------------------------ the table, a job at a time
  function rows(name, k) {
    var t = T[name], cols = t.columns, names = Object.keys(cols), out = [];
    for (var i = t.at[k][0]; i < t.at[k][1]; i++) {
      var r = {};
      for (var c = 0; c < names.length; c++) { r[names[c]] = cols[names[c]][i]; }
      out.push(r);
    }
    return out;
  }

  // ------------------------------------------------------------------ markers.py
  function findingY(k) { return -1 - 0.3 * k; }

  function eventTraces(events, lanes, axis, notes, spreadUs) {
    if (events.length === 0) { return []; }
    var ev = events.filter(function (e) { return e.execution_id !== null && lanes.has(e.execution_id); });
    if (ev.length > L.markers) {
      var isRoutine = function (e) {
        return (e.event === "lease_renewal" && e.renewal_outcome === "success" && !e.late) ||
          e.event === "job_progress";
      };
      var nRoutine = ev.filter(isRoutine).length;
      var budget = Math.max(L.markers - (ev.length - nRoutine), Math.floor(L.markers / 10));
      var step = Math.ceil(nRoutine / budget);
      if (step > 1) {
        var i = 0;
        ev = ev.filter(function (e) { if (!isRoutine(e)) { return true; } return (i++) % step === 0; });
        notes.push(grouped(nRoutine) + " routine markers (successful renewals, progress) thinned to every " +
          step + "th");
      }
    }
    ev = ev.slice().sort(function (a, b) { return a.t - b.t || a.seq - b.seq; });
    var spread = Math.max(spreadUs, 1), spreading = spreadUs > 0;
    // markers of one lane and moment (and routine or not) are spread around the lane's line
    var groups = new Map(), keyOf = [];
    ev.forEach(function (e, j) {
      var routine = (e.event === "lease_renewal" && e.renewal_outcome === "success") || e.event === "job_progress";
      var g = e.execution_id + "\u0000" + Math.floor(e.t / spread) + "\u0000" + routine;
      keyOf.push([g, routine]);
      groups.set(g, (groups.get(g) || 0) + 1);
    });
    var seen = new Map(), parts = new Map(), renewalKinds = new Set(T.style.renewal.map(function (r) { return r[0]; }));
    ev.forEach(function (e, j) {
      var g = keyOf[j][0], routine = keyOf[j][1], n = groups.get(g), idx = seen.get(g) || 0;
      seen.set(g, idx + 1);
      var offset = Math.min(Math.max((idx - (n - 1) / 2) * L.spreadStep, -L.maxSpread), L.maxSpread);
      var y = lanes.get(e.execution_id) + 0.08 + (routine || !spreading ? 0.0 : offset);
      var key = e.event;
      if (e.event === "lease_renewal") {
        var variant = e.late ? "late" : e.renewal_outcome;
        key = "renewal:" + (variant !== null && renewalKinds.has(variant) ? variant : "");
      }
      var fields = esc(e.fields === null ? null : e.fields).split(',"').join(',<br>  "');
      var hover = "<b>" + esc(e.raw_event === null ? e.event : e.raw_event) + "</b> " + esc(e.detail) +
        "<br>" + axis.whenExpr(e.t) + " · " + esc(e.pod === null ? "?" : e.pod) + " · " + esc(e.execution_id) +
        "<br>" + esc(e.file === null ? "?" : e.file) + ":" + (e.line === null ? "?" : e.line) + "<br>" + fields;
      var m = parts.get(key);
      if (!m) { m = {x: [], y: [], hover: [], released: [], outcome: []}; parts.set(key, m); }
      m.x.push(axis.x(e.t)); m.y.push(y); m.hover.push(hover); m.released.push(e.released); m.outcome.push(e.outcome);
    });
    function trace(m, name, symbol, colour, size) {
      return {type: "scatter", mode: "markers", name: name, x: m.x, y: m.y, hovertext: m.hover, hoverinfo: "text",
              marker: {symbol: symbol, color: colour, size: size, line: {color: "white", width: 1}},
              meta: {role: "event"}};
    }
    var out = [];
    T.style.markers.forEach(function (mk) {
      var event = mk[0], sub = parts.get(event);
      if (!sub) { return; }
      var colours = mk[3];
      if (event === "lock_released") {
        colours = sub.released.map(function (r) { return r === false ? C.zombie : mk[3]; });
      } else if (event === "completion") {
        var swap = {duplicate: "#d4a72c", rejected: C.zombie};
        colours = sub.outcome.map(function (o) { return swap[o || ""] || mk[3]; });
      }
      out.push(trace(sub, mk[1], mk[2], colours, event !== "job_progress" ? 9 : 12));
    });
    T.style.renewal.forEach(function (rc) {
      var sub = parts.get("renewal:" + rc[0]);
      if (sub) { out.push(trace(sub, rc[0] === "late" ? "renewal: late success" : "renewal: " + rc[0], "circle", rc[1], 8)); }
    });
    var other = parts.get("renewal:");
    if (other) { out.push(trace(other, "renewal: other", "circle-open", C.dim, 8)); }
    return out;
  }

  function findingTraces(findings, axis) {
    var bySev = new Map();
    findings.forEach(function (f, k) {
      var end = f.end === null ? f.start : f.end, y = findingY(k);
      var d = bySev.get(f.severity);
      if (!d) { d = {x: [], y: [], hover: []}; bySev.set(f.severity, d); }
      var hover = "<b>" + esc(f.code) + " " + esc(f.kind) + "</b> (" + esc(f.severity) + ", " + esc(f.certainty) +
        ")<br>" + axis.when(f.start) + " → " + axis.when(end) + "<br>" + wrap(esc(f.message));
      d.x.push(axis.x(f.start), axis.x(end), null);
      d.y.push(y, y, null);
      d.hover.push(hover, hover, "");
    });
    var out = [];
    bySev.forEach(function (d, sev) {
      var colour = SEV[sev] || C.dim;
      out.push({type: "scatter", mode: "lines+markers", name: "finding (" + sev + ")", x: d.x, y: d.y,
                hovertext: d.hover, hoverinfo: "text", cliponaxis: false, line: {color: colour, width: 4},
                marker: {symbol: "line-ns", size: 10, line: {width: 2, color: colour}}, meta: {role: "finding"}});
    });
    return out;
  }

  function findingLabels(findings, axis, tMin, tMax) {
    var cut = tMin + half((tMax - tMin) * 0.7);
    return findings.map(function (f, k) {
      var end = f.end === null ? f.start : f.end;
      var size = f.duration_ms !== null ? " " + duration(f.duration_ms) : "";
      var right = end <= cut;
      var text = esc(f.code) + " " + esc(f.kind) + size + (f.certainty === "uncertain" ? " (uncertain)" : "");
      return label(axis.x(right ? end : f.start), findingY(k), text,
        {colour: SEV[f.severity] || C.dim, size: 10, xanchor: right ? "left" : "right", xshift: right ? 6 : -6});
    });
  }

  // ------------------------------------------------------------------ lanes.py
  function Bars() { this.y = []; this.base = []; this.x = []; this.text = []; }
  Bars.prototype.add = function (y, base, length, text) {
    this.y.push(y); this.base.push(base); this.x.push(length); this.text.push(text);
  };
  Bars.prototype.trace = function (name, role, width, marker) {
    return {type: "bar", orientation: "h", hoverinfo: "text", textposition: "none", name: name, legendgroup: role,
            y: this.y, base: this.base, x: this.x, hovertext: this.text, width: width, marker: marker,
            meta: {role: role}};
  };

  function extent(ex, findings) {
    var times = [];
    ["start", "end", "acquired_at", "valid_until", "triggered_at", "last_seen"].forEach(function (c) {
      ex.forEach(function (r) { if (r[c] !== null) { times.push(r[c]); } });
    });
    findings.forEach(function (f) {
      if (f.start !== null) { times.push(f.start); }
      if (f.end !== null) { times.push(f.end); }
    });
    return [Math.min.apply(null, times), Math.max.apply(null, times)];
  }
  function where(r) {
    if (r.acquired_line !== null) { return esc(r.acquired_file) + ":" + r.acquired_line; }
    if (r.started_line !== null) { return esc(r.started_file) + ":" + r.started_line; }
    return esc(r.file) + ":";
  }
  function day(us) { return stamp(us).date; }

  function triggerPaths(ex, findings, lanes, axis, says) {
    var byId = new Map();
    ex.forEach(function (r) { byId.set(r.execution_id, r); });
    var out = [];
    findings.forEach(function (f) {
      var ids = f.execution_ids || [];
      if (f.kind !== "second_attempt" || ids.length < 2) { return; }
      var first = byId.get(ids[0]), second = byId.get(ids[ids.length - 1]);
      if (!first || !second || first.valid_until === null || second.acquired_at === null) { return; }
      var how = {released: "released", expired: "expired"}[first.lease_end || ""] || "ended";
      var gap = ((second.acquired_at - first.valid_until) / 1e6) * 1000;
      var after = duration(Math.abs(gap)) + " " + (gap >= 0 ? "after" : "before");
      says.set(ids[ids.length - 1], "2nd attempt (" + after + " lease " + how + "; trigger: <b>" +
        esc(f.trigger || "unknown") + "</b>) · ");
      out.push({x: axis.x(second.acquired_at), y: lanes.get(ids[ids.length - 1]) - 0.3,
                ax: axis.x(first.valid_until), ay: lanes.get(ids[0]) - 0.3, xref: "x", yref: "y", axref: "x",
                ayref: "y", showarrow: true, arrowhead: 2, arrowsize: 1.2, arrowwidth: 1.5,
                arrowcolor: SEV.warning, standoff: 4, text: "", name: "trigger",
                hovertext: esc("second attempt " + ids[ids.length - 1] + " acquired " + after + " " + ids[0] +
                  "'s lease " + how + "; trigger: " + (f.trigger || "unknown"))});
    });
    return out;
  }

  function overlaps(findings, axis, width, annotations) {
    var shapes = [];
    findings.forEach(function (f) {
      if (f.kind !== "overlapping_executions" || f.start === null || f.end === null) { return; }
      var lo = f.start, hi = f.end, mid = lo + half((hi - lo) / 2);
      if (hi - lo < half(width * L.minBand)) {
        var h = half(width * (L.minBand / 2));
        lo = mid - h; hi = mid + h;
      }
      shapes.push({type: "rect", xref: "x", yref: "paper", x0: axis.x(lo), x1: axis.x(hi), y0: 0, y1: 1,
                   fillcolor: "rgba(207,34,46,0.13)", line: {width: 0}, layer: "below", name: "overlap"});
      var unc = f.certainty === "uncertain";
      var text = "overlap " + (unc ? "≈" : "") + duration(f.duration_ms) + (unc ? " (uncertain)" : "");
      annotations.push(label(axis.x(mid), 1.0, "<b>" + text + "</b>", {colour: C.zombie, size: 12,
        xanchor: "center", yref: "paper", yanchor: "bottom", bgcolor: "rgba(255,255,255,0.85)"}));
    });
    return shapes;
  }

  function xaxis(axis, tMin, tMax, pad) {
    var lo = pad !== null ? tMin - pad : tMin;
    var d = {range: [axis.x(lo), axis.x(tMax)], showgrid: true, gridcolor: "#eaeef2", zeroline: false,
             automargin: true, title: {text: axis.title(tMin), font: {size: 10, color: C.dim}, standoff: 4}};
    if (axis.wall) {
      d.type = "date"; d.hoverformat = "%Y-%m-%d %H:%M:%S.%L";
      if (!axis.dated) { d.tickformat = "%H:%M:%S"; }
    } else {
      d.type = "linear";
    }
    return d;
  }

  function panel(ex, events, findings) {
    var ext = extent(ex, findings), tMin = ext[0], tMax = ext[1];
    var axis = new Axis(ex.every(function (r) { return r.clock === "wall"; }), day(tMin) !== day(tMax));
    var lanes = new Map();
    ex.forEach(function (r, i) { lanes.set(r.execution_id, i); });
    var width = tMax - tMin;
    var pad = tMax > tMin ? half(width * 0.04) : null;
    var openTailEnd = pad !== null ? tMax + pad : tMax;
    var rightEdge = pad !== null ? tMax + half(width * 0.2) : tMax;
    var leases = new Bars(), execs = new Bars(), zombies = new Bars(), opens = new Bars();
    var says = new Map();
    var annotations = triggerPaths(ex, findings, lanes, axis, says);
    var labels = [];
    ex.forEach(function (r) {
      var y = lanes.get(r.execution_id);
      var who = esc(r.pod) + " · " + esc(r.execution_id);
      labels.push(chars(who).length < 60 ? who : chars(who).slice(0, 57).join("") + "…");
      var at = where(r), start = r.start, end = r.end, leaseFrom = r.acquired_at, leaseTo = r.valid_until;
      if (leaseFrom !== null && leaseTo !== null) {
        var how = {released: "released", expired: "expired"}[r.lease_end || ""] || "ends";
        leases.add(y - 0.3, axis.x(leaseFrom), axis.span(leaseFrom, leaseTo),
          "<b>lease</b> of " + who + "<br>acquired " + axis.when(leaseFrom) + " (TTL " + duration(r.ttl_ms) + "), " +
          how + " " + axis.when(leaseTo) + "<br>" + at);
        annotations.push(label(axis.x(leaseTo), y - 0.3, "◀ lease " + how + " " + axis.when(leaseTo), {colour: C.leaseEdge}));
        var said = says.get(r.execution_id) || "";
        if (pad !== null && (leaseFrom - tMin > half(width * 0.2) || said)) {
          annotations.push(label(axis.x(leaseFrom), y - 0.3, said + "acquired " + axis.when(leaseFrom) + " ▶",
            {colour: C.leaseEdge, xanchor: "right"}));
        }
      } else if (leaseFrom !== null) {
        annotations.push(label(axis.x(leaseFrom), y - 0.3, "lease length unknown (no leaseMs, no --lease-ttl)",
          {colour: C.leaseEdge}));
      }
      if (start === null || end === null) { return; }
      var coveredUntil = end;
      if (leaseTo !== null && leaseTo < end) { coveredUntil = Math.max(leaseTo, start); }
      var kind = r.end_kind;
      execs.add(y + 0.08, axis.x(start), axis.span(start, coveredUntil),
        "<b>execution</b> " + who + "<br>" + axis.when(start) + " → " + axis.when(end) + " (" +
        duration(r.runtime_ms) + "), " + esc(kind) + "<br>" + at);
      if (coveredUntil < end) {
        var zombieMs = ((end - coveredUntil) / 1e6) * 1000;
        zombies.add(y + 0.08, axis.x(coveredUntil), axis.span(coveredUntil, end),
          "<b>running without a lease</b> " + who + "<br>" + axis.when(coveredUntil) + " → " + axis.when(end) +
          " (" + duration(zombieMs) + ")");
        annotations.push(label(axis.x(coveredUntil), y + 0.4,
          "<b>still running without lease: " + duration(zombieMs) + "</b>", {colour: C.zombie}));
      }
      if (kind === "open") {
        opens.add(y + 0.08, axis.x(end), axis.span(end, openTailEnd),
          "<b>open end</b> " + who + "<br>log ends at " + axis.when(end) +
          " with no finish, stop or release: a crash, or a log cut short");
        annotations.push(label(axis.x(end), y + 0.08, " ✕ log ends " + axis.when(end) + ": no finish (crash?)",
          {colour: "#24292f"}));
      } else {
        annotations.push(label(axis.x(end), y + 0.08, " " + esc(kind) + " " + axis.when(end), {size: 10}));
      }
    });
    var data = [
      leases.trace("lease (lock held)", "lease", 0.2, {color: C.lease, line: {color: C.leaseEdge, width: 1}}),
      execs.trace("execution (with lease)", "execution", 0.3, {color: C.execution})
    ];
    if (zombies.y.length) {
      data.push(zombies.trace("execution without lease", "zombie", 0.3, {color: C.zombie,
        pattern: {shape: "/", fgcolor: "white", solidity: 0.3, fillmode: "overlay"}}));
    }
    if (opens.y.length) {
      data.push(opens.trace("open end (log stops)", "open", 0.3, {color: "rgba(140,149,159,0.25)",
        line: {color: C.openEnd, width: 1}, pattern: {shape: ".", fgcolor: C.openEnd, fillmode: "overlay"}}));
    }
    var notes = [];
    var spreadUs = Math.trunc((width / 1e6) * 1e6 * L.spread);
    Array.prototype.push.apply(data, eventTraces(events, lanes, axis, notes, spreadUs));
    notes.forEach(function (n) {
      annotations.push(label(1, 0, "<i>" + n + "</i>", {xref: "paper", yref: "paper", xanchor: "right",
        yanchor: "bottom", size: 10}));
    });
    var shapes = overlaps(findings, axis, width, annotations);
    var dated = findings.filter(function (f) { return f.start !== null; });
    var findingRows = dated.slice(0, L.findingRows);
    Array.prototype.push.apply(data, findingTraces(findingRows, axis));
    Array.prototype.push.apply(annotations, findingLabels(findingRows, axis, tMin, rightEdge));
    var n = lanes.size, nRows = findingRows.length;
    var tickvals = [], ticktext = labels.slice();
    for (var i = 0; i < n; i++) { tickvals.push(i); }
    if (nRows) {
      tickvals.push(findingY(0) - 0.3 * (nRows - 1) / 2);
      ticktext.push("<i>findings</i>" + (dated.length > nRows ? "<br><i>(first " + nRows + " of " + dated.length + ")</i>" : ""));
    }
    var seps = [];
    for (var s = 0; s < n - 1; s++) { seps.push([s + 0.5, "#d0d7de"]); }
    if (nRows) { seps.push([-0.5, C.openEnd]); }
    seps.forEach(function (sp) {
      shapes.push({type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: sp[0], y1: sp[0],
                   line: {color: sp[1], width: 1}, layer: "below"});
    });
    var layout = {
      barmode: "overlay",
      height: 150 + 80 * n + 22 * nRows,
      xaxis: xaxis(axis, tMin, rightEdge, pad),
      yaxis: {tickvals: tickvals, ticktext: ticktext, autorange: false,
              range: [n - 0.4, nRows ? findingY(Math.max(nRows - 1, 0)) - 0.45 : -0.6], automargin: true,
              showgrid: false, zeroline: false, fixedrange: true},
      shapes: shapes,
      annotations: annotations,
      hoverlabel: {align: "left", bgcolor: "white", font: {family: "ui-monospace, monospace", size: 11}},
      hovermode: "closest",
      legend: {orientation: "h", y: -0.22, yanchor: "top", x: 0, font: {size: 10}},
      plot_bgcolor: "white",
      paper_bgcolor: "white",
      meta: {lanes: [ex.map(function (r) { return r.pod; }), ex.map(function (r) { return r.execution_id; })],
             findings: findings.map(function (f) {
               return f.start !== null ? [axis.x(f.start), axis.x(f.end === null ? f.start : f.end)] : null;
             })}
    };
    return {data: data, layout: layout};
  }

  // ------------------------------------------------------------------ timeline.py
  function retarget(item, xa, ya) {
    var out = Object.assign({}, item);
    out.xref = item.xref === "paper" ? xa + " domain" : xa;
    out.yref = item.yref === "paper" ? ya + " domain" : ya;
    if ("axref" in item) { out.axref = xa; out.ayref = ya; }
    return out;
  }

  function stack(jobId, titleText, panels, assigned, nFindings) {
    var gap = 90;
    var plotH = panels.map(function (p) { return p.layout.height - 150; });
    var area = plotH.reduce(function (a, b) { return a + b; }, 0) + gap * (panels.length - 1);
    var data = [], shapes = [], annotations = [], metaFindings = [], layout = {};
    for (var i = 0; i < nFindings; i++) { metaFindings.push(null); }
    var top = area, seen = new Set(), wallNote = "";
    panels.forEach(function (panel, p) {
      var s = p === 0 ? "" : String(p + 1), xa = "x" + s, ya = "y" + s;
      var lo = (top - plotH[p]) / area, hi = top / area;
      top -= plotH[p] + gap;
      var pl = panel.layout;
      layout["xaxis" + s] = Object.assign({}, pl.xaxis, {anchor: ya});
      layout["yaxis" + s] = Object.assign({}, pl.yaxis, {anchor: xa, domain: [Math.max(lo, 0.0), Math.min(hi, 1.0)]});
      panel.data.forEach(function (tr) {
        tr = Object.assign({}, tr, {xaxis: xa, yaxis: ya, legendgroup: tr.legendgroup !== undefined ? tr.legendgroup : tr.name});
        if (seen.has(tr.name)) { tr.showlegend = false; }
        seen.add(tr.name);
        data.push(tr);
      });
      pl.shapes.forEach(function (sh) { shapes.push(retarget(sh, xa, ya)); });
      pl.annotations.forEach(function (an) { annotations.push(retarget(an, xa, ya)); });
      assigned[p].forEach(function (fi, j) {
        var ref = pl.meta.findings[j];
        metaFindings[fi] = ref === null ? null : [xa].concat(ref);
      });
      var date = pl.xaxis.type === "date";
      if (panels.length > 1) {
        var text = date ? "<b>wall clock (UTC)</b>"
          : "<b>no wall clock</b>: elapsedMs / line order (not comparable with the panel above)";
        annotations.push(label(0, 1, text, {xref: xa + " domain", yref: ya + " domain", yanchor: "bottom",
          yshift: 14, colour: date ? C.dim : SEV.warning}));
      } else if (!date) {
        wallNote = "  <span style='font-size:11px;color:" + SEV.warning + "'>(no wall clock: times from" +
          " elapsedMs and line order, cross-pod positions are estimates)</span>";
      }
    });
    var lanes = [0, 1].map(function (k) {
      return panels.reduce(function (acc, p) { return acc.concat(p.layout.meta.lanes[k]); }, []);
    });
    var base = panels[0].layout, out = {};
    Object.keys(base).forEach(function (k) {
      if (["xaxis", "yaxis", "shapes", "annotations", "meta"].indexOf(k) < 0) { out[k] = base[k]; }
    });
    Object.assign(out, layout, {
      title: {text: titleText + wallNote, x: 0.01, xanchor: "left", font: {size: 14}},
      height: 150 + area,
      margin: {l: 10, r: 20, t: titleText || wallNote || panels.length > 1 ? 70 : 36, b: 40},
      shapes: shapes,
      annotations: annotations,
      meta: {jobId: jobId, lanes: lanes, findings: metaFindings}
    });
    return {data: data, layout: out};
  }

  // the figure of timeline k (the job `table.jobs[k]`), as timeline_spec(..., title=False) makes it
  function spec(table, k) {
    T = table; C = table.style.colour; L = table.style.limits; SEV = table.style.severity;
    var jobId = table.jobs[k], ex = rows("executions", k), events = rows("events", k);
    var findings = rows("findings", k);
    var titleText = "";
    if (ex.length === 0) {
      return {data: [], layout: {title: {text: titleText}, height: 160,
        annotations: [note("no executions of this job in the logs")],
        meta: {jobId: jobId, lanes: [[], []], findings: findings.map(function () { return null; })}}};
    }
    if (ex.length > L.lanes) {
      // keep the executions the most severe findings name, then the earliest others
      var rank = new Map();
      findings.forEach(function (f) {
        (f.execution_ids || []).forEach(function (x) {
          rank.set(x, Math.min(rank.has(x) ? rank.get(x) : 3, RANK[f.severity]));
        });
      });
      var total = ex.length;
      ex = ex.map(function (r, i) { return [rank.has(r.execution_id) ? rank.get(r.execution_id) : 3, i, r]; })
        .sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; })
        .slice(0, L.lanes)
        .sort(function (a, b) { return a[1] - b[1]; })
        .map(function (t) { return t[2]; });
      titleText += "  <span style='font-size:11px;color:" + C.dim + "'>(showing " + L.lanes + " of " + grouped(total) +
        " executions: those named in the most severe findings first)</span>";
    }
    var groups = [ex.filter(function (r) { return r.clock === "wall"; }),
                  ex.filter(function (r) { return r.clock !== null && r.clock !== "wall"; })]
      .filter(function (g) { return g.length; });
    var ids = groups.map(function (g) { return new Set(g.map(function (r) { return r.execution_id; })); });
    var assigned = groups.map(function () { return []; });
    findings.forEach(function (f, i) {
      var at = 0;
      for (var p = 0; p < ids.length; p++) {
        if ((f.execution_ids || []).some(function (x) { return ids[p].has(x); })) { at = p; break; }
      }
      assigned[at].push(i);
    });
    var panels = groups.map(function (g, p) {
      return panel(g, events, assigned[p].map(function (i) { return findings[i]; }));
    });
    return stack(jobId, titleText, panels, assigned, findings.length);
  }

  // a moment as the report writes it outside figures (html_parts.when): dated on the wall clock
  function when(table, us, wall) { T = table; return new Axis(wall, true).when(us); }

  return {spec: spec, duration: duration, when: when};
})();
