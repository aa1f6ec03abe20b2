(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("leaselog-data").textContent);
  var config = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"]};
  function spec(div) {
    var k = div.getAttribute("data-fig");
    return k === "overview" ? data.overview : data.figures[+k];
  }
  function render(div) {
    if (div._leaselog) { return div._leaselog; }
    var s = spec(div);
    div._leaselog = Plotly.newPlot(div, s.data, s.layout, config).then(function () {
      div.setAttribute("data-rendered", "1");
      return div;
    });
    return div._leaselog;
  }
  // the overview is one aggregated figure: draw it at once; timelines as they come near the viewport
  render(document.getElementById("overview-plot"));
  var plots = document.querySelectorAll("div.plot");
  if ("IntersectionObserver" in window) {
    var io = new IntersectionObserver(function (entries) {
      entries.forEach(function (en) {
        if (en.isIntersecting) { io.unobserve(en.target); render(en.target); }
      });
    }, {rootMargin: "600px 0px"});
    plots.forEach(function (d) { if (d.id !== "overview-plot") { io.observe(d); } });
  } else {
    plots.forEach(render);
  }
  function highlight(fid) {
    var ref = data.findings[fid];
    if (!ref || ref[0] < 0) { return; }  // [job, x0, x1, xref] or [-1] when the job is not drawn
    var div = document.getElementById("plot-" + ref[0]);
    document.querySelectorAll("li.finding.selected").forEach(function (li) { li.classList.remove("selected"); });
    var li = document.getElementById("f-" + fid);
    if (li) { li.classList.add("selected"); }
    var art = div.closest("article");
    art.scrollIntoView({block: "start"});
    render(div).then(function () {
      var base = (data.figures[ref[0]].layout.shapes || []).slice();
      var xref = ref[3], yref = "y" + xref.slice(1) + " domain";
      var mark = ref[1] === ref[2]
        ? {type: "line", xref: xref, yref: yref, x0: ref[1], x1: ref[2], y0: 0, y1: 1,
           line: {color: "#d4a72c", width: 4}, name: "highlight"}
        : {type: "rect", xref: xref, yref: yref, x0: ref[1], x1: ref[2], y0: 0, y1: 1,
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
    history.replaceState(null, "", "#f-" + fid);
    highlight(fid);
  });
  function applyFilters() {
    var kind = document.getElementById("kind-filter").value;
    var sev = document.getElementById("sev-filter").value;
    var shown = 0;
    document.querySelectorAll("li.finding").forEach(function (li) {
      var ok = (!kind || li.getAttribute("data-kind") === kind) && (!sev || li.getAttribute("data-sev") === sev);
      li.classList.toggle("hidden", !ok);
      if (ok) { shown += 1; }
    });
    document.querySelectorAll("div.jobgroup").forEach(function (g) {
      g.classList.toggle("hidden", !g.querySelector("li.finding:not(.hidden)"));
    });
    document.getElementById("filter-count").textContent = (kind || sev) ? shown + " shown" : "";
  }
  document.querySelectorAll("a.chip").forEach(function (chip) {
    chip.addEventListener("click", function () {
      document.getElementById("kind-filter").value = chip.getAttribute("data-kind");
      document.getElementById("sev-filter").value = "";
      applyFilters();
    });
  });
  ["kind-filter", "sev-filter"].forEach(function (id) {
    var el = document.getElementById(id);
    if (el) { el.addEventListener("change", applyFilters); }
  });
  var m = /^#f-(\d+)$/.exec(location.hash);
  if (m) { highlight(+m[1]); }
})();
