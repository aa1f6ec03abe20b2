"""The Celery visibility-timeout lab's app: `celery -A leaselog.reproduce.celery_vt_worker worker -P solo`.

A real Celery worker (celery 5.x, solo pool, Redis broker) runs `reports.export`, with the settings that
redeliver a task still running: `task_acks_late` and the Redis transport's `visibility_timeout`
(`broker_transport_options`), short (2 s), the unacked sweep every second. Sources, kombu 5.7.0
`kombu/transport/redis.py`: `QoS.append` stamps the delivery in the `unacked_index` sorted set with
`time()` when the consumer takes the message; `QoS.restore_visible` puts every delivery stamped more than
`visibility_timeout` ago back on its queue (`_do_restore_message`, `redelivered` set in its headers), with
no log line; the acknowledgement (`QoS.ack`, after the task returned with `acks_late`) removes the stamp.

The task records its own truth (never read by leaselog) into the file `LEASELOG_LAB_TRUTH` names, one JSON
line per attempt: the delivery's stamp (`deliveredMs`, the newest `unacked_index` score, read at the task's
start), its start and its end (wall ms, from the task itself). Coordination goes
through Redis keys under `LEASELOG_LAB_PREFIX`: each attempt pushes `started:N` (N the attempt, counted
per task id in Redis); an attempt given `hold_until` waits until that key exists before it returns.

Only the worker process imports this module (it is the Celery app); the lab's side reads the workers'
settings from `leaselog.reproduce.celery_vt_settings`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import redis
from celery import Celery

from leaselog.reproduce.celery_vt_settings import (
    ENV_BROKER,
    ENV_POD,
    ENV_PREFIX,
    ENV_TRUTH,
    ENV_VISIBILITY,
    TASK_NAME,
    VISIBILITY_TIMEOUT_S,
    celery_settings,
)

WAIT_S = 60.0


app = Celery("leaselog-vt-lab")
app.conf.update(
    celery_settings(
        os.environ.get(ENV_BROKER, "redis://127.0.0.1:6379/0"),
        int(os.environ.get(ENV_VISIBILITY, VISIBILITY_TIMEOUT_S)),
    )
)


def _client() -> redis.Redis:
    return redis.Redis.from_url(os.environ.get(ENV_BROKER, app.conf.broker_url))


def key(name: str) -> str:
    return f"{os.environ.get(ENV_PREFIX, 'leaselog:vt')}:{name}"


def export(self: Any, work_ms: int = 0, hold_until: str | None = None, after_ms: int = 0) -> None:
    """Work `work_ms`, then (if `hold_until`) wait for that key and work `after_ms` more; the truth notes the delivery's stamp, the
    start and the end."""
    c = _client()
    start = time.time() * 1000
    attempt = int(c.incr(key(f"attempts:{self.request.id}")))
    # this delivery's stamp: the newest in the index (an earlier delivery of it was taken out when restored)
    stamps = c.zrange("unacked_index", -1, -1, withscores=True)
    stamp = float(stamps[0][1]) if stamps else None
    c.rpush(key(f"started:{attempt}"), os.environ.get(ENV_POD, "?"))
    if work_ms:
        time.sleep(work_ms / 1000)
    if hold_until:
        end = time.monotonic() + WAIT_S
        while not c.exists(key(hold_until)):
            if time.monotonic() > end:
                raise RuntimeError(f"{hold_until} never came")
            time.sleep(0.01)
        time.sleep(after_ms / 1000)
    done = time.time() * 1000
    line = {
        "taskId": self.request.id,
        "attempt": attempt,
        "pod": os.environ.get(ENV_POD, "?"),
        "deliveredMs": None if stamp is None else round(stamp * 1000, 3),
        "startMs": round(start, 3),
        "endMs": round(done, 3),
    }
    path = os.environ.get(ENV_TRUTH)
    if path:
        with Path(path).open("a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


app.task(name=TASK_NAME, bind=True)(export)
