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
from leaselog.durations import format_duration
from leaselog.render.figures import overview_figure, timeline_figure
from leaselog.render.html import embed_json, write_report
from leaselog.render.overview import kind_colour

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
    # the second attempt's acquire says why it could acquire, and an arrow draws the path from the lease end
    assert (
        "2nd attempt (400ms after lease expired; trigger: <b>unknown</b>) · acquired 10:10:00.400 ▶" in texts
    )
    arrow = next(an for an in layout["annotations"] if an.get("name") == "trigger")
    assert arrow["showarrow"] and arrow["axref"] == "x" and arrow["ax"] == "2026-11-02 10:10:00.000000"
    assert arrow["x"] == "2026-11-02 10:10:00.400000" and arrow["ay"] < arrow["y"]
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
    assert not [t for t in fig.data if t.name == "overlapping execution pairs"]  # clean: nothing overlapped
    inc = overview_figure(_incident())
    pairs = next(t for t in inc.data if t.name == "overlapping execution pairs")
    assert max(pairs.y) == 1
    layout = _layout(inc)
    # pairs in a panel of their own (no second y axis over the running count), counts in whole numbers
    assert pairs.yaxis == "y2" and "overlaying" not in layout["yaxis2"]
    for ax in ("yaxis", "yaxis2", "yaxis3"):
        assert layout[ax]["tickformat"] == "d" and layout[ax]["dtick"] >= 1
    # a kind's bars are in its severity's colour family: LL101 (error) red, LL301 (warning) amber
    bars = {t.name: t.marker.color for t in inc.data if t.type == "bar"}
    family = {s: {kind_colour(s, i) for i in range(6)} for s in ("error", "warning", "info")}
    assert bars["overlapping_executions (error)"] in family["error"] - family["warning"]
    assert bars["lease_outlived (error)"] in family["error"]
    assert bars["stale_release (warning)"] in family["warning"] - family["error"]
    assert len(set(bars.values())) == len(bars)  # kinds of one severity still tell apart


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
    # plotly.js once, the data block (the timelines' table in it), the app
    assert text.count("<script") == 3 and 'id="fig-' not in text
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
    assert "1 timelines: every job with an error finding (1)" in text
    assert '<option value="overlapping_executions">overlapping_executions (1)</option>' in text
    assert '<a href="#job-0" class="joblink" data-job="0">report-42</a></td><td class=n>2m31.5s</td>' in text
    assert "<td>pod-a, pod-b</td>" in text  # most overlapping jobs, with the pods involved
    # the list is written by the page from the report's table: each finding with its timeline and evidence
    listed = report_table(out)["findings"]["columns"]
    ll101 = listed["code"].index("LL101")
    assert listed["goto"][ll101] and listed["timeline"][ll101] == 0
    evidence = zip(
        listed["evidence_file"][ll101],
        listed["evidence_line"][ll101],
        listed["evidence_note"][ll101],
        strict=True,
    )
    assert any(
        f.endswith("pod-a.jsonl") and n == 10 and note == "attempt-a last seen / ends"
        for f, n, note in evidence
    )


def report_table(path: Path) -> Any:
    """The table a report's page writes its findings list and draws its timelines from, unpacked."""
    import base64
    import gzip

    block = re.search(r'<script type="application/json" id="leaselog-data">(.*?)</script>', path.read_text())
    assert block is not None
    return json.loads(gzip.decompress(base64.b64decode(json.loads(block.group(1))["table"])))


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


