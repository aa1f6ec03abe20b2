"""Executions without execution ids: the same logs with and without ids give the same findings.

Each scenario is written once with ids (and the thread each line was logged from); the test reads it as
logged, with the ids removed, and (where the thread is what tells runs apart) with the threads removed
too: then the runs cannot be told apart, and what depends on that must say so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import leaselog
from helpers import SAMPLES, jsonl
from leaselog.execution_runs import ID_UNTOLD, IDENTITIES, POD, UNTOLD

Row = dict[str, Any]
JOB = "report-42"


def line(ts: str, pod: str, ex: str | None, event: str, thread: str | None = None, **fields: Any) -> Row:
    row: Row = {"ts": f"2026-11-02T{ts}Z", "jobId": fields.pop("job", JOB), "pod": pod, "event": event}
    if ex is not None:
        row["executionId"] = ex
    if thread is not None:
        row["thread"] = thread
    return row | fields


def run(
    pod: str, ex: str, start: str, end: str, thread: str | None = None, lease_ms: int = 10_000, **trig: Any
) -> list[Row]:
    """One run: triggered, acquired, started at `start` (+0/10/20 ms), finished and released at `end`."""
    released = trig.pop("released", True)
    return [
        line(
            f"{start}.000", pod, ex, "job_triggered", thread, trigger=trig.pop("trigger", "scheduler"), **trig
        ),
        line(f"{start}.010", pod, ex, "lock_acquired", thread, leaseMs=lease_ms, owner=f"{pod}-{ex}"),
        line(f"{start}.020", pod, ex, "job_started", thread),
        line(f"{end}.000", pod, ex, "job_finished", thread, status="ok"),
        line(f"{end}.010", pod, ex, "lock_released", thread, released=released),
    ]


def denied(pod: str, ex: str, at: str, thread: str | None = None) -> list[Row]:
    return [
        line(f"{at}.005", pod, ex, "job_triggered", thread, trigger="scheduler"),
        line(f"{at}.015", pod, ex, "lock_denied", thread),
    ]


def scheduled_job() -> list[Row]:
    """pod-a runs report-42 every minute (10 s lease; the third run takes 25 s); pod-b is turned away
    twice, then waits and acquires after pod-a's third lease expired."""
    rows = [
        *run("pod-a", "a1", "10:00:00", "10:00:08"),
        *run("pod-a", "a2", "10:01:00", "10:01:08"),
        *run("pod-a", "a3", "10:02:00", "10:02:25", released=False),
        *denied("pod-b", "b1", "10:00:00"),
        *denied("pod-b", "b2", "10:01:00"),
        *denied("pod-b", "b3", "10:02:00"),
        line("10:02:10.300", "pod-b", "b3", "lock_acquired", leaseMs=10_000, owner="pod-b-b3"),
        line("10:02:10.310", "pod-b", "b3", "job_started"),
        line("10:02:15.000", "pod-b", "b3", "job_finished", status="ok"),
        line("10:02:15.010", "pod-b", "b3", "lock_released", released=True),
    ]
    return rows


def two_threads() -> list[Row]:
    """Two scheduler threads of one pod: the second acquires after the first's lease expired, while the
    first still runs; the first's release then finds the key gone."""
    return [
        *run("pod-a", "1", "10:00:00", "10:00:25", "scheduling-1", released=False),
        *run("pod-a", "2", "10:00:12", "10:00:18", "scheduling-2"),
    ]


def redelivery_same_pod() -> list[Row]:
    """A message redelivered to the same pod, on another consumer thread, while its first delivery still
    runs past its lease."""
    msg = {"trigger": "stream", "topic": "reports", "messageId": "1-0"}
    return [
        *run("pod-a", "d1", "10:00:00", "10:00:30", "consumer-1", released=False, deliveryCount=1, **msg),
        *run("pod-a", "d2", "10:00:15", "10:00:20", "consumer-2", deliveryCount=2, **msg),
    ]


def renewer_thread() -> list[Row]:
    """Renewals logged by a lease-renewer thread; the second run's renewal is rejected (its lease was
    taken), the first run is fine."""
    rows = [
        *run("pod-a", "r1", "10:00:00", "10:00:08", "worker-1"),
        *run("pod-a", "r2", "10:01:00", "10:01:30", "worker-1", released=False),
        *run("pod-b", "s1", "10:01:12", "10:01:20", "worker-1"),
    ]
    rows += [
        line("10:00:05.000", "pod-a", "r1", "lease_renewal", "lease-renewer", renewalOutcome="success"),
        line("10:01:05.000", "pod-a", "r2", "lease_renewal", "lease-renewer", renewalOutcome="success"),
        line("10:01:16.000", "pod-a", "r2", "lease_renewal", "lease-renewer", renewalOutcome="rejected"),
    ]
    return sorted(rows, key=lambda r: (r["pod"], r["ts"]))


