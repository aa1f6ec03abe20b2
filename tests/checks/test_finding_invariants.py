"""Invariants every analysis keeps, on every sample under sample_logs/ (every folder, every format):

- no two findings are the same (kind, executionIds, start, end): checked on each check's *own* output, so
  a check that repeats a finding fails here even though `run_checks` would merge the repeat;
- an `uncertain` finding is never an error;
- no duration is negative, in a figure (`durationMs`, a `...Ms` detail) or in a message.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from _check_cases import Case, load_cases

import leaselog
from leaselog.checks import Check, CheckContext, run_checks
from leaselog.findings import Evidence, Finding, enforce_invariants, finalize, finding_key, frame_of, records

SAMPLES = Path(__file__).resolve().parent.parent.parent / "sample_logs"
# every folder holding log files, on its own, and all of them at once (with and without a default TTL)
FOLDERS = sorted({p.parent for p in SAMPLES.rglob("*") if p.is_file() and p.suffix not in (".md", ".toml")})
RUNS: list[tuple[str, list[Path], dict[str, Any]]] = [
    # (a folder with its own leaselog.toml, e.g. formats/custom, is read with it)
    *(
        (
            str(f.relative_to(SAMPLES)),
            [f],
            {"config": f / "leaselog.toml"} if (f / "leaselog.toml").exists() else {},
        )
        for f in FOLDERS
    ),
    ("all", [SAMPLES], {}),
    ("all --lease-ttl 5s", [SAMPLES], {"lease_ttl_ms": "5s"}),
]
CASES = load_cases()
# a negative duration as the messages print them (`-25.0s`, `-6ms`, `-1m02s`, `-1h02m`)
NEGATIVE = re.compile(r"(?<![\w.:-])-\d+(?:\.\d+)?(?:ms|s|m\d|h\d)")


def _raw(paths: list[Path], options: dict[str, Any]) -> tuple[leaselog.Analysis, list[Finding]]:
    """The analysis, and every check's findings as the check made them (before `enforce_invariants`)."""
    a = leaselog.analyze(paths, **options)
    ctx = CheckContext(a.events, a.executions, a.leases, a.renewals, a.settings)
    return a, records(run_checks(ctx))