def test_every_error_job_gets_a_timeline_and_every_finding_is_listed(tmp_path: Path) -> None:
    rows = []
    for j in range(3):  # three jobs, each with two overlapping executions (errors)
        rows += _run(f"job-{j}", f"a{j}", "pod-a", 20 * j, 20 * j + 8, ttl_ms=3000)
        rows += _run(f"job-{j}", f"b{j}", "pod-b", 20 * j + 4, 20 * j + 10, ttl_ms=3000)
    for j in range(3):  # three jobs with a renewal that timed out and nothing worse (warnings)
        rows += _run(
            f"warn-{j}", f"w{j}", "pod-c", 100 + 10 * j, 105 + 10 * j, renewals=[(102 + 10 * j, "timeout")]
        )
    jsonl(tmp_path / "log.jsonl", rows)
    a = leaselog.analyze(tmp_path / "log.jsonl")
    sev = {f.job_id: f.severity for f in a.finding_list if f.job_id and f.job_id.startswith("warn")}
    assert sev == {"warn-0": "warning", "warn-1": "warning", "warn-2": "warning"}
    out = tmp_path / "r.html"
    write_report(a, out, max_other_timelines=1)  # no cap on error jobs, one other
    text = out.read_text(encoding="utf-8")
    drawn = re.findall(r'<article class="job[^"]*" id="job-\d+" data-job="([^"]+)"', text)
    assert (
        sorted(drawn[:3]) == ["job-0", "job-1", "job-2"] and len(drawn) == 4 and drawn[3].startswith("warn-")
    )
    assert "4 timelines: every job with an error finding (3), and 1 of the 3 jobs with only warnings" in text
    listed = report_table(out)["findings"]["columns"]  # the rows the page writes the list from
    assert len(listed["code"]) == len(a.finding_list)  # none dropped
    assert sorted(zip(listed["code"], map(str, listed["job_id"]), strict=True)) == sorted(
        (f.code, str(f.job_id)) for f in a.finding_list
    )
    assert sum(listed["goto"]) == sum(1 for f in a.finding_list if f.job_id in drawn and f.start)
    # the fleet-level advice is on the first screen, whole
    ll701 = next(f for f in a.finding_list if f.code == "LL701")
    assert '<div id="advice">' in text and e_html(ll701.message) in text


def e_html(text: str) -> str:
    import html

    return html.escape(text, quote=True)


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

    def __init__(
        self, browser: Any, path: Path, width: int = 1440, height: int = 900, scheme: str = "light"
    ) -> None:
        self.console_errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page(viewport={"width": width, "height": height}, color_scheme=scheme)
        self.page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.console_errors.append(str(exc)))
        self.page.on("request", lambda r: self.requests.append(r.url))

        def on_dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", on_dialog)
        t0 = time.perf_counter()
        self.page.goto(path.resolve().as_uri(), wait_until="load")
        self.page.wait_for_selector("body[data-ready]", timeout=120_000)
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
    # the list, written by the page: every finding, its evidence file:line, its link to the timeline
    page = o.page.inner_html("#findings-list")
    assert o.page.locator("li.finding").count() == 5
    assert page.count('class="goto"') == 4  # each of report-42's (the fleet-wide LL701 has no timeline)
    assert "pod-a.jsonl:10</code> attempt-a last seen / ends" in page and 'href="#job-0"' in page
    # the kind filter narrows the findings list to that kind
    o.page.select_option("#kind-filter", "stale_release")
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
    # plotly.js, the data block (the timelines' table in it), the app: no other script ever
    assert o.page.evaluate("() => document.scripts.length") == 3
    assert o.page.evaluate("() => Array.from(document.scripts).filter(s => !s.type && !s.id).length") == 2
    ticks = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('#plot-0 .ytick text')).map(t => t.textContent).join(' ')"
    )
    assert "<img src=x" in ticks  # plotly shows it as text, too
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_browser_lazy_timelines_on_a_fleet(browser: Any, tmp_path: Path) -> None:
    log = tmp_path / "fleet.jsonl"
    subprocess.run(
        [sys.executable, str(GEN_FLEET), "--jobs", "3000", "--out", str(log)], check=True, capture_output=True
    )
    a = leaselog.analyze(log)
    out = tmp_path / "r.html"
    t0 = time.perf_counter()
    write_report(a, out, max_other_timelines=20)
    assert time.perf_counter() - t0 < 30
    o = Opened(browser, out)
    assert o.load_s < 30
    n = o.page.locator("article.job").count()
    assert n > 40
    # lazily drawn: far-away timelines are not drawn on open, and are when scrolled to
    assert o.page.locator(f"#plot-{n - 1}[data-rendered]").count() == 0
    assert o.page.locator("div.plot[data-rendered]").count() < 10
    o.show(n - 1)
    assert o.page.evaluate(f"() => document.getElementById('plot-{n - 1}').data.length") >= 3
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


# ------------------------------------------------------------------ the on-call engineer's first screen


def _box(o: Opened, selector: str) -> dict[str, float]:
    box = o.page.locator(selector).first.bounding_box()
    assert box is not None, selector
    return box  # type: ignore[no-any-return]


