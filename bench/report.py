#!/usr/bin/env python3
"""The HTML report on a synthetic fleet, beside another version of leaselog's in the same run: file size,
time to write it, and in headless Chromium the time until the first timeline is drawn and until the page is
ready (every finding listed), then how quickly the job search answers and the last timeline is drawn when
scrolled to. `*_mark_s` are the page's own clock (seconds since navigation began), `*_wall_s` include
Playwright opening the page. With `--runs N`, each figure is the median of N runs.

    python bench/report.py --baseline v0.9                   # 20 000 jobs, this tree beside v0.9's report
    python bench/report.py --jobs 200000                     # this tree only
    python bench/report.py --baseline HEAD~3 --chromium /usr/bin/chromium --out figures.json

The fleet comes from bench/gen_fleet.py (into bench/data/, git-ignored, once). The other version is
`git archive <baseline> src` of this repository, unpacked into a temporary folder; each version analyzes and
writes in its own process (the analysis is not timed, only write_report). Chromium: Playwright driving the
given executable (none is downloaded); each report opens in a fresh page, 1440x900.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT / "bench" / "gen_fleet.py"

WRITE = """
import json, sys, time
import leaselog
from leaselog.render.html import write_report
a = leaselog.analyze(sys.argv[1])
t0 = time.perf_counter()
write_report(a, sys.argv[2])
print(json.dumps({"write_s": time.perf_counter() - t0, "findings": a.findings.height,
                  "executions": a.executions.height}))
"""


def _fleet(jobs: int) -> Path:
    out = ROOT / "bench" / "data" / f"report-fleet-{jobs}.jsonl"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(GEN), "--jobs", str(jobs), "--out", str(out)], check=True)
    return out


def _source(ref: str, into: Path) -> Path:
    """`src/` of `ref`, unpacked into `into`."""
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "src"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into / "src"


def _write(src: Path, log: Path, html: Path) -> dict[str, Any]:
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": "1794124800"}
    got = subprocess.run(
        [sys.executable, "-c", WRITE, str(log), str(html)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    facts: dict[str, Any] = json.loads(got.stdout.strip().splitlines()[-1])
    facts["size_mb"] = html.stat().st_size / 1e6
    return facts


# the page's own clock (ms since navigation began) when the first timeline is drawn and when the page is
# ready, for any version of the report (both set these attributes)
WATCH = """
new MutationObserver(() => {
  const d = document.getElementById('plot-0');
  if (d && d.hasAttribute('data-rendered') && !window.__firstFigure) { window.__firstFigure = performance.now(); }
  if (document.body && document.body.hasAttribute('data-ready') && !window.__ready) { window.__ready = performance.now(); }
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-rendered', 'data-ready']});
"""


def _browse(browser: Any, html: Path, search: str) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.add_init_script(WATCH)
    t0 = time.perf_counter()
    page.goto(html.resolve().as_uri(), wait_until="commit")
    page.wait_for_selector("#plot-0[data-rendered]", timeout=600_000)
    first = time.perf_counter() - t0
    page.wait_for_selector("body[data-ready]", timeout=600_000)
    ready = time.perf_counter() - t0
    listed = page.evaluate("() => document.querySelectorAll('li.finding').length")
    # the page's own clock, from the start of navigation (this tree's report marks its steps too)
    marks = page.evaluate(
        "() => Object.fromEntries(performance.getEntriesByType('mark').map(m => [m.name, m.startTime / 1000]))"
    )
    marks["page-first-figure"] = page.evaluate("() => window.__firstFigure / 1000")
    marks["page-ready"] = page.evaluate("() => window.__ready / 1000")
    nav = page.evaluate(
        "() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {dom_s: n.domInteractive / 1000, load_s: n.loadEventEnd / 1000}; }"
    )
    # the job search: type, and wait until the count says what is shown
    t1 = time.perf_counter()
    page.fill("#job-search", search)
    page.wait_for_function("() => /shown/.test(document.getElementById('filter-count').textContent)")
    searched = time.perf_counter() - t1
    # scrolling to the last timeline draws it
    t2 = time.perf_counter()
    last = page.evaluate("() => document.querySelectorAll('article.job').length") - 1
    page.fill("#job-search", "")
    page.locator(f"#job-{last}").scroll_into_view_if_needed()
    page.wait_for_selector(f"#plot-{last}[data-rendered]", timeout=600_000)
    scrolled = time.perf_counter() - t2
    page.close()
    return {
        **nav,
        **{k.removeprefix("leaselog-").replace("-", "_") + "_mark_s": v for k, v in marks.items()},
        "first_figure_wall_s": first,
        "ready_wall_s": ready,
        "listed": listed,
        "search_s": searched,
        "last_timeline_s": scrolled,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument(
        "--baseline", default="none", help="git ref of the version to compare with (none: only this tree)"
    )
    ap.add_argument(
        "--chromium", default="/usr/bin/chromium", help="the Chromium executable Playwright drives"
    )
    ap.add_argument("--runs", type=int, default=1, help="runs; the median of each figure is reported")
    ap.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    log = _fleet(args.jobs)
    results: dict[str, Any] = {"jobs": args.jobs, "input_mb": log.stat().st_size / 1e6}
    with tempfile.TemporaryDirectory() as tmp:
        versions = {"this tree": ROOT / "src"}
        if args.baseline != "none":
            versions[args.baseline] = _source(args.baseline, Path(tmp) / "baseline")
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in versions}
        for _ in range(args.runs):  # the versions take turns, so a busy spell hits both
            for i, (name, src) in enumerate(versions.items()):
                runs[name].append(_write(src, log, Path(tmp) / f"{i}.html"))
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu"]
                )
                for i, name in enumerate(versions):
                    runs[name][-1] |= _browse(browser, Path(tmp) / f"{i}.html", "report-1234")
                browser.close()
    results["runs"] = args.runs
    results["versions"] = {
        name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
