"""Celery's task lines (PyPI `celery`), and their join with the lock lines of the same worker process.

Sources, Celery 5.7.0:
- `celery/app/trace.py`: `LOG_RECEIVED` `"Task %(name)s[%(id)s] received"` (logged by
  `celery/worker/strategy.py` in the consumer, `MainProcess`); `LOG_SUCCESS` `"Task %(name)s[%(id)s]
  succeeded in %(runtime)ss: %(return_value)s"`; `LOG_FAILURE` `"Task %(name)s[%(id)s] %(description)s:
  %(exc)s"` with description `raised unexpected` (ERROR, then the traceback) or `raised expected`, `exc`
  being `safe_repr(exception)`; `LOG_RETRY` `"Task %(name)s[%(id)s] retry: %(exc)s"`. Success, failure
  and retry are logged by the pool process that ran the task (`ForkPoolWorker-N`).
- python-redis-lock's `NotAcquired` at release, as Celery prints it: `NotAcquired('Lock(lock:NAME) is
  not acquired or it already expired.')` (4.0.0 `release`) and `NotAcquired('Lock lock:NAME is not
  acquired or it already expired.')` (3.7.0 `release` and `extend`, 4.0.0 `extend`).

Identity. A task id is one delivery of a task: a redelivered task is a second "received" with the same
id. The task id is the execution id of the task's lines. The lock's name is the job, and Celery's lines
do not name it; the join (`join`) gives them, per file (a pod's worker) and pool process, in line order:
- the lock lines a pool process logs between two of its task-end lines (succeeded, raised, retry) belong
  to the task that ends second: they take its task id as execution id, and the task's lines (its end,
  and its "received" in MainProcess, found by task id) take the lock's name as job;
- the release that precedes the task's end is confirmed by it: deleted when the task succeeded, not
  deleted when it raised `NotAcquired` (which is then the task's end, `job_finished` with status error);
- lock lines with no task end after them (the pool process died mid-task) take the task id of the last
  "received" before them in the same file; a release among them is not confirmed (the process died
  inside it, before the UNLOCK's answer or Celery's end line): it says the process was alive then
  (`job_progress`), and the execution reads as ended without a finish;
- a task that took no lock keeps its task name as job.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from leaselog.reading.dialects import Dialect, Rule, Sample
from leaselog.reading.dialects.python_redis_lock import NAME as REDIS_LOCK

NAME = "celery"

_TASK = r"\ATask (?P<job_id>[^\s\[]+)\[(?P<execution_id>[^\]\s]+)\] "
_TASK_NO_NAME = r"\ATask [^\s\[]+\[(?P<execution_id>[^\]\s]+)\] "
_EXPIRED = r" is not acquired or it already expired\.['\"]\)"

_RULES = (
    Rule(
        "lock_released",
        _TASK_NO_NAME + r"raised unexpected: NotAcquired\(['\"]Lock\(lock:(?P<job_id>[^)]*)\)" + _EXPIRED,
        {"released": "false", "reason": "NotAcquired"},
        versions="celery 5.x; python-redis-lock 4.x release",
    ),
    Rule(
        "lock_released",
        _TASK_NO_NAME + r"raised unexpected: NotAcquired\(['\"]Lock lock:(?P<job_id>\S+)" + _EXPIRED,
        {"released": "false", "reason": "NotAcquired"},
        versions="celery 5.x; python-redis-lock 3.x release (and any version's extend)",
    ),
    Rule("job_triggered", r"\ATask (?P<job_id>[^\s\[]+)\[(?P<message_id>[^\]\s]+)\] received\Z"),
    Rule("job_finished", _TASK + r"succeeded in [0-9.e+-]+s: ", {"status": "ok"}),
    Rule("job_finished", _TASK + r"raised (?:un)?expected: ", {"status": "error"}),
    Rule("job_finished", _TASK + r"retry: ", {"status": "retry"}),
)
# each rule's name: the event's `raw_event` is `<dialect>/<name>`
RULES = tuple(
    replace(r, name=n)
    for r, n in zip(
        _RULES,
        ("raised-notacquired-release", "raised-notacquired", "received", "succeeded", "raised", "retry"),
        strict=True,
    )
)

SAMPLES = (
    Sample(
        "[2026-12-01 10:00:00,101: INFO/MainProcess] Task reports.render[3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41] "
        "received",
        "job_triggered",
        {"job_id": "reports.render", "message_id": "3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41"},
    ),
    Sample(
        "[2026-12-01 10:00:09,010: INFO/ForkPoolWorker-1] Task reports.render"
        "[3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41] succeeded in 8.91s: None",
        "job_finished",
        {"status": "ok", "execution_id": "3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41"},
    ),
    Sample(
        "[2026-12-01 10:00:19,010: ERROR/ForkPoolWorker-1] Task reports.render"
        "[3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41] raised unexpected: NotAcquired('Lock(lock:report-42) "
        "is not acquired or it already expired.')",
        "lock_released",
        {"job_id": "report-42", "released": "false"},
    ),
    Sample(
        "[2026-12-01 10:00:19,010: ERROR/ForkPoolWorker-1] Task reports.render"
        "[3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41] raised unexpected: NotAcquired('Lock lock:report-42 "
        "is not acquired or it already expired.')",
        "lock_released",
        {"job_id": "report-42", "released": "false"},
    ),
    Sample(
        "[2026-12-01 10:00:19,010: ERROR/ForkPoolWorker-2] Task reports.render"
        "[3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41] raised unexpected: ValueError('bad input')",
        "job_finished",
        {"status": "error"},
    ),
    Sample("[2026-12-01 10:00:00,001: INFO/MainProcess] celery@worker-a ready.", None),
    Sample("[2026-12-01 10:00:00,000: INFO/MainProcess] Connected to redis://redis:6379/0", None),
    Sample(
        "[2026-12-01 10:00:19,010: INFO/ForkPoolWorker-1] Task reports.render"
        "[3f1c2a9e-5b7d-4c1e-9a52-1d0e6b2f8c41] retry: Retry in 5s: ConnectionError()",
        "job_finished",
        {"status": "retry"},
    ),
)

_END = ("job_finished", "lock_released")


def join(raw: pl.DataFrame) -> pl.DataFrame:
    """Task ids onto lock lines, lock names onto task lines, release outcomes from the task's end."""
    if raw.is_empty() or "dialect" not in raw.columns:
        return raw
    df = raw.with_row_index("_row")
    both = df.filter(pl.col("dialect").is_in([NAME, REDIS_LOCK])).sort("file_index", "line")
    if both.filter(pl.col("dialect") == NAME).is_empty():
        return raw
    celery = pl.col("dialect") == NAME
    lock = pl.col("dialect") == REDIS_LOCK
    is_end = celery & pl.col("event").is_in(_END)
    proc = [pl.col("file_index"), pl.col("thread").fill_null("")]
    both = both.with_columns(is_end.alias("_end")).with_columns(
        pl.col("_end").cast(pl.Int32).cum_sum().shift(1, fill_value=0).over(proc).alias("_seg")
    )
    seg = [*proc, pl.col("_seg")]
    both = both.with_columns(
        pl.col("execution_id").filter(pl.col("_end")).first().over(seg).alias("_task"),
        # the lock the task took, else the one it was turned away from
        pl.col("job_id").filter(lock & (pl.col("event") == "lock_acquired")).last().over(seg).alias("_took"),
        pl.col("job_id").filter(lock & pl.col("job_id").is_not_null()).last().over(seg).alias("_named_lock"),
        pl.col("event").filter(pl.col("_end")).first().over(seg).alias("_end_event"),
        pl.col("status").filter(pl.col("_end")).first().over(seg).alias("_end_status"),
        (lock & (pl.col("event") == "lock_released")).any().over(seg).alias("_released_logged"),
    ).with_columns(pl.coalesce("_took", "_named_lock").alias("_lock"))
    # lock lines no task end follows: the last task received before them in the same file
    received = (
        both.filter(celery & (pl.col("event") == "job_triggered"))
        .select("file_index", pl.col("line").alias("_at"), pl.col("message_id").alias("_received"))
        .sort("file_index", "_at")
    )
    first_line = pl.col("line").min().over(seg).alias("_first")
    both = (
        both.with_columns(first_line)
        .sort("_first")
        .join_asof(
            received,
            left_on="_first",
            right_on="_at",
            by="file_index",
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(pl.coalesce("_task", pl.when(lock).then(pl.col("_received"))).alias("_task"))
    )
    # task id -> lock name, for the consumer's "received" lines
    names = (
        both.filter(pl.col("_task").is_not_null() & pl.col("_lock").is_not_null())
        .group_by("file_index", "_task")
        .agg(pl.col("_lock").last().alias("_named"))
    )
    both = both.join(
        names,
        left_on=["file_index", pl.coalesce("_task", pl.when(celery).then(pl.col("message_id")))],
        right_on=["file_index", "_task"],
        how="left",
    )
    notacquired_end = celery & (pl.col("event") == "lock_released") & pl.col("_released_logged")
    # a release logged by a pool process that never logged the task's end (it died inside the release,
    # before the UNLOCK's answer or before Celery's end line): not a confirmed release, the process alive
    unconfirmed = lock & (pl.col("event") == "lock_released") & pl.col("_end_event").is_null()
    both = both.with_columns(
        pl.when(unconfirmed).then(pl.lit("job_progress")).otherwise(pl.col("event")).alias("event")
    ).with_columns(
        pl.when(lock & pl.col("_task").is_not_null())
        .then(pl.col("_task"))
        .when(celery & (pl.col("event") == "job_triggered"))
        .then(pl.col("message_id"))
        .otherwise(pl.col("execution_id"))
        .alias("execution_id"),
        pl.when(celery & (pl.col("event") == "job_triggered") & pl.col("_named").is_not_null())
        .then(pl.col("_named"))
        .when(celery & (pl.col("event") == "job_finished") & pl.col("_lock").is_not_null())
        .then(pl.col("_lock"))
        .otherwise(pl.col("job_id"))
        .alias("job_id"),
        pl.when(lock & (pl.col("event") == "lock_released") & (pl.col("_end_status") == "ok"))
        .then(pl.lit("true"))
        .when(lock & (pl.col("event") == "lock_released") & (pl.col("_end_event") == "lock_released"))
        .then(pl.lit("false"))
        .when(notacquired_end)
        .then(pl.lit(None, pl.String))
        .otherwise(pl.col("released"))
        .alias("released"),
        pl.when(notacquired_end).then(pl.lit("job_finished")).otherwise(pl.col("event")).alias("event"),
        pl.when(notacquired_end).then(pl.lit("error")).otherwise(pl.col("status")).alias("status"),
    )
    cols = ["_row", "job_id", "execution_id", "event", "released", "status"]
    joined = df.update(both.select(cols), on="_row", include_nulls=True).sort("_row").drop("_row")
    return redeliveries(joined)


_RECEIVED = f"{NAME}/received"


def redeliveries(raw: pl.DataFrame) -> pl.DataFrame:
    """A task id received more than once: each receipt after the first is another delivery of the message
    (the Redis transport restored it once its visibility timeout passed, or a lost worker's message was
    put back), the execution of the Nth one `ID#N`, with its delivery count; a receipt while the previous
    delivery had logged no end is the visibility timeout's (`trigger` `visibility_timeout`). The lines the
    deliveries' tasks log (end, lock lines) go to the last receipt of the id before them in the same file.
    A redelivered task that took no logged lock holds the message's lease: each receipt also acquires it
    (`lock_acquired` on the task's job, its length the visibility timeout, never logged: `--lease-ttl`)."""
    celery = pl.col("dialect") == NAME
    receipt = celery & (pl.col("raw_event") == _RECEIVED) & pl.col("message_id").is_not_null()
    counts = raw.filter(receipt).group_by("message_id").len().filter(pl.col("len") > 1)
    if counts.is_empty():
        return raw
    df = raw.with_row_index("_row")
    ids = counts["message_id"].implode()
    receipts = (
        df.filter(receipt & pl.col("message_id").is_in(ids))
        .sort("message_id", "ts", "file_index", "line")
        .with_columns(pl.int_range(1, pl.len() + 1).over("message_id").alias("_delivery"))
    )
    # the previous delivery's end before this receipt (its task id's end in the file that received it)
    ends = (
        df.filter(celery & (pl.col("event") == "job_finished") & pl.col("execution_id").is_in(ids))
        .group_by("file_index", "execution_id")
        .agg(pl.col("ts").min().alias("_ended"))
    )
    receipts = (
        receipts.with_columns(pl.col("file_index").shift(1).over("message_id").alias("_prev_file"))
        .join(
            ends,
            left_on=["_prev_file", "message_id"],
            right_on=["file_index", "execution_id"],
            how="left",
        )
        .with_columns(
            pl.col("ts").shift(1).over("message_id").alias("_prev_ts"),
        )
        .with_columns(
            (
                (pl.col("_delivery") > 1) & (pl.col("_ended").is_null() | (pl.col("_ended") > pl.col("ts")))
            ).alias("_unfinished")
        )
    )
    named = pl.when(pl.col("_delivery") > 1).then(pl.format("{}#{}", "message_id", "_delivery"))
    receipts = receipts.with_columns(
        pl.coalesce(named, pl.col("message_id")).alias("execution_id"),
        pl.col("_delivery").cast(pl.String).alias("delivery_count"),
        pl.when(pl.col("_unfinished"))
        .then(pl.lit("visibility_timeout"))
        .otherwise(pl.col("trigger"))
        .alias("trigger"),
    )
    # the other lines of a delivered id: the last receipt of it before them in the same file
    others = (
        df.filter(~receipt & pl.col("dialect").is_not_null() & pl.col("execution_id").is_in(ids))
        .select("_row", "file_index", "line", "execution_id")
        .sort("line")
        .join_asof(
            receipts.select(
                "file_index",
                pl.col("message_id").alias("execution_id"),
                pl.col("line").alias("_at"),
                pl.coalesce(named, pl.col("message_id")).alias("_named"),
            ).sort("_at"),
            left_on="line",
            right_on="_at",
            by=["file_index", "execution_id"],
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("_named").is_not_null())
        .select("_row", pl.col("_named").alias("execution_id"))
    )
    updated = df.update(
        pl.concat(
            [receipts.select("_row", "execution_id", "delivery_count", "trigger"), others], how="diagonal"
        ),
        on="_row",
    )
    # the message's lease, for the ids whose lines name no lock of a lock library
    locked = df.filter(pl.col("dialect").is_not_null() & ~celery & pl.col("execution_id").is_in(ids))
    leased = receipts.filter(~pl.col("message_id").is_in(locked["execution_id"].implode()))
    if leased.is_empty():
        return updated.drop("_row")
    added = updated.join(leased.select("_row"), on="_row", how="semi").with_columns(
        pl.lit("lock_acquired").alias("event"),
        pl.lit(None, pl.String).alias("trigger"),
        *([pl.lit(-1, pl.Int64).alias("dup_record")] if "dup_record" in df.columns else []),
    )
    # each lease right after its receipt's own row (a stable sort by file and line keeps that order)
    return pl.concat([updated, added]).sort("file_index", "line", maintain_order=True).drop("_row")


DIALECT = Dialect(
    name=NAME,
    library="Celery (celery.app.trace, celery.worker.strategy)",
    sources=(
        "celery 5.7.0 celery/app/trace.py (LOG_RECEIVED, LOG_SUCCESS, LOG_FAILURE, LOG_RETRY)",
        "celery 5.7.0 celery/worker/strategy.py (task received)",
        "python-redis-lock 4.0.0 and 3.7.0 redis_lock/__init__.py (NotAcquired)",
    ),
    needles=("] received", "] succeeded in ", "] raised ", "] retry: "),
    rules=RULES,
    samples=SAMPLES,
    loggers=("celery.app.trace", "celery.worker.strategy"),
    advice=(
        "Celery logs no lock: its task lines join the lock library's lines by worker process. Log the "
        "lock's lines (python-redis-lock's `redis_lock` logger at DEBUG) so each task's lease can be "
        "measured."
    ),
    cannot_measure="which lock a task held, unless the lock library's lines are logged too",
    enable="celery worker --loglevel=INFO (the task lines); the lock library's logger at DEBUG",
    join=join,
)
