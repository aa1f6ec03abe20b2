"""The python-redis-lock lab's Celery app: `celery -A leaselog.reproduce.prl_worker worker ...`, one per pod.

A real Celery worker (celery 5.x, prefork pool, Redis broker) runs the task `reports.render`, guarded by
the real python-redis-lock on the real Redis: `redis_lock.Lock(redis, JOB, expire=LEASE_S,
auto_renewal=RENEW)` (blocking), the work, the release. Celery writes the pod's log itself (`--logfile`,
its default worker format); the library's loggers are set to DEBUG (`after_setup_logger`), so its lines
land in the same file. Sources: celery 5.7.0 (`celery/app/trace.py`,
`celery/worker/strategy.py`, `celery/worker/request.py`), kombu 5.7.0 `kombu/transport/redis.py`
(`visibility_timeout`, `unacked_restore_interval`). Celery's settings are the ones that redeliver a task whose worker died:
`task_acks_late`, `task_reject_on_worker_lost` (a killed pool process: the message goes back to the
queue at once) and the Redis transport's `visibility_timeout` (a killed worker: the message is restored
once the timeout passed), with `worker_prefetch_multiplier=1`.

The worker is configured from the environment the lab sets (`LEASELOG_LAB_*`: the broker URL, the pod,
its truth file, the run's key prefix). Beside Celery's log, each pod appends its CLOCK_MONOTONIC moments
to its truth file (the lab's ground truth, never read by leaselog), from the process that lived them:
the delivery (in the consumer, at Celery's "received" line), the acquisition at the library's own
"Acquired" line, each `extend()` of the library's renewal thread and its outcome, the release and whether
it deleted the key, the task's end at Celery's end line (succeeded / raised, logged by the pool process
after the function returned); a moment noted at a line takes the line's own wall time, so the truth and
the log agree on when each attempt began and ended. Each moment names its attempt (`run`):
the task id, `#N` appended for the Nth delivery of the same task. Coordination with the lab goes
through Redis keys under the prefix (`leaselog.reproduce.pod.marker`).

Only the worker process imports this module (it is the Celery app; it imports celery and redis_lock, the
lab's extra); the lab's side reads the workers' settings from `leaselog.reproduce.prl_settings`.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import redis
import redis_lock
from celery import Celery, signals
from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS

from leaselog.reproduce.pod import COORDINATION_TIMEOUT_S, POLL_S, marker, mono_ms, signal_list
from leaselog.reproduce.prl_settings import (
    ENV_BROKER,
    ENV_POD,
    ENV_PREFIX,
    ENV_TRUTH,
    ENV_VISIBILITY,
    TASK_NAME,
    VISIBILITY_TIMEOUT_S,
    celery_settings,
    run_name,
)

app = Celery("leaselog-lab")
app.conf.update(
    celery_settings(
        os.environ.get(ENV_BROKER, "redis://127.0.0.1:6379/0"),
        int(os.environ.get(ENV_VISIBILITY, VISIBILITY_TIMEOUT_S)),
    )
)


class Truth:
    """The pod's ground-truth moments, appended by whichever of its processes lived them (one O_APPEND
    write per moment); safe from the task's and the renewal thread's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._f: Any = None
        self._pid = -1
        self.run: str | None = None  # the attempt this process runs now

    def note(
        self,
        event: str,
        at: float | None = None,
        run: str | None = None,
        wall: float | None = None,
        **fields: Any,
    ) -> None:
        """A moment: `at` its CLOCK_MONOTONIC ms (now by default), `wall` its wall-clock ms (now by default;
        a line's moment takes the line's own time, so the truth's moments and the log's lines agree)."""
        path = os.environ.get(ENV_TRUTH)
        if not path:
            return
        with self._lock:
            if self._pid != os.getpid():  # a forked pool process opens its own handle
                self._f = Path(path).open("a", encoding="utf-8")  # noqa: SIM115 (open while the process lives)
                self._pid = os.getpid()
            mono = mono_ms() if at is None else at
            wall_ms = time.time_ns() // 1_000_000 if wall is None else int(wall)
            line = {"event": event, "monoMs": round(mono, 3), "wallMs": wall_ms}
            line["run"] = run or self.run
            self._f.write(json.dumps({**line, **fields}, separators=(",", ":")) + "\n")
            self._f.flush()


TRUTH = Truth()
# when the consumer last logged "received" (wall ms of the line, monotonic ms)
RECEIVED_LINE: dict[str, tuple[float, float]] = {}
# when the renewal thread last logged "Refreshing" / the task last logged "Releasing" (per process)
REFRESH_SENT: list[float | None] = [None]
RELEASE_SENT: list[float | None] = [None]
# the truth's lease of the task this process runs: its last confirmed point (the acquisition, then each
# successful extend as sent) and its length
LEASE: dict[str, float] = {}


