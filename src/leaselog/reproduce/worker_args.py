"""The worker's command line (`python -m leaselog.reproduce.worker --help`): every knob a lab run sets."""

from __future__ import annotations

import argparse

TRIGGERS = ["stream", "claim", "scheduler", "retry", "poll", "tick"]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m leaselog.reproduce.worker",
        description="One worker (pod) of a lab run: a trigger, the lock, the work, the release.",
    )
    p.add_argument("--redis", required=True)
    p.add_argument("--lock-redis", default=None, help="the lock's own Redis (primary), when not --redis")
    p.add_argument(
        "--primary-key", default=None, help="where --redis names the lock's primary after a failover"
    )
    p.add_argument("--redis-user", default=None, help="Redis user for the lease commands (ACL)")
    p.add_argument("--redis-password", default=None)
    p.add_argument("--prefix", required=True)
    p.add_argument("--job-id", required=True)
    p.add_argument("--execution-id", required=True)
    p.add_argument("--pod", required=True)
    p.add_argument("--role", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--truth", required=True)
    p.add_argument("--trigger", choices=TRIGGERS, required=True)
    p.add_argument(
        "--path", default="first", help="the true trigger path of this pod's attempts (truth only)"
    )
    p.add_argument("--threads", default=None, help="one trigger per worker thread, e.g. tick,tick")
    p.add_argument("--runs", type=int, default=1, help="executions this process runs at most")
    p.add_argument("--units-list", default=None, help="units of work of each execution in turn, e.g. 3,3,25")
    p.add_argument("--id-style", choices=["unique", "counter", "reused"], default="unique")
    p.add_argument("--runs-before", type=int, default=0, help="executions of this pod before a restart")
    p.add_argument("--attempt", type=int, default=1, help="this attempt's number (the retry path counts)")
    p.add_argument("--claim-idle-ms", type=int, default=5000)
    p.add_argument("--start-after", default=None, help="wait for this marker before taking a trigger")
    p.add_argument("--close-marker", default=None, help="leave without an attempt once this marker exists")
    p.add_argument("--on-denied", choices=["wait-silent", "wait", "exit"], default="wait-silent")
    p.add_argument("--lease-ms", type=int, default=5000)
    p.add_argument("--renewal-ms", type=int, default=1000)
    p.add_argument("--renew-retry-ms", type=int, default=0, help="retry an errored renewal after this")
    p.add_argument("--margin-ms", type=int, default=500)
    p.add_argument("--op-timeout-ms", type=int, default=500)
    p.add_argument("--max-runtime-ms", type=int, default=20000)
    p.add_argument("--unit-ms", type=int, default=100)
    p.add_argument("--units", type=int, default=10)
    p.add_argument("--slow-unit-at", type=int, default=-1, help="this unit of work takes --slow-unit-ms")
    p.add_argument("--slow-unit-ms", type=int, default=0)
    p.add_argument("--gap-ms", type=int, default=0)
    p.add_argument("--renew", action="store_true")
    p.add_argument(
        "--flag-renewals",
        action="store_true",
        help="keep a marker set while a renewal is between its request and its line (a harness pauses "
        "the pod outside one)",
    )
    p.add_argument("--fenced", action="store_true", help="same as --completion fenced")
    p.add_argument("--completion", choices=["none", "fenced", "idempotent", "plain"], default="none")
    p.add_argument("--die-after-trigger", action="store_true", help="SIGKILL itself before taking the lock")
    p.add_argument("--ignore-stop", action="store_true", help="log the stop request, run on to the finish")
    p.add_argument("--retry-on-failure", action="store_true", help="queue a retry when not completed")
    p.add_argument("--clock-offset-ms", type=int, default=0, help="this pod's wall clock is off by this")
    p.add_argument("--clock-step-ms", type=int, default=0, help="the pod's wall clock steps by this, once")
    p.add_argument(
        "--clock-step-after-ms", type=int, default=0, help="when: after the pod's first lease line"
    )
    p.add_argument(
        "--clock-step-at-mono",
        type=float,
        default=None,
        help="when, instead: at this CLOCK_MONOTONIC ms (a pod restarted before its host's clock stepped)",
    )
    p.add_argument("--clock-file", default=None, help="where the pod writes when its clock stepped (truth)")
    p.add_argument("--wait-for", default=None, help="keep working until this marker exists")
    p.add_argument("--progress-note", default=None, help="log this job_progress line when the work ends")
    p.add_argument("--tail-units", type=int, default=0, help="units of work after --wait-for is met")
    p.add_argument("--mark-after", default=None, help="set this marker after the release")
    a = p.parse_args(argv)
    if a.fenced:
        a.completion = "fenced"
    if a.threads and any(t not in TRIGGERS for t in a.threads.split(",")):
        p.error(f"--threads: each trigger one of {', '.join(TRIGGERS)}")
    return a
