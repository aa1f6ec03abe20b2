"""The reproductions: each starts worker processes ("pods"), injects a real fault, and writes ground truth.

Coordination goes through Redis keys (a worker signals "started", "renewed", "completing"; the scenario
waits on them with BLPOP), not through sleeps, so the order of events is the same on a slow machine.
The ground truth (`truth.json` next to the logs) comes from the workers' CLOCK_MONOTONIC moments and the
scenario's own fault timings; it never reads the logs leaselog analyzes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from leaselog.reproduce.options import ReproduceOptions
from leaselog.reproduce.pod import (
    GROUP,
    delete_run_keys,
    keys,
    marker,
    mono_ms,
    read_moments,
    signal_list,
    stop_pods,
)
from leaselog.reproduce.server import RedisTarget, ReproduceError, redis_target
from leaselog.reproduce.truth import measure

WAIT_TIMEOUT_S = 60.0

ProgressFn = Callable[[str], None]
ResumeGate = Callable[[], bool]  # a caller's condition for resuming a paused pod (run_scenario's resume_when)


@dataclass
class ReproduceRun:
    """What a reproduction produced: the logs (one per pod) and the ground truth next to them."""

    scenario: str
    run_id: str
    out: Path
    logs: list[Path]
    truth_path: Path
    truth: dict[str, Any]
    redis: RedisTarget


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    job: str
    expected: tuple[str, ...]  # finding kinds the logs must produce
    absent: tuple[str, ...]  # finding kinds they must not
    second_attempt_trigger: str
    play: Callable[[_Harness], dict[str, Any]]
    renews: bool = True  # the safe lifecycle: options must allow a renewal to be on time
    pauses: bool = False  # SIGSTOPs a pod and resumes it later: honours run_scenario's resume_when


@dataclass
class _Harness:
    """One run's Redis connection, key prefix, worker processes and scratch space."""

    scenario: Scenario
    options: ReproduceOptions
    target: RedisTarget
    out: Path
    run_id: str
    scratch: Path
    progress: ProgressFn
    resume_when: ResumeGate | None = None
    job_id: str = ""
    prefix: str = ""
    client: Any = None
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    faults: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.prefix = f"leaselog:repro:{self.run_id}"
        self.job_id = f"{self.scenario.job}-{self.run_id[-6:]}"
        # the scenario's own connection waits out stalls: long timeout, retries allowed
        self.client = redis.Redis.from_url(
            self.target.url, socket_timeout=WAIT_TIMEOUT_S, decode_responses=True
        )
        self.k = keys(self.prefix, self.job_id)

    # -- setup ---------------------------------------------------------------------------------------
    def publish_request(self) -> str:
        """Put the report request on the stream the pods consume as one group (Kafka's role)."""
        self.client.xgroup_create(self.k["stream"], GROUP, id="0", mkstream=True)
        return str(self.client.xadd(self.k["stream"], {"jobId": self.job_id, "report": "monthly-revenue"}))

    def schedule(self, due_wall_ms: int) -> None:
        self.client.zadd(self.k["schedule"], {self.job_id: due_wall_ms})

    def spawn(self, role: str, trigger: str, *extra: str) -> None:
        o = self.options
        pod = f"pod-{role.lower()}"
        args = [
            sys.executable,
            "-m",
            "leaselog.reproduce.worker",
            "--redis",
            self.target.url,
            "--prefix",
            self.prefix,
            "--job-id",
            self.job_id,
            "--execution-id",
            f"attempt-{role.lower()}",
            "--pod",
            pod,
            "--role",
            role,
            "--log",
            str(self.out / f"{pod}.jsonl"),
            "--truth",
            str(self.scratch / f"{pod}.truth.jsonl"),
            "--trigger",
            trigger,
            "--claim-idle-ms",
            str(o.lease_ms),
            "--lease-ms",
            str(o.lease_ms),
            "--renewal-ms",
            str(o.renewal_ms),
            "--margin-ms",
            str(o.margin),
            "--op-timeout-ms",
            str(o.op_timeout),
            "--max-runtime-ms",
            str(o.max_runtime_ms),
            "--unit-ms",
            str(o.unit_ms),
            *extra,
        ]
        err = (self.scratch / f"{pod}.stderr").open("wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.procs[role] = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env
        )
        err.close()
        self.progress(f"started {pod} (pid {self.procs[role].pid}, trigger: {trigger})")

    # -- coordination --------------------------------------------------------------------------------
    def wait_signal(self, name: str, timeout_s: float = WAIT_TIMEOUT_S) -> None:
        """Block until a worker raises `name` (a Redis list push), failing fast if a worker died."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.client.blpop([signal_list(self.prefix, name)], timeout=0.2):
                return
            self._check_alive()
        raise ReproduceError(f"timed out after {timeout_s:.0f}s waiting for {name!r}{self._stderr_tail()}")

    def _check_alive(self) -> None:
        for role, p in self.procs.items():
            rc = p.poll()
            if rc not in (None, 0) and rc != -signal.SIGKILL:
                raise ReproduceError(f"pod-{role.lower()} exited with {rc}{self._stderr_tail()}")

    def wait_exit(self, role: str, timeout_s: float = WAIT_TIMEOUT_S) -> int:
        try:
            rc = self.procs[role].wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as e:
            raise ReproduceError(
                f"pod-{role.lower()} did not finish within {timeout_s:.0f}s{self._stderr_tail()}"
            ) from e
        if rc != 0:
            raise ReproduceError(f"pod-{role.lower()} exited with {rc}{self._stderr_tail()}")
        return rc

    def _stderr_tail(self) -> str:
        tails = []
        for f in sorted(self.scratch.glob("*.stderr")):
            text = f.read_text(errors="replace").strip()
            if text:
                tails.append(f"\n--- {f.stem} stderr ---\n{text[-1500:]}")
        return "".join(tails)

    # -- faults --------------------------------------------------------------------------------------
    def pause(self, role: str) -> float:
        os.kill(self.procs[role].pid, signal.SIGSTOP)
        m = mono_ms()
        self.progress(f"SIGSTOP pod-{role.lower()}: paused")
        return m

    def pause_outside_renewal(self, role: str, timeout_s: float = WAIT_TIMEOUT_S) -> tuple[float, int]:
        """SIGSTOP a pod started with `--flag-renewals` at a moment no renewal of its is between its request
        and its line (its marker unset while stopped); caught inside one, it is resumed until that renewal
        is logged and stopped again. Returns the final pause's moment and how many times it was retried."""
        pid, flag = self.procs[role].pid, marker(self.prefix, f"renewing:{role}")
        end = time.monotonic() + timeout_s
        retries = 0
        while True:
            os.kill(pid, signal.SIGSTOP)
            m = mono_ms()
            if not self.client.exists(flag) or time.monotonic() >= end:
                self.progress(f"SIGSTOP pod-{role.lower()}: paused (outside a renewal, {retries} retries)")
                return m, retries
            os.kill(pid, signal.SIGCONT)
            retries += 1
            while self.client.exists(flag) and time.monotonic() < end:
                time.sleep(0.002)

    def hold_paused(self, role: str, timeout_s: float = WAIT_TIMEOUT_S) -> None:
        """Keep a paused pod paused until the caller's `resume_when` holds (polled every 10 ms), so that an
        observer (a test's `leaselog watch`) can see the pause whatever the machine's load. Bounded: after
        `timeout_s` the pod is resumed anyway, so a condition that never holds cannot hang the run."""
        if self.resume_when is None:
            return
        end = time.monotonic() + timeout_s
        while not self.resume_when():
            if time.monotonic() >= end:
                self.progress(
                    f"resume_when still false after {timeout_s:.0f}s: resuming pod-{role.lower()} anyway"
                )
                return
            self._check_alive()
            time.sleep(0.01)
        self.progress(f"resume_when holds: resuming pod-{role.lower()}")

    def resume(self, role: str) -> float:
        m = mono_ms()
        os.kill(self.procs[role].pid, signal.SIGCONT)
        self.progress(f"SIGCONT pod-{role.lower()}: resumed")
        return m

    def kill(self, role: str) -> float:
        os.kill(self.procs[role].pid, signal.SIGKILL)
        m = mono_ms()
        self.procs[role].wait(timeout=10)
        self.progress(f"SIGKILL pod-{role.lower()}: crashed mid-job")
        return m

    def cleanup(self) -> None:
        stop_pods(self.procs.values())
        try:
            if not self.target.throwaway:
                delete_run_keys(self.client, self.prefix)
        finally:
            self.client.close()

    def moments(self) -> dict[str, list[dict[str, Any]]]:
        return read_moments(self.scratch)


