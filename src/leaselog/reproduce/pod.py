"""What a worker ("pod") and the harness that drives it share: Redis keys and scripts, coordination names,
the monotonic clock, and the pod's log writer (`PodLog`: the log leaselog reads plus its ground-truth twin).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

# Owner-checked release (the article's Java demo, as Lua): delete only our own lease.
RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""

# Owner-checked renewal (the article's script): extend only our own lease.
RENEW_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

# Acquire and allocate the fencing token in one atomic step, so a token exists only for a granted lease
# and tokens grow in acquisition order.
ACQUIRE_LUA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('INCR', KEYS[2])
end
return 0
"""

# The destination's fencing check: accept a completion only with a token at least as high as the highest
# accepted so far for this job; a lower one is stale (its lease is gone), an equal one a duplicate.
# Every accepted completion appends to an effects list, so duplicate committed effects can be counted.
COMPLETE_LUA = """
local highest = tonumber(redis.call('HGET', KEYS[1], 'token') or '0')
local token = tonumber(ARGV[1])
if token < highest then
    return {'rejected', highest}
end
if token == highest then
    return {'duplicate', highest}
end
redis.call('HSET', KEYS[1], 'token', token, 'executionId', ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[2])
return {'accepted', token}
"""

# An idempotent destination without fencing: the first completion of the job wins, any later one is
# answered as a duplicate (whatever its lease said).
COMPLETE_IDEMPOTENT_LUA = """
if redis.call('HSETNX', KEYS[1], 'executionId', ARGV[2]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[2])
    return {'accepted', tonumber(ARGV[1])}
end
return {'duplicate', 0}
"""

# A plain destination: every completion is written (the "already completed?" read happened earlier).
COMPLETE_PLAIN_LUA = """
redis.call('HSET', KEYS[1], 'executionId', ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[2])
return {'accepted', tonumber(ARGV[1])}
"""

# A Redis-backed scheduler (a sorted set of due jobs, like a delayed-job queue): atomically take one job
# whose due time has come.
SCHEDULE_TAKE_LUA = """
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, 1)
if due[1] then
    redis.call('ZREM', KEYS[1], due[1])
    return due
end
return false
"""

# Keeps a stream entry this delivery's (resets its idle time, so it is not redelivered while the lease is
# held): only while the entry is still pending to this consumer with this delivery's count (a claim by
# anyone since, even by the same consumer name, counts one more delivery). 1: it was reset.
KEEP_ENTRY_LUA = """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #p == 0 or p[1][2] ~= ARGV[2] or tonumber(p[1][4]) ~= tonumber(ARGV[4]) then
    return 0
end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
"""

POLL_S = 0.025
COORDINATION_TIMEOUT_S = 60.0
GROUP = "report-workers"


def mono_ms() -> float:
    # CLOCK_MONOTONIC is system-wide on Linux: moments of different worker processes on one host compare.
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) / 1e6


def keys(prefix: str, job_id: str) -> dict[str, str]:
    """Every Redis key a reproduction uses lives under the run's prefix."""
    return {
        "lock": f"{prefix}:job:{job_id}:lock",
        "fence": f"{prefix}:job:{job_id}:fence",
        "result": f"{prefix}:job:{job_id}:result",
        "effects": f"{prefix}:job:{job_id}:effects",
        "stream": f"{prefix}:report-requests",
        "schedule": f"{prefix}:schedule",
        "retry": f"{prefix}:retry-queue",
        "pending": f"{prefix}:pending-jobs",
        "tick": f"{prefix}:tick",
    }


def marker(prefix: str, name: str) -> str:
    return f"{prefix}:marker:{name}"


def signal_list(prefix: str, name: str) -> str:
    return f"{prefix}:signal:{name}"


def stop_pods(procs: Iterable[subprocess.Popen[bytes]]) -> None:
    """Kill every pod still running; a paused pod cannot die of SIGTERM, so it is woken first."""
    for p in procs:
        if p.poll() is None:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(p.pid, sig)
                except ProcessLookupError:
                    break
            p.wait(timeout=10)


def delete_run_keys(client: redis.Redis, prefix: str) -> None:
    """On a user's server: remove exactly the keys of this run (those under its prefix)."""
    stale = list(client.scan_iter(match=f"{prefix}:*", count=500))
    if stale:
        client.delete(*stale)


def read_moments(scratch: Path) -> dict[str, list[dict[str, Any]]]:
    """Each pod's ground-truth moments (`<pod>.truth.jsonl` in the run's scratch folder), by pod."""
    out: dict[str, list[dict[str, Any]]] = {}
    for f in sorted(scratch.glob("*.truth.jsonl")):
        pod = f.name.removesuffix(".truth.jsonl")
        out[pod] = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
    return out


