"""Real RQ workers (`tests/rq_lab.py`: rq from PyPI, a real `redis-server`), read through the rq dialect.

Pod A's worker is frozen (SIGSTOP of its process group: the worker and its work-horse) while its job runs,
past the job's StartedJobRegistry lease; pod B's worker starts, its registry cleanup finds the entry
expired and retries the job (`Retry(max=1)`), and B runs it; A is woken and finishes the job too. leaselog
reads nothing but the two pods' console output and finds the overlap within 100 ms of what the job
function itself recorded, and the second attempt with trigger `abandoned`. A run inside its lease stays
quiet, an empty input gives nothing, and a broken line is located without changing its neighbours."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import leaselog
from leaselog.reproduce.server import throwaway_redis
from rq_lab import play

TOLERANCE_MS = 100


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    with throwaway_redis() as target:
        yield target.url


def _analyze(out: Path, lease_ms: int) -> leaselog.Analysis:
    return leaselog.analyze([str(p) for p in sorted(out.glob("pod-*.log"))], lease_ttl=f"{lease_ms}ms")


# RQ logs a job's start when it dequeues it, before the work-horse is forked, and its Job OK after the
# result is saved: on an idle machine a few ms each way, on a loaded one (two shared cores) up to a few
# hundred. A play whose RQ lag (its lines' overlap against the job function's) passes this is played again.
RQ_LAG_MS = 60
PLAYS = 4


def _moment(log: Path, needle: str) -> float:
    """The epoch ms of the first line of `log` holding `needle` (Python's asctime, the lab's local time)."""
    line = next(ln for ln in log.read_text().splitlines() if needle in ln)
    at = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
    return at.replace(tzinfo=UTC).timestamp() * 1000


def _logged_overlap(out: Path, job_id: str) -> float:
    """The overlap as RQ's own lines show it: B's start line to the first of the two Job OK lines."""
    b_start = _moment(out / "pod-b.log", f"({job_id})")
    ends = [_moment(out / f"{pod}.log", f"Job OK ({job_id})") for pod in ("pod-a", "pod-b")]
    return min(ends) - b_start


@pytest.mark.redis
def test_a_worker_frozen_past_its_registry_lease_runs_the_job_beside_the_retry(
    redis_url: str, tmp_path: Path
) -> None:
    lags = []
    for n in range(PLAYS):
        out = tmp_path / f"play-{n}"
        truth = play(out, redis_url, "abandoned")
        runs = truth["runs"]
        assert set(runs) == {"pod-a", "pod-b"}, truth
        # the truth: B started the job while A was still in it
        assert runs["pod-b"]["start"] < runs["pod-a"]["end"], truth
        # what RQ logged: B's cleanup retried the abandoned job, and both pods logged Job OK
        b_log = (out / "pod-b.log").read_text()
        assert f"Job {truth['jobId']}: enqueued for retry, 0 remaining" in b_log
        for pod in ("pod-a", "pod-b"):
            assert f"Worker {pod}: default: Job OK ({truth['jobId']})" in (out / f"{pod}.log").read_text()
        a = _analyze(out, truth["leaseMs"])
        assert a.line_totals()["malformed"] == 0
        by_kind = {f.kind: f for f in a.finding_list}
        overlap = by_kind["overlapping_executions"]
        assert overlap.job_id == truth["jobId"]
        assert sorted(overlap.pods) == ["pod-a", "pod-b"]
        again = by_kind["second_attempt"]
        assert again.trigger == "abandoned", again.message
        assert "abandoned: the job was put back in its queue" in again.message
        # exactly what the lines say, whatever the machine's load
        logged = _logged_overlap(out, truth["jobId"])
        assert abs(overlap.duration_ms - logged) < 1, (overlap.duration_ms, logged)
        lag = abs(logged - truth["overlapMs"])
        lags.append(round(lag, 1))
        if lag < RQ_LAG_MS:
            # and what the job function itself recorded
            assert abs(overlap.duration_ms - truth["overlapMs"]) < TOLERANCE_MS, (overlap.duration_ms, truth)
            return
    pytest.fail(f"every play's RQ lag passed {RQ_LAG_MS} ms (the machine too loaded): {lags}")


@pytest.mark.redis
def test_an_abandoned_job_without_retries_is_not_run_again(redis_url: str, tmp_path: Path) -> None:
    # without a Retry, B's cleanup moves the job to the FailedJobRegistry and B runs nothing: one run
    truth = play(tmp_path, redis_url, "abandoned-no-retry")
    assert set(truth["runs"]) == {"pod-a"}
    b_log = (tmp_path / "pod-b.log").read_text()
    assert (
        f"StartedJobRegistry cleanup: {truth['jobId']} Moved to FailedJobRegistry, due to AbandonedJobError"
        in b_log
    )
    a = _analyze(tmp_path, truth["leaseMs"])
    totals = a.line_totals()
    assert (
        totals["malformed"] == 0 and totals["used"] == 2
    )  # A's start and Job OK; B's cleanup line: no event
    kinds = {f.kind for f in a.finding_list}
    assert not kinds & {"overlapping_executions", "second_attempt"}, kinds


@pytest.mark.redis
def test_a_run_inside_its_registry_lease_stays_quiet(redis_url: str, tmp_path: Path) -> None:
    truth = play(tmp_path, redis_url, "quiet")
    assert set(truth["runs"]) == {"pod-a"}
    a = _analyze(tmp_path, truth["leaseMs"])
    totals = a.line_totals()
    assert totals["malformed"] == 0 and totals["used"] == 2  # the start line and Job OK
    kinds = {f.kind for f in a.finding_list}
    assert not kinds & {"overlapping_executions", "lease_outlived", "second_attempt"}, kinds


def test_empty_rq_logs_give_nothing(tmp_path: Path) -> None:
    (tmp_path / "pod-a.log").write_text("")
    a = leaselog.analyze(str(tmp_path / "pod-a.log"), lease_ttl="2s")
    assert a.finding_list == []


JOB = "e9134cef-442a-4d4f-b789-ae4c1ef20290"


def test_a_broken_line_is_located_and_its_neighbours_read_as_before(tmp_path: Path) -> None:
    lines = [
        "2026-12-04 18:49:55,874 Worker pod-a: started with PID 28452, version 3.0.0",
        f"2026-12-04 18:49:55,927 Worker pod-a: default: rq_lab.job('x') ({JOB})",
        "2026-12-04 18:49:5\xff garbled",
        f"2026-12-04 18:49:56,589 Worker pod-a: default: Job OK ({JOB})",
    ]
    path = tmp_path / "pod-a.log"
    path.write_bytes("\n".join(lines).encode("utf-8").replace("\xff".encode(), b"\xff") + b"\n")
    a = leaselog.analyze(str(path), lease_ttl="2s")
    assert a.malformed["line"].to_list() == [3]
    events = a.events.sort("t")
    assert events["event"].to_list() == [
        "job_triggered",
        "lock_acquired",
        "job_started",
        "job_finished",
        "lock_released",
    ]
    assert set(events["job_id"].cast(str).to_list()) == {JOB}
    assert a.finding_list == [] or {f.kind for f in a.finding_list} <= {"lease_settings"}


SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "dialects" / "rq"


def test_the_rq_sample_gives_its_overlap_and_the_abandoned_retry() -> None:
    # one run of the lab above (rq 3.0.0), the truth file's path and the Redis URL substituted; its truth:
    # A's job ran 18:58:25.075-18:58:29.865, B's 18:58:29.247-18:58:29.935: 618.1 ms of overlap
    a = leaselog.analyze(str(SAMPLE), lease_ttl="2s")
    assert a.line_totals() == {"total": 22, "used": 4, "ignored": 18, "malformed": 0}
    by_kind = {f.kind: f for f in a.finding_list}
    # B's start line (18:58:29.227) to A's Job OK (18:58:29.867)
    assert by_kind["overlapping_executions"].duration_ms == 640.0
    assert abs(640.0 - 618.137) < TOLERANCE_MS
    outlived = by_kind["lease_outlived"]
    assert outlived.pods == ("pod-a",) and outlived.duration_ms == 640.0  # at least: heartbeats unlogged
    assert by_kind["second_attempt"].trigger == "abandoned"


def test_without_a_lease_length_the_rq_sample_still_gives_the_overlap_and_no_clock_doubt() -> None:
    # RQ never logs the registry lease: without --lease-ttl the overlap is the two runs' own lines
    a = leaselog.analyze(str(SAMPLE))
    kinds = {f.kind: f for f in a.finding_list}
    assert kinds["overlapping_executions"].duration_ms == 640.0
    assert kinds["second_attempt"].trigger == "abandoned"
    assert "clock_contradiction" not in kinds and "lease_outlived" not in kinds
