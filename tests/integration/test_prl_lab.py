"""A few lab runs of the real python-redis-lock inside real Celery workers on a real Redis
(leaselog.reproduce.prl_lab): Celery's own log files, read through the dialects, scored against the truth.
The 100-run campaign is run by hand (`python -m leaselog.reproduce.prl_lab --runs 100`); here, one run per
fault kind: a paused pool process (with a poller turned away), a stalled task, a killed pool process and a
killed worker (each task redelivered: the same task id received again)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from leaselog.reproduce.server import redis_target

BASE = dict(lease_s=1, work_ms=1500, fault_at_ms=300, poller_tries=0)
PLANS = {
    "pause": dict(renew=True, fault="pause", fault_ms=2000, poller_tries=3),
    "stall": dict(renew=False, fault="stall", fault_ms=1600),
    "crash": dict(renew=True, fault="crash", fault_ms=0),
    # the killed worker's task comes back once the visibility timeout passed (every task here ends
    # well within it, even on a loaded machine)
    "crash-worker": dict(renew=False, fault="crash-worker", fault_ms=0, visibility_s=15),
}
EXPECTED = {
    "pause": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "stall": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "crash": {"crash_takeover", "second_attempt"},
    "crash-worker": {"crash_takeover", "second_attempt"},
}
RECEIVED_AGAIN = "Task reports.render[attempt-a] received"


@pytest.mark.redis
@pytest.mark.parametrize("fault", sorted(PLANS))
def test_real_celery_run_is_scored_clean(tmp_path: Path, fault: str) -> None:
    pytest.importorskip("redis_lock")
    pytest.importorskip("celery")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    from leaselog.reproduce.prl_lab import draw, run_one  # (imports Celery)

    plan = dataclasses.replace(draw(99, 0), **{**BASE, **PLANS[fault]})  # type: ignore[arg-type]
    folder = tmp_path / plan.name
    with redis_target(None) as target:
        rs = run_one(plan, target, folder)
    bad = [i for i in rs.items if i.status in ("missed", "false", "figure_error")]
    assert bad == []
    assert EXPECTED[fault] <= {i.kind for i in rs.items if i.status == "found"}
    doc = json.loads((folder / "leaselog.json").read_text())
    assert doc["lines"]["malformed"] == 0  # Celery's lines, the library's and every traceback read
    logs = {pod: (folder / f"{pod}.log").read_text() for pod in ("pod-a", "pod-b")}
    received = sum(text.count(RECEIVED_AGAIN) for text in logs.values())
    if fault.startswith("crash"):
        # the same task id received a second time: a redelivery (a killed pool process's task may come
        # back to pod B or to pod A's new pool process; a killed worker's, to pod B)
        assert received == 2
        if fault == "crash-worker":
            assert RECEIVED_AGAIN in logs["pod-b"]
        triggers = {i.truth for i in rs.items if i.kind == "second_attempt"}
        assert triggers == {"duplicate_publish", "redelivery"}
    else:
        assert received == 1


def test_what_a_kill_cut_short_is_settled_by_redis_s_own_record() -> None:
    from leaselog.reproduce.keyspace import settle_from_redis

    def m(event: str, mono: float, run: str, **kw: object) -> dict[str, object]:
        return {"event": event, "monoMs": mono, "run": run, **kw}

    def moments() -> dict[str, list[dict[str, object]]]:
        # A logged "Releasing" and was killed before the UNLOCK's answer; B acquired next
        return {
            "pod-a": [m("lock_acquired", 10, "attempt-a"), m("lock_release_sent", 480, "attempt-a")],
            "pod-b": [
                m("lock_acquired", 700, "attempt-b"),
                m("lock_released", 900, "attempt-b", released=True),
            ],
        }

    # Redis deleted the key while A held it: A's release deleted it
    got = moments()
    settle_from_redis(["set", "expire", "del", "set", "expire", "del"], got)  # type: ignore[arg-type]
    assert [x["event"] for x in got["pod-a"]] == ["lock_acquired", "lock_release_sent", "lock_released"]
    assert got["pod-a"][-1]["released"] is True and got["pod-a"][-1]["monoMs"] == 480
    # the key expired under A (its UNLOCK found nothing, or never ran): nothing is inferred
    got = moments()
    settle_from_redis(["set", "expire", "expired", "set", "expire", "del"], got)  # type: ignore[arg-type]
    assert [x["event"] for x in got["pod-a"]] == ["lock_acquired", "lock_release_sent"]
    # acquisitions and sets that do not pair up: nothing is inferred
    got = moments()
    settle_from_redis(["set", "del"], got)  # type: ignore[arg-type]
    assert [x["event"] for x in got["pod-a"]] == ["lock_acquired", "lock_release_sent"]
    # a refresh in flight when the worker was killed: Redis counted its EXPIRE (the acquisition's SET EX,
    # the first refresh, this one), so it extended the lease
    got = moments()
    got["pod-a"][1:] = [
        m("lease_renewal_sent", 300, "attempt-a"),
        m("lease_renewal", 300, "attempt-a", renewalOutcome="success"),
        m("lease_renewal_sent", 600, "attempt-a"),
    ]
    settle_from_redis(["set", "expire", "expire", "expire", "expired", "set", "expire", "del"], got)  # type: ignore[arg-type]
    assert [(x["event"], x["monoMs"]) for x in got["pod-a"] if x["event"] == "lease_renewal"] == [
        ("lease_renewal", 300),
        ("lease_renewal", 600),
    ]
    got = moments()  # one EXPIRE less: that refresh never reached Redis (or was rejected)
    got["pod-a"][1:] = [m("lease_renewal_sent", 300, "attempt-a"), m("lease_renewal_sent", 600, "attempt-a")]
    settle_from_redis(["set", "expire", "expire", "expired", "set", "expire", "del"], got)  # type: ignore[arg-type]
    assert [x["monoMs"] for x in got["pod-a"] if x["event"] == "lease_renewal"] == [300]