def iso_ms(wall_ns: int) -> str:
    """Wall-clock nanoseconds as the logs write them: ISO 8601, milliseconds, UTC."""
    t = datetime.fromtimestamp(wall_ns // 1_000_000 / 1000, tz=UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class PodLog:
    """The pod's JSONL log plus its ground-truth twin; safe to call from every thread of the pod.

    `clock_offset_ms` skews this pod's wall clock as a badly synchronised host would: the log's `ts` is
    true wall time + offset; the truth keeps the true wall time and CLOCK_MONOTONIC.
    Every line carries the name of the thread that logged it (`thread`); a pod that runs several
    executions logs each through its own `RunLog` (its execution id in the log, its true name in the truth).
    """

    def __init__(
        self,
        path: Path,
        truth: Path,
        job_id: str,
        execution_id: str,
        pod: str,
        clock_offset_ms: int = 0,
        clock_step: tuple[float, int] | None = None,
        clock_file: Path | None = None,
        step_at: float | None = None,
    ) -> None:
        self._log = path.open("a", encoding="utf-8")
        self._truth = truth.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.job_id, self.execution_id, self.pod = job_id, execution_id, pod
        self.offset_ns = clock_offset_ms * 1_000_000
        # (ms after the pod's first lease line, step ms): from then on the logging clock is off by the step
        # more, as after an NTP step or a manual `date -s`; elapsedMs (monotonic) does not step. The
        # moment it stepped (CLOCK_MONOTONIC ms) goes to `clock_file`, for the truth. `step_at`: that moment,
        # planned already (a pod restarted before its host's clock stepped)
        self.clock_step, self.clock_file = clock_step, clock_file
        self.step_at: float | None = step_at
        self.t0 = mono_ms()

    def logged_ns(self, wall_ns: int, m: float) -> int:
        """The wall time this pod's clock shows at true wall time `wall_ns` (monotonic moment `m`)."""
        stepped = self.clock_step is not None and self.step_at is not None and m >= self.step_at
        return (
            wall_ns + self.offset_ns + (self.clock_step[1] * 1_000_000 if self.clock_step and stepped else 0)
        )

    def _plan_step(self, m: float) -> None:
        """At the first lease line: when the clock will step."""
        if self.clock_step is None or self.step_at is not None:
            return
        self.step_at = m + self.clock_step[0]
        if self.clock_file is not None:
            step = {"fromMono": round(self.step_at, 3), "stepMs": self.clock_step[1]}
            self.clock_file.write_text(json.dumps(step) + "\n", encoding="utf-8")

    def plain(self, message: str, logger: str = "c.a.report.Worker", m: float | None = None) -> None:
        """A line that is no lease event, as real logs have between lease events, logged now (`m`: the
        monotonic moment already taken for it)."""
        ts = iso_ms(self.logged_ns(time.time_ns(), mono_ms() if m is None else m))
        thread = threading.current_thread().name
        line = {
            "ts": ts,
            "pod": self.pod,
            "thread": thread,
            "level": "INFO",
            "logger": logger,
            "message": message,
        }
        self._write(line, None)

    def started(self, app: str) -> None:
        """Spring Boot's start-up line (StartupInfoLogger's `Started ...`), whose uptime is the moment this
        log's `elapsedMs` counts from: where a restarted pod's count runs on past the old process's last
        one, the line tells the restart from a forward step of the clock."""
        m = mono_ms()
        up = round(m - self.t0) / 1000
        self.plain(f"Started {app} in {up} seconds (process running for {up})", f"c.a.report.{app}", m)

    def run(self, execution_id: str, run: str) -> RunLog:
        """The log of one execution of this pod: `execution_id` as logged, `run` its true name."""
        return RunLog(self, execution_id, run)

    def emit(
        self,
        event: str,
        message: str,
        truth_extra: dict[str, Any] | None = None,
        *,
        execution_id: str | None = None,
        run: str | None = None,
        **fields: Any,
    ) -> float:
        """Log one lease event now; returns the monotonic moment (ms) it was taken at.

        `truth_extra` goes to the ground truth only (e.g. when the acquiring request was sent).
        """
        thread = threading.current_thread().name
        with self._lock:
            wall_ns = time.time_ns()
            m = mono_ms()
            self._plan_step(m)
            line: dict[str, Any] = {
                "ts": iso_ms(self.logged_ns(wall_ns, m)),
                "level": "WARN"
                if event in ("ownership_lost", "job_stop_requested", "lock_reconnected")
                else "INFO",
                "jobId": self.job_id,
                "executionId": execution_id or self.execution_id,
                "pod": self.pod,
                "thread": thread,
                "event": event,
                "elapsedMs": round(m - self.t0),
                **{k: v for k, v in fields.items() if v is not None},
                "message": message,
            }
            truth = {
                "event": event,
                "monoMs": round(m, 3),
                "wallMs": wall_ns // 1_000_000,
                "run": run or self.execution_id,
                "thread": thread,
                **{k: v for k, v in fields.items() if v is not None},
                **(truth_extra or {}),
            }
            self._write_locked(line, truth)
            return m

    def _write(self, line: dict[str, Any], truth: dict[str, Any] | None) -> None:
        with self._lock:
            self._write_locked(line, truth)

    def _write_locked(self, line: dict[str, Any], truth: dict[str, Any] | None) -> None:
        # flushed per line: a SIGKILLed pod must leave everything it logged
        self._log.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._log.flush()
        if truth is not None:
            self._truth.write(json.dumps(truth, separators=(",", ":")) + "\n")
            self._truth.flush()

    def close(self) -> None:
        self._log.close()
        self._truth.close()


class RunLog:
    """One execution's view of its pod's log (what the worker's attempt logs through)."""

    def __init__(self, pod_log: PodLog, execution_id: str, run: str) -> None:
        self.pod_log, self.execution_id, self.run = pod_log, execution_id, run

    def plain(self, message: str, logger: str = "c.a.report.Worker") -> None:
        self.pod_log.plain(message, logger)

    def emit(
        self, event: str, message: str, truth_extra: dict[str, Any] | None = None, **fields: Any
    ) -> float:
        return self.pod_log.emit(
            event, message, truth_extra, execution_id=self.execution_id, run=self.run, **fields
        )
