"""python-redis-lock (`redis_lock`, PyPI `python-redis-lock`): a Redis lock with an optional renewal thread.

Sources, read from the released wheels:
- 4.0.0 `redis_lock/__init__.py`: loggers `redis_lock.acquire`, `redis_lock.refresh.thread`,
  `redis_lock.refresh.start`, `redis_lock.refresh.shutdown`, `redis_lock.refresh.exit`,
  `redis_lock.release`; `Lock.acquire` logs `"Acquiring Lock(%r) ..."` (DEBUG), `"Failed to acquire
  Lock(%r)."` (WARNING, non-blocking only), `"Acquired Lock(%r)."` (INFO); `_start_lock_renewer`
  `"Starting renewal thread for Lock(%r). Refresh interval: %s seconds."`; `_lock_renewer`
  `"Refreshing Lock(%r)."` before each `extend()`; `_stop_lock_renewer` `"Signaling renewal thread for
  Lock(%r) to exit."` (only while the thread is alive); `release` `"Releasing Lock(%r)."` (DEBUG), then
  `NotAcquired("Lock(lock:NAME) is not acquired or it already expired.")` when the key is gone or
  another owner's.
- 3.7.0 `redis_lock/__init__.py` (the 3.x wording): `"Getting %r ..."`, `"Failed to get %r."`,
  `"Got lock for %r."`, `"Refreshing lock"` (no name), `"Starting thread to refresh lock every %s
  seconds"`, `"Signalling the lock refresher to stop"`, `"Releasing %r."`; `NotAcquired("Lock lock:NAME
  is not acquired or it already expired.")` from both `extend` and `release`.

`%r` of the lock's key is `'lock:NAME'` (Python's repr: single quotes, double quotes when the name holds
a single quote): the job is NAME.

What the lines cannot say on their own, and the join below adds:
- "Refreshing" is logged *before* the `extend()` it announces, and a failed extend raises in the
  renewal thread, which dies without a log line of the library's. In a Celery worker its traceback
  reaches the log all the same (Celery 5.7.0 redirects a pool process's stderr to its logger at WARNING,
  `worker_redirect_stdouts`, one record per write): the last piece, `Lock lock:NAME is not acquired or it
  already expired.` (4.0.1 `extend`'s NotAcquired), rejects the refresh before it on the same lock and
  worker process, whatever lines came between (the task's release can signal the thread while its
  extend is in flight); the line itself is read as `job_progress` (the process was alive). A refresh is confirmed by the renewal thread's next
  line (another refresh, or "Signaling renewal thread ... to exit", logged only while the thread is
  alive); a refresh followed by the release with no such line is a renewal that failed (the thread died);
  a refresh nothing confirms (the log ends after it: a crash) is read as a success, as any renewal line
  without an outcome; when the process died inside that extend's round trip, this is wrong.
- 3.x's renewal lines name no lock: they take the lock last acquired on the same thread (Celery's worker
  process; `Rule.job_from_thread`).
The lease length (`expire`) is never logged; with `auto_renewal` the renewal thread announces its
refresh interval, 2/3 of `expire` in whole seconds, and the join sets the acquisition's lease from it.
Without auto_renewal pass `--lease-ttl`.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from leaselog.reading.dialects import Dialect, Rule, Sample

NAME = "python-redis-lock"

# `%r` of the key `lock:NAME`
_KEY = r"""['"]lock:(?P<job_id>.*?)['"]"""
# the last line of the renewal thread's traceback when its extend() found the key gone, as a record of its
# own: a Celery worker logs its pool processes' stderr (one record per write), and Python prints an
# uncaught thread exception there (`threading.excepthook`)
_THREAD_DIED = r"\ALock lock:(?P<job_id>\S+) is not acquired or it already expired\.\Z"
_THREAD_DIED_RUST = r"^Lock lock:\S+ is not acquired or it already expired\.$"  # (polars' regex syntax)

_RULES = (
    Rule("lock_acquired", r"\AAcquired Lock\(" + _KEY + r"\)\.", versions="4.x"),
    Rule("lock_denied", r"\AFailed to acquire Lock\(" + _KEY + r"\)\.", versions="4.x"),
    Rule("job_started", r"\AStarting renewal thread for Lock\(" + _KEY + r"\)\.", versions="4.x"),
    Rule("lease_renewal", r"\ARefreshing Lock\(" + _KEY + r"\)\.", versions="4.x"),
    Rule("job_progress", r"\ASignaling renewal thread for Lock\(" + _KEY + r"\) to exit\.", versions="4.x"),
    Rule("lock_released", r"\AReleasing Lock\(" + _KEY + r"\)\.", versions="4.x"),
    Rule(
        "job_progress",
        _THREAD_DIED,
        versions="4.x extend (3.x extend and release), the renewal thread's uncaught NotAcquired as a log record",
    ),
    Rule("lock_acquired", r"\AGot lock for " + _KEY + r"\.\Z", versions="3.x"),
    Rule("lock_denied", r"\AFailed to get " + _KEY + r"\.\Z", versions="3.x"),
    Rule(
        "job_started",
        r"\AStarting thread to refresh lock every \S+ seconds",
        versions="3.x",
        job_from_thread=True,
    ),
    Rule("lease_renewal", r"\ARefreshing lock\Z", versions="3.x", job_from_thread=True),
    Rule("job_progress", r"\ASignalling the lock refresher to stop\Z", versions="3.x", job_from_thread=True),
    Rule("lock_released", r"\AReleasing " + _KEY + r"\.\Z", versions="3.x"),
)
# each rule's name: the event's `raw_event` is `<dialect>/<name>`
RULES = tuple(
    replace(r, name=n)
    for r, n in zip(
        _RULES,
        (
            "acquired",
            "failed-to-acquire",
            "renewal-thread-started",
            "refreshing",
            "signaling-renewal-thread-exit",
            "releasing",
            "renewal-thread-notacquired",
            "got-lock",
            "failed-to-get",
            "refresh-thread-started",
            "refreshing-lock",
            "signalling-refresher-stop",
            "releasing-3x",
        ),
        strict=True,
    )
)

SAMPLES = (
    # Celery's worker format (the library's loggers propagate to Celery's root handler)
    Sample(
        "[2026-12-01 10:00:00,120: INFO/ForkPoolWorker-1] Acquired Lock('lock:report-42').",
        "lock_acquired",
        {"job_id": "report-42"},
    ),
    Sample(
        "[2026-12-01 10:00:00,118: DEBUG/ForkPoolWorker-1] Acquiring Lock('lock:report-42') ...",
        None,
    ),
    Sample(
        "[2026-12-01 10:00:00,121: DEBUG/ForkPoolWorker-1] Starting renewal thread for "
        "Lock('lock:report-42'). Refresh interval: 6.666666666666667 seconds.",
        "job_started",
        {"job_id": "report-42"},
    ),
    Sample(
        "[2026-12-01 10:00:06,790: DEBUG/ForkPoolWorker-1] Refreshing Lock('lock:report-42').",
        "lease_renewal",
        {"job_id": "report-42", "renewal_outcome": "success"},
        # the renewal thread's next line confirms the refresh (a lone one has no outcome)
        after=("[2026-12-01 10:00:13,457: DEBUG/ForkPoolWorker-1] Refreshing Lock('lock:report-42').",),
    ),
    Sample(
        "[2026-12-01 10:00:09,001: DEBUG/ForkPoolWorker-1] Signaling renewal thread for "
        "Lock('lock:report-42') to exit.",
        "job_progress",
        {"job_id": "report-42"},
    ),
    Sample(
        "[2026-12-01 10:00:09,002: DEBUG/ForkPoolWorker-1] Releasing Lock('lock:report-42').",
        "lock_released",
        {"job_id": "report-42"},
    ),
    Sample(
        "[2026-12-01 10:00:01,000: WARNING/ForkPoolWorker-2] Failed to acquire Lock('lock:report-42').",
        "lock_denied",
        {"job_id": "report-42"},
    ),
    # a failed extend kills the renewal thread; a Celery worker (stderr redirected to its log at WARNING,
    # one record per write) prints the thread's traceback in pieces; its last piece, the exception's
    # message, says the refresh before it was rejected (the join puts the outcome on that refresh)
    Sample("[2026-12-01 10:00:45,343: WARNING/ForkPoolWorker-1] Thread-1 (_lock_renewer)", None),
    Sample(
        "[2026-12-01 10:00:45,345: WARNING/ForkPoolWorker-1] Lock lock:report-42 is not acquired or it "
        "already expired.",
        "job_progress",
        {"job_id": "report-42"},
    ),
    # the 3.x wording, in the same layout
    Sample(
        "[2026-12-01 10:00:00,120: INFO/ForkPoolWorker-1] Got lock for 'lock:report-42'.",
        "lock_acquired",
        {"job_id": "report-42"},
    ),
    Sample(
        "[2026-12-01 10:00:00,120: WARNING/ForkPoolWorker-2] Failed to get 'lock:report-42'.",
        "lock_denied",
        {"job_id": "report-42"},
    ),
    Sample(
        "[2026-12-01 10:00:06,790: DEBUG/ForkPoolWorker-1] Refreshing lock",
        "lease_renewal",
        {"job_id": "report-42", "renewal_outcome": "success"},
        before=("[2026-12-01 10:00:00,120: INFO/ForkPoolWorker-1] Got lock for 'lock:report-42'.",),
        after=("[2026-12-01 10:00:09,001: DEBUG/ForkPoolWorker-1] Signalling the lock refresher to stop",),
    ),
    Sample(
        "[2026-12-01 10:00:09,002: DEBUG/ForkPoolWorker-1] Releasing 'lock:report-42'.",
        "lock_released",
        {"job_id": "report-42"},
    ),
    Sample(
        "[2026-12-01 10:00:00,121: DEBUG/ForkPoolWorker-1] Starting thread to refresh lock every "
        "1.3333333333333333 seconds",
        "job_started",
        {"job_id": "report-42"},
        before=("[2026-12-01 10:00:00,120: INFO/ForkPoolWorker-1] Got lock for 'lock:report-42'.",),
    ),
    Sample(
        "[2026-12-01 10:00:09,001: DEBUG/ForkPoolWorker-1] Signalling the lock refresher to stop",
        "job_progress",
        {"job_id": "report-42"},
        before=("[2026-12-01 10:00:00,120: INFO/ForkPoolWorker-1] Got lock for 'lock:report-42'.",),
    ),
)


# the refresh interval a renewal thread announces (2/3 of `expire`, whole seconds)
_INTERVAL = r"(?:Refresh interval: |refresh lock every )([0-9.]+) seconds"


def join(raw: pl.DataFrame) -> pl.DataFrame:
    """Lease length from the refresh interval, renewal outcomes from the renewal thread's next line
    (module doc)."""
    if raw.is_empty() or "dialect" not in raw.columns:
        return raw
    mine = pl.col("dialect") == NAME
    df = raw.with_row_index("_row")
    ours = df.filter(mine).sort("file_index", "line")
    if ours.is_empty():
        return raw
    thread = pl.col("thread").fill_null("")
    ours = ours.with_columns(
        # expire = 3/2 of the interval, in whole seconds
        (pl.col("message").str.extract(_INTERVAL).cast(pl.Float64, strict=False).mul(1.5).round() * 1000)
        .cast(pl.Int64)
        .alias("_lease"),
        pl.col("ts")
        .str.slice(0, 23)
        .str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="ms")
        .alias("_t"),
    )
    ours = ours.with_columns(
        # the lease the acquisition right before an announced interval took
        pl.when((pl.col("event") == "lock_acquired") & pl.col("lease_ms").is_null())
        .then(
            pl.when(pl.col("event").shift(-1).over("file_index", thread) == "job_started").then(
                pl.col("_lease").shift(-1).over("file_index", thread).cast(pl.String)
            )
        )
        .otherwise(pl.col("lease_ms"))
        .alias("lease_ms"),
        pl.col("_lease").forward_fill().over("file_index", "job_id").alias("_lease"),
    )
    # the renewal thread died on a rejected extend (its traceback's last line): the refresh before it, on
    # the same lock and worker process, was rejected; the line itself says the process was alive then
    died = (
        (pl.col("event") == "job_progress") & pl.col("message").str.contains(_THREAD_DIED_RUST)
    ).fill_null(False)
    proc = ["file_index", "job_id", thread]
    ours = ours.with_columns(died.alias("_died")).with_columns(
        pl.when((pl.col("event") == "lease_renewal") & ~pl.col("_died"))
        .then(pl.col("line"))
        .forward_fill()
        .over(proc)
        .alias("_refresh_line")
    )
    rejected = ours.filter(pl.col("_died")).select("file_index", "job_id", "thread", pl.col("_refresh_line"))
    ours = ours.join(
        rejected.unique().with_columns(pl.lit(True).alias("_rejected")),
        left_on=["file_index", "job_id", "thread", "line"],
        right_on=["file_index", "job_id", "thread", "_refresh_line"],
        how="left",
        nulls_equal=True,
    ).with_columns(pl.col("_rejected").fill_null(False) & ~pl.col("_died"))
    # the renewal thread's own lines, per lock and file: refresh, "signaling ... to exit", release
    life = ours.filter(
        pl.col("event").is_in(["lease_renewal", "job_progress", "lock_released"]) & ~pl.col("_died")
    )
    by = ["file_index", "job_id"]
    after = pl.col("event").shift(-1).over(by)
    # the next refresh or release (a refresh racing a failed release: the "signaling" line can come
    # between a refresh and its failed extend)
    steps = life.filter(pl.col("event") != "job_progress").with_columns(
        (pl.col("event").shift(-1).over(by) == "lock_released").alias("_then_release"),
        pl.col("released").shift(-1).over(by).alias("_release_deleted"),
        (pl.col("_t").shift(-1).over(by) - pl.col("_t")).dt.total_milliseconds().alias("_gap"),
    )
    life = life.join(steps.select("_row", "_then_release", "_release_deleted", "_gap"), on="_row", how="left")
    # a release that found the key gone, less than a lease after this refresh: the refresh failed
    failed_before_release = (
        pl.col("_then_release").fill_null(False)
        & (pl.col("_release_deleted") == "false")
        & (pl.col("_gap") < pl.col("_lease"))
    )
    life = life.with_columns(
        pl.when(pl.col("event") != "lease_renewal")
        .then(pl.col("renewal_outcome"))
        .when(pl.col("_rejected"))
        .then(pl.lit("rejected"))
        .when(after == "lock_released")
        .then(pl.lit("error"))
        .when(failed_before_release)
        .then(pl.lit("error"))
        .when(
            pl.col("_then_release").fill_null(False)
            & (pl.col("_release_deleted") == "false")
            & pl.col("_gap").is_null().or_(pl.col("_lease").is_null())
        )
        .then(pl.col("renewal_outcome"))  # a failed release, and no lease to tell when: unknown
        .when(after.is_in(["lease_renewal", "job_progress"]))
        .then(pl.lit("success"))
        .otherwise(pl.col("renewal_outcome"))
        .alias("renewal_outcome")
    )
    # a refresh nothing confirms (the log ends after it) keeps no outcome: read as a success, as any
    # renewal line without one (the extend takes a round trip; a process dying inside it is rare)
    ours = ours.update(life.select("_row", "renewal_outcome"), on="_row", include_nulls=True)
    cols = ["_row", "renewal_outcome", "lease_ms"]
    return df.update(ours.select(cols), on="_row", include_nulls=True).sort("_row").drop("_row")


