"""One worker ("pod") of a reproduction: `python -m leaselog.reproduce.worker ...`, a separate OS process.

It takes a job from a real trigger (a Redis Stream consumer group, a redelivery claimed with XAUTOCLAIM, or
a Redis-backed scheduler), takes the job's lock, works, and writes what it did as JSONL in the article's
flat shape (`ts` wall clock, `elapsedMs` from a monotonic clock, canonical event names). It also appends
the same moments with the host's CLOCK_MONOTONIC to a `--truth` file (in the scenario's scratch folder):
the scenario's ground truth comes from there, not from the log leaselog analyzes.

Two lifecycles:
- naive (the article's demo): acquire with a TTL, no renewal, keep working past expiry, owner-checked release.
- safe (`--renew`, the article's proposed lifecycle): unique owner value, fencing token from INCR at
  acquisition, a local monotonic deadline with a margin, owner-checked renewal (Lua PEXPIRE) on a thread
  independent of the work loop, ownership-uncertain on a rejected / timed-out / failed / late renewal ->
  stop at the next checkpoint, completion through a fencing check in Redis, owner-checked release.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

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

POLL_S = 0.025
COORDINATION_TIMEOUT_S = 60.0


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
    }


GROUP = "report-workers"


def marker(prefix: str, name: str) -> str:
    return f"{prefix}:marker:{name}"


def signal_list(prefix: str, name: str) -> str:
    return f"{prefix}:signal:{name}"


class PodLog:
    """The pod's JSONL log plus its ground-truth twin; safe to call from the work and renewal threads."""

    def __init__(self, path: Path, truth: Path, job_id: str, execution_id: str, pod: str) -> None:
        self._log = path.open("a", encoding="utf-8")
        self._truth = truth.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        self.job_id, self.execution_id, self.pod = job_id, execution_id, pod
        self.t0 = mono_ms()

    def plain(self, message: str, logger: str = "c.a.report.Worker") -> None:
        """A line unrelated to leases, as real logs have between lease events (leaselog must ignore it)."""
        ts = _iso(time.time_ns())
        self._write({"ts": ts, "pod": self.pod, "level": "INFO", "logger": logger, "message": message}, None)

    def emit(
        self, event: str, message: str, truth_extra: dict[str, Any] | None = None, **fields: Any
    ) -> float:
        """Log one lease event now; returns the monotonic moment (ms) it was taken at.

        `truth_extra` goes to the ground truth only (e.g. when the acquiring request was sent).
        """
        with self._lock:
            wall_ns = time.time_ns()
            m = mono_ms()
            line: dict[str, Any] = {
                "ts": _iso(wall_ns),
                "level": "WARN" if event in ("ownership_lost", "job_stop_requested") else "INFO",
                "jobId": self.job_id,
                "executionId": self.execution_id,
                "pod": self.pod,
                "event": event,
                "elapsedMs": round(m - self.t0),
                **{k: v for k, v in fields.items() if v is not None},
                "message": message,
            }
            truth = {
                "event": event,
                "monoMs": round(m, 3),
                "wallMs": wall_ns // 1_000_000,
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


def _iso(wall_ns: int) -> str:
    t = datetime.fromtimestamp(wall_ns // 1_000_000 / 1000, tz=UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class Worker:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.k = keys(a.prefix, a.job_id)
        # Every lease command is bounded and sent once: a stalled Redis must surface as a timeout (an
        # uncertain outcome), never as a hang, and never be silently re-sent (redis-py retries by default).
        self.r: Any = redis.Redis.from_url(
            a.redis,
            socket_timeout=a.op_timeout_ms / 1000,
            socket_connect_timeout=max(1.0, a.op_timeout_ms / 1000),
            retry=Retry(NoBackoff(), 0),
        )
        # coordination with the scenario may wait out a Redis stall; it must not die of it
        self.coord: Any = redis.Redis.from_url(a.redis, socket_timeout=COORDINATION_TIMEOUT_S)
        self.log = PodLog(Path(a.log), Path(a.truth), a.job_id, a.execution_id, a.pod)
        self.owner = str(uuid.uuid4())
        self.token: int | None = None
        self.entry_id: str | None = None
        self.deadline = 0.0  # local monotonic lease deadline (ms), conservative by margin_ms
        self.max_deadline = 0.0
        self.stop_requested = threading.Event()
        self.stop_reason: str | None = None
        self.uncertain = False
        self._state = threading.Lock()
        self.renewals_done = threading.Event()
        self.renewed = 0  # confirmed renewals, only touched by the renewal thread
        self.renewer: threading.Thread | None = None
        self.renew = self.r.register_script(RENEW_LUA)
        self.release = self.r.register_script(RELEASE_LUA)
        self.acquire_script = self.r.register_script(ACQUIRE_LUA)
        self.complete = self.r.register_script(COMPLETE_LUA)
        self.take_schedule = self.coord.register_script(SCHEDULE_TAKE_LUA)

    # -- coordination -------------------------------------------------------------------------------
    def mark(self, name: str) -> None:
        try:
            # One atomic round trip: once the scenario sees the signal, this pod has nothing left in flight
            # (it may stall Redis right then, and must not catch the pod mid-way through its own marker).
            pipe = self.coord.pipeline(transaction=True)
            pipe.set(marker(self.a.prefix, name), "1", ex=600)
            pipe.rpush(signal_list(self.a.prefix, name), "1")
            pipe.expire(signal_list(self.a.prefix, name), 600)
            pipe.execute()
        except redis.RedisError:
            pass  # a marker is for the scenario's timing; never let it change the worker's behaviour

    # -- trigger ------------------------------------------------------------------------------------
    def take_trigger(self) -> None:
        a = self.a
        end = time.monotonic() + COORDINATION_TIMEOUT_S
        while time.monotonic() < end:
            if a.trigger == "stream":
                got = self.coord.xreadgroup(GROUP, a.pod, {self.k["stream"]: ">"}, count=1, block=200)
                if got:
                    entry_id, _fields = got[0][1][0]
                    self._stream_triggered(entry_id)
                    return
            elif a.trigger == "claim":
                # the redelivery path: an entry another consumer took and has not acknowledged (nor
                # heartbeated) for a lease's length is claimed, as Kafka redelivers after a rebalance
                _next, claimed, *_ = self.coord.xautoclaim(
                    self.k["stream"], GROUP, a.pod, min_idle_time=a.claim_idle_ms, count=1
                )
                if claimed:
                    self._stream_triggered(claimed[0][0])
                    return
                time.sleep(POLL_S)
            else:
                due = self.take_schedule(keys=[self.k["schedule"]], args=[time.time_ns() // 1_000_000])
                if due:
                    scheduled_at = _iso(int(float(due[1])) * 1_000_000)
                    self.log.emit(
                        "job_triggered",
                        f"scheduler fired {a.job_id}",
                        trigger="scheduler",
                        schedule="report-schedule",
                        scheduledAt=scheduled_at,
                    )
                    return
                time.sleep(POLL_S)
        raise SystemExit(f"{a.pod}: no trigger within {COORDINATION_TIMEOUT_S:.0f}s")

    def _stream_triggered(self, entry_id: bytes | str) -> None:
        self.entry_id = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
        pending = self.coord.xpending_range(
            self.k["stream"], GROUP, min=self.entry_id, max=self.entry_id, count=1
        )
        delivered = int(pending[0]["times_delivered"]) if pending else 1
        self.log.emit(
            "job_triggered",
            f"received report request {self.entry_id} from {self.k['stream']}",
            trigger="stream",
            topic=self.k["stream"],
            messageId=self.entry_id,
            deliveryCount=delivered,
            consumerGroup=GROUP,
        )

    def ack(self) -> None:
        if self.entry_id is not None:
            with contextlib.suppress(redis.RedisError):
                self.coord.xack(self.k["stream"], GROUP, self.entry_id)

    # -- lease --------------------------------------------------------------------------------------
    def acquire(self) -> None:
        a = self.a
        end = time.monotonic() + COORDINATION_TIMEOUT_S
        while True:
            sent = mono_ms()
            try:
                token = int(
                    self.acquire_script(keys=[self.k["lock"], self.k["fence"]], args=[self.owner, a.lease_ms])
                )
            except redis.RedisError:
                token = 0  # an uncertain acquisition counts as not acquired: do not start work
            if token:
                break
            if time.monotonic() > end:
                raise SystemExit(f"{a.pod}: lock not acquired within {COORDINATION_TIMEOUT_S:.0f}s")
            time.sleep(POLL_S)
        self.token = token
        # measured from *before* the request: the lease may have started that early
        self.deadline = sent + a.lease_ms - a.margin_ms
        self.max_deadline = sent + a.max_runtime_ms
        self.log.emit(
            "lock_acquired",
            "acquired report lock",
            # Redis started the lease between sending and this line: the truth keeps both ends
            truth_extra={"sentMonoMs": round(sent, 3)},
            leaseMs=a.lease_ms,
            fencingToken=token,
            owner=self.owner,
        )

    def request_stop(self, reason: str, cause: str) -> None:
        with self._state:
            if self.stop_requested.is_set():
                return
            self.stop_reason = reason
            self.log.emit("job_stop_requested", f"stop requested: {cause}", reason=reason, cause=cause)
            self.stop_requested.set()

    def renewal_loop(self) -> None:
        a = self.a
        next_due = mono_ms() + a.renewal_ms
        while True:
            stopping = self.renewals_done.wait(max(0.0, (next_due - mono_ms()) / 1000))
            if stopping and mono_ms() < next_due:
                return
            # A renewal that fell due while the process was paused still runs once, even at shutdown, so
            # the log says whether this execution still held the lease when it woke; its owner check means
            # it can never extend anyone else's lease, and a late success never revives this attempt.
            sent = mono_ms()
            outcome, late = "success", False
            try:
                ok = int(self.renew(keys=[self.k["lock"]], args=[self.owner, a.lease_ms]))
                outcome = "success" if ok == 1 else "rejected"
            except redis.TimeoutError:
                outcome = "timeout"
            except redis.RedisError:
                outcome = "error"
            got = mono_ms()
            latency = round(got - sent, 1)
            if outcome == "success":
                late = got >= self.deadline
                if not late and not self.uncertain:
                    self.deadline = sent + a.lease_ms - a.margin_ms
            self.log.emit(
                "lease_renewal",
                f"lease renewal {outcome}{' (late)' if late else ''}",
                renewalOutcome=outcome,
                latencyMs=latency,
                late=late or None,
            )
            if outcome == "success" and not late:
                if self.entry_id is not None:
                    # keep the stream entry ours while we hold the lease (reset its idle time), so it is
                    # redelivered only after we stop renewing (SQS-style visibility)
                    with contextlib.suppress(redis.RedisError):
                        self.r.xclaim(self.k["stream"], GROUP, a.pod, 0, [self.entry_id], justid=True)
                self.renewed += 1
                self.mark(f"renewed:{a.role}:{self.renewed}")
            else:
                self.uncertain = True
                if outcome == "rejected":
                    self.log.emit(
                        "ownership_lost", "lease belongs to someone else now", reason="renewal_rejected"
                    )
                self.request_stop("ownership_uncertain", f"renewal_{'late' if late else outcome}")
                return
            if stopping:
                return
            next_due = sent + a.renewal_ms

    def checkpoint(self) -> bool:
        """Before each bounded unit of work: False when this execution must stop."""
        if self.stop_requested.is_set():
            return False
        now = mono_ms()
        if self.a.renew and now >= self.deadline:
            self.uncertain = True
            self.request_stop("ownership_uncertain", "local_lease_deadline")
            return False
        if self.a.renew and now >= self.max_deadline:
            self.request_stop("max_runtime", "max_runtime")
            return False
        return True

    # -- the job ------------------------------------------------------------------------------------
    def run(self) -> int:
        a = self.a
        self.log.plain(f"worker {a.pod} up, consumer of {self.k['stream']}", logger="o.s.b.StartupInfoLogger")
        self.take_trigger()
        self.acquire()
        if a.renew:
            self.renewer = threading.Thread(target=self.renewal_loop, name="lease-renewal", daemon=True)
            self.renewer.start()
        outcome: str | None = None
        try:
            self.log.emit("job_started", "report started")
            self.mark(f"started:{a.role}")
            done = 0
            while True:
                if a.wait_for:
                    if self.coord.exists(marker(a.prefix, a.wait_for)):
                        break
                elif done >= a.units:
                    break
                if a.renew and not self.checkpoint():
                    break
                time.sleep(a.unit_ms / 1000)  # one bounded unit of report work
                done += 1
            if a.progress_note and not self.stop_requested.is_set():
                self.log.emit("job_progress", a.progress_note)
            for _ in range(a.tail_units):
                # the report is not done just because someone else started it: it keeps rendering
                if a.renew and not self.checkpoint():
                    break
                time.sleep(a.unit_ms / 1000)
                done += 1
            if a.fenced and (not a.renew or self.checkpoint()):
                outcome = self.completion()
            if self.stop_requested.is_set():
                self.log.emit(
                    "job_stopped",
                    f"report stopped: {self.stop_reason}",
                    reason=self.stop_reason,
                    unitsDone=done,
                )
            else:
                self.log.emit("job_finished", "report finished", status="ok", unitsDone=done)
        finally:
            self.renewals_done.set()
            if self.renewer is not None:
                self.renewer.join(timeout=30)
            self.release_lease()
        if outcome == "accepted" or (outcome is None and not self.stop_requested.is_set()):
            self.ack()
        if a.mark_after:
            self.mark(a.mark_after)
        self.mark(f"done:{a.role}")
        self.log.close()
        return 0

    def completion(self) -> str:
        a = self.a
        # the last checkpoint passed; from here to the write is the gap a pause can fall into
        self.mark(f"completing:{a.role}")
        time.sleep(a.gap_ms / 1000)  # serialise the report for the write
        try:
            res = self.complete(
                keys=[self.k["result"], self.k["effects"]], args=[self.token or 0, a.execution_id]
            )
            outcome, highest = (res[0].decode() if isinstance(res[0], bytes) else str(res[0])), int(res[1])
        except redis.TimeoutError:
            outcome, highest = "timeout", None
        except redis.RedisError:
            outcome, highest = "error", None
        self.log.emit(
            "completion",
            f"completion {outcome} (token {self.token}, highest accepted {highest})",
            outcome=outcome,
            fencingToken=self.token,
            highestToken=highest,
        )
        if outcome != "accepted":
            # a rejected write proves the lease is gone: stop, do not retry with the same token
            self.uncertain = True
            self.request_stop("ownership_uncertain", f"completion_{outcome}")
        return outcome

    def release_lease(self) -> None:
        try:
            deleted = int(self.release(keys=[self.k["lock"]], args=[self.owner]))
        except redis.TimeoutError:
            self.log.emit("lock_released", "release timed out: outcome unknown", releaseOutcome="timeout")
            return
        except redis.RedisError as e:
            self.log.emit("lock_released", f"release failed: {type(e).__name__}", releaseOutcome="error")
            return
        self.log.emit("lock_released", f"release_deleted_{deleted}", released=bool(deleted))


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m leaselog.reproduce.worker", description=__doc__.splitlines()[0]
    )
    p.add_argument("--redis", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--job-id", required=True)
    p.add_argument("--execution-id", required=True)
    p.add_argument("--pod", required=True)
    p.add_argument("--role", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--truth", required=True)
    p.add_argument("--trigger", choices=["stream", "claim", "scheduler"], required=True)
    p.add_argument("--claim-idle-ms", type=int, default=5000)
    p.add_argument("--lease-ms", type=int, default=5000)
    p.add_argument("--renewal-ms", type=int, default=1000)
    p.add_argument("--margin-ms", type=int, default=500)
    p.add_argument("--op-timeout-ms", type=int, default=500)
    p.add_argument("--max-runtime-ms", type=int, default=20000)
    p.add_argument("--unit-ms", type=int, default=100)
    p.add_argument("--units", type=int, default=10)
    p.add_argument("--gap-ms", type=int, default=0)
    p.add_argument("--renew", action="store_true")
    p.add_argument("--fenced", action="store_true")
    p.add_argument("--wait-for", default=None, help="keep working until this marker exists")
    p.add_argument("--progress-note", default=None, help="log this job_progress line when the work ends")
    p.add_argument("--tail-units", type=int, default=0, help="units of work after --wait-for is met")
    p.add_argument("--mark-after", default=None, help="set this marker after the release")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    worker = Worker(a)
    sys.stdout.write(f"{a.pod} pid {os.getpid()}\n")
    sys.stdout.flush()
    return worker.run()


if __name__ == "__main__":
    raise SystemExit(main())