class TruthFromLines(logging.Filter):
    """The library's and Celery's own lines as the truth's anchors: "Acquired" is logged right after its
    SET succeeded (before the renewal thread starts, which can take long on a loaded machine); the EXTEND
    goes out right after "Refreshing", the UNLOCK right after "Releasing"; the task ends when Celery's
    trace logs it (succeeded / raised: after the function returned, in the same pool process)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        wall = record.created * 1000
        if record.name == "celery.worker.strategy" and isinstance(record.args, dict):
            if msg == LOG_RECEIVED and record.args.get("name") == TASK_NAME:
                RECEIVED_LINE[str(record.args.get("id"))] = (wall, mono_ms())
        elif record.name == "celery.app.trace" and isinstance(record.args, dict):
            if record.args.get("name") == TASK_NAME and TRUTH.run is not None:
                ok = msg == LOG_SUCCESS
                TRUTH.note("job_finished", wall=wall, status="ok" if ok else "error")
                TRUTH.run = None
        elif record.name == "redis_lock.acquire" and msg.startswith("Acquired Lock"):
            LEASE["anchor"] = mono_ms()
            # the task's guarded work starts at this line: both moments at once (a note can be slow: the
            # pool process's first one opens the truth file)
            TRUTH.note("lock_acquired", at=LEASE["anchor"], wall=wall)
            TRUTH.note("job_started", at=LEASE["anchor"], wall=wall)
        elif record.name == "redis_lock.refresh.thread" and msg.startswith("Refreshing"):
            REFRESH_SENT[0] = sent = mono_ms()
            # noted now, as the process may die before its outcome comes back (the lab then asks Redis);
            # late: sent after the lease expired (the renewal thread waits its interval after the previous
            # extend returned, so a slow one pushes the next past the lease)
            if "anchor" in LEASE and sent > LEASE["anchor"] + LEASE["ms"]:
                TRUTH.note("lease_renewal_sent", at=sent, wall=wall, late=True)
            else:
                TRUTH.note("lease_renewal_sent", at=sent, wall=wall)
        elif record.name == "redis_lock.release" and msg.startswith("Releasing"):
            RELEASE_SENT[:] = [mono_ms()]
            # noted now: the process may die before the UNLOCK's answer (the lab then asks Redis)
            TRUTH.note("lock_release_sent", at=RELEASE_SENT[0], wall=wall)
        return True


for _name in (
    "redis_lock.acquire",
    "redis_lock.refresh.thread",
    "redis_lock.release",
    "celery.app.trace",
    "celery.worker.strategy",
):
    logging.getLogger(_name).addFilter(TruthFromLines())


class TracedLock(redis_lock.Lock):  # type: ignore[misc]
    """The library's lock; only `extend` (what its renewal thread calls) also notes its outcome."""

    def extend(self, expire: int | None = None) -> None:
        try:
            super().extend(expire)
        except redis_lock.NotAcquired:
            TRUTH.note("lease_renewal", at=REFRESH_SENT[0], renewalOutcome="rejected")
            raise
        except redis.TimeoutError:
            TRUTH.note("lease_renewal", at=REFRESH_SENT[0], renewalOutcome="timeout")
            raise
        except redis.RedisError:
            TRUTH.note("lease_renewal", at=REFRESH_SENT[0], renewalOutcome="error")
            raise
        sent = REFRESH_SENT[0]
        late = sent is not None and "anchor" in LEASE and sent > LEASE["anchor"] + LEASE["ms"]
        if late:
            TRUTH.note("lease_renewal", at=sent, renewalOutcome="success", late=True)
        else:
            TRUTH.note("lease_renewal", at=sent, renewalOutcome="success")
        if sent is not None:
            LEASE["anchor"] = sent

    def release(self) -> None:
        try:
            super().release()
        finally:
            RELEASE_SENT.append(mono_ms())


def library_loggers(**_: Any) -> None:
    # the library logs its refreshes and releases at DEBUG; Celery runs at INFO
    logging.getLogger("redis_lock").setLevel(logging.DEBUG)


_COORD: dict[str, Any] = {}


def coord() -> Any:
    """This process's coordination client (a forked pool process makes its own)."""
    pid = os.getpid()
    if _COORD.get("pid") != pid:
        url = os.environ.get(ENV_BROKER, app.conf.broker_url)
        _COORD.update(
            pid=pid,
            client=redis.Redis.from_url(url, socket_timeout=COORDINATION_TIMEOUT_S),
            lock_client=redis.StrictRedis.from_url(url),
        )
    return _COORD["client"]


