"""Real BullMQ 6.7.6 workers under Node on a real redis-server (tests/integration/bullmq_run.py): their
pino lines, read by the `bullmq` dialect with no mapping file, against the truth the workers recorded.

The incident: pod A's processor blocks its event loop past `lockDuration` (2 s), so BullMQ renews
nothing; pod B's stalled checker finds the lock gone, moves the job back to wait and takes it; A's
processor returns after B started, and BullMQ refuses A's completion (`Lock mismatch`). The clean run:
two jobs longer than `lockDuration` on two pods, the event loop free, BullMQ renewing in silence."""

from __future__ import annotations

from pathlib import Path

import pytest
from bullmq_run import INCIDENTS, LOCK_MS, Run, missing_tools, play

import leaselog

TOLERANCE_MS = 100
QUIET = ("warning", "error")


def _times(run: Run) -> dict[tuple[str, str], int]:
    """(pod, event) -> epoch ms; of an event said twice (BullMQ refuses twice), the last."""
    return {(str(r["pod"]), str(r["event"])): int(str(r["t"])) for r in run.truth}


def _logs(run: Run) -> list[str]:
    """The workers' logs only (the truth files beside them are no input)."""
    return sorted(str(p) for p in run.folder.glob("pod-*.log"))


EXPECTED = {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt", "lease_settings"}
# what each incident adds (at warning or error): a renewal refused after the lock went to pod B, and A
# working on after hearing it (BullMQ does not stop a processor itself)
ADDED = {"incident-renew": {"renewal_failed", "ownership_loss_unhandled"}}
REFUSAL = {"incident": "bullmq/lock-mismatch", "incident-late": "bullmq/missing-lock"}


@pytest.mark.redis
@pytest.mark.parametrize("kind", sorted(INCIDENTS))
def test_blocked_event_loop_overlap_and_zombie_match_the_truth(tmp_path: Path, kind: str) -> None:
    why = missing_tools()
    if why is not None:
        pytest.skip(why)
    run = play(kind, tmp_path / kind)
    t = _times(run)
    # an attempt ends when BullMQ answered its finishing write (B's completion; A's last refusal), which
    # follows the processor's return by a round trip to Redis (longer on a loaded machine)
    a_end, b_end = t[("pod-a", "refused")], t[("pod-b", "completed")]
    assert t[("pod-a", "end")] <= a_end and t[("pod-b", "end")] <= b_end
    overlap_truth = min(a_end, b_end) - t[("pod-b", "start")]
    # A never renewed (its event loop was blocked from the processor's first line until after its lock
    # lapsed): its lock lapsed lockDuration after the moveToActive that set it (sent at processedOn)
    zombie_truth = a_end - (t[("pod-a", "processedOn")] + LOCK_MS)
    assert overlap_truth > 300 and zombie_truth + TOLERANCE_MS >= overlap_truth

    a = leaselog.analyze(_logs(run))
    assert a.line_totals()["malformed"] == 0
    assert all(str(e).startswith("bullmq/") for e in a.events["raw_event"].to_list())
    by_kind: dict[str, list[leaselog.Finding]] = {}
    for f in a.finding_list:
        by_kind.setdefault(f.kind, []).append(f)
    (overlap,) = by_kind["overlapping_executions"]
    assert overlap.duration_ms is not None and abs(overlap.duration_ms - overlap_truth) <= TOLERANCE_MS
    (outlived,) = by_kind["lease_outlived"]
    # BullMQ renews in silence: the zombie is at least the time since pod B took the job, at most since
    # A's acquisition + the lease (the truth here, as A renewed nothing)
    at_most = outlived.to_json_dict()["details"]["zombieAtMostMs"]
    assert outlived.duration_ms is not None and outlived.duration_ms <= zombie_truth + TOLERANCE_MS
    assert abs(at_most - zombie_truth) <= TOLERANCE_MS
    assert outlived.pods == ("pod-a",)
    (stale,) = by_kind["stale_release"]  # the refused completion, once (BullMQ says it twice)
    assert REFUSAL.get(kind, "bullmq/lock-mismatch") in stale.message
    (second,) = by_kind["second_attempt"]
    assert second.to_json_dict()["details"]["sameMessage"] is True and "redelivery" in second.message
    flagged = {f.kind for f in a.finding_list if f.severity in QUIET}
    assert flagged == EXPECTED | ADDED.get(kind, set())


@pytest.mark.redis
def test_clean_run_with_silent_renewals_is_quiet(tmp_path: Path) -> None:
    why = missing_tools()
    if why is not None:
        pytest.skip(why)
    run = play("clean", tmp_path / "clean")
    t = _times(run)
    assert all(t[(p, "end")] - t[(p, "start")] > LOCK_MS for p in ("pod-a", "pod-b"))
    a = leaselog.analyze(_logs(run))
    assert a.line_totals()["malformed"] == 0
    assert len(a.executions) == 2
    flagged = [f.kind for f in a.finding_list if f.severity in QUIET and f.kind != "lease_settings"]
    assert flagged == []