DIALECT = Dialect(
    name=NAME,
    library="python-redis-lock (redis_lock, loggers redis_lock.*)",
    sources=(
        "python-redis-lock 4.0.0 redis_lock/__init__.py (Lock.acquire, _lock_renewer, "
        "_start_lock_renewer, _stop_lock_renewer, release)",
        "python-redis-lock 3.7.0 redis_lock/__init__.py (the 3.x wording)",
        "python-redis-lock 4.0.1 redis_lock/__init__.py (Lock.extend: NotAcquired, as a renewal thread's "
        "traceback in a Celery 5.7.0 worker's log, celery/utils/log.py LoggingProxy)",
    ),
    needles=(
        "Lock('lock:",
        'Lock("lock:',
        "'lock:",
        '"lock:',
        "Refreshing lock",
        "Signalling the lock refresher",
        "Starting thread to refresh lock",
        "Lock lock:",
    ),
    rules=RULES,
    samples=SAMPLES,
    loggers=("redis_lock.acquire", "redis_lock.refresh", "redis_lock.release"),
    advice=(
        "python-redis-lock logs its acquisitions at INFO and its refreshes and releases only at DEBUG: set "
        "the `redis_lock` logger to DEBUG to see renewals and releases. It never logs the lease length "
        "(`expire`): pass --lease-ttl with the `expire` the code uses."
    ),
    cannot_measure=(
        "the lease length (`expire`) unless auto_renewal announces its refresh interval (2/3 of it); "
        "a refresh's outcome is known only from the renewal thread's next line"
    ),
    enable="logging.getLogger('redis_lock').setLevel(logging.DEBUG)",
    join=join,
)