def _negative_figures(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _negative_figures(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _negative_figures(v, f"{path}[{i}]")]
    if isinstance(value, int | float) and not isinstance(value, bool) and path.endswith("Ms") and value < 0:
        return [f"{path} = {value}"]
    return []


@pytest.mark.parametrize(("name", "paths", "options"), RUNS, ids=[r[0] for r in RUNS])
def test_invariants_on_every_sample(name: str, paths: list[Path], options: dict[str, Any]) -> None:
    a, raw = _raw(paths, options)
    repeated = [k for k, n in Counter(finding_key(f) for f in raw).items() if n > 1]
    assert repeated == [], f"{name}: a check repeats findings: {repeated}"
    for f in raw:
        assert not (f.certainty == "uncertain" and f.severity == "error"), f.message
    doc = leaselog.document(a)
    for f in doc["findings"]:
        where = f"{name}: {f['code']} {f['jobId']}"
        assert f["durationMs"] is None or f["durationMs"] >= 0, where
        assert _negative_figures(f.get("details", {}), "details") == [], where
        assert not NEGATIVE.search(f["message"]), f"{where}: {f['message']}"
    assert len(doc["findings"]) == len(raw)  # nothing was left for the final net to merge


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_invariants_on_every_check_case(case: Case) -> None:
    """The same invariants on every data-file check case (tests/fixtures/checks/), each check's own output."""
    a, raw = _raw([case.path], case.options)
    assert len({finding_key(f) for f in raw}) == len(raw), [f.message for f in raw]
    for f in leaselog.document(a)["findings"]:
        assert not (f["certainty"] == "uncertain" and f["severity"] == "error"), f["message"]
        assert f["durationMs"] is None or f["durationMs"] >= 0, f["message"]
        assert _negative_figures(f.get("details", {}), "details") == [], f["message"]
        assert not NEGATIVE.search(f["message"]), f["message"]


def test_the_samples_cover_every_folder_and_format() -> None:
    names = {str(f.relative_to(SAMPLES)) for f in FOLDERS}
    assert {
        "clean",
        "clean-busy",
        "article-incident",
        "formats/otlp",
        "formats/gelf",
        "formats/logfmt",
    } <= names
    assert {n for n in names if n.startswith("formats/")} == {
        f"formats/{p.name}" for p in (SAMPLES / "formats").iterdir() if p.is_dir()
    }


# ------------------------------------------------------------------ OTLP: several records on one line


T0 = datetime(2026, 11, 3, 9, 0, 0, tzinfo=UTC)


def _otlp_line(pod: str, records: list[dict[str, Any]]) -> str:
    """One OTLP export line: a batch of log records of one pod."""

    def attr(k: str, v: Any) -> dict[str, Any]:
        value = (
            {"intValue": str(v)}
            if isinstance(v, int) and not isinstance(v, bool)
            else {"stringValue": str(v)}
        )
        return {"key": k, "value": value}

    logs = [
        {
            "timeUnixNano": str(int((T0 + timedelta(seconds=r["s"])).timestamp() * 1e9)),
            "severityText": "INFO",
            "body": {"stringValue": r["event"]},
            "attributes": [attr(k, v) for k, v in r.items() if k != "s"],
        }
        for r in records
    ]
    resource = {"attributes": [attr("k8s.pod.name", pod), attr("service.name", "report-worker")]}
    return json.dumps({"resourceLogs": [{"resource": resource, "scopeLogs": [{"logRecords": logs}]}]})


def test_otlp_batches_do_not_repeat_a_finding(tmp_path: Path) -> None:
    """A renewal gap (a pause) and an unhandled ownership loss whose bounding records share export lines
    with other records of the same execution: each finding comes out once (a join on file:line gave the
    renewal gap once per record on its opening line)."""
    ex = {"jobId": "report-7", "executionId": "attempt-a"}
    records = [
        {"s": 0.0, **ex, "event": "job_triggered", "trigger": "kafka"},
        {"s": 0.001, **ex, "event": "lock_acquired", "leaseMs": 5000},
        {"s": 0.002, **ex, "event": "job_started"},
        *(
            {"s": 1.0 * k, **ex, "event": "lease_renewal", "renewalOutcome": "success", "latencyMs": 2}
            for k in (1, 2, 3)
        ),
        {"s": 3.1, **ex, "event": "job_progress"},
        {"s": 3.2, **ex, "event": "job_progress"},
        {"s": 3.3, **ex, "event": "job_progress"},
        # a 9s pause, then the renewal is rejected and the job keeps working without a stop request
        {"s": 12.3, **ex, "event": "lease_renewal", "renewalOutcome": "rejected", "latencyMs": 2},
        {"s": 12.4, **ex, "event": "job_progress"},
        {"s": 12.5, **ex, "event": "job_progress"},
        {"s": 12.6, **ex, "event": "job_finished", "status": "ok"},
        {"s": 12.7, **ex, "event": "lock_released", "released": False},
    ]
    path = tmp_path / "pod-a.jsonl"
    # four records per line: the gap opens on a line holding the renewal at 3.0s and three more records
    path.write_text(
        "".join(_otlp_line("pod-a", records[i : i + 4]) + "\n" for i in range(0, len(records), 4))
    )
    a, raw = _raw([path], {})
    assert a.line_totals()["malformed"] == 0
    kinds = Counter(f.kind for f in raw)
    assert kinds["renewal_gap"] == 1 and kinds["ownership_loss_unhandled"] == 1, kinds
    gap = next(f for f in raw if f.kind == "renewal_gap")
    assert gap.duration_ms == pytest.approx(9300.0)
    assert len({finding_key(f) for f in raw}) == len(raw)


# ------------------------------------------------------------------ the final net in run_checks


def _finding(**kw: Any) -> Finding:
    base: dict[str, Any] = {
        "kind": "renewal_gap",
        "code": "LL202",
        "severity": "warning",
        "message": "m",
        "job_id": "j",
        "execution_ids": ("a",),
        "start": T0,
        "end": T0 + timedelta(seconds=1),
        "evidence": (Evidence.of("f.jsonl", 1),),
    }
    return Finding.of(**(base | kw))


def test_enforce_invariants_merges_repeats_and_softens_uncertain_errors() -> None:
    one = _finding()
    again = _finding(message="m2", evidence=(Evidence.of("f.jsonl", 1), Evidence.of("f.jsonl", 7)))
    other_end = _finding(end=T0 + timedelta(seconds=2))
    other_kind = _finding(kind="renewal_failed", code="LL201")
    uncertain = _finding(kind="overlapping_executions", code="LL101", severity="error", certainty="uncertain")
    certain = _finding(kind="concurrent_leases", code="LL103", severity="error")
    out = enforce_invariants([one, again, other_end, other_kind, uncertain, certain])
    assert [f.kind for f in out] == [
        "renewal_gap",
        "renewal_gap",
        "renewal_failed",
        "overlapping_executions",
        "concurrent_leases",
    ]
    assert out[0].message == "m" and [e.line for e in out[0].evidence] == [1, 7]  # the repeat's evidence kept
    assert out[1].end == other_end.end
    assert out[3].severity == "warning" and out[3].certainty == "uncertain"
    assert out[4].severity == "error"
    assert enforce_invariants([]) == []


def test_run_checks_applies_the_net() -> None:
    """A check that repeats itself still yields each finding once through run_checks."""

    def detect(ctx: CheckContext) -> pl.DataFrame:
        return frame_of([_finding(), _finding(), _finding(severity="error", certainty="uncertain")])

    repeating = Check("LL999", "renewal_gap", "warning", detect, lambda rows, ctx: rows["message"])
    a = leaselog.analyze(SAMPLES / "clean")
    ctx = CheckContext(a.events, a.executions, a.leases, a.renewals, a.settings)
    out = records(finalize(run_checks(ctx, (repeating,))))
    assert len(out) == 1 and out[0].severity == "warning"


def test_the_negative_duration_pattern() -> None:
    for text in ("second_attempt -25.0s", "total duration -6.5s", "(-120ms)", "for -1m02s", "-1h02m"):
        assert NEGATIVE.search(text), text
    for text in (
        "report-2026-11-02 at 10:00:00.000",
        "ex-8f2d61 (pod-b)",
        "5b0e7c1a-0f7e-4d7b",
        "after 25.0s",
        "rc-001-a41f",
    ):
        assert not NEGATIVE.search(text), text