def restarted_counter() -> list[Row]:
    """Execution ids counted per process: `1` on pod-a at 10:00 and again after a restart at 10:05."""
    return [*run("pod-a", "1", "10:00:00", "10:00:05"), *run("pod-a", "1", "10:05:00", "10:05:05")]


def clean_fleet() -> list[Row]:
    """Three jobs, three pods, runs every minute, one at a time: nothing to find."""
    rows: list[Row] = []
    for j in range(3):
        job = f"sync-{j}"
        for m in range(4):
            pod = f"pod-{'abc'[(j + m) % 3]}"
            for r in run(pod, f"{job}-{m}", f"10:0{m}:0{j}", f"10:0{m}:3{j}"):
                rows.append(r | {"jobId": job})
            rows += [
                r | {"jobId": job}
                for r in denied(f"pod-{'abc'[(j + m + 1) % 3]}", f"{job}-d{m}", f"10:0{m}:0{j}")
            ]
    return rows


def strip(rows: list[Row], *keys: str) -> list[Row]:
    return [{k: v for k, v in r.items() if k not in keys} for r in rows]


def analyze(tmp_path: Path, rows: list[Row], name: str) -> leaselog.Analysis:
    folder = tmp_path / name
    for pod in sorted({r["pod"] for r in rows}):
        jsonl(folder / f"{pod}.jsonl", [r for r in rows if r["pod"] == pod])
    return leaselog.analyze(folder)


def story(a: leaselog.Analysis) -> list[tuple[Any, ...]]:
    """What the findings say, without the executions' names: kind, severity, certainty, pods, figure,
    trigger, start, end."""
    return sorted(
        (
            f.kind,
            f.severity,
            f.certainty,
            tuple(sorted(f.pods)),
            None if f.duration_ms is None else round(f.duration_ms),
            f.trigger,
            f.start,
            f.end,
        )
        for f in a.finding_list
    )


