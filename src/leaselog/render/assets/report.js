// leaselog report: draws the first timeline at once and the others as they come near the viewport (all of
// them, at page width, before printing), each from the report's columnar table (timeline.js), then writes
// the findings list from the same table (findings.js); filters and the job search drive the list and the
// timelines, and live in the URL fragment (#kind=..&sev=..&job=..&from=..&to=..) so Back and shared links
// work; "show on timeline" marks the finding's moment; a click on a marker keeps its raw fields shown.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("leaselog-data").textContent);
  var config = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"]};
  var PRINT_WIDTH = 700;  // CSS px across an A4 page inside 12 mm margins

  // the report's table: gzip-compressed JSON in base64, unpacked once; the first timeline's rows come
  // in a small table of their own too, so the first screen does not wait for a fleet's whole table
  function unpack(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).json();
  }
  var tablePromise = null, firstPromise = null;
  function table() {
    if (!tablePromise) { tablePromise = unpack(data.table); }
    return tablePromise;
  }
  function firstTable() {
    if (!firstPromise) { firstPromise = data.first ? unpack(data.first) : table(); }
    return firstPromise;
  }
  function spec(div) {
    var k = div.getAttribute("data-fig");
    if (k === "overview") { return Promise.resolve(data.overview); }
    return (k === "0" ? firstTable() : table()).then(function (t) { return leaselogTimeline.spec(t, +k); });
  }
  function render(div, width) {
    if (div._leaselog) { return div._leaselog; }
    div._leaselog = spec(div).then(function (s) {
      div._spec = s;
      var layout = s.layout;
      if (width) { layout = Object.assign({}, layout, {width: width}); }
      if (layout.height) { div.style.height = layout.height + "px"; }
      return Plotly.newPlot(div, s.data, layout, config);
    }).then(function () {
      div.setAttribute("data-rendered", "1");
      if (div.getAttribute("data-fig") === "overview") {
        div.on("plotly_click", overviewClick);
      } else {
        div.on("plotly_click", function (ev) { pin(div, ev); });
      }
      return div;
    });
    return div._leaselog;
  }

  // ------------------------------------------------------------------ lazy drawing
  var plots = Array.prototype.slice.call(document.querySelectorAll("div.plot"));
  var first = document.getElementById("plot-0");
  var io = null;
  if ("IntersectionObserver" in window) {
    io = new IntersectionObserver(function (entries) {
      entries.forEach(function (en) {
        if (en.isIntersecting) { io.unobserve(en.target); render(en.target); }
      });
    }, {rootMargin: "800px 0px"});
  }
  // the others once the first is on screen: their table is a fleet's, and unpacking it takes a while
  function watchTheOthers() {
    if (io) { plots.forEach(function (d) { if (d !== first) { io.observe(d); } }); }
    else { plots.forEach(function (d) { render(d); }); }
  }

  // ------------------------------------------------------------------ a marker's raw fields, kept shown
  function plain(html) {
    return html.replace(/<br>/g, "\n").replace(/<[^>]*>/g, "")
      .replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }
  function pin(div, ev, keepFocus) {
    var pt = ev.points && ev.points[0];
    if (!pt) { return; }
    var text = pt.hovertext || (pt.data && pt.data.hovertext && pt.data.hovertext[pt.pointIndex]) || "";
    var box = div.parentNode.querySelector(".pinned");
    if (!box) {
      box = document.createElement("div");
      box.className = "pinned";
      box.setAttribute("tabindex", "-1");
      box.setAttribute("role", "note");
      var close = document.createElement("button");
      close.type = "button";
      close.textContent = "close";
      close.addEventListener("click", function () { box.remove(); });
      box.appendChild(close);
      box.appendChild(document.createElement("div"));
      div.parentNode.appendChild(box);
    }
    box.lastChild.textContent = plain(String(text));
    if (!keepFocus) { box.focus({preventScroll: true}); }
  }

  // ------------------------------------------------------------------ keyboard: step through events, zoom
  // a focused timeline: Left/Right show the previous/next event's raw fields (the same panel a click
  // keeps), + and - zoom the time axis around its middle, 0 resets it
  function events(div) {
    if (!div._events) {
      var list = [];
      div.data.forEach(function (t, c) {
        if (!t.meta || t.meta.role !== "event") { return; }
        (t.x || []).forEach(function (x, i) {
          list.push({x: x, key: typeof x === "number" ? x : Date.parse(String(x).replace(" ", "T") + "Z"),
                     hovertext: t.hovertext[i], curveNumber: c, pointNumber: i, axis: t.xaxis || "x"});
        });
      });
      list.sort(function (a, b) { return a.key - b.key; });
      div._events = list;
    }
    return div._events;
  }
  function zoom(div, factor) {
    var full = div._fullLayout, update = {};
    Object.keys(full).filter(function (k) { return /^xaxis\d*$/.test(k); }).forEach(function (k) {
      var ax = full[k], lo = ax.r2l(ax.range[0]), hi = ax.r2l(ax.range[1]);
      var mid = (lo + hi) / 2, half = (hi - lo) / 2 * factor;
      update[k + ".range"] = [ax.l2r(mid - half), ax.l2r(mid + half)];
    });
    return Plotly.relayout(div, update);
  }
  document.addEventListener("keydown", function (ev) {
    var div = ev.target;
    if (!div.classList || !div.classList.contains("timeline") || !div.getAttribute("data-rendered")) { return; }
    var list = events(div);
    if ((ev.key === "ArrowRight" || ev.key === "ArrowLeft") && list.length) {
      var i = div._step === undefined ? (ev.key === "ArrowRight" ? 0 : list.length - 1)
        : Math.max(0, Math.min(list.length - 1, div._step + (ev.key === "ArrowRight" ? 1 : -1)));
      div._step = i;
      pin(div, {points: [list[i]]}, true);
      Plotly.Fx.hover(div, [{curveNumber: list[i].curveNumber, pointNumber: list[i].pointNumber}],
        list[i].axis === "x" ? "xy" : list[i].axis + "y" + list[i].axis.slice(1));
    } else if (ev.key === "+" || ev.key === "=") {
      zoom(div, 0.5);
    } else if (ev.key === "-") {
      zoom(div, 2);
    } else if (ev.key === "0") {
      // a fresh figure's ranges: plotly keeps the drawn layout's up to date as it zooms
      spec(div).then(function (s) {
        var update = {};
        Object.keys(s.layout).filter(function (k) { return /^xaxis\d*$/.test(k); }).forEach(function (k) {
          update[k + ".range"] = s.layout[k].range;
        });
        Plotly.relayout(div, update);
      });
    } else {
      return;
    }
    ev.preventDefault();
  });

  // ------------------------------------------------------------------ show a finding on its timeline
  function highlight(fid, scroll) {
    return table().then(function (t) {
      var c = t.findings.columns;
      if (!(fid >= 0 && fid < c.goto.length) || !c.goto[fid]) { return null; }
      var k = c.timeline[fid];
      return mark(fid, k, fid - t.findings.at[k][0], scroll);
    });
  }
  function mark(fid, k, i, scroll) {
    var div = document.getElementById("plot-" + k);
    document.querySelectorAll("li.finding.selected").forEach(function (li) { li.classList.remove("selected"); });
    var li = document.getElementById("f-" + fid);
    if (li) { li.classList.add("selected"); }
    var art = div.closest("article");
    art.classList.remove("hidden");
    if (scroll) { art.scrollIntoView({block: "start"}); }
    return render(div).then(function () {
      // where the figure drew the finding: [xref, x0, x1]
      var at = div._spec.layout.meta.findings[i];
      if (!at) { return; }
      var base = (div.layout.shapes || []).filter(function (s) { return s.name !== "highlight"; });
      var xref = at[0], yref = "y" + xref.slice(1) + " domain";
      var mark = at[1] === at[2]
        ? {type: "line", xref: xref, yref: yref, x0: at[1], x1: at[2], y0: 0, y1: 1,
           line: {color: "#d4a72c", width: 4}, name: "highlight"}
        : {type: "rect", xref: xref, yref: yref, x0: at[1], x1: at[2], y0: 0, y1: 1,
           fillcolor: "rgba(212,167,44,0.12)", line: {color: "#d4a72c", width: 3}, name: "highlight"};
      base.push(mark);
      return Plotly.relayout(div, {shapes: base});
    }).then(function () {
      art.classList.add("flash");
      div.setAttribute("data-highlighted", String(fid));
      setTimeout(function () { art.classList.remove("flash"); }, 2500);
    });
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a.goto") : null;
    if (!a) { return; }
    ev.preventDefault();
    var fid = +a.getAttribute("data-f");
    // a history entry of its own: Back returns to the list (and its filters), not out of the report
    history.pushState({f: fid}, "", "#f-" + fid);
    highlight(fid, true);
  });

  // ------------------------------------------------------------------ filters, search, time window
  var kindSel = document.getElementById("kind-filter");
  var sevSel = document.getElementById("sev-filter");
  var search = document.getElementById("job-search");
  var win = null;  // [from, to] in epoch seconds, from a click on the fleet overview
  var articles = Array.prototype.slice.call(document.querySelectorAll("article.job"));
  var articleJob = articles.map(function (a) { return a.getAttribute("data-job"); });
  // what the filters read of each finding, from the table; its list item and group once written
  var itemKind = [], itemSev = [], itemJob = [], itemJobLower = [], itemT = [], itemGroup = [], itemHidden = [];
  var items = [], groups = [];
  function learn(t) {
    var c = t.findings.columns;
    itemKind = c.kind; itemSev = c.severity;
    itemJob = c.job_id.map(function (j) { return j === null ? "" : j; });
    itemJobLower = itemJob.map(function (j) { return j.toLowerCase(); });
    itemT = c.start.map(function (us) { return us === null ? NaN : us / 1e6; });
    items = itemKind.map(function () { return null; });
    itemGroup = items.slice();
    itemHidden = itemKind.map(function () { return false; });
  }
  function written(lo, hi) {  // rows lo..hi-1 are in the page now
    for (var i = lo; i < hi; i++) {
      items[i] = document.getElementById("f-" + i);
      itemGroup[i] = items[i].parentNode.parentNode;
      if (groups[groups.length - 1] !== itemGroup[i]) { groups.push(itemGroup[i]); }
    }
    if (kindSel && (kindSel.value || sevSel.value || search.value || win)) { applyFilters(false); }
  }

  function state() {
    var s = new URLSearchParams();
    if (kindSel && kindSel.value) { s.set("kind", kindSel.value); }
    if (sevSel && sevSel.value) { s.set("sev", sevSel.value); }
    if (search && search.value) { s.set("job", search.value); }
    if (win) { s.set("from", String(win[0])); s.set("to", String(win[1])); }
    return s;
  }
  function applyFilters(record) {
    if (!kindSel) { return; }
    var kind = kindSel.value, sev = sevSel.value, q = (search.value || "").toLowerCase();
    var shown = 0, jobsShown = {}, perGroup = new Map();
    for (var i = 0; i < itemKind.length; i++) {
      var t = itemT[i], li = items[i];
      var ok = (!kind || itemKind[i] === kind) && (!sev || itemSev[i] === sev) &&
        (!q || itemJobLower[i].indexOf(q) >= 0) && (!win || (t >= win[0] && t < win[1]));
      if (li && itemHidden[i] === ok) { li.classList.toggle("hidden", !ok); itemHidden[i] = !ok; }
      if (ok) {
        shown += 1;
        jobsShown[itemJob[i]] = true;
        if (li) { perGroup.set(itemGroup[i], (perGroup.get(itemGroup[i]) || 0) + 1); }
      }
    }
    var active = !!(kind || sev || q || win);
    // a fleet's list has tens of thousands of groups: touch only what changes
    groups.forEach(function (g) {
      var n = perGroup.get(g) || 0;
      if (!g._count) { g._count = g.querySelector(".jobcount"); g._total = +g._count.getAttribute("data-n"); g._n = g._total; }
      if (g._n !== n) {
        g._count.textContent = (n === g._total ? g._total : n + " of " + g._total) + " finding(s)";
        if ((g._n === 0) !== (n === 0)) { g.classList.toggle("hidden", n === 0); }
        g._n = n;
      }
    });
    var drawn = 0;
    articles.forEach(function (art, a) {
      var ok = !active || jobsShown[articleJob[a]] === true;
      if (art.classList.contains("hidden") === ok) { art.classList.toggle("hidden", !ok); }
      if (ok) { drawn += 1; }
    });
    document.getElementById("filter-count").textContent =
      shown + " of " + itemKind.length + " findings shown · " + drawn + " of " + articles.length + " timelines";
    var tw = document.getElementById("time-window");
    if (tw) {
      tw.textContent = win ? "time window " + new Date(win[0] * 1000).toISOString() + " → " +
        new Date(win[1] * 1000).toISOString() : "";
    }
    var hash = state().toString();
    if (record) { history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search); }
  }
  function restore() {
    var h = location.hash.slice(1);
    var m = /^f-(\d+)$/.exec(h);
    if (m) { highlight(+m[1], true); return; }
    if (!kindSel || h.indexOf("=") < 0) { return; }
    var s = new URLSearchParams(h);
    kindSel.value = s.get("kind") || "";
    sevSel.value = s.get("sev") || "";
    search.value = s.get("job") || "";
    win = s.has("from") ? [parseFloat(s.get("from")), parseFloat(s.get("to"))] : null;
    applyFilters(false);
  }
  function overviewClick(ev) {
    var pt = ev.points && ev.points[0];
    var meta = data.overview.layout.meta || {};
    if (!pt || !meta.bucketSeconds || !kindSel) { return; }
    var mid = meta.wall ? Date.parse(String(pt.x).replace(" ", "T") + "Z") / 1000 : +pt.x + meta.origin;
    win = [mid - meta.bucketSeconds / 2, mid + meta.bucketSeconds / 2];
    applyFilters(true);
    document.getElementById("findings").scrollIntoView({block: "start"});
  }
  if (kindSel) {
    [kindSel, sevSel].forEach(function (el) { el.addEventListener("change", function () { applyFilters(true); }); });
    search.addEventListener("input", function () { applyFilters(true); });
    document.getElementById("filter-reset").addEventListener("click", function () {
      kindSel.value = ""; sevSel.value = ""; search.value = ""; win = null;
      applyFilters(true);
    });
  }
  window.addEventListener("popstate", restore);
  window.addEventListener("hashchange", restore);

  // ------------------------------------------------------------------ print: every shown timeline, page wide
  function prepareForPrint() {
    var todo = plots.filter(function (d) { return !d.closest(".hidden"); });
    return Promise.all(todo.map(function (d) {
      return render(d, PRINT_WIDTH).then(function () {
        return Plotly.relayout(d, {width: PRINT_WIDTH, autosize: false});
      }).then(function () { d.setAttribute("data-printed", "1"); });
    }));
  }
  function afterPrint() {
    plots.forEach(function (d) {
      if (d.getAttribute("data-printed")) {
        d.removeAttribute("data-printed");
        Plotly.relayout(d, {width: null, autosize: true});
      }
    });
  }
  window.leaselogPrepareForPrint = prepareForPrint;
  window.addEventListener("beforeprint", prepareForPrint);
  window.addEventListener("afterprint", afterPrint);

  // the worst job's timeline is on the first screen: draw it before anything else, then write the list
  // performance marks (DevTools, benchmarks): the table unpacked, the first timeline drawn, the list written
  var ready = first ? render(first) : Promise.resolve();
  var list = document.getElementById("findings-list");
  ready.then(function () {
    // after the frame that shows it
    return new Promise(function (resolve) {
      requestAnimationFrame(function () { performance.mark("leaselog-first-figure"); setTimeout(resolve, 0); });
    });
  }).then(function () { watchTheOthers(); return table(); }).then(function (t) {
    performance.mark("leaselog-table");
    learn(t);
    return list ? leaselogFindings.write(t, list, written) : null;
  }).then(function () {
    performance.mark("leaselog-listed");
    restore();
    document.body.setAttribute("data-ready", "1");
  });
})();
