"""The HTML timeline report and its plotly figures: content, escaping, caps, and a real headless chromium."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import leaselog
from helpers import SAMPLES, jsonl
from leaselog.cli import main
from leaselog.render.figures import overview_figure, timeline_figure
from leaselog.render.html import embed_json, write_report

CHROMIUM = "/usr/bin/chromium"
GEN_FLEET = Path(__file__).resolve().parents[1] / "bench" / "gen_fleet.py"

XSS_IMG = '<img src=x onerror="window.__pwned=1;alert(1)">'
XSS_SCRIPT = "</script><script>window.__pwned2=1;alert(2)</script><!--"


def _t(seconds: float) -> str:
    whole = int(seconds)
    return f"2026-11-02T10:{whole // 60:02d}:{whole % 60:02d}.{round((seconds - whole) * 1000):03d}Z"


def _run(
    job: str,
    ex: str,
    pod: str,
    start: float,
    end: float | None,
    ttl_ms: int = 10_000,
    renewals: list[tuple[float, str]] | None = None,
    message: str = "ok",
) -> list[dict[str, Any]]:
    """One execution in the article's flat JSON: acquire, start, renewals, finish + release (unless open)."""
    base = {"jobId": job, "executionId": ex, "pod": pod}
    rows = [
        {"ts": _t(start), **base, "event": "lock_acquired", "leaseMs": ttl_ms, "message": message},
        {"ts": _t(start + 0.002), **base, "event": "job_started", "message": message},
    ]
    for at, outcome in renewals or []:
        rows.append(
            {"ts": _t(at), **base, "event": "lease_renewal", "renewalOutcome": outcome, "latencyMs": 12}
        )
    if end is not None:
        rows.append({"ts": _t(end), **base, "event": "job_finished", "status": "ok", "message": message})
        rows.append({"ts": _t(end + 0.005), **base, "event": "lock_released", "released": True})
    return rows


def _incident() -> leaselog.Analysis:
    return leaselog.analyze(SAMPLES / "article-incident")


