"""The terminal summary: the table of findings by job first (one line each), then details, then inputs;
`--brief` for the table alone; `--pdf`; the command line in the HTML report's provenance."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from rich.console import Console

import leaselog
from helpers import SAMPLES, jsonl
from leaselog.cli import main
from leaselog.render.terminal import render

INCIDENT = SAMPLES / "article-incident"


def _text(a: leaselog.Analysis, width: int = 200, **kw: object) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    render(a, console, **kw)  # type: ignore[arg-type]
    return console.export_text()


def _table(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("severity  code"))
    end = next(
        (i for i in range(start + 1, len(lines)) if not re.match(r"(ERROR|WARNING|INFO) ", lines[i])),
        len(lines),
    )
    return lines[start + 1 : end]


def test_the_table_comes_first_one_line_per_finding() -> None:
    a = leaselog.analyze(INCIDENT)
    out = _text(a)
    lines = out.splitlines()
    assert lines[0] == "5 findings (2 error, 3 warning) in 1 job and fleet-wide"
    assert lines[1] == "2 files, 19 lines (9 used, 0 malformed) · 1 job, 2 executions"
    assert lines[2].split() == ["severity", "code", "kind", "job", "executions", "figure"]
    rows = _table(out)
    assert [r.split()[1] for r in rows] == ["LL102", "LL101", "LL401", "LL301", "LL701"]  # most severe first
    assert rows[1].split()[:5] == ["ERROR", "LL101", "overlapping_executions", "report-42", "attempt-a,"]
    assert rows[1].rstrip().endswith("2m31.5s")
    assert rows[2].rstrip().endswith("400ms trigger=unknown")
    assert rows[4].rstrip().endswith("lease 15.0s, renew 5.0s, max 19m") and "(fleet)" in rows[4]
    # then the details, then the inputs
    assert (
        out.index("LL701")
        < out.index("report-42\n")
        < out.index("attempt-b acquired report-42")
        < out.index("Inputs")
    )


def test_brief_prints_the_table_alone() -> None:
    a = leaselog.analyze(INCIDENT)
    out = _text(a, brief=True)
    assert len(out.splitlines()) == 3 + a.findings.height
    assert "evidence:" not in out and "Inputs" not in out and "acquired report-42 at" not in out


def test_narrow_terminal_still_one_line_each() -> None:
    a = leaselog.analyze(INCIDENT)
    rows = _table(_text(a, width=80, brief=True))
    assert len(rows) == a.findings.height
    assert all(len(r) <= 90 for r in rows)
    assert "attempt-a +1" in rows[0]  # two executions that do not fit: the first and how many more


def test_table_follows_max_jobs_and_says_what_is_left(tmp_path: Path) -> None:
    from test_html_report import _run

    rows = []
    for j in range(4):
        rows += _run(f"job-{j}", f"a{j}", "pod-a", 20 * j, 20 * j + 8 + j, ttl_ms=3000)
        rows += _run(f"job-{j}", f"b{j}", "pod-b", 20 * j + 4, 20 * j + 10 + j, ttl_ms=3000)
    jsonl(tmp_path / "log.jsonl", rows)
    a = leaselog.analyze(tmp_path / "log.jsonl")
    out = _text(a, max_jobs=2, brief=True)
    table = _table(out)
    jobs = [r.split()[3] for r in table]
    assert set(jobs) == {"job-3", "job-2"}  # the two with the most overlap
    rest = a.findings.height - len(table)
    assert f"… {rest} more findings in 3 more jobs" in out


def test_no_findings_says_so_in_the_first_line(tmp_path: Path) -> None:
    run = {"jobId": "report-42", "executionId": "a-1", "pod": "pod-a"}
    jsonl(
        tmp_path / "clean.jsonl",
        [
            {"ts": "2026-11-02T10:00:00Z", "message": "GET /health 200"},
            {**run, "ts": "2026-11-02T10:00:01Z", "event": "lock_acquired", "leaseMs": 30000},
            {**run, "ts": "2026-11-02T10:00:02Z", "event": "lock_released", "released": True},
        ],
    )
    out = _text(leaselog.analyze(tmp_path / "clean.jsonl"), brief=True)
    assert out.splitlines()[:2] == [
        "No findings.",
        "1 file, 3 lines (2 used, 0 malformed) · 1 job, 1 execution",
    ]
    assert "severity  code" not in out


def test_nothing_read_is_not_no_findings(tmp_path: Path) -> None:
    """Lines, but not one lease event: "No findings." would read as "no incident"."""
    jsonl(tmp_path / "noise.jsonl", [{"ts": "2026-11-02T10:00:00Z", "message": "GET /health 200"}])
    out = _text(leaselog.analyze(tmp_path / "noise.jsonl"), brief=True)
    lines = out.splitlines()
    assert lines[0] == "no lease events in 1 line of 1 file: nothing to judge"
    assert "No findings." not in out and "leaselog inspect" in out
    assert "flat (1 line)" in out


def test_a_file_silent_among_others_is_named(tmp_path: Path) -> None:
    run = {"jobId": "report-42", "executionId": "a-1", "pod": "pod-a"}
    jsonl(tmp_path / "pod-a.jsonl", [{**run, "ts": "2026-11-02T10:00:01Z", "event": "lock_acquired"}])
    jsonl(tmp_path / "pod-b.jsonl", [{"ts": "2026-11-02T10:00:00Z", "message": "GET /health 200"}])
    out = _text(leaselog.analyze(tmp_path), brief=True)
    assert "1 file gave no lease event while others did:" in out and "pod-b.jsonl" in out


def test_a_redis_servers_log_that_gave_its_failover_is_not_named_silent() -> None:
    """Sentinel's and the promoted replica's logs give the failover (a fleet fact, no lease event): read."""
    out = _text(leaselog.analyze(SAMPLES / "dialects" / "redis-sentinel"), brief=True)
    assert "gave no lease event" not in out
    # a Redis Cluster primary that only saw the failover happen (FAIL, votes) gave nothing: named
    out = _text(leaselog.analyze(SAMPLES / "dialects" / "redis-cluster"), brief=True)
    assert "1 file gave no lease event while others did:" in out and "redis-node-2.log" in out
    assert "redis-node-4.log" not in out.split("while others did:")[1].splitlines()[0]


def test_cli_brief(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(INCIDENT), "--brief"]) == 0
    out = capsys.readouterr().out
    assert "LL101" in out and "Inputs" not in out and "evidence:" not in out


def test_cli_puts_the_command_line_in_the_report(tmp_path: Path) -> None:
    out = tmp_path / "r <1>.html"
    assert main(["analyze", str(INCIDENT), "--lease-ttl", "10m", "--html", str(out), "-q"]) == 0
    text = out.read_text(encoding="utf-8")
    cmd = f"leaselog analyze {INCIDENT} --lease-ttl 10m --html '{out}' --quiet"
    assert html.escape(cmd) in text


def test_cli_pdf_into_a_missing_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(INCIDENT), "--pdf", str(tmp_path / "nope" / "r.pdf")]) == 2
    assert "no such folder" in capsys.readouterr().err


@pytest.mark.browser
def test_cli_writes_a_pdf(tmp_path: Path) -> None:
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("/usr/bin/chromium is not installed")
    pdf, page = tmp_path / "r.pdf", tmp_path / "r.html"
    assert main(["analyze", str(INCIDENT), "--html", str(page), "--pdf", str(pdf), "-q"]) == 0
    data = pdf.read_bytes()
    assert data[:5] == b"%PDF-" and len(re.findall(rb"/Type\s*/Page[^s]", data)) >= 2
    assert len(data) > 20_000  # the summary, the timeline drawn, the findings: not an empty page
