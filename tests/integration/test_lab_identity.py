"""The lab's proof of execution identity without ids: pods that run a job several times, on real Redis, give
the same findings with execution ids and without them.

Each deterministic run below is one layout the randomized campaign also draws (reproduce/layouts.py): a
pod whose scheduler fires the same job every 1.5 s (per-pod id counters, the same id every time, a pod
killed and restarted that counts from 1 again), a pod with a scheduler pool of two threads (the second acquires after the first one's lease expired while it still runs), and a message
redelivered to another consumer thread of the same pod (a unique id, and the same id reused).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import leaselog
from leaselog.reproduce import shapes
from leaselog.reproduce.campaign import differential, score_run, write_shape
from leaselog.reproduce.identity import translate, true_names
from leaselog.reproduce.lab import play
from leaselog.reproduce.plan import Plan, PodPlan
from leaselog.reproduce.rows import without_ids, without_threads
from leaselog.reproduce.server import throwaway_redis

# -- renderings without ids -------------------------------------------------------------------------


def _row(ts: str, thread: str, eid: str, event: str, **kw: Any) -> dict[str, Any]:
    return {
        "ts": f"2026-11-02T08:00:{ts}Z",
        "level": "INFO",
        "jobId": "report-1",
        "executionId": eid,
        "pod": "pod-a",
        "thread": thread,
        "event": event,
        **kw,
        "message": event,
    }


ROWS = {
    "pod-a": [
        {
            "ts": "2026-11-02T08:00:00.000Z",
            "pod": "pod-a",
            "thread": "main",
            "level": "INFO",
            "message": "up",
        },
        _row("00.100", "scheduling-1", "1", "job_triggered", trigger="scheduler"),
        _row("00.102", "scheduling-1", "1", "lock_acquired", leaseMs=1000),
        _row("01.300", "scheduling-2", "2", "job_triggered", trigger="scheduler"),
        _row("01.302", "scheduling-2", "2", "lock_acquired", leaseMs=1000),
        _row("01.800", "scheduling-2", "2", "lock_released", released=True),
        _row("02.400", "scheduling-1", "1", "lock_released", released=False),
    ]
}


# what each shape logs as the thread of ROWS' two scheduler threads, where it is not the worker's own name:
# Celery's line names the pool process (`processName`), one per lab worker thread; klog's line has a
# process id and no thread at all
THREADS_LOGGED: dict[str, set[str | None]] = {
    "celery": {"ForkPoolWorker-1", "ForkPoolWorker-2"},
    "klog": {None},
    # the Python layouts as documented name no thread (leaselog.reproduce.python_shapes)
    "python-logging": {None},
    "python-json-logger": {None},
}


def test_every_shape_renders_without_ids_and_with_the_worker_threads(tmp_path: Path) -> None:
    rows = without_ids(ROWS)
    assert all("executionId" not in r for r in rows["pod-a"])
    assert set(shapes.NO_THREAD) == {n for n, t in THREADS_LOGGED.items() if t == {None}}
    for name in shapes.SHAPES:
        paths = write_shape(rows, name, tmp_path / name)
        text = "".join(p.read_text(encoding="utf-8") for p in paths)
        assert "executionId" not in text and "execution_id" not in text, name
        want = THREADS_LOGGED.get(name, {"scheduling-1", "scheduling-2"})
        assert all(t in text for t in want if t is not None), name
        a = leaselog.analyze(paths, keep_fields=False)
        threads = set(a.events.filter(pl.col("job_id") == "report-1")["thread"].to_list())
        assert threads == want, name
        # two threads are two executions wherever the thread is logged; without it the lifecycle still
        # cuts the second acquisition (while the first run goes on) into an execution of its own
        assert a.executions.height == 2, name


def test_a_newest_first_export_without_ids_keeps_each_run_whole(tmp_path: Path) -> None:
    """A Loki export lists the lines of one millisecond newest first too (job_started before its
    lock_acquired): read back in time order, the run stays one."""
    rows = without_ids(
        {
            "pod-a": [
                _row("00.100", "consumer-1", "1", "job_triggered", trigger="stream"),
                _row("00.102", "consumer-1", "1", "lock_acquired", leaseMs=1000),
                _row("00.102", "consumer-1", "1", "job_started"),
                _row("00.500", "consumer-1", "1", "job_finished"),
                _row("00.500", "consumer-1", "1", "lock_released", released=True),
            ]
        }
    )
    for name in ("flat", "loki"):
        a = leaselog.analyze(write_shape(rows, name, tmp_path / name), keep_fields=False)
        assert a.executions.height == 1, name


def test_an_id_turned_away_on_another_thread_is_an_attempt_of_its_own(tmp_path: Path) -> None:
    rows = {
        "pod-a": [
            _row("00.100", "scheduling-1", "task-7", "job_triggered", trigger="scheduler"),
            _row("00.102", "scheduling-1", "task-7", "lock_acquired", leaseMs=1000),
            _row("00.400", "lease-renewal-1", "task-7", "lease_renewal", renewalOutcome="success"),
            _row("00.600", "scheduling-2", "task-7", "job_triggered", trigger="scheduler"),
            _row("00.602", "scheduling-2", "task-7", "lock_denied"),
            _row("00.800", "scheduling-1", "task-7", "job_finished"),
            _row("00.801", "scheduling-1", "task-7", "lock_released", released=True),
        ]
    }
    for rendering in (rows, without_ids(rows)):
        a = leaselog.analyze(write_shape(rendering, "flat", tmp_path / str(id(rendering))), keep_fields=False)
        assert a.executions.height == 2


def test_a_helper_thread_renews_the_run_that_holds_the_lease(tmp_path: Path) -> None:
    rows = without_ids(
        {
            "pod-a": [
                _row("02.663", "scheduling-1", "a", "job_triggered", trigger="scheduler"),
                _row("02.677", "scheduling-1", "a", "lock_acquired", leaseMs=1500),
                _row("02.683", "scheduling-1", "a", "job_started"),
                _row("03.903", "lease-renewal-1", "a", "lease_renewal", renewalOutcome="success"),
                _row("04.306", "scheduling-2", "a", "job_triggered", trigger="scheduler"),
                _row("04.312", "lease-renewal-1", "a", "lease_renewal", renewalOutcome="success"),
                _row("04.411", "scheduling-2", "a", "lock_denied"),
                _row("04.714", "lease-renewal-1", "a", "lease_renewal", renewalOutcome="success"),
                _row("05.093", "scheduling-1", "a", "job_finished"),
                _row("05.094", "scheduling-1", "a", "lock_released", released=True),
            ]
        }
    )
    a = leaselog.analyze(write_shape(rows, "flat", tmp_path), keep_fields=False)
    assert a.executions.height == 2
    # every renewal is the run's that acquired, none the waiting attempt's (so nothing overlaps)
    acquired = a.executions.filter(pl.col("acquired_at").is_not_null())["execution_id"].to_list()
    assert set(a.renewals["execution_id"]) == set(acquired) and len(acquired) == 1
    assert "overlapping_executions" not in {f.kind for f in a.finding_list}


def test_a_restarted_pod_reusing_the_killed_attempts_id_is_a_new_execution(tmp_path: Path) -> None:
    rows = {
        "pod-a": [
            _row("00.100", "scheduling-1", "task-7", "job_triggered", trigger="scheduler"),
            _row("00.102", "scheduling-1", "task-7", "lock_acquired", leaseMs=1000),
            _row("00.103", "scheduling-1", "task-7", "job_started"),
            # killed here; the restarted pod's scheduler fires the job again under the same id
            {"ts": "2026-11-02T08:00:01.500Z", "pod": "pod-a", "thread": "main", "message": "up"},
            _row("02.000", "scheduling-1", "task-7", "job_triggered", trigger="scheduler"),
            _row("02.002", "scheduling-1", "task-7", "lock_acquired", leaseMs=1000),
            _row("02.003", "scheduling-1", "task-7", "job_started"),
            _row("02.400", "scheduling-1", "task-7", "job_finished"),
            _row("02.401", "scheduling-1", "task-7", "lock_released", released=True),
        ]
    }
    for rendering in (rows, without_ids(rows)):
        a = leaselog.analyze(write_shape(rendering, "flat", tmp_path / str(id(rendering))), keep_fields=False)
        assert a.executions.height == 2
        assert "crash_takeover" in {f.kind for f in a.finding_list}


def test_an_id_turned_away_while_its_run_goes_on_is_an_attempt_of_its_own_without_a_thread(
    tmp_path: Path,
) -> None:
    rows = without_threads(
        {
            "pod-a": [
                _row("00.102", "scheduling-1", "task-7", "lock_acquired", leaseMs=1000),
                _row("00.600", "scheduling-2", "task-7", "job_triggered", trigger="scheduler"),
                _row("00.602", "scheduling-2", "task-7", "lock_denied"),
                _row("00.801", "scheduling-1", "task-7", "lock_released", released=True),
            ]
        }
    )
    for rendering in (without_ids(rows), rows):
        a = leaselog.analyze(write_shape(rendering, "flat", tmp_path / str(id(rendering))), keep_fields=False)
        assert a.executions.height == 2


def test_executions_are_matched_to_true_attempts_by_pod_and_time() -> None:
    def m(event: str, wall: int, run: str) -> dict[str, Any]:
        return {"event": event, "monoMs": float(wall), "wallMs": wall, "run": run}

    t0 = 1_800_000_000_000
    truth = {
        "job": "report-1",
        "offsets": {"pod-a": 20, "pod-b": 0},
        "moments": {
            "pod-a": [
                m("lock_acquired", t0, "attempt-a"),
                m("lock_acquired", t0 + 1300, "attempt-a2"),
                m("lock_released", t0 + 1800, "attempt-a2"),
                m("lock_released", t0 + 2400, "attempt-a"),
            ],
            "pod-b": [m("lock_acquired", t0 + 2000, "attempt-b"), m("lock_released", t0 + 2100, "attempt-b")],
        },
    }

    ex = pl.DataFrame(
        {
            "job_id": ["report-1"] * 4,
            "execution_id": ["1", "2", "report-1@pod-a", "1b"],
            "pod": ["pod-a", "pod-a", "pod-a", "pod-b"],
            "first_seen": [t0 + 20, t0 + 1320, t0 + 20, t0 + 2000],
            "last_seen": [t0 + 2420, t0 + 1820, t0 + 2420, t0 + 2100],
        }
    ).with_columns(pl.col("first_seen", "last_seen").cast(pl.Datetime("ms", "UTC")))
    names = true_names(truth, ex)
    # the logged times are the pod's skewed clock: pod-a's lines are 20 ms ahead of the true wall time
    assert names == {
        ("report-1", "1"): "attempt-a",
        ("report-1", "2"): "attempt-a2",
        ("report-1", "report-1@pod-a"): "attempt-a",
        ("report-1", "1b"): "attempt-b",
    }
    doc = {"findings": [{"kind": "overlapping_executions", "jobId": "report-1", "executionIds": ["1", "2"]}]}
    assert translate(doc, names)["findings"][0]["executionIds"] == ["attempt-a", "attempt-a2"]
    # the same logged id in another job is another execution: not renamed by this job's names
    other = {"findings": [{"kind": "second_attempt", "jobId": "report-9", "executionIds": ["1", "2"]}]}
    assert translate(other, names)["findings"][0]["executionIds"] == ["1", "2"]
    # a clean handoff's job: one attempt per pod, named by the pod
    truth["handoffs"] = [
        {"job": "report-1-h1", "moments": {"pod-a": [m("lock_acquired", t0 + 5000, "attempt-a")]}}
    ]
    h = pl.DataFrame(
        {
            "job_id": ["report-1-h1"],
            "execution_id": ["report-1-h1@pod-a#1"],
            "pod": ["pod-a"],
            "first_seen": [t0 + 5000],
            "last_seen": [t0 + 5000],
        }
    ).with_columns(pl.col("first_seen", "last_seen").cast(pl.Datetime("ms", "UTC")))
    assert true_names(truth, h) == {("report-1-h1", "report-1-h1@pod-a#1"): "attempt-a"}
    assert doc["findings"][0]["executionIds"] == ["1", "2"]  # the document itself is left alone


# -- real runs ------------------------------------------------------------------------------------------


def _plan(index: int, layout: str, id_style: str, pods: list[PodPlan], **kw: Any) -> Plan:
    fault = {"fault": "none", "fault_at_ms": 0, "fault_ms": 0, **kw}
    return Plan(
        seed=0,
        index=index,
        lease_ms=1000,
        renew=False,
        renewal_ms=300,
        margin_ms=100,
        op_timeout_ms=100,
        renew_retry_ms=0,
        completion="none",
        ignore_stop=False,
        shape="flat",
        **fault,
        pods=tuple(pods),
        layout=layout,
        id_style=id_style,
    )


def _pod(
    role: str, path: str, threads: tuple[str, ...], units: tuple[int, ...], ticks: tuple[int, ...]
) -> PodPlan:
    # a second thread of the pod waits for the lock when it comes a moment too early (a loaded machine)
    on_denied = "wait" if len(threads) > 1 else "exit"
    return PodPlan(role, path, None, on_denied, units[0], 0, False, threads, units, ticks)


PLANS = {
    # pod-a's third run (3.5 s) outlives its 1 s lease; pod-b's scheduler fires 250 ms after pod-a's: it is
    # turned away three times, and acquires at its fourth tick while pod-a still runs (for about 1.9 s more:
    # room for a loaded machine's delays, which a 0.6 s margin did not leave). Both pods count their ids
    # from 1.
    "scheduled": _plan(
        901,
        "scheduled",
        "counter",
        [
            _pod("A", "scheduler", ("tick",), (6, 6, 35, 6), (0, 1500, 3000)),
            _pod("B", "scheduler", ("tick",), (3, 3, 3, 3), (250, 1750, 3250, 4600)),
        ],
    ),
    # one pod, a scheduler pool of two: the second thread fires 1.5 s in, after the first one's lease
    "threads": _plan(
        902, "threads", "counter", [_pod("A", "scheduler", ("tick", "tick"), (24, 4), (0, 1500))]
    ),
    # the request, held past a lease unacknowledged, is redelivered to the pod's other consumer thread
    "same_pod": _plan(903, "same_pod", "unique", [_pod("A", "first", ("stream", "claim"), (22, 4), ())]),
    "same_pod_reused": _plan(
        904, "same_pod", "reused", [_pod("A", "first", ("stream", "claim"), (22, 4), ())]
    ),
    # the scheduled job again, each pod logging the same id every time (pod-b: turned away three times,
    # then acquires, under one id)
    "scheduled_reused": _plan(
        905,
        "scheduled",
        "reused",
        [
            _pod("A", "scheduler", ("tick",), (6, 6, 35, 6), (0, 1500, 3000)),
            _pod("B", "scheduler", ("tick",), (3, 3, 3, 3), (250, 1750, 3250, 4600)),
        ],
    ),
    # pod-a is killed 0.5 s into its third run and restarted: its counter starts at 1 again, and its next
    # run (logged as `1`) takes the job over once the killed run's lease expired
    "scheduled_restart": _plan(
        906,
        "scheduled",
        "counter",
        [
            _pod("A", "scheduler", ("tick",), (6, 6, 22, 6, 6), (0, 1500, 3000, 4500, 6000)),
            _pod("B", "scheduler", ("tick",), (3, 3, 3, 3, 3), (250, 1750, 3250, 4750, 6250)),
        ],
        fault="crash",
        fault_at_ms=3500,
    ),
}
EXPECTED = {
    "scheduled": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "threads": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "same_pod": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "same_pod_reused": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "scheduled_reused": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "scheduled_restart": {"crash_takeover", "second_attempt"},
}


@pytest.fixture(scope="module")
def runs() -> Any:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    root = Path(tempfile.mkdtemp(prefix="leaselog-identity-"))
    names = list(PLANS)

    def half(part: list[str]) -> dict[str, tuple[Path, dict[str, Any]]]:
        # the runs mostly wait on their own timelines: two at a time, each half on a server of its own
        with throwaway_redis() as target:
            return {name: (root / name, play(PLANS[name], target, root / name)) for name in part}

    with ThreadPoolExecutor(max_workers=2) as pool:
        out = {k: v for got in pool.map(half, [names[0::2], names[1::2]]) for k, v in got.items()}
    yield out
    shutil.rmtree(root, ignore_errors=True)


def _bad(rs: Any) -> list[str]:
    return [
        f"{i.status} {i.kind} {i.execution_ids}: {i.why[:120]}"
        for i in rs.items
        if i.status in ("missed", "false", "figure_error")
    ]


@pytest.mark.redis
@pytest.mark.parametrize(
    "name",
    [
        "scheduled",
        "threads",
        "same_pod",
        "same_pod_reused",
        "scheduled_reused",
        "scheduled_restart",
    ],
)
def test_with_ids_the_findings_match_the_truth(runs: Any, name: str, tmp_path: Path) -> None:
    folder, truth = runs[name]
    rs, _doc = score_run(folder, truth, "flat", tmp_path)
    found = {i.kind for i in rs.items if i.status == "found"}
    assert _bad(rs) == []
    assert EXPECTED[name] <= found, f"the run did not go as planned: {sorted(found)}"


@pytest.mark.redis
@pytest.mark.parametrize("name", list(PLANS))
def test_without_ids_the_findings_match_the_truth(runs: Any, name: str, tmp_path: Path) -> None:
    folder, truth = runs[name]
    rs, _doc = score_run(folder, truth, "flat", tmp_path, ids=False)
    found = {i.kind for i in rs.items if i.status == "found"}
    assert _bad(rs) == []
    assert EXPECTED[name] <= found, f"the run did not go as planned: {sorted(found)}"


@pytest.mark.redis
@pytest.mark.parametrize(
    "name",
    [
        "scheduled",
        "threads",
        "same_pod",
        "same_pod_reused",
        "scheduled_reused",
        "scheduled_restart",
    ],
)
def test_without_ids_the_findings_are_those_with_ids(runs: Any, name: str) -> None:
    folder, truth = runs[name]
    # exactly the findings (kinds, true executions, pods, severity, certainty, figures) and the
    # number of executions of the logs with ids, in a layout of each kind of thread field
    assert differential(folder, truth, ["flat", "ecs-3.5", "spring-console"], ids=(False,)) == {}


@pytest.mark.redis
def test_the_runs_are_what_the_layouts_say(runs: Any) -> None:
    """The truth saw what each layout is for: several runs on one pod, on one thread or on two."""
    for name, (_folder, truth) in runs.items():
        runs_of_a = {m["run"] for m in truth["moments"]["pod-a"]}
        threads_of_a = {m["thread"] for m in truth["moments"]["pod-a"] if m["event"] == "lock_acquired"}
        assert len(runs_of_a) >= 2, name
        assert len(threads_of_a) == (1 if name.startswith("scheduled") else 2), name
    sched = runs["scheduled"][1]["moments"]
    assert {m["event"] for m in sched["pod-b"]} >= {"lock_denied", "lock_acquired"}
    restarted = runs["scheduled_restart"][1]
    assert restarted["faults"][0].get("restarted")
    logged = [json.loads(x) for x in (runs["scheduled_restart"][0] / "pod-a.jsonl").read_text().splitlines()]
    counted = [r["executionId"] for r in logged if r.get("event") == "job_triggered"]
    assert counted[:3] == ["1", "2", "3"] and counted[3] == "1"  # the restarted pod counts from 1 again
    redelivered = [m for m in runs["same_pod"][1]["moments"]["pod-a"] if m["event"] == "job_triggered"]
    assert [m["deliveryCount"] for m in redelivered] == [1, 2]
    assert len({m["messageId"] for m in redelivered}) == 1