@pytest.mark.browser
def test_browser_first_screen_answers_the_incident(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(_incident(), out)
    o = Opened(browser, out, 1440, 900)
    # the summary row: the job, its overlap, the zombie, why the second attempt ran, what to change
    row = o.page.locator("#summary-table tbody tr").first
    text = row.inner_text()
    assert "report-42" in text and "2m31.5s" in text
    assert "pod-a · attempt-a ran 2m31.9s without a lease" in text
    assert "attempt-b: trigger unknown, acquired 400ms after the lease ended" in text
    assert "lease 15.0s · renew every 5.0s · max runtime 19m" in text
    assert _box(o, "#summary-table tbody tr")["y"] + _box(o, "#summary-table tbody tr")["height"] < 900
    # the worst job's timeline, drawn, directly under it, with the overlap labelled and the lanes in view
    assert o.page.locator("#plot-0[data-rendered]").count() == 1
    assert o.page.locator("#summary + *, #summary-table").count() >= 1
    overlap = o.page.locator("#plot-0 .annotation-text", has_text="overlap 2m31.5s")
    ob = overlap.bounding_box()
    assert ob is not None and ob["y"] + ob["height"] < 900
    bars = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('#plot-0 .barlayer .point')).map(p => p.getBoundingClientRect().bottom)"
    )
    assert len(bars) >= 5 and max(bars) < 900
    ticks = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('#plot-0 .ytick text')).map(t => t.getBoundingClientRect().bottom)"
    )
    assert ticks and max(ticks) < 900  # both lanes (pod-a · attempt-a, pod-b · attempt-b) on screen
    # the inputs are folded away, below
    assert o.page.evaluate("() => document.getElementById('inputs').open") is False
    assert _box(o, "#inputs")["y"] > 900
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_browser_inputs_flag_problem_files(browser: Any, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    jsonl(logs / "good.jsonl", _run("job-x", "a", "pod-a", 0, 5))
    jsonl(logs / "noise.jsonl", [{"ts": _t(1), "message": "GET /health 200"}])
    (logs / "bad.jsonl").write_text(
        '{"jobId": "job-x", "ts": \n' + json.dumps(_run("job-x", "b", "pod-b", 9, 10)[0]) + "\n"
    )
    out = tmp_path / "r.html"
    write_report(leaselog.analyze(logs), out)
    o = Opened(browser, out)
    summary = o.page.inner_text("#inputs > summary")
    assert "3 file(s)" in summary and "2 with problems" in summary
    o.page.click("#inputs > summary")
    flagged = {
        r.locator("code").inner_text().rsplit("/", 1)[-1]: r.locator(".bad").first.inner_text()
        for r in o.page.locator("#inputs tr.problem").all()
    }
    assert set(flagged) == {"noise.jsonl", "bad.jsonl"}
    assert "no line used" in flagged["noise.jsonl"] and "1 malformed line(s)" in flagged["bad.jsonl"]
    o.assert_clean()
    o.page.close()


def test_provenance_names_version_command_and_hashes(tmp_path: Path) -> None:
    import hashlib
    import html

    from leaselog.render.html import file_facts

    out = tmp_path / "r.html"
    cmd = ["leaselog", "analyze", str(SAMPLES / "article-incident"), "--html", "r <b>.html"]
    write_report(_incident(), out, command=cmd)
    text = out.read_text(encoding="utf-8")
    assert f"leaselog {leaselog.__version__}" in text
    assert html.escape("r <b>.html") in text and "r <b>.html" not in text
    for name in ("pod-a.jsonl", "pod-b.jsonl"):
        data = (SAMPLES / "article-incident" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() in text
        assert f"<td class=n>{len(data):,}</td>" in text
    # above the limit a file is measured, not hashed, and the note says so
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * 2048)
    facts, note = file_facts([str(big)], limit=1024)
    assert facts[str(big)] == (2048, None) and "1 file(s) over" in note
    facts, note = file_facts([str(big)], limit=4096)
    assert facts[str(big)][1] == hashlib.sha256(b"x" * 2048).hexdigest() and "over" not in note


# ------------------------------------------------------------------ a 20 000-job fleet: nothing dropped


@pytest.fixture(scope="module")
def fleet_20k(tmp_path_factory: pytest.TempPathFactory) -> tuple[leaselog.Analysis, Path]:
    d = tmp_path_factory.mktemp("fleet20k")
    log = d / "fleet.jsonl"
    subprocess.run(
        [sys.executable, str(GEN_FLEET), "--jobs", "20000", "--out", str(log)],
        check=True,
        capture_output=True,
    )
    a = leaselog.analyze(log)
    out = d / "r.html"
    write_report(a, out)
    return a, out


@pytest.mark.browser
def test_browser_fleet_of_20000_jobs_drops_nothing(
    browser: Any, fleet_20k: tuple[leaselog.Analysis, Path]
) -> None:
    import polars as pl

    a, out = fleet_20k
    error_jobs = set(a.findings.filter(pl.col("severity") == "error")["job_id"].drop_nulls().to_list())
    assert len(error_jobs) > 1000
    o = Opened(browser, out)
    # LL701's advice, whole, under the summary
    ll701 = a.findings.filter(pl.col("code") == "LL701")["message"].to_list()
    assert ll701 and o.page.inner_text("#advice").count("lease_settings") == len(ll701)
    assert ll701[0][:200] in o.page.inner_text("#advice")
    # a timeline for every job with an error finding
    drawn = set(o.page.eval_on_selector_all("article.job", "els => els.map(e => e.dataset.job)"))
    assert error_jobs <= drawn
    slowest = a.executions.sort("runtime_ms", descending=True, nulls_last=True)["job_id"][0]
    if slowest in {f for f in a.findings["job_id"].to_list() if f}:
        assert slowest in drawn
    # every finding is listed: each filter option's count is the rows it shows
    assert o.page.locator("li.finding").count() == a.findings.height
    for select in ("#kind-filter", "#sev-filter"):
        options = o.page.eval_on_selector_all(
            f"{select} option", "os => os.filter(o => o.value).map(o => [o.value, o.textContent])"
        )
        for value, label in options:
            o.page.select_option(select, value)
            n = int(re.search(r"\(([\d,]+)\)", label).group(1).replace(",", ""))  # type: ignore[union-attr]
            shown = o.page.evaluate("() => document.querySelectorAll('li.finding:not(.hidden)').length")
            assert shown == n, (value, label, shown)
            assert o.page.inner_text("#filter-count").startswith(f"{n} of {a.findings.height} findings shown")
        o.page.select_option(select, "")
    # the filter drives the timelines too: only jobs with a shown finding keep theirs
    o.page.select_option("#kind-filter", "overlapping_executions")
    ov_jobs = set(a.findings.filter(pl.col("kind") == "overlapping_executions")["job_id"].to_list())
    shown_jobs = set(
        o.page.eval_on_selector_all("article.job:not(.hidden)", "els => els.map(e => e.dataset.job)")
    )
    assert shown_jobs == ov_jobs & drawn
    o.assert_clean()
    o.page.close()


# ------------------------------------------------------------------ print / PDF


def _pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page[^s]", pdf))


@pytest.mark.browser
def test_browser_print_draws_every_timeline_readable_in_black_and_white(browser: Any, tmp_path: Path) -> None:
    log = tmp_path / "fleet.jsonl"
    subprocess.run(
        [sys.executable, str(GEN_FLEET), "--jobs", "400", "--out", str(log)], check=True, capture_output=True
    )
    out = tmp_path / "r.html"
    write_report(leaselog.analyze(log), out, max_other_timelines=5)
    o = Opened(browser, out)
    n = o.page.locator("article.job").count()
    assert n > 10 and o.page.locator("div.timeline[data-rendered]").count() < n  # lazily drawn on screen
    o.page.emulate_media(media="print")
    o.page.evaluate("() => window.leaselogPrepareForPrint()")
    widths = o.page.eval_on_selector_all(
        "div.timeline",
        "ds => ds.map(d => d.dataset.rendered ? d.querySelector('svg.main-svg').getBoundingClientRect().width : 0)",
    )
    assert len(widths) == n and all(0 < w <= 700 for w in widths)  # every one drawn, none wider than A4
    # severity in black and white: the badge is black text on no fill, its word says it
    badge = o.page.evaluate(
        "() => { const b = document.querySelector('li.finding .badge.sev-error'); const s = getComputedStyle(b);"
        " return [b.textContent, s.color, s.backgroundColor, s.borderTopStyle]; }"
    )
    assert badge == ["error", "rgb(0, 0, 0)", "rgba(0, 0, 0, 0)", "solid"]
    styles = o.page.evaluate(
        "() => ['error', 'warning'].map(s => getComputedStyle(document.querySelector('li.finding.sev-' + s)).borderLeftStyle)"
    )
    assert styles == ["solid", "dashed"]  # told apart without colour
    pdf = o.page.pdf(format="A4", print_background=False)
    assert pdf[:5] == b"%PDF-" and _pdf_pages(pdf) >= n // 3
    o.page.close()


# ------------------------------------------------------------------ no negative duration, anywhere

_NEGATIVE = re.compile(r"(?<![\w.:])[-−]\d+(?:\.\d+)?(?:ms|s|m|h)\b|\+-")


@pytest.mark.browser
def test_browser_no_negative_duration_anywhere(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(leaselog.analyze(SAMPLES, lease_ttl="5s"), out)
    o = Opened(browser, out)
    o.page.evaluate("() => window.leaselogPrepareForPrint()")  # every figure drawn
    body = o.page.inner_text("body")
    svg = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('svg text')).map(t => t.textContent).join('\\n')"
    )
    hovers = o.page.evaluate(
        "() => Array.from(document.querySelectorAll('div.plot')).flatMap(d => (d.data || []).flatMap(t => t.hovertext || []))"
    )
    for where, text in (("page", body), ("figures", svg), ("hover", "\n".join(map(str, hovers)))):
        assert not _NEGATIVE.findall(text), (where, _NEGATIVE.findall(text)[:5])
    assert len(hovers) > 100 and "2m31.5s" in body
    o.assert_clean()
    o.page.close()


