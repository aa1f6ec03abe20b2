"""BullMQ (npm `bullmq`) and Bull (npm `bull`): a job's lock, read from the application's event-handler lines.

BullMQ logs nothing itself: its workers emit events (`active`, `completed`, `failed`, `stalled`, `error`)
and the application's handlers log them (pino, winston, console). What is BullMQ's own is the wording of
its errors, and the handlers' wording where BullMQ's docs give one. Sources:

- bullmq 6.7.6 (npm tarball) `dist/cjs/classes/finished-errors.js` (`src/classes/finished-errors.ts`),
  `finishedErrors`: `Missing lock for job ${jobId}. ${command}` (ErrorCode.JobLockNotExist, -2),
  `Lock mismatch for job ${jobId}. Cmd ${command} from ${state}` (ErrorCode.JobLockMismatch, -6) and
  `Missing key for job ${jobId}. ${command}` (ErrorCode.JobNotExist, -1: the job was removed, as
  `removeOnComplete` does once another worker completed it), thrown when a worker's finishing script
  (`moveToFinished`, also `moveToDelayed`, `retryJob`, `moveToWaitingChildren`; `moveToFinished-14.lua`
  `removeLock` checks the lock before the job's state) finds the job's lock gone or held by another
  token. The worker emits them as `error` (`worker.js` `retryIfFailed`: once for `moveToCompleted`,
  once more for the `moveToFailed` its catch tries next; no `failed` event follows).
- bullmq 6.7.6 `dist/cjs/classes/lock-manager.js` `extendLocks`: `could not renew lock for job ${jobId}`
  (an `error` event, with `lockRenewalFailed`); successful renewals emit `locksRenewed`, which
  applications rarely log.
- bullmq 6.7.6 `dist/cjs/commands/moveStalledJobsToWait-9.lua`: a job in the active list whose
  `:lock` key is gone is moved back to wait (the worker that ran the check emits `stalled` with its id);
  past `maxStalledCount` its `defa` is set to `job stalled more than allowable limit`, the failure the
  next worker to take it fails it with (`worker.js` `getUnrecoverableErrorMessage`).
- bullmq 6.7.6 `dist/cjs/classes/worker.js`: defaults `lockDuration` 30000 ms, `lockRenewTime`
  `lockDuration / 2` (the lock manager's timer fires every `lockRenewTime / 2`), `stalledInterval` 30000
  ms, `maxStalledCount` 1; `emit('active', job, 'waiting')` after `moveToActive` (which sets the lock
  with `PX lockDuration`), `emit('completed', job, result, 'active')` and `emit('failed', job, err,
  'active')` after the finishing script succeeded (it deleted the lock, checking the token).
- BullMQ's docs (taskforcesh/bullmq `docs/gitbook/quick-start.md`, 6.2.0): the handlers
  `` `${job.id} has completed!` ``, `` `${job.id} has failed with ${err.message}` `` and
  `` `Job ${jobId} is now active; previous status was ${prev}` ``. The docs give no wording for
  `stalled`: `Job ${jobId} stalled` (or `has stalled`) is read.
- bullmq 5.81.5 `dist/cjs/classes/scripts.js` `finishedErrors` and `classes/lock-manager.js`: the same
  wordings (5.x kept them in `scripts.js`; 6.x moved them to `finished-errors.js`).
- bull 4.16.5 and 3.29.3 `lib/scripts.js` `finishedErrors`: `'Missing lock for job ' + jobId + ' ' +
  command` and `'Missing key for job ' + jobId + ' ' + command` (no period); 4.x only: the same `Lock
  mismatch` wording; `lib/queue.js`: `job stalled more than allowable limit`. Bull's lock extender stops
  in silence when an extension fails (4.x: `lock-extension-failed` only on a Redis error).

What it maps: `is now active` -> job_triggered (the job id its message id), lock_acquired (the lease
is the line's `lockDuration`, else `--lease-ttl`) and job_started; `has completed!` / `has failed with`
-> job_finished and lock_released (deleted: BullMQ emits them only once its script removed the lock);
`Missing lock` / `Lock mismatch` (and `Missing key` after a finishing command: the job removed) -> the
holder's finishing write refused: lock_released, nothing deleted (its lock had lapsed, the job stalled
and may be another worker's), and the second refusal BullMQ logs right after -> job_finished, status
`lock_lost`; `could not renew lock` -> a rejected renewal; `Job ID stalled` -> job_triggered, trigger
`stalled` (the job went back to wait: the next `active` of it is another delivery of the same job), and
the same worker's `active` of it right after is that delivery's (its own trigger dropped: `join`). The
job id is the job; the pod the line's (`hostname`: pino's default, the pod's name in Kubernetes);
BullMQ logs no execution id.

What it cannot measure: renewals (BullMQ renews every `lockRenewTime` in silence), so a lease lasted at
least `lockDuration` past its acquisition and at most until another worker took the job; the lock's
length unless the handler logs `lockDuration`; which worker's stalled check moved the job when that
worker's lines are not given.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from leaselog.reading.dialects import Dialect, Rule, Sample

NAME = "bullmq"

_ID = r"(?P<job_id>[^\s.;,]+(?:\.[^\s.;,]+)*?)"
_JOB = {"message_id": ("jobId", "job.id")}
_LEASE = {"lease_ms": ("lockDuration", "opts.lockDuration", "lock_duration"), **_JOB}

_RULES = (
    Rule(
        "job_started",
        r"\AJob " + _ID + r" is now active; previous status was \w+",
        keys=_LEASE,
        also=("job_triggered", "lock_acquired"),
        versions="the docs' wording (quick-start.md)",
    ),
    Rule(
        "lock_released",
        r"\A" + _ID + r" has completed!",
        {"released": "true", "status": "ok"},
        also=("job_finished",),
        versions="the docs' wording (quick-start.md)",
    ),
    Rule(
        "lock_released",
        r"\A" + _ID + r" has failed with job stalled more than allowable limit",
        {"released": "true", "status": "error", "reason": "stalled_limit"},
        also=("job_finished",),
        versions="bullmq 5.x-6.x; bull 3.x-4.x",
    ),
    Rule(
        "lock_released",
        r"\A" + _ID + r" has failed with ",
        {"released": "true", "status": "error"},
        also=("job_finished",),
        versions="the docs' wording (quick-start.md)",
    ),
    Rule(
        "job_triggered",
        r"\AJob " + _ID + r" (?:has )?stalled\b",
        {"trigger": "stalled"},
        keys=_JOB,
    ),
    Rule(
        "lock_released",
        r"Lock mismatch for job " + _ID + r"\. Cmd \w+ from \w+",
        {"released": "false", "reason": "lock_mismatch"},
        versions="bullmq 5.x-6.x; bull 4.x",
    ),
    Rule(
        "lock_released",
        r"Missing lock for job " + _ID + r"\.? \w+",
        {"released": "false", "reason": "missing_lock"},
        versions="bullmq 5.x-6.x (`. CMD`); bull 3.x-4.x (` CMD`)",
    ),
    Rule(
        "lock_released",
        r"Missing key for job "
        + _ID
        + r"\.? (?:moveToFinished|moveToDelayed|retryJob|moveToWaitingChildren)\b",
        {"released": "false", "reason": "missing_key"},
        versions="bullmq 5.x-6.x (`. CMD`); bull 3.x-4.x (` CMD`)",
    ),
    Rule(
        "lease_renewal",
        r"could not renew lock for job " + _ID + r"\s*\Z",
        {"renewal_outcome": "rejected"},
        versions="bullmq 5.x-6.x (lock-manager)",
    ),
)
RULES = tuple(
    replace(r, name=n)
    for r, n in zip(
        _RULES,
        (
            "active",
            "completed",
            "failed-stalled-limit",
            "failed",
            "stalled",
            "lock-mismatch",
            "missing-lock",
            "missing-key",
            "could-not-renew",
        ),
        strict=True,
    )
)


def _pino(level: int, msg: str, extra: str = "", pod: str = "report-worker-7d9f-abcde") -> str:
    return f'{{"level":{level},"time":1796408323186,"pid":1,"hostname":"{pod}",{extra}"msg":"{msg}"}}'


_ERR = '"err":{"type":"Error","message":"%s","stack":"Error: %s\\n    at finishedErrors"},'

SAMPLES = (
    Sample(
        _pino(
            30,
            "Job 1 is now active; previous status was waiting",
            '"jobId":"1","queue":"reports","lockDuration":2000,',
        ),
        "job_started",
        {"job_id": "1", "lease_ms": "2000", "message_id": "1", "pod": "report-worker-7d9f-abcde"},
    ),
    Sample(
        _pino(30, "1 has completed!", '"jobId":"1","queue":"reports",'),
        "lock_released",
        {"job_id": "1", "released": "true", "status": "ok"},
    ),
    Sample(
        _pino(40, "1 has failed with boom", '"jobId":"1",'),
        "lock_released",
        {"job_id": "1", "released": "true", "status": "error"},
    ),
    Sample(
        _pino(40, "7 has failed with job stalled more than allowable limit", '"jobId":"7",'),
        "lock_released",
        {"job_id": "7", "status": "error", "reason": "stalled_limit"},
    ),
    Sample(
        _pino(40, "Job 1 stalled", '"jobId":"1","queue":"reports","prev":"active",'),
        "job_triggered",
        {"job_id": "1", "trigger": "stalled", "message_id": "1"},
    ),
    Sample(
        _pino(
            50,
            "Lock mismatch for job 1. Cmd moveToFinished from active",
            _ERR % (("Lock mismatch for job 1. Cmd moveToFinished from active",) * 2),
        ),
        "lock_released",
        {"job_id": "1", "released": "false", "reason": "lock_mismatch"},
    ),
    Sample(
        _pino(
            50,
            "Missing lock for job 1. moveToFinished",
            _ERR % (("Missing lock for job 1. moveToFinished",) * 2),
        ),
        "lock_released",
        {"job_id": "1", "released": "false", "reason": "missing_lock"},
    ),
    Sample(
        '{"level":"error","message":"Missing lock for job report:42 moveToFinished",'
        '"timestamp":"2026-12-04T18:30:00.120Z","service":"reports","hostname":"worker-1"}',
        "lock_released",
        {"job_id": "report:42", "released": "false", "reason": "missing_lock"},
    ),
    Sample(
        _pino(
            50,
            "Missing key for job 1. moveToFinished",
            _ERR % (("Missing key for job 1. moveToFinished",) * 2),
        ),
        "lock_released",
        {"job_id": "1", "released": "false", "reason": "missing_key"},
    ),
    Sample(_pino(50, "Missing key for job 1. isFinished"), None),
    Sample(
        _pino(50, "could not renew lock for job 1", _ERR % (("could not renew lock for job 1",) * 2)),
        "lease_renewal",
        {"job_id": "1", "renewal_outcome": "rejected"},
    ),
    Sample(_pino(40, "Job 1 is not in the active state. moveToFinished"), None),
)

_ACTIVE, _STALLED = f"{NAME}/active", f"{NAME}/stalled"
_REFUSED = (f"{NAME}/lock-mismatch", f"{NAME}/missing-lock", f"{NAME}/missing-key")


def join(raw: pl.DataFrame) -> pl.DataFrame:
    """Two facts that span a job's lines in one file (a worker's), in line order:
    - a worker that logs `stalled` and then takes the job (the same job's next line in the file is its
      `active`) triggered that delivery: the `active` line's own trigger says only that the worker
      was alive then (`job_progress`), so the stall is the delivery's one trigger;
    - BullMQ refuses a finishing write twice in a row (`moveToCompleted`, then the `moveToFailed` its
      catch tries next): the first is the refused release, the second the worker giving the job up
      (`job_finished`, status `lock_lost`)."""
    if raw.is_empty() or "dialect" not in raw.columns:
        return raw
    mine = pl.col("dialect") == NAME
    if not raw.select(mine.any()).item():
        return raw
    df = raw.with_row_index("_row")
    rows = df.filter(mine & pl.col("job_id").is_not_null()).sort("file_index", "line", maintain_order=True)
    label = pl.col("raw_event").cast(pl.String)
    by_job = [pl.col("file_index"), pl.col("job_id")]
    # the job's previous line in the file (another line: a line's own events share its number)
    lines = (
        rows.group_by("file_index", "job_id", "line", maintain_order=True)
        .agg(label.first().alias("_label"))
        .with_columns(pl.col("_label").shift(1).over(by_job).alias("_prev_label"))
        .select("file_index", "job_id", "line", "_prev_label")
    )
    rows = rows.join(lines, on=["file_index", "job_id", "line"], how="left")
    taken_after_stall = (
        (label == _ACTIVE) & (pl.col("event") == "job_triggered") & (pl.col("_prev_label") == _STALLED)
    )
    refused_again = label.is_in(_REFUSED) & pl.col("_prev_label").is_in(_REFUSED)
    changed = rows.filter(taken_after_stall | refused_again).select(
        "_row",
        pl.when(refused_again).then(pl.lit("job_finished")).otherwise(pl.lit("job_progress")).alias("event"),
        # (not `error`: the job did not fail, its lock was gone; the next delivery is no retry of it)
        pl.when(refused_again).then(pl.lit("lock_lost")).otherwise(pl.col("status")).alias("status"),
        pl.when(refused_again).then(pl.lit(None, pl.String)).otherwise(pl.col("released")).alias("released"),
    )
    # a job id named only in the message is its message id too (a delivery of the job)
    named = rows.filter(pl.col("message_id").is_null() & (pl.col("event") == "job_triggered")).select(
        "_row", pl.col("job_id").alias("message_id")
    )
    if changed.is_empty() and named.is_empty():
        return raw
    out = df.update(changed, on="_row", include_nulls=True) if not changed.is_empty() else df
    out = out.update(named, on="_row") if not named.is_empty() else out
    return out.sort("_row").drop("_row")


DIALECT = Dialect(
    name=NAME,
    library="BullMQ and Bull (npm bullmq, bull): the application's worker event lines",
    sources=(
        "bullmq 6.7.6 dist/cjs/classes/finished-errors.js (finishedErrors: -2 Missing lock, -6 Lock mismatch)",
        "bullmq 6.7.6 dist/cjs/classes/lock-manager.js (extendLocks: could not renew lock for job)",
        "bullmq 6.7.6 dist/cjs/commands/moveStalledJobsToWait-9.lua (stalled; job stalled more than "
        "allowable limit)",
        "bullmq 6.7.6 dist/cjs/classes/worker.js (events; lockDuration, lockRenewTime, stalledInterval)",
        "taskforcesh/bullmq docs/gitbook/quick-start.md 6.2.0 (the handlers' wording)",
        "bullmq 5.81.5 dist/cjs/classes/scripts.js (finishedErrors), dist/cjs/classes/lock-manager.js",
        "bull 4.16.5 and 3.29.3 lib/scripts.js (finishedErrors), lib/queue.js",
    ),
    needles=(
        " is now active; previous status was ",
        " has completed!",
        " has failed with ",
        " stalled",
        "Lock mismatch for job ",
        "Missing lock for job ",
        "Missing key for job ",
        "could not renew lock for job ",
    ),
    rules=RULES,
    samples=SAMPLES,
    loggers=("bullmq",),
    advice=(
        "BullMQ renews its locks in silence and logs nothing itself: log the worker's `active` event with "
        "`lockDuration`, `completed`, `failed`, `stalled` and `error` (the error itself: its message is "
        "BullMQ's), and keep CPU-bound work off the event loop (a sandboxed processor or a worker thread) "
        "so the lock manager can renew."
    ),
    hints=("bullmq", "BullMQ", "moveToFinished", "lockDuration"),
    enable=(
        "worker.on('active' | 'completed' | 'failed' | 'stalled' | 'error', ...) handlers that log the job "
        "id, with `lockDuration` on the active line"
    ),
    cannot_measure=(
        "renewals (silent: a lease lasted at least lockDuration past its acquisition, at most until "
        "another worker took the job), the lock's length unless `lockDuration` is logged"
    ),
    join=join,
    silent_renewals=True,
)
