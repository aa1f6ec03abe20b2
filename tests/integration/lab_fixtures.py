"""The lab runs kept as regression fixtures (tests/fixtures/lab/<name>/: the pods' flat logs + truth.json).

Each is a real lab run (real worker processes on a real redis-server), with its plan chosen by hand to be
the smallest run that shows one defect the randomized campaign found. `python tests/integration/lab_fixtures.py
[NAME...]` plays them again and rewrites the folders (needs redis-server); test_lab_regressions.py scores the
stored runs in the shape each names, without Redis.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from leaselog.reproduce.lab import play
from leaselog.reproduce.plan import Plan, PodPlan, plan_from_dict
from leaselog.reproduce.server import throwaway_redis

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "lab"


@dataclass(frozen=True)
class Fixture:
    name: str
    defect: str  # what leaselog got wrong on it when it was found (empty: a case that must stay right)
    plan: Plan
    # kept as the campaign found it: the defect came from the machine's timing (a loaded host's renewal
    # timeout), so playing the plan again need not show it; re-recorded only when named
    kept: bool = False


def _plan(index: int, shape: str, pods: list[PodPlan], **kw: object) -> Plan:
    base: dict[str, object] = {
        "seed": 0,
        "index": index,
        "lease_ms": 1500,
        "renew": True,
        "renewal_ms": 500,
        "margin_ms": 150,
        "op_timeout_ms": 200,
        "renew_retry_ms": 0,
        "completion": "fenced",
        "ignore_stop": False,
        "fault": "none",
        "fault_at_ms": 0,
        "fault_ms": 0,
        "shape": shape,
    }
    base.update(kw)
    return Plan(pods=tuple(pods), **base)  # type: ignore[arg-type]


def _kept(name: str) -> Plan:
    """The plan a kept run was played from (its truth.json)."""
    return plan_from_dict(json.loads((ROOT / name / "truth.json").read_text(encoding="utf-8"))["plan"])


def _a(units: int = 20, offset: int = 0) -> PodPlan:
    return PodPlan("A", "first", 0, "wait-silent", units, offset)


FIXTURES = [
    Fixture(
        "denied-attempt",
        "a scheduler catch-up turned away by the lock (job_triggered, lock_denied, exit) is taken for a "
        "running execution: overlapping_executions (uncertain, at error) and a second_attempt warning",
        _plan(1, "flat", [_a(), PodPlan("B", "scheduler", 600, "exit", 5, 0)]),
    ),
    Fixture(
        "crash-before-lock",
        "an attempt killed between its job_triggered and the lock (nothing after the pickup) is taken for "
        "an execution that overlaps the running one",
        _plan(2, "flat", [_a(), PodPlan("B", "retry", 600, "wait-silent", 5, 0, True)]),
    ),
    Fixture(
        "quick-retry-interval",
        "renewals that error during an ACL network cut are retried every 250 ms and then succeed (the "
        "lease was never lost): leaselog ignores the successes after the errors and reports lease_outlived "
        "(1.8 s, error) and ownership_loss_unhandled; the retry spacing must not become the interval either",
        _plan(
            3,
            "flat",
            [_a(units=50), PodPlan("B", "scheduler", 5600, "wait-silent", 12, 0)],
            lease_ms=3000,
            margin_ms=300,
            renew_retry_ms=250,
            fault="netcut",
            fault_at_ms=600,
            fault_ms=2200,
        ),
    ),
    Fixture(
        "otlp-batch",
        "an OTLP export line carries several records: no finding may come out twice",
        _plan(
            4,
            "otlp",
            [_a(units=25), PodPlan("B", "redelivery", None, "wait-silent", 8, 0)],
            fault="pause",
            fault_at_ms=700,
            fault_ms=2000,
        ),
    ),
    Fixture(
        "gelf-app-host",
        "GELF with the application name in `host` on every pod: the file name must be the pod (it scores "
        "clean, yet leaselog merges the pods into one `report-worker`: the shape test below catches it)",
        _plan(
            5,
            "gelf-app-host",
            [_a(units=25), PodPlan("B", "redelivery", None, "wait-silent", 8, 0)],
            fault="pause",
            fault_at_ms=700,
            fault_ms=2000,
        ),
    ),
    Fixture(
        "stop-ignored",
        "a stop requested (renewal rejected after a pause) and never honoured: the job ran on to "
        "job_finished; no stop finding reports it",
        _plan(
            6,
            "flat",
            [_a(units=25), PodPlan("B", "scheduler", 2600, "wait-silent", 5, 0)],
            ignore_stop=True,
            fault="pause",
            fault_at_ms=700,
            fault_ms=2000,
        ),
    ),
    Fixture(
        "wait-then-acquire",
        "",  # an attempt denied once (lock_denied) that waits and acquires when the first one releases
        _plan(7, "flat", [_a(units=12), PodPlan("B", "duplicate_publish", 300, "wait", 5, 0)]),
    ),
    Fixture(
        "skewed-handover",
        "(second_attempt.durationMs negative; uncertain at error) no renewal, the lease runs out, the waiting attempt takes over at once; pod clocks 100 ms apart "
        "make the handover look concurrent: concurrent_leases / overlapping_executions uncertain at error",
        _plan(
            8,
            "flat",
            [_a(units=20, offset=100), PodPlan("B", "scheduler", 300, "wait-silent", 5, -100)],
            renew=False,
            completion="plain",
        ),
    ),
    Fixture(
        "loki-newest-first",
        "a Loki export (newest first) of a healthy run with renewals: renewals taken in file order give "
        "negative spacings, renewal_gap and lease_outlived that did not happen",
        _plan(9, "loki", [_a(units=20), PodPlan("B", "scheduler", 2600, "wait-silent", 5, 0)]),
    ),
    Fixture(
        "trigger-after-scheduler",
        "a duplicate publish whose previous attempt came from the scheduler (no message identity): its "
        "trigger is duplicate_publish (the first attempt's message differs), not unknown",
        _plan(
            10,
            "flat",
            [
                _a(units=8),
                PodPlan("B", "scheduler", 1200, "wait-silent", 8, 0),
                PodPlan("C", "duplicate_publish", 2400, "wait-silent", 5, 0),
            ],
        ),
    ),
    Fixture(
        "skewed-crash-takeover",
        "A (clock +100 ms) is SIGKILLed, B (a duplicate publish, clock +5 ms) takes over after A's lease "
        "expired: crash_takeover.durationMs is negative (-90 ms) instead of saying the clocks disagree",
        _kept("skewed-crash-takeover"),  # run 16 of campaign seed 7
        kept=True,
    ),
    Fixture(
        "trigger-before-acquire",
        "B (a poller, waiting silently for the lock) logs its job_triggered before A's lock_acquired by "
        "A's clock (+100 ms): attempts ordered by their first line make A the second attempt of B "
        "(negative duration) and B's own second_attempt goes missing",
        _plan(
            12,
            "flat",
            [_a(units=12, offset=100), PodPlan("B", "poll", 0, "wait-silent", 5, 0)],
        ),
    ),
    Fixture(
        "two-threads-klog",
        "two scheduler threads of one pod run the job at once, rendered as klog (no thread) without "
        "execution ids: the first run was read as crashed, its overlap, zombie and stale release missed",
        _kept("two-threads-klog"),  # run 6 of campaign seed 2043
        kept=True,
    ),
    Fixture(
        "redelivery-step-klog",
        "a redelivery to a second consumer of the same pod runs while the first attempt goes on, and the "
        "pod's clock steps back 2352 ms between the two; in klog without execution ids (no thread either) "
        "the step was taken for a restarted process's new elapsedMs origin: no clock_step, the runs read in "
        "their stepped times' order, the overlap and the zombie missed",
        _kept("redelivery-step-klog"),  # run 6 of campaign seed 2061
        kept=True,
    ),
    Fixture(
        "restart-between-runs",
        "a scheduler pod killed between two runs and restarted: the new process counts elapsedMs from its "
        "own start, past the old process's last value, and with no run open across the restart the new "
        "origin was read as a forward clock_step of 1.4 s; Spring Boot's start-up line tells the restart",
        _kept("restart-between-runs"),  # run 1 of campaign seed 2060
        kept=True,
    ),
    Fixture(
        "step-between-runs",
        "pod-b's clock steps forward by 2248 ms between two of its runs while its process is younger than "
        "the step: elapsedMs runs on past the old count as after a restart, and no start-up line lies "
        "between; found and sized, and uncertain (a restart of the young process explains it as well)",
        _kept("step-between-runs"),  # run 27 of campaign seed 2041
        kept=True,
    ),
    Fixture(
        "restart-before-step",
        "pod-a is killed 189 ms into its first run and restarted; its host's clock was to step back 736 ms "
        "later, in its third run. The lab's restarted pod took the step from its start while the truth put "
        "it at the planned moment: the truth blamed a missed clock_step and two zombies on the wrong runs. "
        "A pod restarted before its host's clock steps now takes the step at the moment planned",
        _kept("restart-before-step"),  # run 113 of campaign seed 2102
        kept=True,
    ),
    Fixture(
        "step-then-crash-sorted",
        "pod-b's clock steps back 2080 ms mid-run and the three lines after the step share one elapsedMs; "
        "in renderings sorted by time (kubectl --prefix, Loki) that group was not joined to the run it "
        "continues: the step went unseen and the finish and release were rejected as ending before the start",
        _kept("step-then-crash-sorted"),  # run 22 of campaign seed 2081
        kept=True,
    ),
    Fixture(
        "retry-spacing-interval",
        "A's renewals fail during an ACL network cut and are retried every 306 ms; C, a later healthy "
        "execution, renews on its 625 ms schedule and gets renewal_gap warnings (the 306 ms retry spacing "
        "became the inferred interval): the issue's defect 2",
        _kept("retry-spacing-interval"),  # run 115 of campaign seed 2026
        kept=True,
    ),
    Fixture(
        "release-timeout-handover",
        "C's owner-checked release timed out on a loaded host (Redis did delete the key: E acquired it "
        "next); leaselog keeps C's lease valid to its TTL and reports concurrent_leases, certain, at error",
        _kept("release-timeout-handover"),  # run 138 of campaign seed 2026
        kept=True,
    ),
    Fixture(
        "timeout-within-lease",
        "A's renewal timed out in a Redis stall; A (retrying at the next tick) finished 425 ms later, well "
        "inside the lease its last confirmed renewal gave it, and its release deleted the key: "
        "ownership_loss_unhandled at error says it lost its hold",
        _kept("timeout-within-lease"),  # run 49 of campaign seed 2026
        kept=True,
    ),
    Fixture(
        "negative-gap-message",
        "a second attempt acquired a few ms 'before' the earlier lease ended by skewed clocks: durationMs "
        "is left out, but the message still says 'the -Nms gap'",
        _kept("negative-gap-message"),  # run 149 of campaign seed 2026
        kept=True,
    ),
    Fixture(
        "late-renewal-success",
        "a renewal that timed out, then one that succeeded after the local deadline (late): Redis did "
        "extend the lease, yet lease_outlived measures the zombie time from before it (1465 ms against "
        "387 ms true)",
        _kept("late-renewal-success"),  # run 1 of campaign seed 11 (an earlier draw)
        kept=True,
    ),
    Fixture(
        "denied-then-takeover",
        "",  # a case that must stay right: test_clock_steps renders it with pod-b's clock behind
        # A is SIGKILLed 400 ms in; B, fired 150 ms in, is turned away (lock_denied), waits, and takes the
        # key over once A's lease has expired: with pod-b's clock behind, its takeover reads as two leases at
        # once, and its denial as coming before the holder's acquisition
        _plan(
            17,
            "flat",
            [_a(units=20), PodPlan("B", "retry", 150, "wait", 5, 0)],
            lease_ms=2000,
            fault="crash",
            fault_at_ms=400,
        ),
    ),
]
BY_NAME = {f.name: f for f in FIXTURES}


def record(names: list[str]) -> None:
    with throwaway_redis() as target:
        for name in names:
            fx = BY_NAME[name]
            scratch = ROOT / f".{name}.tmp"
            shutil.rmtree(scratch, ignore_errors=True)
            play(fx.plan, target, scratch)
            dest = ROOT / name
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for f in [*scratch.glob("pod-*.jsonl"), scratch / "truth.json"]:
                shutil.copy(f, dest / f.name)
            shutil.rmtree(scratch)
            print(f"recorded {dest}")


if __name__ == "__main__":
    record(sys.argv[1:] or [f.name for f in FIXTURES if not f.kept])
