"""One pod of a python-redis-lock lab run: `python -m leaselog.reproduce.prl_worker ...`, its own OS process.

It runs one task the way a Celery task guarded by python-redis-lock does: the task arrives, the worker
takes `redis_lock.Lock(redis, JOB, expire=LEASE_S, auto_renewal=RENEW)` (blocking), works, and leaves the
`with` block (release). The lock is the real library on the real Redis, with its own loggers on at
DEBUG; every line goes through one handler in Celery's worker format
(`[%(asctime)s: %(levelname)s/%(processName)s] %(message)s`, celery 5.7.0 `app/defaults.py`), with
the pool process name `ForkPoolWorker-1`, and the task's own lines are Celery's messages
(`app/trace.py` LOG_RECEIVED from MainProcess, LOG_SUCCESS, LOG_FAILURE `raised unexpected` with the
traceback). Celery itself is not running: this process plays its worker.

Beside the log, it appends its CLOCK_MONOTONIC moments to `--truth` (the lab's ground truth, in the shape
of `leaselog.reproduce.pod.PodLog`'s truth file): the acquisition when the library logged it, each
`extend()` as the library's renewal thread made it (and its outcome), the end of the work, the release
and whether it deleted the key.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import redis
import redis_lock

from leaselog.reproduce.pod import COORDINATION_TIMEOUT_S, POLL_S, marker, mono_ms, signal_list

CELERY_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s"  # celery DEFAULT_PROCESS_LOG_FMT
POOL_PROCESS = "ForkPoolWorker-1"
# celery 5.7.0 app/trace.py
LOG_RECEIVED = "Task %(name)s[%(id)s] received"
LOG_SUCCESS = "Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s"
LOG_FAILURE = "Task %(name)s[%(id)s] %(description)s: %(exc)s"
TASK_NAME = "reports.render"
# when the renewal thread last logged "Refreshing" (one renewal thread per pod)
REFRESH_SENT: list[float | None] = [None]
# when the task last logged "Releasing"
RELEASE_SENT: list[float | None] = [None]


class Truth:
    """The pod's ground-truth moments (never read by leaselog); safe from the work and renewal threads."""

    def __init__(self, path: Path) -> None:
        self._f = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def note(self, event: str, at: float | None = None, **fields: Any) -> None:
        with self._lock:
            mono = mono_ms() if at is None else at
            line = {"event": event, "monoMs": round(mono, 3), "wallMs": time.time_ns() // 1_000_000}
            self._f.write(json.dumps({**line, **fields}, separators=(",", ":")) + "\n")
            self._f.flush()

    def close(self) -> None:
        self._f.close()


def celery_logging(path: Path, truth: Truth) -> logging.Handler:
    """One file handler in Celery's worker format; `processName` is the pool process's, or the record's
    `celery_process` (the consumer's lines are MainProcess's). The library's "Acquired" line also notes
    the truth's acquisition, at that very moment (the library logs it right after its SET succeeded and
    before it starts the renewal thread, which can take long on a loaded machine)."""

    class PoolProcess(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.processName = getattr(record, "celery_process", POOL_PROCESS)
            if record.name == "redis_lock.acquire" and str(record.msg).startswith("Acquired Lock"):
                truth.note("lock_acquired")
                truth.note("job_started")
            elif record.name == "redis_lock.refresh.thread" and str(record.msg).startswith("Refreshing"):
                # the EXTEND goes out right after this line: its moment anchors the renewed lease
                REFRESH_SENT[0] = mono_ms()
            elif record.name == "redis_lock.release" and str(record.msg).startswith("Releasing"):
                RELEASE_SENT[0] = mono_ms()  # the UNLOCK goes out right after this line
            return True

    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(CELERY_FORMAT))
    handler.addFilter(PoolProcess())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("redis_lock").setLevel(logging.DEBUG)
    return handler


def traced_lock(truth: Truth) -> type[redis_lock.Lock]:
    class TracedLock(redis_lock.Lock):  # type: ignore[misc]
        """The library's lock; only `extend` (what its renewal thread calls) also notes its outcome."""

        def extend(self, expire: int | None = None) -> None:
            try:
                super().extend(expire)
            except redis_lock.NotAcquired:
                truth.note("lease_renewal", at=REFRESH_SENT[0], renewalOutcome="rejected")
                raise
            except redis.TimeoutError:
                truth.note("lease_renewal", at=REFRESH_SENT[0], renewalOutcome="timeout")
                raise
            except redis.RedisError:
                truth.note("lease_renewal", at=REFRESH_SENT[0], renewalOutcome="error")
                raise
            truth.note("lease_renewal", at=REFRESH_SENT[0], renewalOutcome="success")

    return TracedLock


def run(a: argparse.Namespace) -> int:
    truth = Truth(Path(a.truth))
    celery_logging(Path(a.log), truth)
    trace = logging.getLogger("celery.app.trace")
    coord: Any = redis.Redis.from_url(a.redis, socket_timeout=COORDINATION_TIMEOUT_S)
    conn: Any = redis.StrictRedis.from_url(a.redis)
    lock_class = traced_lock(truth)

    def mark(name: str) -> None:
        pipe = coord.pipeline(transaction=True)
        pipe.set(marker(a.prefix, name), "1", ex=600)
        pipe.rpush(signal_list(a.prefix, name), "1")
        pipe.expire(signal_list(a.prefix, name), 600)
        pipe.execute()

    if a.start_after:
        end = time.monotonic() + COORDINATION_TIMEOUT_S
        while not coord.exists(marker(a.prefix, a.start_after)):
            if time.monotonic() > end:
                raise SystemExit(f"{a.pod}: {a.start_after} never came")
            time.sleep(POLL_S)
    ctx = {"name": TASK_NAME, "id": a.task_id}
    trace.info(LOG_RECEIVED, ctx, extra={"celery_process": "MainProcess"})
    truth.note("job_triggered", trigger=a.path, messageId=a.task_id)
    mark(f"triggered:{a.role}")
    began = time.monotonic()
    lock = lock_class(conn, a.job_id, expire=a.lease_s, auto_renewal=a.renew)
    try:
        if a.tries:
            # a task that polls the lock (non-blocking) and gives up: "Failed to acquire" at every tick
            for _ in range(a.tries):
                if lock.acquire(blocking=False):
                    lock.release()
                    truth.note("lock_released", at=RELEASE_SENT[0], released=True)
                    break
                truth.note("lock_denied")
                time.sleep(a.poll_ms / 1000)
            truth.note("job_finished", status="ok")
            trace.info(LOG_SUCCESS, {**ctx, "runtime": time.monotonic() - began, "return_value": None})
            mark(f"done:{a.role}")
            return 0
        lock.acquire(blocking=True)  # the truth notes the acquisition at the library's "Acquired" line
        mark(f"started:{a.role}")
        deadline = mono_ms() + a.work_ms
        while mono_ms() < deadline:
            time.sleep(min(0.02, max(0.0, (deadline - mono_ms()) / 1000)))
        # the task ends when it leaves the `with` block: after the release, at Celery's end line
        try:
            lock.release()
        except redis_lock.NotAcquired as e:
            truth.note("lock_released", at=RELEASE_SENT[0], released=False)
            truth.note("job_finished", status="error")
            ctx2 = {**ctx, "description": "raised unexpected", "exc": repr(e)}
            trace.error(LOG_FAILURE, ctx2, exc_info=(type(e), e, e.__traceback__))
        else:
            truth.note("lock_released", at=RELEASE_SENT[0], released=True)
            truth.note("job_finished", status="ok")
            runtime = time.monotonic() - began
            trace.info(LOG_SUCCESS, {**ctx, "runtime": runtime, "return_value": None})
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        truth.close()
    mark(f"done:{a.role}")
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m leaselog.reproduce.prl_worker", description=__doc__)
    p.add_argument("--redis", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--job-id", required=True, help="the lock's name (the job)")
    p.add_argument("--task-id", required=True, help="the Celery task id (the execution id)")
    p.add_argument("--pod", required=True)
    p.add_argument("--role", required=True)
    p.add_argument("--path", default="first", help="how this task came (the truth's trigger path)")
    p.add_argument("--log", required=True)
    p.add_argument("--truth", required=True)
    p.add_argument("--lease-s", type=int, default=2, help="the lock's expire (whole seconds)")
    p.add_argument("--renew", action="store_true", help="auto_renewal (every 2/3 of the lease)")
    p.add_argument("--work-ms", type=int, default=1000)
    p.add_argument("--start-after", default=None, help="wait for this marker before the task arrives")
    p.add_argument("--tries", type=int, default=0, help="poll the lock (non-blocking) this many times")
    p.add_argument("--poll-ms", type=int, default=250)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    raise SystemExit(main())
