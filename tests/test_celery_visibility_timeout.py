"""Real Celery 5 workers (solo pool) on a real Redis with a 2 s `visibility_timeout` and `task_acks_late`
(`leaselog.reproduce.celery_vt_lab`): a task held past the timeout is received again by the other worker
while it still runs; leaselog reads the two workers' Celery logs and finds the overlap, the outlived
message lease and the redelivery, each figure within 100 ms of what the task itself recorded. A task that
finishes within the timeout gives none of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import leaselog
from leaselog.reproduce.celery_vt_lab import play

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")


def _analyze(out: Path, vt_ms: int) -> leaselog.Analysis:
    return leaselog.analyze([str(p) for p in sorted(out.glob("pod-*.log"))], lease_ttl=f"{vt_ms}ms")


def test_task_past_its_visibility_timeout_is_redelivered_and_overlaps(tmp_path: Path) -> None:
    truth = play(tmp_path, "redelivery")
    a = _analyze(tmp_path, truth["visibilityTimeoutMs"])
    assert a.line_totals()["malformed"] == 0
    first, second = truth["attempts"]
    task = truth["taskId"]
    by_kind = {f.kind: f for f in a.finding_list}
    overlap = by_kind["overlapping_executions"]
    assert abs(overlap.duration_ms - truth["overlapMs"]) < 100, (overlap.duration_ms, truth)
    outlived = by_kind["lease_outlived"]
    assert abs(outlived.duration_ms - truth["outlivedMs"]) < 100, (outlived.duration_ms, truth)
    assert first["pod"] in outlived.pods
    again = by_kind["second_attempt"]
    assert again.trigger == "redelivery"
    assert set(again.execution_ids) == {task, f"{task}#2"}
    # the receipts are at least the visibility timeout apart
    assert second["deliveredMs"] - first["deliveredMs"] >= truth["visibilityTimeoutMs"]


def test_task_within_its_visibility_timeout_gives_no_incident(tmp_path: Path) -> None:
    truth = play(tmp_path, "quiet")
    assert len(truth["attempts"]) == 1
    a = _analyze(tmp_path, truth["visibilityTimeoutMs"])
    assert a.line_totals()["malformed"] == 0
    kinds = {f.kind for f in a.finding_list}
    assert not kinds & {"overlapping_executions", "lease_outlived", "second_attempt"}, kinds


def test_empty_celery_logs_give_nothing(tmp_path: Path) -> None:
    (tmp_path / "pod-a.log").write_text("")
    a = leaselog.analyze(str(tmp_path / "pod-a.log"), lease_ttl="2s")
    assert a.finding_list == [] or not [f for f in a.finding_list if f.severity in ("warning", "error")]
