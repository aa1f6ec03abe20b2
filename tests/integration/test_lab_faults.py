"""The lab's failover and clock-step faults, each played once for real (real redis-servers, real worker
processes) and scored like a campaign run: with execution ids and without, and in several log shapes.

- failover: the lock's primary, its replica and a real Sentinel; the replica is cut off before pod A
  acquires, the primary killed 100 ms into A's work, the replica promoted by Sentinel (its moment is
  Sentinel's); pod B (a retry, fired 50 ms after the harness learns the new primary from Sentinel)
  reconnects to it and acquires the key, with A's fencing token; A's next renewal, on the new primary,
  reconnects and is rejected. The harness waits on Sentinel's state (it names the new primary), never on
  a time. A's first renewal (5 s in) comes long after Sentinel's failover (down-after 500 ms, then up to a
  second until it sees the promotion: 1-2.5 s on a loaded machine) and B's start, so A is still running
  when B starts and B's lease begins inside A's (12 s).
- clock step: pod B's logging clock steps back 2 s while it waits for the lock A holds; its `elapsedMs`
  does not step.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from leaselog.reproduce.campaign import differential, flat_rows, score_run
from leaselog.reproduce.identity import clock_steps
from leaselog.reproduce.lab import play
from leaselog.reproduce.plan import Plan, PodPlan
from leaselog.reproduce.score import expectations
from leaselog.reproduce.server import throwaway_redis

pytestmark = pytest.mark.redis

SHAPES = ["flat", "ecs-3.5", "spring-console", "logfmt"]


def _plan(index: int, pods: list[PodPlan], **kw: Any) -> Plan:
    base: dict[str, Any] = {
        "seed": 0,
        "index": index,
        "lease_ms": 1500,
        "renew": True,
        "renewal_ms": 500,
        "margin_ms": 150,
        "op_timeout_ms": 150,
        "renew_retry_ms": 0,
        "completion": "fenced",
        "ignore_stop": False,
        "fault": "none",
        "fault_at_ms": 0,
        "fault_ms": 0,
        "shape": "flat",
        **kw,
    }
    return Plan(**base, pods=tuple(pods))


FAILOVER = _plan(
    911,
    [PodPlan("A", "first", 0, "wait-silent", 70, 0), PodPlan("B", "retry", 200, "exit", 8, 0)],
    lease_ms=12000,
    renewal_ms=5000,
    renew_retry_ms=200,
    fault="failover",
    fault_at_ms=100,
    fault_ms=50,
)
CLOCK_STEP = _plan(
    912,
    [PodPlan("A", "first", 0, "wait-silent", 10, 0), PodPlan("B", "retry", 300, "wait", 5, 0)],
    renew=False,
    completion="none",
    clock_step_role="B",
    clock_step_ms=-2000,
    clock_step_at_ms=150,
)


def _play(plan: Plan, out: Path) -> dict[str, Any]:
    with throwaway_redis() as target:
        return play(plan, target, out)


@pytest.fixture(scope="module")
def failover(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    out = tmp_path_factory.mktemp("failover")
    yield out, _play(FAILOVER, out)


@pytest.fixture(scope="module")
def clock_step(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    out = tmp_path_factory.mktemp("clock-step")
    yield out, _play(CLOCK_STEP, out)


def _moments(truth: dict[str, Any], pod: str, event: str) -> list[dict[str, Any]]:
    return [m for m in truth["moments"][pod] if m["event"] == event]


def test_the_promoted_replica_missed_the_acquisition_and_handed_out_the_key_again(
    failover: tuple[Path, dict[str, Any]],
) -> None:
    _out, truth = failover
    (fault,) = truth["faults"]
    assert fault["kind"] == "failover"
    # cut before A acquired, killed, then promoted without A's key
    a_acquired = _moments(truth, "pod-a", "lock_acquired")[0]
    assert fault["cutMono"] < a_acquired["monoMs"] < fault["primaryKilledMono"] < fault["promotedMono"]
    assert fault["replicaHadKey"] is False
    b_acquired = _moments(truth, "pod-b", "lock_acquired")[0]
    # B got the key while A's lease was valid, and A's token again: the fencing counter went back too
    assert b_acquired["monoMs"] < a_acquired["monoMs"] + FAILOVER.lease_ms
    assert b_acquired["fencingToken"] == a_acquired["fencingToken"]
    # both workers logged their reconnect to the new primary; A's renewal there was rejected
    for pod in ("pod-a", "pod-b"):
        assert len(_moments(truth, pod, "lock_reconnected")) == 1
    assert "rejected" in {r["renewalOutcome"] for r in _moments(truth, "pod-a", "lease_renewal")}
    # Sentinel's log and the promoted replica's, as Redis wrote them, beside the pods' logs
    sentinel = (_out / "redis-sentinel.log").read_text(encoding="utf-8")
    assert "+switch-master leaselog-lock 127.0.0.1 " in sentinel and ":X " in sentinel
    assert "MASTER MODE enabled" in (_out / "redis-replica.log").read_text(encoding="utf-8")
    # (whether A still ran when B started depends on how long Sentinel took: an overlap is scored, not required)
    kinds = {e.kind for e in expectations(truth)}
    assert {"concurrent_leases", "renewal_failed", "stale_release"} <= kinds, (kinds, truth["faults"])


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
def test_the_failover_is_reported_exactly_and_explained(
    failover: tuple[Path, dict[str, Any]], tmp_path: Path, ids: bool
) -> None:
    out, truth = failover
    rs, doc = score_run(out, truth, "flat", work=tmp_path, ids=ids)
    bad = [
        (i.status, i.kind, i.why[:200]) for i in rs.items if i.status in ("missed", "false", "figure_error")
    ]
    assert bad == []
    found = {i.kind for i in rs.items if i.status == "found"}
    assert {"concurrent_leases", "renewal_failed", "stale_release"} <= found, [
        (i.status, i.kind) for i in rs.items
    ]
    (f,) = [f for f in doc["findings"] if f["kind"] == "concurrent_leases"]
    assert (f["severity"], f["certainty"]) == ("error", "certain")
    token = _moments(truth, "pod-a", "lock_acquired")[0]["fencingToken"]
    for said in (
        "that its lock client reconnected to Redis",
        "master changed, reconnected to",
        "a failover, to a primary that did not have the key",
        f"Both were handed fencing token {token}",
        "Sentinel switched the primary of leaselog-lock from 127.0.0.1:",
        "min-replicas-to-write",
    ):
        assert said in f["message"]
    assert any("reconnects to Redis" in (e.get("note") or "") for e in f["evidence"])
    # the Sentinel line cited is its +switch-master, in the Redis log copied beside the rendering
    (cited,) = [e for e in f["evidence"] if e["file"].endswith("redis-sentinel.log")]
    line = Path(cited["file"]).read_text(encoding="utf-8").splitlines()[cited["line"] - 1]
    assert "+switch-master leaselog-lock" in line and cited["note"] == "Sentinel switches the primary"
    assert f["details"]["redisFailover"]["file"] == cited["file"]


def test_the_failover_reads_alike_in_every_layout(failover: tuple[Path, dict[str, Any]]) -> None:
    out, truth = failover
    assert differential(out, truth, SHAPES) == {}


def test_the_stepped_clock_is_in_the_log_and_in_the_truth(clock_step: tuple[Path, dict[str, Any]]) -> None:
    out, truth = clock_step
    ((pod, at, size),) = clock_steps(truth)
    assert (pod, size) == ("pod-b", -2000.0)
    moments = truth["moments"]["pod-b"]
    assert moments[0]["monoMs"] < at <= moments[-1]["monoMs"]  # inside pod-b's logged span
    # each line's ts is its true wall time plus the pod's clock at that moment; elapsedMs never steps
    rows = [r for r in flat_rows(out)["pod-b"] if "event" in r]
    assert len(rows) == len(moments)
    for row, m in zip(rows, moments, strict=True):
        logged = datetime.fromisoformat(row["ts"].replace("Z", "+00:00")).timestamp() * 1000
        want = m["wallMs"] + (size if m["monoMs"] >= at else 0)
        assert abs(logged - want) <= 1.0
    elapsed = [r["elapsedMs"] for r in rows]
    assert elapsed == sorted(elapsed)
    stamps = [r["ts"] for r in rows]
    assert stamps != sorted(stamps)  # the clock went back: the log's time does too
    assert [(e.kind, e.eids) for e in expectations(truth) if e.kind == "clock_step"] == [
        ("clock_step", ("pod-b",))
    ]


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
def test_a_clock_step_run_scores_clean(
    clock_step: tuple[Path, dict[str, Any]], tmp_path: Path, ids: bool
) -> None:
    out, truth = clock_step
    rs, _doc = score_run(out, truth, "flat", work=tmp_path, ids=ids)
    bad = [
        (i.status, i.kind, i.why[:200]) for i in rs.items if i.status in ("missed", "false", "figure_error")
    ]
    assert bad == [], json.dumps(bad)
    assert not [i for i in rs.items if i.status in ("unchecked", "step_allowed")]