def mark(name: str, value: str = "1") -> None:
    prefix = os.environ.get(ENV_PREFIX, "leaselog:prl")
    pipe = coord().pipeline(transaction=True)
    pipe.set(marker(prefix, name), value, ex=600)
    pipe.rpush(signal_list(prefix, name), value)
    pipe.expire(signal_list(prefix, name), 600)
    pipe.execute()


def _deliveries_key(task_id: str) -> str:
    return marker(os.environ.get(ENV_PREFIX, "leaselog:prl"), f"deliveries:{task_id}")


def received(request: Any = None, **_: Any) -> None:
    """In the consumer, right after Celery logged "received": the delivery's truth moment (the line's)."""
    if request is None or request.name != TASK_NAME:
        return
    n = int(coord().incr(_deliveries_key(request.id)))
    coord().expire(_deliveries_key(request.id), 600)
    path = (request.kwargs or {}).get("path", "first") if n == 1 else "redelivery"
    wall, at = RECEIVED_LINE.pop(request.id, (None, None))
    fields = {"path": path, "trigger": path, "messageId": request.id}
    TRUTH.note("job_triggered", at=at, run=run_name(request.id, n), wall=wall, **fields)
    mark(f"received:{run_name(request.id, n)}", os.environ.get(ENV_POD, "?"))


def ready(**_: Any) -> None:
    mark(f"ready:{os.environ.get(ENV_POD, '?')}", str(os.getpid()))


def _sleep_until(deadline_ms: float) -> None:
    while mono_ms() < deadline_ms:
        time.sleep(min(0.02, max(0.0, (deadline_ms - mono_ms()) / 1000)))


def render(
    self: Any,
    job: str,
    lease_s: int,
    renew: bool,
    work_ms: int,
    path: str = "first",
    hang_at_ms: int = 0,
    hang_ms: int = 0,
    tries: int = 0,
    poll_ms: int = 250,
    wait_for: str | None = None,
) -> None:
    """Take the job's lock (blocking, or `tries` non-blocking polls), work `work_ms` (hanging `hang_ms`
    at `hang_at_ms`), release; a release that finds the key gone raises NotAcquired (Celery logs the
    failure)."""
    c = coord()
    task_id = str(self.request.id)
    delivery = int(c.get(_deliveries_key(task_id)) or 1)
    TRUTH.run = run = run_name(task_id, delivery)
    if wait_for:
        end = time.monotonic() + COORDINATION_TIMEOUT_S
        while not c.exists(marker(os.environ.get(ENV_PREFIX, "leaselog:prl"), wait_for)):
            if time.monotonic() > end:
                raise RuntimeError(f"{wait_for} never came")
            time.sleep(POLL_S)
    LEASE.clear()
    LEASE["ms"] = lease_s * 1000.0
    lock = TracedLock(_COORD["lock_client"], job, expire=lease_s, auto_renewal=renew)
    try:
        if tries:
            # a task that polls the lock (non-blocking) and gives up: "Failed to acquire" at every tick
            for _ in range(tries):
                if lock.acquire(blocking=False):
                    lock.release()
                    TRUTH.note("lock_released", at=RELEASE_SENT[0], released=True)
                    break
                TRUTH.note("lock_denied")
                time.sleep(poll_ms / 1000)
            return
        lock.acquire(blocking=True)  # the truth notes the acquisition at the library's "Acquired" line
        mark(f"started:{run}", str(os.getpid()))
        began = mono_ms()
        if hang_ms and hang_at_ms < work_ms:
            _sleep_until(began + hang_at_ms)
            TRUTH.note("work_hang", hangMs=hang_ms)  # the work's call hangs: the lab's stall
            time.sleep(hang_ms / 1000)
            TRUTH.note("work_resumed")
            began += hang_ms
        _sleep_until(began + work_ms)
        # the task ends when it leaves the `with` block: after the release, at Celery's end line
        try:
            lock.release()
        except redis_lock.NotAcquired:
            TRUTH.note("lock_released", at=RELEASE_SENT[0], released=False, returnedMonoMs=RELEASE_SENT[-1])
            raise
        TRUTH.note("lock_released", at=RELEASE_SENT[0], released=True, returnedMonoMs=RELEASE_SENT[-1])
        # the task's end (job_finished) is noted at Celery's end line (TruthFromLines)
    finally:
        mark(f"done:{run}", os.environ.get(ENV_POD, "?"))


signals.after_setup_logger.connect(library_loggers)
signals.task_received.connect(received)
signals.worker_ready.connect(ready)
app.task(name=TASK_NAME, bind=True)(render)
