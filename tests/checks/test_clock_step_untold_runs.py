"""A clock step beside two runs of one pod that no thread and no execution id tell apart.

The pod runs the job twice at once (a redelivery while the first attempt goes on), its lines naming
neither thread nor id, and its clock steps back 2 s between the first run's start and the second's
trigger. Where elapsedMs is the process's (one origin: it never goes back), any two of the pod's lines
compare, whichever run wrote each: the step is found where it is, sized, and stays certain. Where each run
counts elapsedMs from its own start, which line is whose decides what is compared: no step may then be
given as certain.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import leaselog

T0 = datetime(2026, 11, 3, 9, 0, 0, tzinfo=UTC)
STEP_MS = -2000
# (true ms since T0, event, the ms its run's own elapsedMs counts from, fields)
LINES: list[tuple[int, str, int, dict[str, Any]]] = [
    (0, "job_triggered", 0, {"trigger": "stream", "messageId": "1-0", "deliveryCount": 1}),
    (8, "lock_acquired", 0, {"leaseMs": 1500, "fencingToken": 1}),
    (8, "job_started", 0, {}),
    # the clock steps back here; the redelivery runs nested in the first attempt
    (1800, "job_triggered", 1800, {"trigger": "stream", "messageId": "1-0", "deliveryCount": 2}),
    (1815, "lock_acquired", 1800, {"leaseMs": 1500, "fencingToken": 2}),
    (1815, "job_started", 1800, {}),
    (2216, "job_finished", 1800, {"status": "ok"}),
    (2219, "lock_released", 1800, {"released": True}),
    (2300, "job_finished", 0, {"status": "ok"}),
    (2301, "lock_released", 0, {"released": False}),
]


def _log(path: Path, *, per_run: bool) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i, (ms, event, origin, fields) in enumerate(LINES):
            at = T0 + timedelta(milliseconds=ms + (STEP_MS if i >= 3 else 0))
            elapsed = ms - origin if per_run else ms + 20
            row = {"ts": at.isoformat(timespec="milliseconds"), "jobId": "report-5", "pod": "pod-a"}
            f.write(json.dumps({**row, "event": event, "elapsedMs": elapsed, **fields}) + "\n")
    return path


def test_a_step_on_the_process_elapsed_is_the_pods_clock_whoever_wrote_each_line(tmp_path: Path) -> None:
    a = leaselog.analyze([_log(tmp_path / "pod-a.jsonl", per_run=False)])
    steps = [f for f in a.finding_list if f.kind == "clock_step"]
    assert [(f.certainty, f.duration_ms, f.details["line"]) for f in steps] == [("certain", 2000.0, 4)]
    assert steps[0].details["elapsedOneOrigin"] is True
    assert "it is the pod's clock's" in steps[0].message
    overlap = [f for f in a.finding_list if f.kind == "overlapping_executions"]
    assert [(f.certainty, f.duration_ms) for f in overlap] == [("certain", 401.0)]
    assert not [f for f in a.finding_list if f.kind == "concurrent_leases"]


def test_a_step_on_each_runs_own_elapsed_is_never_certain(tmp_path: Path) -> None:
    a = leaselog.analyze([_log(tmp_path / "pod-a.jsonl", per_run=True)])
    steps = [f for f in a.finding_list if f.kind == "clock_step"]
    assert steps, "the log runs backwards: a step is shown"
    for f in steps:
        assert f.certainty == "uncertain", f.message
        assert f.details.get("elapsedOneOrigin") is not True
        assert "which line is whose is a guess" in f.message