# ------------------------------------------------------------------ navigation


@pytest.mark.browser
def test_browser_filters_live_in_the_url_and_back_stays_in_the_report(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(leaselog.analyze(SAMPLES, lease_ttl="5s"), out)
    o = Opened(browser, out)
    o.page.select_option("#sev-filter", "error")
    o.page.fill("#job-search", "report")
    shown = o.page.locator("li.finding:not(.hidden)").count()
    jobs = set(o.page.eval_on_selector_all("li.finding:not(.hidden)", "ls => ls.map(l => l.dataset.job)"))
    assert shown > 0 and all("report" in j for j in jobs)
    assert "sev=error" in o.page.url and "job=report" in o.page.url
    heads = o.page.eval_on_selector_all(
        ".jobgroup:not(.hidden) .jobcount", "cs => cs.map(c => c.textContent)"
    )
    assert any(" of " in h for h in heads)  # a job's heading counts what is shown of its findings
    # a shared link opens with the same filters
    o2 = Opened(browser, out)
    o2.page.goto(o.page.url)
    o2.page.wait_for_selector("body[data-ready]")
    o2.page.reload()
    o2.page.wait_for_selector("body[data-ready]")
    assert o2.page.locator("li.finding:not(.hidden)").count() == shown
    assert o2.page.input_value("#job-search") == "report" and o2.page.input_value("#sev-filter") == "error"
    o2.page.close()
    # show on timeline, then Back: still in the report, filters kept
    url = o.page.url
    o.page.locator("li.finding:not(.hidden) a.goto").first.click()
    o.page.wait_for_selector("[data-highlighted]")
    assert "#f-" in o.page.url
    o.page.go_back()
    assert o.page.url == url
    assert o.page.locator("li.finding:not(.hidden)").count() == shown
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_browser_keyboard_dark_mode_and_pinned_details(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(_incident(), out)
    o = Opened(browser, out, scheme="dark")
    # the first Tab reaches the skip link, which leads to the findings
    o.page.keyboard.press("Tab")
    assert o.page.evaluate("() => document.activeElement.className") == "skip"
    o.page.keyboard.press("Enter")
    o.page.wait_for_function("() => location.hash === '#findings'", timeout=15_000)
    # dark mode follows the system setting
    assert o.page.evaluate("() => getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
    # full width: the timeline uses the window, not a 1 400 px column
    assert _box(o, "#plot-0")["width"] > 1300
    # a click on a marker keeps its raw fields and file:line shown
    idx = o.page.evaluate(
        "() => document.getElementById('plot-0').data.filter(t => t.type === 'scatter').findIndex(t => t.name === 'finished')"
    )
    pt = o.page.locator("#plot-0 .scatterlayer .trace").nth(idx).locator("path.point").first
    pt.scroll_into_view_if_needed()
    b = pt.bounding_box()
    assert b is not None
    o.page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
    o.page.locator("#plot-0 .hoverlayer .hovertext").first.wait_for(
        timeout=20_000
    )  # plotly clicks what it hovers
    o.page.mouse.down()
    o.page.mouse.up()
    pinned = o.page.locator("#job-0 .pinned")
    pinned.wait_for(timeout=20_000)
    assert re.search(r"pod-a\.jsonl:1[01]", pinned.inner_text())
    o.page.mouse.move(5, 5)
    assert pinned.is_visible()
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_browser_a_click_on_the_overview_lists_that_time(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    a = _incident()
    write_report(a, out)
    o = Opened(browser, out)
    o.page.locator("#overview-plot").scroll_into_view_if_needed()
    o.page.wait_for_selector("#overview-plot[data-rendered]")
    # the bucket holding 10:10:00.4 (LL101, LL102's start is 10:10:00.000, LL401): click its findings bar
    x = o.page.evaluate(
        "() => { const d = document.getElementById('overview-plot');"
        " const t = d.data.find(t => t.name.startsWith('overlapping_executions')); return t.x[0]; }"
    )
    o.page.evaluate(
        "x => document.getElementById('overview-plot').emit('plotly_click', {points: [{x: x}]})", x
    )
    shown = o.page.eval_on_selector_all("li.finding:not(.hidden)", "ls => ls.map(l => l.dataset.kind)")
    assert "overlapping_executions" in shown and "stale_release" not in shown  # 10:12:31.9 is another bucket
    assert "from=" in o.page.url and "time window 2026-11-02T10:" in o.page.inner_text("#time-window")
    o.assert_clean()
    o.page.close()


@pytest.mark.browser
def test_browser_keyboard_steps_through_events_and_zooms(browser: Any, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    write_report(_incident(), out)
    o = Opened(browser, out)
    o.page.focus("#plot-0")
    o.page.keyboard.press("ArrowRight")
    pinned = o.page.locator("#job-0 .pinned")
    pinned.wait_for(timeout=20_000)
    first = pinned.inner_text()
    assert "job_triggered" in first and "pod-a.jsonl:2" in first  # the earliest event of report-42
    o.page.keyboard.press("ArrowRight")
    assert pinned.inner_text() != first and "pod-a.jsonl:" in pinned.inner_text()
    span = (
        "() => { const ax = document.getElementById('plot-0')._fullLayout.xaxis;"
        " return ax.r2l(ax.range[1]) - ax.r2l(ax.range[0]); }"
    )
    before = o.page.evaluate(span)
    o.page.keyboard.press("+")
    o.page.wait_for_timeout(200)
    assert o.page.evaluate(span) == pytest.approx(before / 2, rel=0.01)
    o.page.keyboard.press("0")
    o.page.wait_for_timeout(200)
    assert o.page.evaluate(span) == pytest.approx(before, rel=0.01)
    o.assert_clean()
    o.page.close()


def test_markers_of_one_moment_are_spread_and_a_tiny_overlap_stays_visible(tmp_path: Path) -> None:
    # B acquires 7 ms before A finishes, in a job drawn over ten minutes
    rows = _run("tiny", "run-a", "pod-a", 0, 300.0, ttl_ms=299_993) + _run(
        "tiny", "run-b", "pod-b", 299.993, 600
    )
    jsonl(tmp_path / "log.jsonl", rows)
    a = leaselog.analyze(tmp_path / "log.jsonl")
    ov = [f for f in a.finding_list if f.kind == "overlapping_executions"]
    assert ov and ov[0].duration_ms is not None and ov[0].duration_ms < 20
    layout = _layout(timeline_figure(a, "tiny"))
    band = next(s for s in layout["shapes"] if s.get("name") == "overlap")
    from datetime import datetime as dt

    def ms(x: str) -> float:
        return dt.fromisoformat(x).timestamp() * 1000

    x0, x1 = layout["xaxis"]["range"]
    assert ms(band["x1"]) - ms(band["x0"]) >= 0.004 * (ms(x1) - ms(x0))  # a few pixels wide, not 7 ms
    size = format_duration(ov[0].duration_ms)  # labelled with its real size (≈: within the clock-skew bound)
    assert any(re.search(f"overlap ≈?{size}", an["text"]) for an in layout["annotations"])
    # run-a's acquire and start logged 2 ms apart: two markers, two heights on the lane
    fig = timeline_figure(a, "tiny")
    ys = {t.name: list(t.y) for t in fig.data if t.name in ("lock acquired", "started")}
    assert ys["lock acquired"][0] != ys["started"][0]
    assert abs(ys["lock acquired"][0] - ys["started"][0]) <= 0.6  # still on run-a's lane
