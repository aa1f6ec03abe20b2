"""Two jobs whose executions share ids (`attempt-a`, `attempt-b`): a job's findings are the same whether
it is analysed alone or beside the other. Completions are looked up by job and id, not by id alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import leaselog

T0 = datetime(2026, 11, 3, 9, 0, 0, tzinfo=UTC)


def _job(path: Path, job: str, *, completes: bool) -> Path:
    # attempt-a outlives its 1 s lease; attempt-b acquires at 1.2 s while a still runs
    rows: list[tuple[int, str, str, dict[str, Any]]] = [
        (0, "attempt-a", "lock_acquired", {"leaseMs": 1000, "fencingToken": 1}),
        (1, "attempt-a", "job_started", {}),
        (1200, "attempt-b", "lock_acquired", {"leaseMs": 1000, "fencingToken": 2}),
        (1201, "attempt-b", "job_started", {}),
        (1800, "attempt-b", "job_finished", {"status": "ok"}),
        (1801, "attempt-b", "lock_released", {"released": True}),
        (2500, "attempt-a", "job_finished", {"status": "ok"}),
    ]
    if completes:
        rows.insert(4, (1799, "attempt-b", "completion", {"outcome": "accepted", "fencingToken": 2}))
        rows.append((2499, "attempt-a", "completion", {"outcome": "rejected", "fencingToken": 1}))
    with path.open("w", encoding="utf-8") as f:
        for ms, eid, event, fields in rows:
            at = (T0 + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")
            pod = "pod-a" if eid == "attempt-a" else "pod-b"
            f.write(
                json.dumps({"ts": at, "jobId": job, "executionId": eid, "pod": pod, "event": event, **fields})
            )
            f.write("\n")
    return path


def _overlaps(a: leaselog.Analysis, job: str) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (f.severity, f.message, dict(f.details))
        for f in a.finding_list
        if f.kind == "overlapping_executions" and f.job_id == job
    ]


def test_a_jobs_overlap_reads_the_same_beside_a_job_with_the_same_ids(tmp_path: Path) -> None:
    fenced = _job(tmp_path / "fenced.jsonl", "report-1", completes=True)
    plain = _job(tmp_path / "plain.jsonl", "report-2", completes=False)
    together = leaselog.analyze([fenced, plain])
    for path, job in ((fenced, "report-1"), (plain, "report-2")):
        alone = leaselog.analyze([path])
        assert _overlaps(together, job) == _overlaps(alone, job) != []
    # the fenced job says only b's result counted; the other logged no completion, and says nothing of one
    (fenced_says,) = _overlaps(together, "report-1")
    (plain_says,) = _overlaps(together, "report-2")
    assert fenced_says[1] != plain_says[1]
