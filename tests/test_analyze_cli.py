"""The `leaselog analyze` slice end to end: the article's incident from raw logs to findings."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

import leaselog
from helpers import SAMPLES
from leaselog.cli import main

INCIDENT = SAMPLES / "article-incident"


def _by_kind(a: leaselog.Analysis) -> dict[str, list[leaselog.Finding]]:
    out: dict[str, list[leaselog.Finding]] = {}
    for f in a.finding_list:
        out.setdefault(f.kind, []).append(f)
    return out


def _assert_article_findings(a: leaselog.Analysis, *, lines: bool = True) -> None:
    k = _by_kind(a)
    (ov,) = k["overlapping_executions"]
    assert ov.job_id == "report-42"
    assert ov.execution_ids == ("attempt-a", "attempt-b")
    assert ov.duration_ms == pytest.approx(151_498)  # 10:10:00.402 -> 10:12:31.900
    assert ov.certainty == "certain"
    assert "The leases never overlapped; the executions did." in ov.message
    assert "2m31.5s" in ov.message
    (zombie,) = k["lease_outlived"]
    assert zombie.execution_ids[0] == "attempt-a"
    assert zombie.duration_ms == pytest.approx(151_900)  # lease expired 10:10:00.000, ran until 10:12:31.900
    (stale,) = k["stale_release"]
    assert stale.execution_ids == ("attempt-a", "attempt-b")
    assert not lines or any(e.line == 11 and e.file.endswith("pod-a.jsonl") for e in stale.evidence)


def test_article_incident_findings() -> None:
    a = leaselog.analyze(INCIDENT)
    _assert_article_findings(a)
    assert a.executions.height == 2
    assert a.line_totals() == {"total": 19, "used": 9, "ignored": 10, "malformed": 0}


def test_shuffled_into_one_file_gives_the_same_findings(tmp_path: Path) -> None:
    lines = [ln for f in sorted(INCIDENT.glob("*.jsonl")) for ln in f.read_text().splitlines()]
    random.Random(3).shuffle(lines)
    (tmp_path / "all.jsonl").write_text("\n".join(lines) + "\n")
    _assert_article_findings(leaselog.analyze(tmp_path / "all.jsonl"), lines=False)


def test_clean_sample_has_no_findings() -> None:
    a = leaselog.analyze(SAMPLES / "clean")
    assert a.finding_list == []
    assert a.executions.height == 40


def test_empty_input_gives_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    a = leaselog.analyze(tmp_path / "empty.jsonl")
    assert a.finding_list == [] and a.events.height == 0 and a.executions.height == 0
    assert leaselog.document(a)["lines"] == {"total": 0, "used": 0, "ignored": 0, "malformed": 0}


def test_demo_logfmt_without_wall_clock() -> None:
    a = leaselog.analyze(SAMPLES / "article-demo", lease_ttl_ms="5s")
    k = _by_kind(a)
    (ov,) = k["overlapping_executions"]
    assert ov.certainty == "uncertain"  # only line order and one pod's elapsedMs are known
    assert "no wall-clock timestamps" in ov.message
    (zombie,) = k["lease_outlived"]
    # within one pod, elapsedMs is a true duration: acquired at 212, lease of 5s ends 5212, release at 5324
    assert zombie.duration_ms == pytest.approx(112)
    assert zombie.certainty == "certain"
    assert len(k["stale_release"]) == 1


def test_malformed_lines_counted_and_located(tmp_path: Path) -> None:
    good = (INCIDENT / "pod-a.jsonl").read_text().splitlines()
    broken = [*good[:3], '{"jobId":"report-42","event":"job_started",', "not json at all", *good[3:]]
    (tmp_path / "pod-a.jsonl").write_text("\n".join(broken) + "\n")
    a = leaselog.analyze(tmp_path)
    assert a.line_totals()["malformed"] == 2
    assert [(Path(f).name, n) for f, n, _ in a.malformed.iter_rows()] == [
        ("pod-a.jsonl", 4),
        ("pod-a.jsonl", 5),
    ]
    t = a.line_totals()
    assert t["used"] + t["ignored"] + t["malformed"] == t["total"]


def test_json_contract(tmp_path: Path) -> None:
    out = tmp_path / "findings.json"
    assert main(["analyze", str(INCIDENT), "--json", str(out), "-q"]) == 0
    d = json.loads(out.read_text())
    assert d["version"] == 1
    assert d["lines"] == {"total": 19, "used": 9, "ignored": 10, "malformed": 0}
    assert d["jobs"] == 1 and d["executions"] == 2
    assert {i["format"] for i in d["inputs"]} == {"flat"}
    kinds = {f["kind"]: f for f in d["findings"]}
    ov = kinds["overlapping_executions"]
    assert ov["code"] == "LL101" and ov["severity"] == "error" and ov["certainty"] == "certain"
    assert ov["jobId"] == "report-42" and ov["executionIds"] == ["attempt-a", "attempt-b"]
    assert ov["pods"] == ["pod-a", "pod-b"]
    assert ov["start"] == "2026-11-02T10:10:00.402Z" and ov["end"] == "2026-11-02T10:12:31.900Z"
    assert ov["durationMs"] == 151498
    assert all({"file", "line"} <= set(e) for e in ov["evidence"])


def test_exit_codes(tmp_path: Path) -> None:
    assert main(["analyze", str(INCIDENT), "-q"]) == 0
    assert main(["analyze", str(INCIDENT), "-q", "--fail-on", "error"]) == 1
    assert main(["analyze", str(SAMPLES / "clean"), "-q", "--fail-on", "info"]) == 0
    assert main(["analyze", str(tmp_path / "missing.jsonl"), "-q"]) == 2
    assert main(["analyze", str(INCIDENT), "--lease-ttl", "ten minutes"]) == 2


def test_globs_gzip_and_stdin(tmp_path: Path) -> None:
    a_lines = (INCIDENT / "pod-a.jsonl").read_bytes()
    with gzip.open(tmp_path / "pod-a.jsonl.gz", "wb") as fh:
        fh.write(a_lines)
    b = (INCIDENT / "pod-b.jsonl").read_bytes()
    out = tmp_path / "f.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "leaselog.cli",
            "analyze",
            str(tmp_path / "*.gz"),
            "-",
            "--json",
            str(out),
            "-q",
        ],
        input=b,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    d = json.loads(out.read_text())
    assert [i["path"] for i in d["inputs"]] == [str(tmp_path / "pod-a.jsonl.gz"), "<stdin>"]
    assert {f["kind"] for f in d["findings"]} >= {"overlapping_executions", "lease_outlived", "stale_release"}


def test_terminal_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(INCIDENT)]) == 0
    out = capsys.readouterr().out
    assert "Inputs" in out and "report-42" in out
    assert "LL101 overlapping_executions" in out and "2m31.5s" in out
    # most severe first: errors before the warning
    assert out.index("LL101") < out.index("LL301") and out.index("LL102") < out.index("LL301")


def test_quiet_prints_nothing_but_still_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "f.json"
    assert main(["analyze", str(INCIDENT), "--quiet", "--json", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert {f["kind"] for f in json.loads(out.read_text())["findings"]} >= {"overlapping_executions"}


def test_help_explains_options() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "leaselog.cli", "analyze", "--help"],
        capture_output=True,
        text=True,
        check=False,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0
    for opt in ("--lease-ttl", "--json", "--fail-on", "--max-skew", "--clock-offset", "Examples"):
        assert opt in proc.stdout


def test_an_input_without_a_lease_event_exits_3(tmp_path: Path) -> None:
    """Read, but nothing to judge: a distinct exit code, so a CI gate never passes on an unread input."""
    from leaselog.cli import main

    (tmp_path / "app.log").write_text(
        "2026-11-29T10:00:00.101Z  INFO 1 --- [report-service] [   scheduling-1] c.e.report.ReportJob"
        "                     : Building the daily report\n"
    )
    assert main(["analyze", str(tmp_path), "-q"]) == 3
    assert main(["analyze", str(tmp_path), "-q", "--fail-on", "info"]) == 3
