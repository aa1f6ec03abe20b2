// leaselog report: the findings list, written from the report's table (render/html_findings.py orders its
// rows) a few thousand at a time, so a fleet's tens of thousands of findings never hold up the first
// screen. Each finding reads as render/html_findings.py's markup always read. Every string is log text:
// e() escapes it (control characters shown as \x1b escapes, as html_parts.e does) before it is markup.
var leaselogFindings = (function () {
  "use strict";
  var CHUNK = 2000;  // findings written per step; the page stays responsive between steps

  var CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;
  var BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function hex(c, w) { var h = c.charCodeAt(0).toString(16); while (h.length < w) { h = "0" + h; } return h; }
  function e(v) {
    if (v === null || v === undefined) { return ""; }
    return String(v)
      .replace(CONTROL, function (c) { return "\\x" + hex(c, 2); })
      .replace(BIDI, function (c) { return "\\u" + hex(c, 4); })
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
  }
  function badge(sev) { return '<span class="badge sev-' + e(sev) + '">' + e(sev) + "</span>"; }

  // runs of consecutive rows of one job: the list's groups
  function groups(cols) {
    var out = [], job = cols.job_id, n = job.length;
    for (var i = 0; i < n; i++) {
      if (!out.length || job[i] !== job[i - 1]) { out.push({job: job[i], lo: i, hi: i + 1}); }
      else { out[out.length - 1].hi = i + 1; }
    }
    return out;
  }

  function item(table, c, i, shown) {
    var sev = c.severity[i], start = c.start[i], end = c.end[i], wall = c.wall[i], k = c.timeline[i];
    var dur = c.duration_ms[i] !== null ? " <b>" + e(leaselogTimeline.duration(c.duration_ms[i])) + "</b>" : "";
    var unc = c.certainty[i] === "uncertain" ? ' <span class="badge uncertain">uncertain</span>' : "";
    var trig = c.trigger[i] ? " · trigger <code>" + e(c.trigger[i]) + "</code>" : "";
    var go = c.goto[i] ? ' <a class="goto" href="#job-' + k + '" data-f="' + i + '">show on timeline ↓</a>' : "";
    var span = "";
    if (start !== null) {
      span = " · " + e(leaselogTimeline.when(table, start, wall)) +
        (end !== null && end !== start ? " → " + e(leaselogTimeline.when(table, end, wall)) : "") +
        (wall ? " UTC" : " (log order)");
    }
    var files = c.evidence_file[i] || [], lines = c.evidence_line[i] || [], notes = c.evidence_note[i] || [];
    var ev = files.map(function (f, j) {
      return "<li><code>" + e(f) + ":" + (lines[j] === null ? "None" : lines[j]) + "</code>" +
        (notes[j] ? " " + e(notes[j]) : "") + "</li>";
    });
    var evidence = '<ul class="ev mono">' + ev.slice(0, shown).join("") + "</ul>";
    if (ev.length > shown) {
      evidence += '<details class="ev"><summary>' + (ev.length - shown) + " more evidence line(s)</summary>" +
        '<ul class="ev mono">' + ev.slice(shown).join("") + "</ul></details>";
    }
    var execs = (c.execution_ids[i] || []).map(e).join(", "), pods = (c.pods[i] || []).map(e).join(", ");
    return '<li class="finding sev-' + e(sev) + '" id="f-' + i + '" data-kind="' + e(c.kind[i]) + '" data-sev="' +
      e(sev) + '" data-job="' + e(c.job_id[i] || "") + '" data-t="' + (start !== null ? start / 1e6 : "") + '">' +
      '<div class="fhead">' + badge(sev) + " <code>" + e(c.code[i]) + "</code> <b>" + e(c.kind[i]) + "</b>" + dur +
      unc + go + "</div>" + '<p class="msg">' + e(c.message[i]) + "</p>" +
      '<div class="meta">executions: ' + (execs || "—") + " · pods: " + (pods || "—") + span + trig + "</div>" +
      evidence + "</li>";
  }

  function group(table, c, g, shown) {
    var k = c.timeline[g.lo], n = g.hi - g.lo, link;
    if (g.job === null) { link = "<i>fleet</i>"; }
    else if (k >= 0) { link = '<a href="#job-' + k + '" class="joblink" data-job="' + k + '">' + e(g.job) + "</a>"; }
    else { link = e(g.job); }
    var out = ['<div class="jobgroup" data-job="' + e(g.job || "") + '"><h3>' + link +
      ' <span class="dim jobcount" data-n="' + n + '">' + n + ' finding(s)</span></h3><ol class="findings">'];
    for (var i = g.lo; i < g.hi; i++) { out.push(item(table, c, i, shown)); }
    out.push("</ol></div>");
    return out.join("");
  }

  // write every group into `list`: parsed a chunk at a time into a detached element (the page stays
  // responsive between chunks, and lays the list out once, not once per chunk as it grows), then put in
  // the page at once; `step(lo, hi)` then (rows lo..hi-1 are in the page); the promise resolves after it
  function write(table, list, step) {
    var c = table.findings.columns, gs = groups(c), shown = +list.getAttribute("data-evidence") || 6, at = 0;
    var box = document.createElement("div");
    box.className = "findings-box";
    return new Promise(function (resolve) {
      function next() {
        var html = [], rows = 0;
        while (at < gs.length && (rows < CHUNK || html.length === 0)) {
          html.push(group(table, c, gs[at], shown));
          rows += gs[at].hi - gs[at].lo;
          at += 1;
        }
        // a chunk is one box the browser can skip whole while it is off screen (one box, not a thousand)
        if (html.length) { box.insertAdjacentHTML("beforeend", '<div class="chunk">' + html.join("") + "</div>"); }
        if (at < gs.length) { setTimeout(next, 0); return; }
        list.appendChild(box);
        step(0, c.kind.length);
        resolve();
      }
      next();
    });
  }

  return {write: write};
})();