SCENARIOS = {
    "scheduled_job": scheduled_job,
    "two_threads": two_threads,
    "redelivery_same_pod": redelivery_same_pod,
    "renewer_thread": renewer_thread,
    "restarted_counter": restarted_counter,
    "clean_fleet": clean_fleet,
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_same_logs_without_ids_tell_the_same_story(tmp_path: Path, name: str) -> None:
    rows = SCENARIOS[name]()
    with_ids = analyze(tmp_path, rows, "ids")
    without = analyze(tmp_path, strip(rows, "executionId"), "noids")
    assert story(without) == story(with_ids)
    assert without.executions.height == with_ids.executions.height
    expected_from = "pod+thread+sequence" if any("thread" in r for r in rows) else "pod+sequence"
    assert set(without.executions["execution_from"]) == {expected_from}


def test_scheduled_job_without_ids_finds_the_incident(tmp_path: Path) -> None:
    a = analyze(tmp_path, strip(scheduled_job(), "executionId"), "noids")
    found = {f.kind: f for f in a.finding_list if f.severity != "info"}
    assert found["lease_outlived"].duration_ms == pytest.approx(14_990, abs=1)
    assert found["overlapping_executions"].duration_ms == pytest.approx(4_690, abs=1)
    assert found["overlapping_executions"].execution_ids == ("report-42@pod-a#3", "report-42@pod-b#3")
    assert "stale_release" in found
    second = [f for f in a.finding_list if f.kind == "second_attempt" and f.severity == "warning"]
    assert [f.duration_ms for f in second] == [pytest.approx(290, abs=1)]
    # the runs are named in time order per job and pod, and the JSON says how they were identified
    assert a.executions.filter(pl.col("pod") == "pod-a")["execution_id"].to_list() == [
        "report-42@pod-a#1",
        "report-42@pod-a#2",
        "report-42@pod-a#3",
    ]
    doc = leaselog.document(a)
    outlived = next(f for f in doc["findings"] if f["kind"] == "lease_outlived")
    assert outlived["details"]["executionFrom"] == ["pod+sequence", "pod+sequence"]


def test_logs_with_ids_say_nothing_of_identity(tmp_path: Path) -> None:
    a = analyze(tmp_path, scheduled_job(), "ids")
    assert set(a.executions["execution_from"]) == {"id"}
    assert all("executionFrom" not in (f.get("details") or {}) for f in leaselog.document(a)["findings"])


def test_an_id_reused_after_its_execution_ended_is_two_executions(tmp_path: Path) -> None:
    a = analyze(tmp_path, restarted_counter(), "ids")
    assert a.executions["execution_id"].to_list() == ["1", "1#2"]
    assert set(a.executions["execution_from"]) == {"id+sequence"}
    assert not [f for f in a.finding_list if f.severity != "info"]


def test_an_id_still_running_is_not_split(tmp_path: Path) -> None:
    """A denial, a wait and an acquisition under one id, and renewals after it: one execution."""
    rows = [
        *denied("pod-b", "b3", "10:02:00"),
        line("10:02:10.300", "pod-b", "b3", "lock_acquired", leaseMs=10_000),
        line("10:02:15.000", "pod-b", "b3", "lease_renewal", renewalOutcome="success"),
        line("10:02:18.000", "pod-b", "b3", "job_finished"),
        line("10:02:18.010", "pod-b", "b3", "lock_released", released=True),
        line("10:02:18.020", "pod-b", "b3", "completion", outcome="accepted"),
    ]
    for logged in (rows, strip(rows, "executionId")):
        a = analyze(tmp_path, logged, f"n{len(logged[0])}")
        assert a.executions.height == 1
        assert a.executions["end_kind"].to_list() == ["finished"]


def test_a_renewer_threads_lines_join_the_run_they_renew(tmp_path: Path) -> None:
    a = analyze(tmp_path, strip(renewer_thread(), "executionId"), "noids")
    renewals = a.renewals.select("execution_id", "renewal_outcome").rows()
    assert renewals == [
        ("report-42@pod-a#1", "success"),
        ("report-42@pod-a#2", "success"),
        ("report-42@pod-a#2", "rejected"),
    ]


def test_runs_without_ids_or_threads_that_interleave_are_uncertain(tmp_path: Path) -> None:
    """Two threads' runs with neither ids nor threads: the logs cannot tell them apart. The second began
    while the first ran, and two finishes follow: both lived at once, so the overlap is decided (certain,
    the figure the logs with ids give); the rest hangs on which finish is whose, and says so."""
    rows = sorted(two_threads(), key=lambda r: r["ts"])  # one pod's file, in the order it was written
    told = analyze(tmp_path, rows, "told")
    a = analyze(tmp_path, strip(rows, "executionId", "thread"), "bare")
    assert set(a.executions["execution_from"]) == {IDENTITIES[UNTOLD]}
    assert a.executions.select("execution_id", "end_kind").rows() == [
        ("report-42@pod-a#1", "finished"),
        ("report-42@pod-a#2", "finished"),
    ], "the first run did not crash: it ended after the second"
    overlap = [f for f in a.finding_list if f.kind == "overlapping_executions"]
    want = [f.duration_ms for f in told.finding_list if f.kind == "overlapping_executions"]
    assert [(f.certainty, f.severity, f.duration_ms) for f in overlap] == [("certain", "error", want[0])]
    assert "both lived at once" in overlap[0].message
    (second,) = [f for f in a.finding_list if f.kind == "second_attempt"]
    assert second.certainty == "certain" and "order and trigger hold" in second.message
    # (lease_settings: fleet advice from the runtimes, whoever ran them)
    decided = ("overlapping_executions", "second_attempt", "lease_settings")
    rest = [f for f in a.finding_list if f.kind not in decided]
    assert {f.kind for f in rest} >= {"lease_outlived", "stale_release"}
    for f in rest:
        assert f.certainty == "uncertain" and f.severity != "error", f
        assert "cannot tell" in f.message
    assert not any(f.kind == "crash_takeover" for f in a.finding_list)
    assert any("cannot tell these runs apart" in n for n in a.problems)
    assert not any("end was not logged" in n for n in a.problems)


def test_three_interleaved_runs_leave_even_the_overlap_uncertain(tmp_path: Path) -> None:
    """Three runs at once on a pod with no ids and no threads: which finish is whose decides every
    overlap, so none is certain."""
    rows = [
        *run("pod-a", "1", "10:00:00", "10:00:40", "t1", released=False),
        *run("pod-a", "2", "10:00:12", "10:00:30", "t2", released=False),
        *run("pod-a", "3", "10:00:24", "10:00:28", "t3"),
    ]
    rows.sort(key=lambda r: r["ts"])
    a = analyze(tmp_path, strip(rows, "executionId", "thread"), "bare3")
    assert set(a.executions["execution_from"]) == {IDENTITIES[UNTOLD]}
    assert any(f.kind == "overlapping_executions" for f in a.finding_list)
    for f in a.finding_list:
        if f.kind == "lease_settings":  # fleet advice, from the runtimes whoever ran them
            continue
        assert f.certainty == "uncertain" and f.severity != "error", f


def test_one_id_reused_by_two_threads_with_no_thread_logged(tmp_path: Path) -> None:
    """Two threads' runs under the same execution id, no thread: split, not told apart, and said so."""
    rows = sorted((r | {"executionId": "a"} for r in two_threads()), key=lambda r: r["ts"])
    a = analyze(tmp_path, strip(rows, "thread"), "reused")
    assert a.executions.select("execution_id", "execution_from", "end_kind").rows() == [
        ("a", IDENTITIES[ID_UNTOLD], "finished"),
        ("a#2", IDENTITIES[ID_UNTOLD], "finished"),
    ]
    kinds = {(f.kind, f.certainty) for f in a.finding_list}
    assert ("overlapping_executions", "certain") in kinds and ("lease_outlived", "uncertain") in kinds
    assert any("under one execution id" in n for n in a.problems)


def test_one_pod_running_its_job_one_at_a_time_needs_no_caveat(tmp_path: Path) -> None:
    """The ordinary pod: one thread, runs one after the other, no ids, no threads: quiet, no caveat."""
    rows = [*run("pod-a", "1", "10:00:00", "10:00:05"), *run("pod-a", "2", "10:01:00", "10:01:05")]
    a = analyze(tmp_path, strip(rows, "executionId", "thread"), "plain")
    assert set(a.executions["execution_from"]) == {IDENTITIES[POD]}
    assert [(f.kind, f.severity) for f in a.finding_list] == [("second_attempt", "info")]
    assert not any("cannot tell" in f.message for f in a.finding_list) and not a.problems


def test_an_acquisition_while_a_run_is_open_starts_a_new_one(tmp_path: Path) -> None:
    """A run whose end was not logged (a crash), then the next run on the same pod: two executions, the
    first one open, and a note says so."""
    rows = run("pod-a", "x", "10:00:00", "10:00:05")[:3] + run("pod-a", "y", "10:01:00", "10:01:05")
    a = analyze(tmp_path, strip(rows, "executionId"), "noids")
    assert a.executions.select("execution_id", "end_kind").rows() == [
        ("report-42@pod-a#1", "open"),
        ("report-42@pod-a#2", "finished"),
    ]
    assert any("end was not logged" in n for n in a.problems)


def test_empty_input_has_no_executions(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    a = leaselog.analyze(tmp_path / "empty.jsonl")
    assert a.executions.height == 0 and not a.finding_list and not a.problems


SAMPLE_SETS = sorted(
    p
    for p in [
        SAMPLES / "article-incident",
        SAMPLES / "clean",
        SAMPLES / "clean-busy",
        *(SAMPLES / "scenarios").iterdir(),
    ]
    if p.is_dir()
)


@pytest.mark.parametrize("folder", SAMPLE_SETS, ids=lambda p: p.name)
def test_every_sample_incident_tells_the_same_story_without_ids(tmp_path: Path, folder: Path) -> None:
    """The sample incidents (one file per pod), their execution ids removed."""
    rows = [json.loads(s) for f in sorted(folder.glob("*.jsonl")) for s in f.read_text().splitlines() if s]
    with_ids = leaselog.analyze(folder, lease_ttl="5s")
    for f in sorted(folder.glob("*.jsonl")):
        stripped = [json.loads(s) for s in f.read_text().splitlines() if s]
        jsonl(tmp_path / f.name, strip(stripped, "executionId"))
    without = leaselog.analyze(tmp_path, lease_ttl="5s")
    assert rows and story(without) == story(with_ids)
    assert without.executions.height == with_ids.executions.height


def test_the_lease_settings_advice_says_how_its_executions_were_identified(tmp_path: Path) -> None:
    """LL701 is fleet-wide (no job), yet it names executions: like every finding, it says how those the
    logs did not name were identified (`details.executionFrom`), and nothing where the ids were logged."""
    bare = analyze(tmp_path, strip(scheduled_job(), "executionId"), "bare")
    (advice,) = [f for f in bare.finding_list if f.kind == "lease_settings"]
    assert advice.execution_ids and advice.details["executionFrom"] == ["pod+sequence"] * len(
        advice.execution_ids
    )
    told = analyze(tmp_path, scheduled_job(), "told")
    (advice,) = [f for f in told.finding_list if f.kind == "lease_settings"]
    assert advice.execution_ids and "executionFrom" not in advice.details


def test_an_id_reused_after_a_crash_is_split_in_a_loki_export_too(tmp_path: Path) -> None:
    """The process crashes holding the lease; restarted, it counts its executions from 1 again. The flat
    logs and a Loki export of them (newest first) tell the same story: two executions, the first open."""
    from leaselog.reproduce.campaign import write_shape

    rows = [
        *run("pod-a", "1", "10:00:00", "10:00:05")[:3],  # triggered, acquired, started: then the crash
        *run("pod-a", "1", "10:00:30", "10:00:35"),
    ]
    write_shape({"pod-a": rows}, "loki", tmp_path / "loki")
    for name, a in (("flat", analyze(tmp_path, rows, "flat")), ("loki", leaselog.analyze(tmp_path / "loki"))):
        assert a.executions.select("execution_id", "end_kind").rows() == [
            ("1", "open"),
            ("1#2", "finished"),
        ], name
        assert [f.kind for f in a.finding_list if f.kind == "crash_takeover"] == ["crash_takeover"], name
