"""RQ's worker lines (python-rq, PyPI `rq`): a job's run on a worker, read as a lease on the job.

The lease is the job's entry in its queue's StartedJobRegistry (`rq:wip:QUEUE`, a sorted set scored by the
entry's expiry), added when a worker starts the job and kept alive by the worker's heartbeat while the
work-horse runs it; a worker that stops heartbeating (frozen, partitioned, killed) lets it lapse, and the
next registry cleanup (any worker's, at start-up and every maintenance interval) takes the job as
abandoned: it retries it when it has retries left (`Retry(max=N)`), else moves it to the FailedJobRegistry.
Nothing stops the first worker: woken, it finishes the job too.

Sources, rq 3.0.0 (installed from PyPI) and the rq repository's tags v1.16.2, v2.0 and v2.10:
- `rq/worker/base.py` `dequeue_job_and_maintain_ttl`: `'Worker %s: %s: %s (%s)'` (worker name, queue,
  `job.description`, job id), or `'Worker %s: %s: %s'` without the description (`log_job_description`
  off); 2.x and 1.x (`rq/worker.py`): `'%s: %s (%s)'` / `'%s: %s'`, no worker name (read only with a
  job id of RQ's making, a uuid4, and a description that ends in its call's `)`). Read as the job's
  `job_triggered`, `lock_acquired` and `job_started` on the pod (the job id is the job and the message
  id). 1.x's and 2.x's line without a description (`QUEUE: ID`) is not read: nothing in it is RQ's.
- `handle_job_success`: `'Worker %s: %s: %s (%s)'` with `'Job OK'` (3.0), `'%s: %s (%s)'` (1.x, 2.x):
  `job_finished` (ok) and `lock_released` (the run's registry entry is removed with the result). Each run
  has an entry of its own (`JOB_ID:EXECUTION_ID`, rq 2.0 on), so a release neither deletes nor proves
  anything about another worker's: `released` is left unknown.
- `rq/worker/worker_classes.py` `monitor_work_horse` (2.10, 3.0): `'Worker %s: job %s failed (%s)'` with
  `Work-horse terminated unexpectedly; waitpid returned N (signal S); `: `job_finished` (error) and
  `lock_released`. `'Work horse killed for job %s: retpid=%s, ret_val=%s'` (`handle_work_horse_killed`)
  comes after it: read, no event.
- `handle_exception`: `'Worker %s: job %s: exception raised while executing (%s)\\n%s'` (2.10, 3.0),
  `'[Job %s]: exception raised while executing (%s)\\n%s'` (1.x, 2.0): `job_finished` (error) and
  `lock_released`; reason `timeout` (`join`) when the traceback holds `rq/timeouts.py`'s `JobTimeoutException`
  message `Task exceeded maximum timeout value (N seconds)` (the same in 1.x to 3.0).
- `rq/registry.py` `StartedJobRegistry.cleanup`: `'%s cleanup: %s %s'` with `Moved to FailedJobRegistry,
  due to AbandonedJobError, at DATETIME` (2.3 to 3.0; 2.0: `cleanup: Moving job ID to FailedJobRegistry
  (due to AbandonedJobError)`; 1.16: no job id), and `rq/job.py` `Job.retry`: `'Job %s: enqueued for
  retry, %s remaining'` / `'Job %s: scheduled for retry at %s, %s remaining'` (the same line for a failed
  job's retry). Read, no event: the abandonment shows in the job's next start (below).

The next attempt (`join`): a start of a job id whose previous start, on any pod, logged no end (Job OK,
failed, exception) before it is the retry of an abandoned job: its trigger is `abandoned`. A start after a
previous run that ended in an error is a `retry`.

Cannot measure: the lease's length (`job_monitoring_interval + 60` seconds in RQ, never logged: pass
`--lease-ttl`), and the heartbeats (logged at DEBUG only, as the worker's `sent heartbeat` line): a lease
lasted at least its length past the start, at most until another worker started the job. RQ's CLI logs the
time of day without milliseconds by default (`--date-format %H:%M:%S`): its lines are read only with a date
(Python's default `asctime`, `2026-12-04 18:49:55,927`).
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from leaselog.reading.dialects import Dialect, Rule, Sample

NAME = "rq"

_ID = r"\((?P<job_id>[\w.:-]+)\)\Z"
_WORKER = r"(?:Worker \S+: )?"
# a job id as RQ makes it (`str(uuid4())`): what the old start line, with no worker name, is read with
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_ERROR = {"status": "error"}
_EXCEPTION = r"\AWorker \S+: job (?P<job_id>[\w.:-]+): exception raised while executing \("
_EXCEPTION_OLD = r"\A\[Job (?P<job_id>[\w.:-]+)\]: exception raised while executing \("

_RULES = (
    Rule(
        "lock_released",
        r"\AWorker \S+: job (?P<job_id>[\w.:-]+) failed \(Work-horse terminated unexpectedly; ",
        {**_ERROR, "reason": "work_horse_terminated"},
        versions="rq 2.10 to 3.0",
        also=("job_finished",),
    ),
    Rule(
        "lock_released",
        _EXCEPTION,
        {**_ERROR},
        versions="rq 2.10 to 3.0",
        also=("job_finished",),
    ),
    Rule(
        "lock_released",
        _EXCEPTION_OLD,
        {**_ERROR},
        versions="rq 1.x and 2.0",
        also=("job_finished",),
    ),
    Rule(
        "lock_released",
        r"\A" + _WORKER + r"[^\s:]+: Job OK " + _ID,
        {"status": "ok"},
        versions="rq 3.0 (Worker NAME: QUEUE: Job OK (ID)); 1.x and 2.x (QUEUE: Job OK (ID))",
        also=("job_finished",),
    ),
    Rule(
        "job_started",
        r"\AWorker \S+: [^\s:]+: .*\) " + _ID,
        versions="rq 3.0 (Worker NAME: QUEUE: DESCRIPTION (ID))",
        also=("job_triggered", "lock_acquired"),
    ),
    Rule(
        "job_started",
        r"\A[^\s:]+: .*\) \((?P<job_id>" + _UUID + r")\)\Z",
        versions="rq 1.x and 2.x (QUEUE: DESCRIPTION (ID)); read with RQ's own uuid4 job ids only",
        also=("job_triggered", "lock_acquired"),
    ),
    Rule(
        "job_started",
        r"\AWorker \S+: [^\s:]+: (?P<job_id>" + _UUID + r")\Z",
        versions="rq 3.0, log_job_description off",
        also=("job_triggered", "lock_acquired"),
    ),
)
# each rule's name: the event's `raw_event` is `<dialect>/<name>`
RULES = tuple(
    replace(r, name=n)
    for r, n in zip(
        _RULES,
        ("horse-terminated", "exception", "exception-old", "job-ok", "started", "started-old", "started-id"),
        strict=True,
    )
)

_JOB = "e9134cef-442a-4d4f-b789-ae4c1ef20290"
_AT = "2026-12-04 18:49:55,927 "
SAMPLES = (
    Sample(
        _AT + f"Worker pod-a: default: reports.render('2026-12') ({_JOB})",
        "job_started",
        {"job_id": _JOB},
    ),
    Sample(_AT + f"Worker pod-a: default: {_JOB}", "job_started", {"job_id": _JOB}),
    Sample(_AT + f"default: reports.render('2026-12') ({_JOB})", "job_started", {"job_id": _JOB}),
    Sample(
        _AT + f"Worker pod-a: default: Job OK ({_JOB})", "lock_released", {"job_id": _JOB, "status": "ok"}
    ),
    Sample(_AT + f"default: Job OK ({_JOB})", "lock_released", {"job_id": _JOB}),
    Sample(
        _AT + f"Worker pod-a: job {_JOB} failed (Work-horse terminated unexpectedly; waitpid returned 9 "
        "(signal 9); )",
        "lock_released",
        {"job_id": _JOB, "status": "error", "reason": "work_horse_terminated"},
    ),
    Sample(
        _AT + f"Worker pod-a: job {_JOB}: exception raised while executing (reports.render)",
        "lock_released",
        {"job_id": _JOB, "status": "error", "reason": "timeout"},
        after=(
            "Traceback (most recent call last):",
            '  File "/app/.venv/lib/python3.12/site-packages/rq/worker/base.py", line 1668, in perform_job',
            "    rv = job.perform()",
            "rq.timeouts.JobTimeoutException: Task exceeded maximum timeout value (180 seconds)",
        ),
    ),
    Sample(
        _AT + f"Worker pod-a: job {_JOB}: exception raised while executing (reports.render)",
        "lock_released",
        {"job_id": _JOB, "status": "error"},
        after=(
            "Traceback (most recent call last):",
            '  File "/app/reports.py", line 12, in render',
            "ValueError: bad month",
        ),
    ),
    Sample(
        _AT + f"[Job {_JOB}]: exception raised while executing (reports.render)",
        "lock_released",
        {"job_id": _JOB, "status": "error"},
        after=("Traceback (most recent call last):", "KeyError: 'month'"),
    ),
    Sample(
        _AT + f"StartedJobRegistry cleanup: {_JOB} Moved to FailedJobRegistry, due to AbandonedJobError, at "
        "2026-12-04 18:49:59.525361+00:00",
        None,
    ),
    Sample(_AT + f"Job {_JOB}: enqueued for retry, 0 remaining", None),
    Sample(_AT + f"Work horse killed for job {_JOB}: retpid=28460, ret_val=9", None),
    Sample(_AT + "Worker pod-a: started with PID 28452, version 3.0.0", None),
    Sample(_AT + "Worker pod-a: cleaning registries for queue: default", None),
    # not RQ's: another program's message of the same shape, without a job id of RQ's making
    Sample(_AT + "billing: charge(order=7) (E42)", None),
)

_STARTS = (f"{NAME}/started", f"{NAME}/started-old", f"{NAME}/started-id")
_EXCEPTIONS = (f"{NAME}/exception", f"{NAME}/exception-old")
# rq/timeouts.py's JobTimeoutException (1.x to 3.0)
_TIMEOUT = "Task exceeded maximum timeout value"


def join(raw: pl.DataFrame) -> pl.DataFrame:
    """The job id as each start's message id; a start after one of the same
    job that logged no end before it is the retry of an abandoned job (`trigger` `abandoned`), one after a
    run that ended in an error a `retry`."""
    if raw.is_empty() or "dialect" not in raw.columns:
        return raw
    mine = pl.col("dialect") == NAME
    if raw.filter(mine).is_empty():
        return raw
    df = raw.with_row_index("_row")
    rows = df.filter(mine)
    start = pl.col("raw_event").cast(pl.String).is_in(_STARTS) & (pl.col("event") == "job_started")
    end = pl.col("event") == "job_finished"
    # the starts and ends of each job, in time: the end that follows each start (the next line of that
    # job in the same file that is an end) and the previous start's end
    starts = rows.filter(start).sort("job_id", "ts", "file_index", "line")
    ends = (
        rows.filter(end)
        .select(
            "file_index", "job_id", pl.col("line").alias("_end_line"), pl.col("ts").alias("_end_ts"), "status"
        )
        .sort("_end_line")
    )
    starts = (
        starts.sort("line")
        .join_asof(
            ends,
            left_on="line",
            right_on="_end_line",
            by=["file_index", "job_id"],
            strategy="forward",
            check_sortedness=False,
        )
        .sort("job_id", "ts", "file_index", "line")
        .with_columns(
            pl.col("_end_ts").shift(1).over("job_id").alias("_prev_end"),
            pl.col("status_right").shift(1).over("job_id").alias("_prev_status"),
            (pl.int_range(pl.len()).over("job_id") > 0).alias("_again"),
        )
    )
    unfinished = pl.col("_again") & (pl.col("_prev_end").is_null() | (pl.col("_prev_end") > pl.col("ts")))
    starts = starts.with_columns(
        pl.when(unfinished)
        .then(pl.lit("abandoned"))
        .when(pl.col("_again") & (pl.col("_prev_status") == "error"))
        .then(pl.lit("retry"))
        .otherwise(pl.col("trigger"))
        .alias("trigger"),
    )
    # the same line's job_triggered and lock_acquired rows (added before it) take its trigger
    same_line = starts.select("file_index", "line", pl.col("trigger").alias("_trigger"))
    rows = rows.join(same_line, on=["file_index", "line"], how="left").with_columns(
        pl.when(pl.col("event") == "job_triggered")
        .then(pl.col("_trigger"))
        .otherwise(pl.col("trigger"))
        .alias("trigger"),
        pl.when(pl.col("event") == "job_triggered")
        .then(pl.col("job_id"))
        .otherwise(pl.col("message_id"))
        .alias("message_id"),
    )
    # a job killed by its own timeout: the work-horse's traceback (attached to the line) says so
    exception = pl.col("raw_event").cast(pl.String).is_in(_EXCEPTIONS)
    timed_out = pl.col("message").fill_null("").str.contains(_TIMEOUT, literal=True)
    rows = rows.with_columns(
        pl.when(exception & timed_out).then(pl.lit("timeout")).otherwise(pl.col("reason")).alias("reason")
    )
    cols = ["_row", "job_id", "trigger", "message_id", "reason"]
    return df.update(rows.select(cols), on="_row", include_nulls=True).sort("_row").drop("_row")


DIALECT = Dialect(
    name=NAME,
    library="RQ (python-rq: rq.worker, rq.job, rq.registry)",
    sources=(
        "rq 3.0.0 rq/worker/base.py (dequeue_job_and_maintain_ttl, handle_job_success, handle_exception)",
        "rq 3.0.0 rq/worker/worker_classes.py (monitor_work_horse)",
        "rq 3.0.0 rq/registry.py (StartedJobRegistry.cleanup), rq/job.py (Job.retry), rq/timeouts.py",
        "rq v1.16.2 and v2.0 rq/worker.py, v2.10 rq/worker/base.py (the wordings without the worker's name)",
    ),
    needles=(
        ") (",
        "Job OK (",
        "Work-horse terminated unexpectedly",
        "exception raised while executing (",
        "Worker ",
    ),
    rules=RULES,
    samples=SAMPLES,
    loggers=("rq.worker", "rq.job", "rq.registry"),
    hints=("*** Listening on ",),
    advice=(
        "RQ logs neither the job's registry lease nor its heartbeats: pass --lease-ttl with the worker's "
        "heartbeat TTL (job_monitoring_interval + 60 s). A worker that wakes after its job was abandoned "
        "runs it to the end: give jobs that must not run twice a lock or an idempotency key of their own."
    ),
    cannot_measure=(
        "the registry lease's length (job_monitoring_interval + 60 s: --lease-ttl) and its heartbeats "
        "(DEBUG); lines without a date (RQ's CLI default --date-format %H:%M:%S)"
    ),
    enable=(
        "logging.basicConfig(level=logging.INFO, format='%(asctime)s %(message)s') before Worker.work() "
        "(rq.worker, rq.job and rq.registry with a date and milliseconds)"
    ),
    silent_renewals=True,
    join=join,
)
