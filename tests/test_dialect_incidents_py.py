"""The Kubernetes leader-election and python-redis-lock-in-Celery incidents in sample_logs/dialects/, read
with no mapping file, give their findings with the right figures; clean runs and denials at every tick
give nothing at warning or error.

python-redis-lock-celery is a lab run of the real python-redis-lock 4.0.1 inside real Celery 5.7.0 workers on
a real Redis (`leaselog.reproduce.prl_lab`: worker A's pool process paused 3.3 s with a 2 s lock and
auto_renewal; worker B's task took the lock; worker C's task polled without blocking and gave up), the
log files as Celery wrote them with task ids, hostnames and paths substituted and the lab's tracing
frames (its `Lock` subclass) taken out of the tracebacks; its truth: overlap 705.5 ms, zombie 1616.5 ms,
the renewal thread's extend after the pause rejected. The leader-election
sample is written from client-go's sources (no Go here): a leader frozen from 10:00:20.4 to 10:00:41.3
that reconciles again before it notices the other replica took the lease.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

import leaselog

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs" / "dialects"
K8S = SAMPLES / "k8s-leader-election"
CELERY = SAMPLES / "python-redis-lock-celery"


def _by_kind(a: leaselog.Analysis) -> dict[str, list[leaselog.Finding]]:
    out: dict[str, list[leaselog.Finding]] = {}
    for f in a.finding_list:
        out.setdefault(f.kind, []).append(f)
    return out


def _alarms(a: leaselog.Analysis) -> list[leaselog.Finding]:
    return [f for f in a.finding_list if f.severity in ("warning", "error") and f.kind != "lease_settings"]


def test_frozen_leader_keeps_acting_after_another_replica_took_the_lease() -> None:
    a = leaselog.analyze(str(K8S), lease_ttl="15s")
    assert a.line_totals()["malformed"] == 0
    got = _by_kind(a)
    (overlap,) = got["overlapping_executions"]
    # the other replica acquired at 10:00:37.520118; the frozen leader lost leadership at 10:00:43.316871
    assert overlap.duration_ms == 5796.753
    (outlived,) = got["lease_outlived"]
    # its last renewal (-v=5) at 10:00:20.190852 + the 15 s LeaseDuration = 10:00:35.190852
    assert outlived.duration_ms == 8126.019 and "report-controller-7d9f8b6c4-x2k9p" in outlived.pods
    assert got["renewal_failed"]
    (second,) = got["second_attempt"]
    assert second.trigger == "poll"  # client-go retries the lock every RetryPeriod


def test_leader_election_at_default_verbosity_claims_no_zombie_without_a_lease_length(tmp_path: Path) -> None:
    # below -v=5 client-go logs no renewal: without --lease-ttl nothing says how long the lease stayed valid
    for f in K8S.iterdir():
        kept = [ln for ln in f.read_text().splitlines() if "renewed lease" not in ln]
        (tmp_path / f.name).write_text("\n".join(kept) + "\n")
    a = leaselog.analyze(str(tmp_path))
    kinds = {f.kind for f in a.finding_list}
    assert "renewal_failed" in kinds and "second_attempt" in kinds
    assert "lease_outlived" not in kinds


def _default_verbosity(tmp_path: Path, names: tuple[str, ...] | None = None) -> Path:
    """The sample as client-go logs it below -v=5: no `successfully renewed` line."""
    for f in K8S.iterdir():
        if names is None or f.name in names:
            kept = [ln for ln in f.read_text().splitlines() if "renewed lease" not in ln]
            (tmp_path / f.name).write_text("\n".join(kept) + "\n")
    return tmp_path


def test_frozen_leader_at_default_verbosity_gives_the_overlap_and_a_bounded_zombie(tmp_path: Path) -> None:
    a = leaselog.analyze(str(_default_verbosity(tmp_path)), lease_ttl="15s")
    got = _by_kind(a)
    # the other replica acquired at 10:00:37.520118 and acts from then on (its controller's lines are not
    # lease lines: a leader holds until it logs the loss); the frozen one lost leadership at 10:00:43.316871
    (overlap,) = got["overlapping_executions"]
    assert overlap.duration_ms == 5796.753
    # the leader's renewals are unlogged: its lease lapsed between acquisition + 15 s (10:00:15.180456) and
    # the other replica's acquisition; the truth (last renewal 10:00:20.190852 + 15 s) is 8126.019 ms
    (outlived,) = got["lease_outlived"]
    assert outlived.duration_ms == 5796.753 <= 8126.019
    assert outlived.details["zombieAtMostMs"] == 28136.415 >= 8126.019
    assert "at least" in outlived.message and "-v=5" in outlived.message
    # no clock-skew bound from a handover whose expiry is only bounded
    assert not any("clock is at most" in f.message for f in a.finding_list)
    (second,) = got["second_attempt"]
    assert second.duration_ms is None and "renewals are not logged" in second.message


def test_a_leader_at_default_verbosity_is_quiet_however_long_it_holds(tmp_path: Path) -> None:
    # a minute of leadership with no renewal logged, four times the LeaseDuration, while the other replica
    # polls and is turned away (-v=4): the leader's renewals are just unlogged
    lock = "kube-system/report-controller"
    leader = [
        f"I1201 10:00:00.101234       1 leaderelection.go:250] attempting to acquire leader lease {lock}...",
        f"I1201 10:00:00.180456       1 leaderelection.go:260] successfully acquired lease {lock}",
        *(
            f'I1201 10:00:{s:02d}.402317       1 controller.go:120] "Reconciled report" duration="212ms"'
            for s in range(6, 60, 6)
        ),
    ]
    follower = [
        f"I1201 10:00:01.002345       1 leaderelection.go:250] attempting to acquire leader lease {lock}...",
        *(
            f"I1201 10:00:{s:02d}.010000       1 leaderelection.go:352] lock is held by leader-7d9f and has "
            f"not yet expired"
            for s in range(2, 60, 2)
        ),
    ]
    (tmp_path / "leader-7d9f.log").write_text("\n".join(leader) + "\n")
    (tmp_path / "follower-5c7b.log").write_text("\n".join(follower) + "\n")
    a = leaselog.analyze(str(tmp_path), lease_ttl="15s")
    assert {e for e in a.events["event"]} >= {"lock_acquired", "lock_denied"}
    # the leader holds, as far as the logs go (to the last denial), with its lease's end unknown
    (held,) = a.executions.filter(pl.col("acquired_at").is_not_null()).iter_rows(named=True)
    assert held["end"].isoformat().endswith("10:00:58.010000+00:00") and held["runtime_ms"] > 45_000
    assert held["lease_end"] == "renewals_unlogged" and held["expires_at"] is None
    assert not _alarms(a)


def test_a_crashed_leader_is_not_taken_to_act_after_the_next_one_acquired(tmp_path: Path) -> None:
    # the leader logs nothing after its acquisition (killed); the other replica takes the lease once it has
    # gone unrenewed for the LeaseDuration, and leads: no overlap, no zombie
    lock = "kube-system/report-controller"
    crashed = [
        f"I1201 10:00:00.101234       1 leaderelection.go:250] attempting to acquire leader lease {lock}...",
        f"I1201 10:00:00.180456       1 leaderelection.go:260] successfully acquired lease {lock}",
    ]
    successor = [
        f"I1201 10:00:01.002345       1 leaderelection.go:250] attempting to acquire leader lease {lock}...",
        f"I1201 10:00:17.520118       1 leaderelection.go:260] successfully acquired lease {lock}",
    ]
    # a third replica, turned away while the successor leads (-v=4)
    third = [
        f"I1201 10:00:40.000000       1 leaderelection.go:352] lock is held by successor-5c7b and has not yet expired: {lock}"
    ]
    (tmp_path / "leader-7d9f.log").write_text("\n".join(crashed) + "\n")
    (tmp_path / "successor-5c7b.log").write_text("\n".join(successor) + "\n")
    (tmp_path / "third-9a1e.log").write_text("\n".join(third) + "\n")
    a = leaselog.analyze(str(tmp_path), lease_ttl="15s")
    kinds = {f.kind for f in _alarms(a)}
    assert "overlapping_executions" not in kinds and "lease_outlived" not in kinds
    assert a.executions.filter(pl.col("acquired_at").is_not_null()).height == 2
    assert "lock_denied" in set(a.events["event"])


def test_a_leader_that_keeps_renewing_is_quiet(tmp_path: Path) -> None:
    name = "report-controller-5c7b9d8f6-q4m2t.log"
    (tmp_path / name).write_text((K8S / name).read_text())
    a = leaselog.analyze(str(tmp_path), lease_ttl="15s")
    assert a.events.height > 0 and not _alarms(a)


def test_python_redis_lock_in_celery_paused_worker() -> None:
    a = leaselog.analyze(str(CELERY))
    assert a.line_totals()["malformed"] == 0  # Celery's traceback lines are continuations
    got = _by_kind(a)
    a_task = "6f1d2c3a-8b4e-4f0a-9c1d-2e3f4a5b6c7d"
    b_task = "0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
    (overlap,) = got["overlapping_executions"]
    assert overlap.duration_ms == 704.0 and set(overlap.execution_ids) == {a_task, b_task}
    (outlived,) = got["lease_outlived"]
    # the lease (2 s) from the refresh interval the renewal thread announced (1.333 s = 2/3 of expire)
    assert outlived.duration_ms == 1617.0 and outlived.execution_ids[0] == a_task
    # the refresh after the pause: "Refreshing", then the renewal thread's traceback (Celery's stderr
    # redirect), no "Exiting renewal thread": it failed, and the task ran on (the library has no stop)
    (renewal,) = got["renewal_failed"]
    assert renewal.execution_ids == (a_task,)
    (stale,) = got["stale_release"]
    assert stale.execution_ids == (a_task,)  # NotAcquired at release, as Celery logged it
    (second,) = got["second_attempt"]
    assert second.trigger == "duplicate_publish" and second.execution_ids[-1] == b_task
    assert {f.kind for f in _alarms(a)} == {
        "overlapping_executions",
        "lease_outlived",
        "renewal_failed",
        "ownership_loss_unhandled",
        "stale_release",
        "second_attempt",
    }


def test_denials_at_every_tick_and_a_clean_task_are_quiet(tmp_path: Path) -> None:
    for name in ("worker-b.log", "worker-c.log"):  # B's clean task; C's polls, all turned away
        (tmp_path / name).write_text((CELERY / name).read_text())
    a = leaselog.analyze(str(tmp_path))
    assert a.events.height > 0 and not _alarms(a)


def test_a_redelivered_task_is_a_second_execution_of_the_same_id(tmp_path: Path) -> None:
    tid = "3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41"
    head = "[2026-12-01 10:00:{:02d},{:03d}: {}/{}] "
    lines = [
        head.format(0, 1, "INFO", "MainProcess") + f"Task reports.render[{tid}] received",
        head.format(0, 5, "INFO", "ForkPoolWorker-1") + "Acquired Lock('lock:report-42').",
        # the pool process died here (no task end); the broker redelivered the same task to another pod
    ]
    (tmp_path / "worker-a.log").write_text("\n".join(lines) + "\n")
    redelivered = [
        head.format(9, 1, "INFO", "MainProcess") + f"Task reports.render[{tid}] received",
        head.format(9, 5, "INFO", "ForkPoolWorker-1") + "Acquired Lock('lock:report-42').",
        head.format(9, 900, "INFO", "ForkPoolWorker-1") + "Releasing Lock('lock:report-42').",
        head.format(9, 901, "INFO", "ForkPoolWorker-1")
        + f"Task reports.render[{tid}] succeeded in 0.9s: None",
    ]
    (tmp_path / "worker-b.log").write_text("\n".join(redelivered) + "\n")
    a = leaselog.analyze(str(tmp_path), lease_ttl="5s")
    assert set(a.executions["job_id"].to_list()) == {"report-42"}
    assert a.executions.height == 2
    (second,) = _by_kind(a)["second_attempt"]
    assert second.trigger == "redelivery"


def test_the_unlogged_renewal_advice_follows_the_finding_not_its_wording(tmp_path: Path) -> None:
    """client-go's -v=5 advice goes with a finding whose details say the lease's renewals went unlogged
    (`renewalsUnlogged`), whatever its message says; never to one about a lease whose renewals were logged."""
    import polars as pl

    from leaselog.library_advice import library_advice

    events = pl.DataFrame({"job_id": ["j"], "raw_event": ["k8s-leader-election/acquired"]})
    findings = pl.DataFrame(
        {
            "job_id": ["j", "j", "j"],
            "kind": ["lease_outlived", "lease_outlived", "second_attempt"],
            "message": ["a zombie, worded anyhow.", "renewals are not logged, says the text.", "x."],
            "details": ['{"renewalsUnlogged":true}', '{"renewalsUnlogged":false}', None],
        }
    )
    got = library_advice(findings, events)["message"].to_list()
    assert ["-v=5" in m for m in got] == [True, False, False]
    # and on the sample read at default verbosity, each finding that rests on the unlogged renewals has it
    a = leaselog.analyze(str(_default_verbosity(tmp_path)), lease_ttl="15s")
    flagged = [f for f in a.finding_list if (f.details or {}).get("renewalsUnlogged")]
    assert {f.kind for f in flagged} >= {"lease_outlived", "overlapping_executions", "second_attempt"}
    assert all("-v=5" in f.message for f in flagged)
