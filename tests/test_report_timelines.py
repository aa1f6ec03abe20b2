"""The report draws each timeline in the browser from its columnar table: the figure it draws is the one the
Python figure code (`leaselog.timeline`) makes, trace for trace, label for label, in real Chromium."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import leaselog
from helpers import SAMPLES, jsonl
from leaselog.render.figures import timeline_spec
from leaselog.render.html import write_report
from test_html_report import CHROMIUM, GEN_FLEET, Opened, _run, _xss_logs

# the report's table, unpacked as the page unpacks it, and every timeline drawn from it
DRAW_ALL = """async () => {
    const data = JSON.parse(document.getElementById('leaselog-data').textContent);
    const unpack = async (b64) => {
        const bin = atob(b64), bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
        const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
        return await new Response(stream).json();
    };
    const table = await unpack(data.table), first = await unpack(data.first);
    return {jobs: table.jobs, figures: table.jobs.map((_, k) => leaselogTimeline.spec(table, k)),
            first: first.jobs, firstFigure: leaselogTimeline.spec(first, 0)};
}"""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _python_figure(a: leaselog.Analysis, job: str) -> Any:
    ex = a.executions.filter(pl.col("job_id") == job)
    ev = a.events.filter(pl.col("job_id") == job)
    rn = a.renewals.filter(pl.col("job_id") == job) if a.renewals.height else None
    fs = [f for f in a.finding_list if f.job_id == job]
    return orjson.loads(orjson.dumps(timeline_spec(job, ex, ev, fs, rn, title=False)))


def _same(py: Any, js: Any, where: str = "") -> list[str]:
    """Where the two figures differ (numbers to 1e-9, relative)."""
    if isinstance(py, dict) and isinstance(js, dict):
        out = [f"{where}.{k}: only in Python" for k in py.keys() - js.keys()]
        out += [f"{where}.{k}: only in the page" for k in js.keys() - py.keys()]
        for k in py.keys() & js.keys():
            out += _same(py[k], js[k], f"{where}.{k}")
        return out
    if isinstance(py, list) and isinstance(js, list):
        if len(py) != len(js):
            return [f"{where}: {len(py)} items in Python, {len(js)} in the page"]
        return [d for i, (p, j) in enumerate(zip(py, js, strict=True)) for d in _same(p, j, f"{where}[{i}]")]
    if isinstance(py, int | float) and isinstance(js, int | float) and not isinstance(py, bool):
        return [] if math.isclose(py, js, rel_tol=1e-9, abs_tol=1e-9) else [f"{where}: {py!r} != {js!r}"]
    return [] if py == js else [f"{where}: {py!r} != {js!r}"]


def _compare(browser: Any, a: leaselog.Analysis, out: Path, at_least: int = 1) -> int:
    write_report(a, out)
    o = Opened(browser, out)
    drawn = o.page.evaluate(DRAW_ALL)
    assert len(drawn["jobs"]) >= at_least
    # the first screen's timeline, drawn from its own small table, is the same figure
    assert drawn["first"] == drawn["jobs"][:1] and drawn["firstFigure"] == drawn["figures"][0]
    for job, js in zip(drawn["jobs"], drawn["figures"], strict=True):
        diff = _same(_python_figure(a, job), js)
        assert not diff, (job, diff[:8])
    o.assert_clean()
    o.page.close()
    return len(drawn["jobs"])


@pytest.mark.browser
def test_every_sample_timeline_is_drawn_as_the_python_figure(chromium: Any, tmp_path: Path) -> None:
    # article incident, demo logs without wall clock, every log shape, crashes, failovers, renewals
    assert _compare(chromium, leaselog.analyze(SAMPLES, lease_ttl="5s"), tmp_path / "r.html", 10) >= 10


@pytest.mark.browser
def test_edge_timelines_are_drawn_as_the_python_figure(chromium: Any, tmp_path: Path) -> None:
    rows = _run("job-open", "run-a", "pod-a", 0, None, ttl_ms=2000) + _run("job-open", "run-b", "pod-b", 5, 8)
    # thinned routine markers (5 000 renewals), and a rejected one never thinned
    busy = [(0.5 + i * 0.05, "success") for i in range(5000)] + [(251.0, "rejected")]
    rows += _run("job-busy", "run-a", "pod-a", 0, 260, ttl_ms=10_000, renewals=busy)
    # more executions than lanes: those the findings name first
    rows += [r for i in range(60) for r in _run("nightly", f"run-{i:02d}", "pod-a", i * 10, i * 10 + 5)]
    rows += _run("nightly", "run-late", "pod-b", 700, 720, ttl_ms=3000)
    # a 7 ms overlap in a ten-minute job: widened band, spread markers
    rows += _run("tiny", "run-a", "pod-a", 0, 300.0, ttl_ms=299_993) + _run(
        "tiny", "run-b", "pod-b", 299.993, 600
    )
    jsonl(tmp_path / "logs" / "wall.jsonl", rows)
    # one job on two clocks: two panels
    jsonl(tmp_path / "logs" / "mix.jsonl", _run("job-mix", "w1", "pod-a", 0, 5, ttl_ms=2000))
    (tmp_path / "logs" / "demo.log").write_text(
        "jobId=job-mix executionId=o1 pod=B event=acquired elapsedMs=0\n"
        "jobId=job-mix executionId=o1 pod=B event=finished elapsedMs=900\n"
    )
    a = leaselog.analyze(tmp_path / "logs", lease_ttl_ms="5s")
    assert _compare(chromium, a, tmp_path / "r.html", 4) >= 4


@pytest.mark.browser
def test_log_text_timelines_are_drawn_as_the_python_figure(chromium: Any, tmp_path: Path) -> None:
    _compare(chromium, leaselog.analyze(_xss_logs(tmp_path / "logs")), tmp_path / "r.html")


@pytest.mark.browser
def test_fleet_timelines_are_drawn_as_the_python_figure(chromium: Any, tmp_path: Path) -> None:
    log = tmp_path / "fleet.jsonl"
    subprocess.run(
        [sys.executable, str(GEN_FLEET), "--jobs", "600", "--out", str(log)], check=True, capture_output=True
    )
    assert _compare(chromium, leaselog.analyze(log), tmp_path / "r.html", 30) >= 30


@pytest.mark.browser
def test_the_written_list_keeps_control_characters_and_markup_inert(chromium: Any, tmp_path: Path) -> None:
    forged = "report-42\x1b[2J\x1b[32mNo findings.\x1b]8;;http://evil\x07x\x1b]8;;\x07\u202e<b>x</b>"
    rows = _run(forged, "a", "pod-\x1b[31ma", 0, 6, ttl_ms=2000) + _run(
        forged, "b", "pod-b", 3, 8, ttl_ms=2000
    )
    jsonl(tmp_path / "log.jsonl", rows)
    out = tmp_path / "r.html"
    write_report(leaselog.analyze(tmp_path / "log.jsonl"), out)
    o = Opened(chromium, out)
    listed = o.page.inner_html("#findings-list")
    assert o.page.locator("li.finding").count() >= 2
    assert "\x1b" not in listed and "\u202e" not in listed and "<b>x</b>" not in listed
    text = o.page.text_content("#findings-list") or ""
    assert "report-42\\x1b[2J\\x1b[32mNo findings." in text and "\\u202e<b>x</b>" in text
    assert "pod-\\x1b[31ma" in text
    assert o.page.locator('a[href^="http://evil"]').count() == 0
    o.assert_clean()
    o.page.close()
