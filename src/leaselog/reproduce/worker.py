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

The randomized lab (`leaselog reproduce random`) varies it: triggers (stream, XAUTOCLAIM redelivery,
scheduler, retry queue, poller, the pod's own scheduler ticks), what a denied attempt does (`--on-denied`),
quick renewal retries after an error (`--renew-retry-ms`), the completion's destination (`--completion`), a
stop request ignored (`--ignore-stop`), one slow work unit, a skewed wall clock (`--clock-offset-ms`), and a
Redis user of its own for the lease commands (so a network cut can be simulated with ACL).

One process can run several executions: `--threads tick,tick` (a scheduler pool of two; `stream,claim`: a
consumer that gets its own message redelivered), `--runs` triggers taken in turn, and `--id-style` unique
(attempt-a, attempt-a2), counter (1, 2, ... per process) or reused (the same id every time). Each line
names the thread that logged it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import redis

from leaselog.reproduce.lock_client import LockConnection, lease_client
from leaselog.reproduce.pod import (
    ACQUIRE_LUA,
    COMPLETE_IDEMPOTENT_LUA,
    COMPLETE_LUA,
    COMPLETE_PLAIN_LUA,
    COORDINATION_TIMEOUT_S,
    GROUP,
    KEEP_ENTRY_LUA,
    POLL_S,
    RELEASE_LUA,
    RENEW_LUA,
    SCHEDULE_TAKE_LUA,
    PodLog,
    RunLog,
    iso_ms,
    keys,
    marker,
    mono_ms,
    signal_list,
)
from leaselog.reproduce.worker_args import TRIGGERS, parse_args

__all__ = [
    "GROUP",
    "TRIGGERS",
    "Pod",
    "Worker",
    "keys",
    "main",
    "marker",
    "mono_ms",
    "parse_args",
    "signal_list",
]
COMPLETE_SCRIPTS = {
    "fenced": COMPLETE_LUA,
    "idempotent": COMPLETE_IDEMPOTENT_LUA,
    "plain": COMPLETE_PLAIN_LUA,
}


class NoTrigger(Exception):
    """The harness closed the run before this pod was triggered: no attempt was made."""


THREAD_NAMES = {"tick": "scheduling", "scheduler": "scheduling", "stream": "consumer", "claim": "consumer"}
TRIGGER_PATHS = {"tick": "scheduler", "scheduler": "scheduler", "claim": "redelivery", "retry": "retry"}


class Pod:
    """The worker process: its log, its threads, and the count of executions it ran."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        self.log = PodLog(
            Path(a.log),
            Path(a.truth),
            a.job_id,
            a.execution_id,
            a.pod,
            a.clock_offset_ms,
            (a.clock_step_after_ms, a.clock_step_ms) if a.clock_step_ms else None,
            Path(a.clock_file) if a.clock_file else None,
            a.clock_step_at_mono,
        )
        self.triggers = a.threads.split(",") if a.threads else [a.trigger]
        self._count = threading.Lock()
        self.taken = 0
        self.failure: BaseException | None = None

    def next_seq(self) -> int:
        with self._count:
            self.taken += 1
            return self.taken - 1

    def ids(self, seq: int) -> tuple[str, str]:
        """(logged id, true name) of this process's execution `seq` (from 0); a restarted pod's counter
        starts at 1 again, its true names go on from `--runs-before`."""
        n, eid, style = seq + self.a.runs_before, self.a.execution_id, self.a.id_style
        true = eid if n == 0 else f"{eid}{n + 1}"
        return (str(seq + 1) if style == "counter" else eid if style == "reused" else true), true

    def serve(self, index: int) -> None:
        """One worker thread: take a trigger, run the attempt, again while runs are left."""
        attempts = 0
        try:
            while self.taken < self.a.runs:
                w = Worker(self.a, self, index, self.triggers[index])
                if not w.run(quiet=attempts > 0):
                    return
                attempts += 1
        except BaseException as e:  # a thread's SystemExit (a pod that gives up) must end the process too
            self.failure = e

    def main(self) -> int:
        a = self.a
        threading.current_thread().name = "main"
        self.log.started("ReportWorker")
        self.log.plain(
            f"worker {a.pod} up, consumer of {keys(a.prefix, a.job_id)['stream']}", "o.s.b.StartupInfoLogger"
        )
        names = [f"{THREAD_NAMES.get(t, t)}-{i + 1}" for i, t in enumerate(self.triggers)]
        if len(self.triggers) == 1:
            threading.current_thread().name = names[0]
            self.serve(0)
        else:
            threads = [threading.Thread(target=self.serve, args=(i,), name=n) for i, n in enumerate(names)]
            for t in threads:
                t.start()
            for t in threads:  # (each ends when the harness closes the run)
                t.join()
        self.log.close()
        if self.failure is not None:
            raise self.failure
        return 0


class Worker:
    """One attempt of the pod: a trigger, the lock, the work, the release."""

    def __init__(self, a: argparse.Namespace, pod: Pod, index: int = 0, trigger: str | None = None) -> None:
        self.a = a
        self.pod = pod
        self.index = index
        self.trigger = trigger or a.trigger
        self.units = a.units
        self.execution_id = a.execution_id
        self.k = keys(a.prefix, a.job_id)
        # Every lease command is bounded and sent once: a stalled Redis must surface as a timeout (an
        # uncertain outcome), never as a hang, and never be silently re-sent (redis-py retries by default).
        self.lock = LockConnection(a, lambda *x, **kw: self.log.emit(*x, **kw))
        self.r: Any = self.lock.r
        # the queue and the result store: on the lock's server, unless the lock has a server of its own
        self.store: Any = lease_client(a, a.redis) if a.lock_redis else self.r
        # coordination with the scenario may wait out a Redis stall; it must not die of it
        self.coord: Any = redis.Redis.from_url(a.redis, socket_timeout=COORDINATION_TIMEOUT_S)
        self.log: RunLog = pod.log.run(a.execution_id, a.execution_id)
        self.owner = str(uuid.uuid4())
        self.token: int | None = None
        self.entry_id: str | None = None
        self.delivered = 0  # the entry's delivery count when this attempt took it
        # the last renewal's line was followed by a reset of the entry's idle time (still this delivery's);
        # the next renewal line says so (`entryKept`)
        self.kept = False
        self.deadline = 0.0  # local monotonic lease deadline (ms), conservative by margin_ms
        self.max_deadline = 0.0
        self.stop_requested = threading.Event()
        self.ended = threading.Event()  # job_finished / job_stopped logged
        self.stop_reason: str | None = None
        self.uncertain = False
        self._state = threading.Lock()
        self.renewals_done = threading.Event()
        self.renewed = 0  # confirmed renewals, only touched by the renewal thread
        self.renewer: threading.Thread | None = None
        self.renew = self.r.register_script(RENEW_LUA)
        self.release = self.r.register_script(RELEASE_LUA)
        self.acquire_script = self.r.register_script(ACQUIRE_LUA)
        self.complete = self.store.register_script(COMPLETE_SCRIPTS.get(a.completion, COMPLETE_LUA))
        self.take_schedule = self.coord.register_script(SCHEDULE_TAKE_LUA)
        self.keep_entry = self.store.register_script(KEEP_ENTRY_LUA)

    def lease(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        return self.lock.call(script, keys, args)

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

    def flag_renewal(self, on: bool) -> None:
        """Set while a renewal is between its request and its line: a SIGSTOP landing there would let the
        line (and the lease the logs show) come long after Redis renewed, so the harness pauses outside."""
        key = marker(self.a.prefix, f"renewing:{self.a.role}")
        with contextlib.suppress(redis.RedisError):
            if on:
                self.coord.set(key, "1", ex=600)
            else:
                self.coord.delete(key)

    def closed(self) -> bool:
        """The harness says no more triggers will come (a pod still waiting for one then leaves)."""
        return bool(self.a.close_marker and self.coord.exists(marker(self.a.prefix, self.a.close_marker)))

    def wait_marker(self, name: str) -> None:
        """Consume nothing before `name` exists (a later consumer must not take the first message)."""
        end = time.monotonic() + COORDINATION_TIMEOUT_S
        while not self.coord.exists(marker(self.a.prefix, name)):
            if self.closed():
                raise NoTrigger
            if time.monotonic() > end:
                raise SystemExit(f"{self.a.pod}: {name} never came")
            time.sleep(POLL_S)

    # -- trigger ------------------------------------------------------------------------------------
    def take_trigger(self) -> tuple[str, dict[str, Any]]:
        """Wait for this attempt's trigger; its job_triggered line (message, fields) for `bind` to log."""
        a = self.a
        end = time.monotonic() + COORDINATION_TIMEOUT_S
        while time.monotonic() < end:
            if self.closed():
                raise NoTrigger
            if self.trigger == "stream":
                got = self.coord.xreadgroup(GROUP, a.pod, {self.k["stream"]: ">"}, count=1, block=100)
                if got:
                    entry_id, _fields = got[0][1][0]
                    return self._stream_triggered(entry_id)
            elif self.trigger == "claim":
                # the redelivery path: an entry another consumer took and has not acknowledged (nor
                # heartbeated) for a lease's length is claimed, as Kafka redelivers after a rebalance
                _next, claimed, *_ = self.coord.xautoclaim(
                    self.k["stream"], GROUP, a.pod, min_idle_time=a.claim_idle_ms, count=1
                )
                if claimed:
                    return self._stream_triggered(claimed[0][0])
                time.sleep(POLL_S)
            elif self.trigger == "retry":
                # a retry queue (the job's caller, or a failed attempt's handler, asks again)
                got = self.coord.blpop([self.k["retry"]], timeout=0.1)
                if got:
                    return f"retrying {a.job_id}", {"trigger": "retry", "attempt": int(got[1])}
            elif self.trigger == "poll":
                # a poller that scans a table of pending jobs
                if self.coord.srem(self.k["pending"], a.job_id):
                    return f"poller found {a.job_id} pending", {"trigger": "poll"}
                time.sleep(4 * POLL_S)
            elif self.trigger == "tick":
                # the pod's own scheduler (every pod fires the job; the lock decides which one runs it)
                got = self.coord.blpop([f"{self.k['tick']}:{a.pod}"], timeout=0.1)
                if got:
                    fields = {"trigger": "scheduler", "schedule": "report-schedule"}
                    return f"scheduler fired {a.job_id}", {
                        **fields,
                        "scheduledAt": iso_ms(int(got[1]) * 1_000_000),
                    }
            else:
                due = self.take_schedule(keys=[self.k["schedule"]], args=[time.time_ns() // 1_000_000])
                if due:
                    scheduled_at = iso_ms(int(float(due[1])) * 1_000_000)
                    fields = {
                        "trigger": "scheduler",
                        "schedule": "report-schedule",
                        "scheduledAt": scheduled_at,
                    }
                    return f"scheduler fired {a.job_id}", fields
                time.sleep(POLL_S)
        raise SystemExit(f"{a.pod}: no trigger within {COORDINATION_TIMEOUT_S:.0f}s")

    def bind(self, line: tuple[str, dict[str, Any]]) -> None:
        """The trigger came: this attempt takes the pod's next execution number, and logs its trigger."""
        seq = self.pod.next_seq()
        self.execution_id, true = self.pod.ids(seq)
        self.log = self.pod.log.run(self.execution_id, true)
        units = [int(x) for x in self.a.units_list.split(",")] if self.a.units_list else []
        self.units = units[min(seq, len(units) - 1)] if units else self.a.units
        path = self.a.path if self.trigger == self.a.trigger else TRIGGER_PATHS.get(self.trigger, self.a.path)
        self.log.emit("job_triggered", line[0], truth_extra={"path": path}, **line[1])

    def _stream_triggered(self, entry_id: bytes | str) -> tuple[str, dict[str, Any]]:
        self.entry_id = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
        pending = self.coord.xpending_range(
            self.k["stream"], GROUP, min=self.entry_id, max=self.entry_id, count=1
        )
        self.delivered = int(pending[0]["times_delivered"]) if pending else 1
        fields: dict[str, Any] = {
            "trigger": "stream",
            "topic": self.k["stream"],
            "messageId": self.entry_id,
            "deliveryCount": self.delivered,
        }
        if self.trigger == "claim":
            # XAUTOCLAIM's guarantee: the entry had been idle at least min-idle-time (by Redis's clock, in
            # ms) since its previous consumer's last delivery, claim or reset of it
            fields["idleMs"] = self.a.claim_idle_ms
        return f"received report request {self.entry_id} from {self.k['stream']}", {
            **fields,
            "consumerGroup": GROUP,
        }

    def ack(self) -> None:
        if self.entry_id is not None:
            with contextlib.suppress(redis.RedisError):
                self.coord.xack(self.k["stream"], GROUP, self.entry_id)

    # -- lease --------------------------------------------------------------------------------------
    def acquire(self) -> bool:
        """Take the lock; False when it was denied and this attempt gives up (`--on-denied exit`)."""
        a = self.a
        end = time.monotonic() + COORDINATION_TIMEOUT_S
        denied_logged = False
        while True:
            sent = mono_ms()
            try:
                token = int(
                    self.lease(
                        self.acquire_script, [self.k["lock"], self.k["fence"]], [self.owner, a.lease_ms]
                    )
                )
            except redis.RedisError:
                token = 0  # an uncertain acquisition counts as not acquired: do not start work
            if token:
                break
            if a.on_denied != "wait-silent" and not denied_logged:
                self.log.emit("lock_denied", "report lock is held by another worker", owner=self.owner)
                self.mark(f"denied:{a.role}")
                denied_logged = True
                if a.on_denied == "exit":
                    return False
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
        return True

    def request_stop(self, reason: str, cause: str) -> None:
        with self._state:
            if self.stop_requested.is_set() or self.ended.is_set():
                return  # already asked; or the job is over (a last renewal at shutdown has nothing to stop)
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
            if a.flag_renewals:
                self.flag_renewal(True)
            sent = mono_ms()
            outcome, late = "success", False
            try:
                ok = int(self.lease(self.renew, [self.k["lock"]], [self.owner, a.lease_ms]))
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
                truth_extra={"sentMonoMs": round(sent, 3)},
                renewalOutcome=outcome,
                latencyMs=latency,
                late=late or None,
                # the entry's idle time was reset after the previous renewal's line (or none was)
                entryKept=self.kept or None,
            )
            if a.flag_renewals:
                self.flag_renewal(False)
            self.kept = False
            if outcome == "success" and not late:
                if self.entry_id is not None:
                    # keep the stream entry ours while we hold the lease (reset its idle time), so it is
                    # redelivered only after we stop renewing (SQS-style visibility); only while it is
                    # still this delivery's (a consumer that claimed it since keeps it)
                    with contextlib.suppress(redis.RedisError):
                        kept = self.keep_entry(
                            keys=[self.k["stream"]], args=[GROUP, a.pod, self.entry_id, self.delivered]
                        )
                        self.kept = int(kept) == 1
                self.renewed += 1
                self.mark(f"renewed:{a.role}:{self.renewed}")
            elif outcome in ("timeout", "error") and a.renew_retry_ms and mono_ms() < self.deadline:
                # the quick-retry policy: an errored renewal is retried soon, while the local deadline
                # still allows (the lease itself may well be intact)
                if stopping:
                    return
                next_due = mono_ms() + a.renew_retry_ms
                continue
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
            return bool(self.a.ignore_stop)
        now = mono_ms()
        if self.a.renew and now >= self.deadline:
            self.uncertain = True
            self.request_stop("ownership_uncertain", "local_lease_deadline")
            return bool(self.a.ignore_stop)
        if self.a.renew and now >= self.max_deadline:
            self.request_stop("max_runtime", "max_runtime")
            return bool(self.a.ignore_stop)
        return True

    # -- the job ------------------------------------------------------------------------------------
    def run(self, quiet: bool = False) -> bool:
        """One attempt; False when no trigger came (the harness closed the run)."""
        a = self.a
        try:
            if a.start_after:
                self.wait_marker(a.start_after)
            self.bind(self.take_trigger())
        except NoTrigger:
            if not quiet:
                self.log.plain(f"worker {a.pod}: nothing to do", logger="o.s.b.StartupInfoLogger")
                self.mark(f"done:{a.role}")
            return False
        self.mark(f"triggered:{a.role}")
        if a.die_after_trigger:
            # a crash between the pickup and the lock (OOM-killed, node lost): job_triggered, then nothing
            os.kill(os.getpid(), signal.SIGKILL)
        if not self.acquire():
            self.ack()  # the job is running elsewhere: this request is handled
            self.mark(f"done:{a.role}")
            return True
        if a.renew:
            name = f"lease-renewal-{self.index + 1}"
            self.renewer = threading.Thread(target=self.renewal_loop, name=name, daemon=True)
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
                elif done >= self.units:
                    break
                if a.renew and not self.checkpoint():
                    break
                slow = a.slow_unit_ms if done == a.slow_unit_at else 0
                time.sleep((slow or a.unit_ms) / 1000)  # one bounded unit of report work
                done += 1
            if a.progress_note and not self.stop_requested.is_set():
                self.log.emit("job_progress", a.progress_note)
            for _ in range(a.tail_units):
                # the report is not done just because someone else started it: it keeps rendering
                if a.renew and not self.checkpoint():
                    break
                time.sleep(a.unit_ms / 1000)
                done += 1
            if a.completion != "none" and (not a.renew or self.checkpoint()):
                outcome = self.completion()
            with self._state:
                if self.stop_requested.is_set() and not a.ignore_stop:
                    self.log.emit(
                        "job_stopped",
                        f"report stopped: {self.stop_reason}",
                        reason=self.stop_reason,
                        unitsDone=done,
                    )
                else:
                    self.log.emit("job_finished", "report finished", status="ok", unitsDone=done)
                self.ended.set()
        finally:
            self.renewals_done.set()
            if self.renewer is not None:
                self.renewer.join(timeout=30)
            self.release_lease()
        if outcome == "accepted" or (outcome is None and not self.stop_requested.is_set()):
            self.ack()
        elif a.retry_on_failure:
            # the failed attempt's handler asks for another attempt (the retry path)
            with contextlib.suppress(redis.RedisError):
                self.coord.rpush(self.k["retry"], str(a.attempt + 1))
        if a.mark_after:
            self.mark(a.mark_after)
        self.mark(f"done:{a.role}")
        return True

    def completion(self) -> str:
        a = self.a
        # the last checkpoint passed; from here to the write is the gap a pause can fall into
        self.mark(f"completing:{a.role}")
        time.sleep(a.gap_ms / 1000)  # serialise the report for the write
        try:
            res = self.complete(
                keys=[self.k["result"], self.k["effects"]], args=[self.token or 0, self.execution_id]
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
            deleted = int(self.lease(self.release, [self.k["lock"]], [self.owner]))
        except redis.TimeoutError:
            self.log.emit("lock_released", "release timed out: outcome unknown", releaseOutcome="timeout")
            return
        except redis.RedisError as e:
            self.log.emit("lock_released", f"release failed: {type(e).__name__}", releaseOutcome="error")
            return
        self.log.emit("lock_released", f"release_deleted_{deleted}", released=bool(deleted))


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    pod = Pod(a)
    sys.stdout.write(f"{a.pod} pid {os.getpid()}\n")
    sys.stdout.flush()
    return pod.main()


if __name__ == "__main__":
    raise SystemExit(main())