# -- the scenarios --------------------------------------------------------------------------------------


def _article(h: _Harness) -> dict[str, Any]:
    """A acquires with a TTL and no renewal and keeps working until B has started; B acquires after expiry."""
    entry = h.publish_request()
    h.spawn(
        "A",
        "stream",
        "--wait-for",
        "started:B",
        "--mark-after",
        "finished:A",
        "--progress-note",
        "still_running_after_b_started",
        # A's report goes on for a while after B started: up to 1s of overlap, well above clock-skew
        # bounds, yet short enough that B (also without renewal) finishes inside its own lease
        "--tail-units",
        str(max(1, min(1000, h.options.lease_ms // 2) // h.options.unit_ms)),
    )
    h.wait_signal("started:A")
    h.spawn("B", "scheduler", "--wait-for", "finished:A")
    # the scheduler fires the same report while A is running; B will wait for the lock
    h.schedule(time.time_ns() // 1_000_000)
    h.wait_exit("B")
    h.wait_exit("A")
    return {"streamEntryId": entry}


def _renewal_pause(h: _Harness) -> dict[str, Any]:
    """The safe lifecycle; A is SIGSTOPped between its last checkpoint and its write, longer than its lease."""
    o = h.options
    entry = h.publish_request()
    units = max(3, (3 * o.renewal_ms) // o.unit_ms)  # about three renewals of healthy work before the write
    gap = max(1000, 2 * o.unit_ms)  # time to serialise the result: where the pause lands
    h.spawn(
        "A", "stream", "--renew", "--fenced", "--flag-renewals", "--units", str(units), "--gap-ms", str(gap)
    )
    h.wait_signal("started:A")
    h.spawn("B", "claim", "--renew", "--fenced", "--units", str(max(3, o.renewal_ms // o.unit_ms)))
    h.wait_signal("completing:A")
    paused, retries = h.pause_outside_renewal("A")
    # B can claim A's unacknowledged entry only once A stops heartbeating it, and acquire only after A's
    # lease has expired; A stays paused until B has completed and released, and for longer than a lease.
    h.wait_signal("done:B")
    h.wait_exit("B")
    min_resume = paused + o.lease_ms + o.renewal_ms
    while mono_ms() < min_resume:
        time.sleep(0.01)
    h.hold_paused("A")  # and, if the caller asked, until its condition holds
    resumed = h.resume("A")
    h.wait_exit("A")
    return {
        "streamEntryId": entry,
        "pause": {
            "role": "A",
            "startMono": paused,
            "endMono": resumed,
            "ms": round(resumed - paused, 1),
            "gapMs": gap,
            "retries": retries,
        },
    }


def _renewal_stall(h: _Harness) -> dict[str, Any]:
    """The safe lifecycle; Redis itself stalls (CLIENT PAUSE ALL) while A holds the lease."""
    o = h.options
    if o.stall < o.renewal_ms + o.op_timeout:
        # a shorter stall could fall between two renewals and time nothing out
        raise ReproduceError(
            f"--stall {o.stall}ms must cover a renewal interval plus its timeout ({o.renewal_ms + o.op_timeout}ms)"
        )
    entry = h.publish_request()
    h.spawn("A", "stream", "--renew", "--fenced", "--units", str(o.max_runtime_ms // o.unit_ms))
    h.wait_signal("started:A")
    h.spawn("B", "scheduler", "--renew", "--fenced", "--units", str(max(3, o.renewal_ms // o.unit_ms)))
    h.wait_signal("renewed:A:2")
    # the next run of the schedule falls due when the stall ends
    h.schedule(time.time_ns() // 1_000_000 + o.stall)
    if not h.target.throwaway:
        h.progress(
            f"warning: CLIENT PAUSE stalls every client of {h.target.url} for {o.stall}ms, not just ours"
        )
    stall_start = mono_ms()
    h.client.client_pause(o.stall, all=True)
    h.progress(f"CLIENT PAUSE {o.stall} ALL: Redis stalls every client")
    while mono_ms() < stall_start + o.stall:
        time.sleep(0.01)
    stall_end = mono_ms()
    h.wait_exit("A")
    h.wait_exit("B")
    return {
        "streamEntryId": entry,
        "stall": {"startMono": stall_start, "endMono": stall_end, "ms": round(stall_end - stall_start, 1)},
    }


def _crash(h: _Harness) -> dict[str, Any]:
    """The safe lifecycle; A is SIGKILLed mid-job and B takes over from the redelivered request."""
    o = h.options
    entry = h.publish_request()
    h.spawn("A", "stream", "--renew", "--fenced", "--units", str(o.max_runtime_ms // o.unit_ms))
    h.wait_signal("started:A")
    h.spawn("B", "claim", "--renew", "--fenced", "--units", str(max(3, o.renewal_ms // o.unit_ms)))
    h.wait_signal("renewed:A:2")
    killed = h.kill("A")
    h.wait_exit("B")
    return {"streamEntryId": entry, "kill": {"role": "A", "mono": killed}}


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "article",
            "the article's demo: A outlives its lease without renewing, B acquires and overlaps it, "
            "A's owner-checked release deletes nothing",
            "report-42",
            expected=("overlapping_executions", "lease_outlived", "stale_release", "second_attempt"),
            absent=("concurrent_leases", "crash_takeover", "duplicate_effect", "completion_rejected"),
            second_attempt_trigger="scheduler",
            play=_article,
            renews=False,
        ),
        Scenario(
            "renewal",
            "the proposed lifecycle; A is paused (SIGSTOP) past its lease between its last checkpoint "
            "and its write: renewal rejected, stop confirmed, A's stale write rejected by the fencing check",
            "report-43",
            expected=(
                "renewal_failed",
                "renewal_gap",
                "completion_rejected",
                "lease_outlived",
                "overlapping_executions",
                "stale_release",
                "second_attempt",
            ),
            absent=(
                "duplicate_effect",
                "stale_write_accepted",
                "concurrent_leases",
                "crash_takeover",
                "ownership_loss_unhandled",
                "stop_unconfirmed",
            ),
            second_attempt_trigger="redelivery",
            play=_renewal_pause,
            pauses=True,
        ),
        Scenario(
            "renewal-stall",
            "the proposed lifecycle; Redis stalls (CLIENT PAUSE ALL, pausing every client of "
            "the server): A's renewal times out, A stops before its lease ends, B takes over after the stall",
            "report-44",
            expected=("renewal_failed", "release_failed", "second_attempt"),
            absent=(
                "overlapping_executions",
                "lease_outlived",
                "duplicate_effect",
                "concurrent_leases",
                "crash_takeover",
                "stop_unconfirmed",
            ),
            second_attempt_trigger="scheduler",
            play=_renewal_stall,
        ),
        Scenario(
            "crash",
            "the proposed lifecycle; A is killed (SIGKILL) mid-job, B takes over the redelivered request "
            "after A's lease expires",
            "report-45",
            expected=("crash_takeover", "second_attempt"),
            absent=("overlapping_executions", "lease_outlived", "duplicate_effect", "concurrent_leases"),
            second_attempt_trigger="redelivery",
            play=_crash,
        ),
    )
}


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def run_scenario(
    name: str,
    options: ReproduceOptions | None = None,
    *,
    redis_url: str | None = None,
    out: str | Path | None = None,
    progress: ProgressFn | None = None,
    resume_when: ResumeGate | None = None,
) -> ReproduceRun:
    """Run one scenario against a real Redis; return the logs it wrote and its ground truth.

    `resume_when` (scenarios that pause a pod: `renewal`): the paused pod is resumed no earlier than the
    scenario would resume it, and then only once `resume_when()` returns true, or after WAIT_TIMEOUT_S
    (60 s) anyway. It opens a window by coordination rather than timing, e.g. for a watcher to observe the
    pause. None (the default, and `leaselog reproduce`'s) resumes on the scenario's own schedule."""
    if name not in SCENARIOS:
        raise ReproduceError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    scenario = SCENARIOS[name]
    if resume_when is not None and not scenario.pauses:
        raise ReproduceError(f"scenario {name!r} pauses no pod: resume_when has nothing to hold")
    o = options or ReproduceOptions()
    o.validate(scenario.renews)
    run_id = new_run_id()
    out_dir = Path(out) if out is not None else Path("leaselog-reproduce") / f"{name}-{run_id}"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in ("pod-a.jsonl", "pod-b.jsonl", "truth.json"):
        # a reused --out folder must not mix an earlier run's lines into this one
        (out_dir / old).unlink(missing_ok=True)
    say = progress or (lambda _msg: None)
    scratch = Path(tempfile.mkdtemp(prefix="leaselog-repro-"))
    try:
        with redis_target(redis_url) as target:
            say(
                f"redis {target.version} at {target.url}{' (throwaway)' if target.throwaway else ''}; "
                f"keys under leaselog:repro:{run_id}:*"
            )
            h = _Harness(scenario, o, target, out_dir, run_id, scratch, say, resume_when)
            started = time.monotonic()
            try:
                faults = scenario.play(h)
                effects = h.client.lrange(h.k["effects"], 0, -1)
                moments = h.moments()
            finally:
                h.cleanup()
            truth = measure(scenario.name, h.job_id, o, moments, faults, effects)
            truth.update(
                scenario=scenario.name,
                summary=scenario.summary,
                runId=run_id,
                job=h.job_id,
                redis={"version": target.version, "throwaway": target.throwaway},
                options={
                    "leaseMs": o.lease_ms,
                    "renewalMs": o.renewal_ms,
                    "maxRuntimeMs": o.max_runtime_ms,
                    "marginMs": o.margin,
                    "opTimeoutMs": o.op_timeout,
                    "unitMs": o.unit_ms,
                    "stallMs": o.stall if name == "renewal-stall" else None,
                },
                expected={
                    "kinds": list(scenario.expected),
                    "absentKinds": list(scenario.absent),
                    "secondAttemptTrigger": scenario.second_attempt_trigger,
                },
                wallSeconds=round(time.monotonic() - started, 2),
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    truth_path = out_dir / "truth.json"
    # one line: `leaselog analyze` over this folder then counts it as one ignored line, not as malformed
    truth_path.write_text(json.dumps(truth, separators=(",", ":")) + "\n", encoding="utf-8")
    logs = sorted(out_dir.glob("pod-*.jsonl"))
    return ReproduceRun(
        scenario=name, run_id=run_id, out=out_dir, logs=logs, truth_path=truth_path, truth=truth, redis=target
    )