def _layout(fig: Any) -> dict[str, Any]:
    return fig.to_plotly_json()["layout"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------------ figures


def test_article_incident_timeline_reads_at_a_glance() -> None:
    fig = timeline_figure(_incident(), "report-42")
    by_name = {t.name: t for t in fig.data}
    layout = _layout(fig)
    assert layout["yaxis"]["ticktext"][:2] == ["pod-a · attempt-a", "pod-b · attempt-b"]
    # lease and execution are separate bar traces, one bar per execution each
    assert len(by_name["lease (lock held)"].y) == 2
    assert len(by_name["execution (with lease)"].y) == 2
    # A's lease ends at 10:10:00.000; the part of A after it is drawn as running without a lease
    zombie = by_name["execution without lease"]
    assert list(zombie.base) == ["2026-11-02 10:10:00.000000"]
    assert list(zombie.x) == [pytest.approx(151_900)]
    texts = [a["text"] for a in layout["annotations"]]
    assert "◀ lease expired 10:10:00.000" in texts
    assert "<b>still running without lease: 2m31.9s</b>" in texts
    assert "<b>overlap 2m31.5s</b>" in texts
    assert "acquired 10:10:00.400 ▶" in texts
    overlap = [s for s in layout["shapes"] if s.get("name") == "overlap"]
    assert len(overlap) == 1
    assert overlap[0]["x0"].startswith("2026-11-02 10:10:00.402")
    assert overlap[0]["x1"].startswith("2026-11-02 10:12:31.9")
    # markers carry the raw fields and file:line in their hover
    released = by_name["released"]
    assert any("pod-a.jsonl:11" in h and "release_deleted_0" in h for h in released.hovertext)
    assert any(
        '"message": "release_deleted_0"' in h or '"message":"release_deleted_0"' in h
        for h in released.hovertext
    )
    assert not any("&quot;" in h for h in released.hovertext)  # plotly would show that entity verbatim


def test_timeline_of_unknown_job_says_so() -> None:
    fig = timeline_figure(_incident(), "no-such-job")
    assert len(fig.data) == 0
    assert "no executions" in _layout(fig)["annotations"][0]["text"]


def test_open_execution_is_drawn_open_ended(tmp_path: Path) -> None:
    rows = _run("job-open", "run-a", "pod-a", 0, None, ttl_ms=2000) + _run("job-open", "run-b", "pod-b", 5, 8)
    jsonl(tmp_path / "log.jsonl", rows)
    a = leaselog.analyze(tmp_path / "log.jsonl")
    fig = timeline_figure(a, "job-open")
    names = {t.name for t in fig.data}
    assert "open end (log stops)" in names
    assert any("log ends" in ann["text"] for ann in _layout(fig)["annotations"])
    # a finished one is not drawn open
    fig_done = timeline_figure(_incident(), "report-42")
    assert "open end (log stops)" not in {t.name for t in fig_done.data}


def test_renewals_are_coloured_by_outcome(tmp_path: Path) -> None:
    rows = _run(
        "job-renew",
        "run-a",
        "pod-a",
        0,
        30,
        ttl_ms=10_000,
        renewals=[(4, "success"), (8, "rejected"), (9, "timeout"), (9.5, "error")],
    )
    jsonl(tmp_path / "log.jsonl", rows)
    fig = timeline_figure(leaselog.analyze(tmp_path / "log.jsonl"), "job-renew")
    by_name = {t.name: t for t in fig.data}
    for outcome, colour in (
        ("success", "#2da44e"),
        ("rejected", "#cf222e"),
        ("timeout", "#fb8500"),
        ("error", "#8250df"),
    ):
        trace = by_name[f"renewal: {outcome}"]
        assert len(trace.x) == 1
        assert trace.marker.color == colour


def test_routine_markers_are_thinned_but_failures_kept(tmp_path: Path) -> None:
    renewals = [(0.5 + i * 0.05, "success") for i in range(5000)] + [(251.0, "rejected")]
    jsonl(
        tmp_path / "log.jsonl", _run("job-busy", "run-a", "pod-a", 0, 260, ttl_ms=10_000, renewals=renewals)
    )
    fig = timeline_figure(leaselog.analyze(tmp_path / "log.jsonl"), "job-busy")
    by_name = {t.name: t for t in fig.data}
    assert len(by_name["renewal: rejected"].x) == 1  # never thinned
    assert 1000 < len(by_name["renewal: success"].x) < 2000
    assert any("5,000 routine markers" in a["text"] for a in _layout(fig)["annotations"])


def test_lanes_are_capped_keeping_the_executions_findings_name(tmp_path: Path) -> None:
    rows = [r for i in range(60) for r in _run("nightly", f"run-{i:02d}", "pod-a", i * 10, i * 10 + 5)]
    rows += _run("nightly", "run-late", "pod-b", 700, 720, ttl_ms=3000)  # the one that outlives its lease
    jsonl(tmp_path / "log.jsonl", rows)
    a = leaselog.analyze(tmp_path / "log.jsonl")
    named = {x for f in a.finding_list if f.job_id == "nightly" for x in f.execution_ids}
    assert "run-late" in named
    layout = _layout(timeline_figure(a, "nightly"))
    assert len(layout["yaxis"]["ticktext"]) <= 41  # 40 lanes (+ the findings row)
    assert "pod-b · run-late" in layout["yaxis"]["ticktext"]
    assert "showing 40 of 61 executions" in layout["title"]["text"]


def test_no_wall_clock_timeline_uses_a_numeric_axis() -> None:
    a = leaselog.analyze(SAMPLES / "article-demo", lease_ttl_ms="5s")
    job = a.executions["job_id"][0]
    layout = _layout(timeline_figure(a, job))
    assert layout["xaxis"]["type"] == "linear"
    assert "no wall clock" in layout["title"]["text"]


def test_a_job_mixing_wall_clock_and_log_order_gets_two_panels(tmp_path: Path) -> None:
    jsonl(tmp_path / "wall.jsonl", _run("job-mix", "w1", "pod-a", 0, 5, ttl_ms=2000))
    (tmp_path / "demo.log").write_text(
        "jobId=job-mix executionId=o1 pod=B event=acquired elapsedMs=0\n"
        "jobId=job-mix executionId=o1 pod=B event=finished elapsedMs=900\n"
    )
    a = leaselog.analyze(tmp_path, lease_ttl_ms="5s")
    fs = [f for f in a.finding_list if f.job_id == "job-mix"]
    assert fs  # w1 outlived its 2s lease
    layout = _layout(timeline_figure(a, "job-mix"))
    assert layout["xaxis"]["type"] == "date" and layout["xaxis2"]["type"] == "linear"
    assert layout["yaxis"]["ticktext"][0] == "pod-a · w1" and layout["yaxis2"]["ticktext"][0] == "B · o1"
    assert any("no wall clock" in an["text"] for an in layout["annotations"])
    refs = layout["meta"]["findings"]
    assert len(refs) == len(fs)
    for f, ref in zip(fs, refs, strict=True):  # each finding is linked into the panel of its executions
        assert ref is not None and ref[0] == ("x" if "w1" in f.execution_ids else "x2")


def test_overview_aggregates_instead_of_drawing_each_execution() -> None:
    a = leaselog.analyze(SAMPLES / "clean")
    fig = overview_figure(a)
    running = next(t for t in fig.data if t.name == "executions running")
    assert len(running.x) == 240  # buckets, however many executions
    assert max(running.y) >= 1
    assert not [
        t for t in fig.data if t.name == "overlapping execution pairs (right axis)"
    ]  # clean: nothing overlapped
    inc = overview_figure(_incident())
    pairs = next(t for t in inc.data if t.name == "overlapping execution pairs (right axis)")
    assert max(pairs.y) == 1


def test_embed_json_cannot_close_the_script_element() -> None:
    text = embed_json({"m": XSS_SCRIPT, "n": "a\u2028b & <!-- c"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"m": XSS_SCRIPT, "n": "a\u2028b & <!-- c"}


# ------------------------------------------------------------------------------------------ the file


def _xss_logs(folder: Path) -> Path:
    job = f"job-{XSS_IMG}"
    rows_a = _run(job, f"a-{XSS_SCRIPT}", XSS_IMG, 0, 6, ttl_ms=2000, message=XSS_SCRIPT)
    rows_b = _run(job, "b-run", "pod-b", 3, 8, ttl_ms=2000, message=XSS_IMG)
    jsonl(folder / f"{XSS_IMG}.jsonl", rows_a)  # a file name is log text too
    jsonl(folder / "pod-b.jsonl", rows_b)
    (folder / "pod-b.jsonl").open("a").write('{"jobId": "<b>bold</b>", "ts": \n')  # a malformed lease line
    return folder


def test_report_contents_and_escaping(tmp_path: Path) -> None:
    a = leaselog.analyze(_xss_logs(tmp_path / "logs"))
    assert {f.kind for f in a.finding_list} >= {"overlapping_executions", "lease_outlived"}
    out = tmp_path / "r.html"
    write_report(a, out)
    text = out.read_text(encoding="utf-8")
    for raw in (XSS_IMG, XSS_SCRIPT, "<img", "<b>bold", "window.__pwned2=1;alert(2)</script>"):
        assert raw not in text
    assert "&lt;img src=x onerror=&quot;window.__pwned=1;alert(1)&quot;&gt;" in text
    assert text.count("<script") == 3  # plotly.js once, the data block, the app
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert "malformed" in text


def test_report_header_and_findings_for_the_article_incident(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(_incident(), out)
    text = out.read_text(encoding="utf-8")
    assert str(SAMPLES / "article-incident" / "pod-a.jsonl") in text  # the input as it was named
    assert "2026-11-02T10:00:00.000Z → 2026-11-02T10:16:40.010Z UTC" in text
    for kind in ("overlapping_executions", "lease_outlived", "stale_release"):
        assert kind in text
    assert "Timelines (1 of 1)" in text
    assert 'class="chip sev-error" data-kind="overlapping_executions">overlapping_executions <b>1</b>' in text
    assert '<a href="#job-0" class="joblink" data-job="0">report-42</a></td><td class=n>2m31.5s</td>' in text
    assert "<td>pod-a, pod-b</td>" in text  # most overlapping jobs, with the pods involved
    assert 'href="#job-0"' in text and 'class="goto"' in text
    assert "pod-a.jsonl:10</code> attempt-a last seen / ends" in text


def test_report_without_findings_or_events(tmp_path: Path) -> None:
    clean = tmp_path / "clean.html"
    write_report(leaselog.analyze(SAMPLES / "clean"), clean)
    text = clean.read_text(encoding="utf-8")
    assert "No findings" in text and "no timeline is drawn" in text
    jsonl(tmp_path / "noise.jsonl", [{"ts": _t(1), "message": "GET /health 200"}])
    empty = tmp_path / "empty.html"
    a = leaselog.analyze(tmp_path / "noise.jsonl")
    write_report(a, empty)
    assert "no lease events" in empty.read_text(encoding="utf-8")
    assert len(overview_figure(a).data) == 0


def test_timelines_are_capped_with_a_note(tmp_path: Path) -> None:
    rows = []
    for j in range(3):  # three jobs, each with two overlapping executions
        rows += _run(f"job-{j}", f"a{j}", "pod-a", 20 * j, 20 * j + 8, ttl_ms=3000)
        rows += _run(f"job-{j}", f"b{j}", "pod-b", 20 * j + 4, 20 * j + 10, ttl_ms=3000)
    jsonl(tmp_path / "log.jsonl", rows)
    a = leaselog.analyze(tmp_path / "log.jsonl")
    out = tmp_path / "r.html"
    write_report(a, out, max_timelines=2, max_findings=1)
    text = out.read_text(encoding="utf-8")
    assert "Showing 2 of 3 jobs with findings" in text
    assert 'id="job-1"' in text and 'id="job-2"' not in text
    assert f"Showing 1 of {len(a.finding_list)} findings" in text


def test_cli_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert main(["analyze", str(SAMPLES / "article-incident"), "--html", str(out), "-q"]) == 0
    assert out.stat().st_size > 1_000_000  # plotly.js is inlined: the file works offline


# ------------------------------------------------------------------------------------------ chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
            ],
        )
        yield b
        b.close()


class Opened:
    """A report open in a page, with everything that would be a problem recorded."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.console_errors.append(str(exc)))
        self.page.on("request", lambda r: self.requests.append(r.url))

        def on_dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", on_dialog)
        t0 = time.perf_counter()
        self.page.goto(path.resolve().as_uri(), wait_until="load")
        self.page.wait_for_selector("#overview-plot[data-rendered]", timeout=60_000)
        self.load_s = time.perf_counter() - t0

    def show(self, k: int) -> None:
        self.page.locator(f"#job-{k}").scroll_into_view_if_needed()
        self.page.wait_for_selector(f"#plot-{k}[data-rendered]", timeout=30_000)

    def network(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(("file:", "data:", "blob:"))]

    def assert_clean(self) -> None:
        assert self.console_errors == []
        assert self.network() == []
        assert self.dialogs == []
        assert [u for u in self.requests if u.startswith("file:")] == [self.page.url.split("#")[0]]


@pytest.mark.browser
def test_browser_article_incident(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(_incident(), out)
    o = Opened(browser, out)
    o.show(0)
    info = o.page.evaluate("""() => {
        const d = document.getElementById('plot-0');
        return {names: d.data.map(t => t.name), ticks: d.layout.yaxis.ticktext,
                shapes: d.layout.shapes.map(s => s.name || ''),
                bars: d.querySelectorAll('.barlayer .point').length,
                texts: Array.from(d.querySelectorAll('.annotation-text')).map(t => t.textContent)};
    }""")
    assert "pod-a · attempt-a" in info["ticks"] and "pod-b · attempt-b" in info["ticks"]
    assert {"lease (lock held)", "execution (with lease)", "execution without lease"} <= set(info["names"])
    assert "overlap" in info["shapes"]
    assert info["bars"] >= 5  # 2 leases, 2 executions, 1 zombie segment actually drawn as SVG
    assert "overlap 2m31.5s" in info["texts"]
    assert "still running without lease: 2m31.9s" in info["texts"]
    # hover shows the raw fields and file:line (here: A's finish marker)
    finished = o.page.evaluate(
        "() => document.getElementById('plot-0').data.filter(t => t.type === 'scatter')"
        ".findIndex(t => t.name === 'finished')"
    )
    box = (
        o.page.locator("#plot-0 .scatterlayer .trace")
        .nth(finished)
        .locator("path.point")
        .first.bounding_box()
    )
    assert box is not None
    o.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tip = o.page.locator("#plot-0 .hoverlayer .hovertext").first
    tip.wait_for(timeout=5_000)
    hover = tip.text_content() or ""
    # A's finish and its release 5ms later share a pixel: either one's raw fields and file:line will do
    assert re.search(r"article-incident/pod-a\.jsonl:1[01]", hover) and '"pod":"pod-a"' in hover
    # the finding's link scrolls to the timeline and highlights the moment it describes
    o.page.click("li.finding:has-text('LL101') a.goto")
    o.page.wait_for_selector("#plot-0[data-highlighted]", timeout=10_000)
    hl = o.page.evaluate(
        "() => document.getElementById('plot-0').layout.shapes.filter(s => s.name === 'highlight')"
    )
    assert len(hl) == 1 and hl[0]["x0"].startswith("2026-11-02 10:10:00.402")
    assert o.page.locator("li.finding.selected").count() == 1
    # a kind chip in the header filters the findings list to that kind
    o.page.click("a.chip[data-kind='stale_release']")
    assert o.page.locator("li.finding:visible").count() == 1
    assert o.page.locator("li.finding:visible").get_attribute("data-kind") == "stale_release"
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_browser_xss_payload_stays_text(browser: Any, tmp_path: Path) -> None:
    a = leaselog.analyze(_xss_logs(tmp_path / "logs"))
    out = tmp_path / "r.html"
    write_report(a, out)
    o = Opened(browser, out)
    o.show(0)
    o.page.locator("details").first.evaluate("d => d.open = true")
    body = o.page.inner_text("body")
    assert XSS_IMG in body  # shown as the text it is
    assert o.page.evaluate("() => [window.__pwned, window.__pwned2]") == [None, None]
    assert o.page.evaluate("() => document.querySelectorAll('img').length") == 0
    assert o.page.evaluate("() => document.scripts.length") == 3
    ticks = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('#plot-0 .ytick text')).map(t => t.textContent).join(' ')"
    )
    assert "<img src=x" in ticks  # plotly shows it as text, too
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_browser_fleet_scale(browser: Any, tmp_path: Path) -> None:
    log = tmp_path / "fleet.jsonl"
    subprocess.run(
        [sys.executable, str(GEN_FLEET), "--jobs", "3000", "--out", str(log)], check=True, capture_output=True
    )
    a = leaselog.analyze(log)
    jobs_with_findings = a.findings["job_id"].drop_nulls().n_unique()
    assert jobs_with_findings > 20
    out = tmp_path / "r.html"
    t0 = time.perf_counter()
    write_report(a, out, max_timelines=20)
    assert time.perf_counter() - t0 < 20
    assert out.stat().st_size < 8_000_000
    o = Opened(browser, out)
    assert o.load_s < 20
    assert f"Showing 20 of {jobs_with_findings:,} jobs with findings" in o.page.inner_text("#timeline-note")
    # lazily drawn: far-away timelines are not drawn on open, and are when scrolled to
    assert o.page.locator("#plot-19[data-rendered]").count() == 0
    o.show(19)
    assert o.page.evaluate("() => document.getElementById('plot-19').data.length") >= 3
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_screenshot_script(browser: Any, tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    png = tmp_path / "job.png"
    r = subprocess.run(
        [
            sys.executable,
            str(root / "scripts" / "screenshot.py"),
            str(SAMPLES / "article-incident"),
            "-o",
            str(png),
            "--selector",
            "#job-0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_is_the_same_bytes_each_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # kinds with as many findings as each other used to come out in group-by order, differing run to run;
    # the header's build time follows SOURCE_DATE_EPOCH, so three builds straddling a minute still agree
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1794124800")
    reports = []
    for i in range(3):
        out = tmp_path / f"r{i}.html"
        write_report(leaselog.analyze(SAMPLES, lease_ttl="5s"), out)
        reports.append(out.read_bytes())
    assert reports[0] == reports[1] == reports[2]
    assert b"generated 2026-11-08 08:00 UTC" in reports[0]
