"""Quartz Scheduler's JDBC job store in a cluster (`org.quartz`): its own lines, read as lease events.

Messages, from Quartz's source (github.com/quartz-scheduler/quartz, tag v2.3.2; the same in 2.3.0 and
2.3.1), in `quartz-core/src/main/java/org/quartz/`:

- `core/JobRunShell.java` (logger `org.quartz.core.JobRunShell`, on the worker thread that runs the job,
  `<schedulerName>_Worker-N`): DEBUG `Calling execute on job <group>.<name>` right before `execute()`;
  INFO `Job <key> threw a JobExecutionException: ` and ERROR `Job <key> threw an unhandled Exception: `
  (the job's end, with the exception under it). A job that returns normally gets no line of Quartz's.
- `impl/jdbcjobstore/JobStoreSupport.java` (logger `org.quartz.impl.jdbcjobstore.JobStoreTX`, or
  `JobStoreCMT`; thread `QuartzScheduler_<schedulerName>-<instanceId>_ClusterManager`), the cluster
  manager's `clusterRecover`: `ClusterManager: detected N failed or restarted instances.`, then per failed
  instance `ClusterManager: Scanning for instance "ID"'s failed in-progress jobs.` and, where non-zero
  (INFO; DEBUG when zero, `logWarnIfNonZero`), `ClusterManager: ......Freed N acquired trigger(s).`,
  `......Deleted N complete triggers(s).`, `......Scheduled N recoverable job(s) for recovery.`,
  `......Cleaned-up N other failed job(s).`; `findFailedInstances`: WARN `This scheduler instance (ID) is
  still active but was recovered by another instance in the cluster.  This may cause inconsistent
  behavior.`; `recoverMisfiredJobs`: INFO `Handling N trigger(s) that missed their scheduled fire-time.`
  The cluster manager's `ClusterManager: Check-in complete.` is DEBUG.

The lease is the instance's: every `clusterCheckinInterval` it writes its check-in time to
`QRTZ_SCHEDULER_STATE`, and another instance takes it for failed once that time plus
`max(clusterCheckinInterval, its own time since its last check-in) + 7500 ms` has passed
(`calcFailedIfAfter`). It then recovers the failed instance's in-progress jobs: a job that
`requestsRecovery` is fired again at once, from a trigger `RECOVERING_JOBS.recover_<ID>_<ms>`, on the
recovering instance; Quartz never stops the job still running on the instance it took for failed.

What it maps: `Calling execute on job K` -> lock_acquired then job_started (the job is the job key, `K`;
the lease's length is never logged: `--lease-ttl`); `Job K threw ...` -> job_finished (status error)
then lock_released; `Scheduled N recoverable job(s) for recovery` -> job_triggered with trigger
`recovery`, on the job the recovering instance starts next (it names no job); `This scheduler instance
(ID) is still active but was recovered by another instance` -> ownership_lost, on the job running on that
instance then. The application's own `job_started` / `job_finished` lines for the same job key in a file
Quartz's lines are in are the instance's claim too (`join`): an application start with no `Calling
execute` before it on its thread is also a lock_acquired, and an application finish is also a
lock_released (Quartz deletes its fired-trigger row when the job returns), unless the application (or
another lock library) logs that job's own lock in the file.

What it cannot measure: the check-ins (DEBUG, and an instance's, no job's: renewals go unlogged), the
lease's length (`clusterCheckinInterval` + 7.5 s at the least: pass `--lease-ttl`), a job's normal end
(Quartz logs none: the application's own line gives it), which job a recovery was for (the next start on
the recovering instance is taken), and the job start when `org.quartz.core.JobRunShell` is not at DEBUG.
"""

from __future__ import annotations

import polars as pl

from leaselog.reading.dialects import Dialect, Rule, Sample

NAME = "quartz"

_SHELL = "2026-12-04 18:18:55.511 [ReportScheduler_Worker-1] DEBUG org.quartz.core.JobRunShell - "
_CLUSTER = (
    "2026-12-04 18:19:04.467 [QuartzScheduler_ReportScheduler-B_ClusterManager] INFO "
    "org.quartz.impl.jdbcjobstore.JobStoreTX - ClusterManager: "
)
_START = _SHELL + "Calling execute on job DEFAULT.report"
_APP_START = (
    "2026-12-04 18:18:55.535 [ReportScheduler_Worker-1] INFO com.example.report.ReportJob - "
    "event=job_started jobId=DEFAULT.report"
)
_START_LABEL = f"{NAME}/start"
_RECOVERY_LABEL = f"{NAME}/recovery"
_ZOMBIE_LABEL = f"{NAME}/recovered-by-another"

DIALECT_RULES = (
    Rule(
        "job_started",
        r"^Calling execute on job (?P<job_id>\S+)\s*$",
        name="start",
        also=("lock_acquired",),
        versions="2.x (JobRunShell, DEBUG)",
    ),
    Rule(
        "lock_released",
        r"^Job (?P<job_id>\S+) threw a JobExecutionException: ",
        {"status": "error", "release_outcome": "unchecked"},
        name="threw",
        also=("job_finished",),
        versions="2.x (JobRunShell, INFO)",
    ),
    Rule(
        "lock_released",
        r"^Job (?P<job_id>\S+) threw an unhandled Exception: ",
        {"status": "error", "release_outcome": "unchecked"},
        name="threw-unhandled",
        also=("job_finished",),
        versions="2.x (JobRunShell, ERROR)",
    ),
    Rule(
        "job_triggered",
        r"^ClusterManager: \.*Scheduled [1-9]\d* recoverable job\(s\) for recovery\.",
        {"trigger": "recovery"},
        name="recovery",
        versions="2.x (JobStoreSupport.clusterRecover)",
    ),
    Rule(
        "ownership_lost",
        r"^This scheduler instance \((?P<owner>[^)]+)\) is still active but was recovered by another "
        r"instance in the cluster\.",
        {"reason": "recovered_by_another_instance"},
        name="recovered-by-another",
        versions="2.x (JobStoreSupport.findFailedInstances)",
    ),
)


def join(raw: pl.DataFrame) -> pl.DataFrame:
    """Per file (an instance's log): the job of each recovery line (the next start after it, on any
    thread: Quartz's `Calling execute` or the application's `job_started`) and of each "recovered by
    another instance" line (the job last started before it and not ended since); the application's own
    starts and finishes of the jobs Quartz's lines name there, as the instance's claim and its release."""
    if raw.is_empty() or "dialect" not in raw.columns:
        return raw
    mine = pl.col("dialect").fill_null("") == NAME
    if raw.select(mine.any()).item() is not True:
        return raw
    df = raw.with_row_index("_row")
    files = df.filter(mine).select("file_index").unique()
    rows = df.join(files, on="file_index", how="semi").sort("file_index", "line", "_row")
    label = pl.col("raw_event").cast(pl.String).fill_null("")
    start = (pl.col("event") == "job_started") & (~mine | (label == _START_LABEL))
    end = pl.col("event").is_in(["job_finished", "lock_released"])
    starts = rows.filter(start).select(
        "file_index",
        pl.col("line").alias("_at"),
        pl.col("job_id").alias("_next_job"),
        pl.col("thread").alias("_next_thread"),
    )
    # the recovery's job: the next start in the file
    recovery = (
        rows.filter(label == _RECOVERY_LABEL)
        .select("_row", "file_index", "line")
        .sort("line")
        .join_asof(
            starts.sort("_at"),
            left_on="line",
            right_on="_at",
            by="file_index",
            strategy="forward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .select("_row", pl.col("_next_job").alias("job_id"), pl.col("_next_thread").alias("thread"))
    )
    # the zombie's job: the last start in the file with no end of that job after it, before the line
    marks = rows.filter(start | (end & pl.col("job_id").is_not_null())).select(
        "file_index",
        pl.col("line").alias("_at"),
        pl.col("job_id").alias("_job"),
        pl.col("thread").alias("_thread"),
        start.alias("_is_start"),
    )
    zombie = (
        rows.filter(label == _ZOMBIE_LABEL)
        .select("_row", "file_index", "line")
        .sort("line")
        .join_asof(
            marks.sort("_at"),
            left_on="line",
            right_on="_at",
            by="file_index",
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("_is_start").fill_null(False))
        .select("_row", pl.col("_job").alias("job_id"), pl.col("_thread").alias("thread"))
    )
    named = pl.concat([recovery, zombie]).filter(pl.col("job_id").is_not_null())
    df = df.update(named, on="_row")
    return _claims(df, files).drop("_row")


def _claims(df: pl.DataFrame, files: pl.DataFrame) -> pl.DataFrame:
    """The application's start (with no `Calling execute` of the job on its thread just before it) and
    finish of a job Quartz's lines name in the same file: the instance's claim (right before the
    application's line) and its release (right after). Not for a job whose lock the application or
    another library logs in that file: that lock's lines say when it was held."""
    mine = pl.col("dialect").fill_null("") == NAME
    label = pl.col("raw_event").cast(pl.String).fill_null("")
    locked = df.filter(~mine & pl.col("event").is_in(["lock_acquired", "lock_released"]))
    named = (
        df.filter(mine & pl.col("job_id").is_not_null())
        .select("file_index", "job_id")
        .unique()
        .join(locked.select("file_index", "job_id"), on=["file_index", "job_id"], how="anti")
    )
    app = df.join(files, on="file_index", how="semi").join(named, on=["file_index", "job_id"], how="semi")
    app = app.filter(pl.col("dialect").is_null() & pl.col("event").is_in(["job_started", "job_finished"]))
    if app.is_empty():
        return df
    # the application's start right after Quartz's `Calling execute` of the job on its thread (no other
    # start or end between, in line order) is that start, already claimed
    thread = [pl.col("file_index"), pl.col("thread").fill_null("")]
    marks = (
        df.filter(pl.col("event").is_in(["job_started", "job_finished", "lock_released"]))
        .sort("file_index", "line", "_row")
        .with_columns(
            (label == _START_LABEL).shift(1).over(thread).fill_null(False).alias("_after_quartz"),
            pl.col("job_id").shift(1).over(thread).alias("_prev_job"),
        )
        .filter(pl.col("_after_quartz") & (pl.col("_prev_job") == pl.col("job_id")))
        .select("_row")
    )
    app_starts = app.filter(pl.col("event") == "job_started").join(marks, on="_row", how="anti")
    finishes = app.filter(pl.col("event") == "job_finished")
    claim = {"dialect": pl.lit(NAME), "raw_event": pl.lit(f"{NAME}/claim")}
    added = [
        app_starts.with_columns(pl.lit("lock_acquired").alias("event"), **claim),
        finishes.with_columns(
            pl.lit("lock_released").alias("event"),
            pl.lit("unchecked").alias("release_outcome"),
            **claim,
        )
        if "release_outcome" in df.columns
        else finishes.with_columns(pl.lit("lock_released").alias("event"), **claim),
    ]
    extra = pl.concat(added).with_columns(
        *(pl.col(c).cast(df.schema[c]) for c in ("dialect", "raw_event", "event") if c in df.columns),
        *([pl.lit(-3, pl.Int64).alias("dup_record")] if "dup_record" in df.columns else []),
    )
    if extra.is_empty():
        return df
    # a claim right before the application's start, a release right after its finish (a stable sort by
    # file and line keeps that order)
    extra = extra.select(df.columns)
    claims = extra.filter(pl.col("event") == "lock_acquired")
    releases = extra.filter(pl.col("event") == "lock_released")
    return pl.concat([claims, df, releases]).sort("file_index", "line", maintain_order=True)


DIALECT = Dialect(
    name=NAME,
    library="Quartz Scheduler, JDBC job store in a cluster (org.quartz)",
    sources=(
        "quartz-core/src/main/java/org/quartz/core/JobRunShell.java (v2.3.2; 2.3.0, 2.3.1 the same)",
        "quartz-core/src/main/java/org/quartz/impl/jdbcjobstore/JobStoreSupport.java (v2.3.2: "
        "clusterRecover, findFailedInstances, recoverMisfiredJobs)",
    ),
    needles=(
        "Calling execute on job ",
        " threw a JobExecutionException: ",
        " threw an unhandled Exception: ",
        " recoverable job(s) for recovery.",
        " is still active but was recovered by another instance",
    ),
    rules=DIALECT_RULES,
    samples=(
        Sample(_START, "job_started", {"job_id": "DEFAULT.report", "thread": "ReportScheduler_Worker-1"}),
        Sample(
            _SHELL.replace("DEBUG", "INFO") + "Job DEFAULT.report threw a JobExecutionException: ",
            "lock_released",
            {"job_id": "DEFAULT.report", "status": "error"},
            after=(
                "org.quartz.JobExecutionException: report template missing",
                "\tat ReportJob.execute(R.java:9)",
            ),
        ),
        Sample(
            _SHELL.replace("DEBUG", "ERROR") + "Job DEFAULT.report threw an unhandled Exception: ",
            "lock_released",
            {"job_id": "DEFAULT.report", "status": "error"},
            after=("java.lang.IllegalStateException: boom", "\tat ReportJob.execute(R.java:9)"),
        ),
        Sample(
            _CLUSTER + "......Scheduled 1 recoverable job(s) for recovery.",
            "job_triggered",
            {"job_id": "DEFAULT.report", "trigger": "recovery", "thread": "ReportScheduler_Worker-1"},
            before=(_CLUSTER + 'Scanning for instance "A"\'s failed in-progress jobs.',),
            after=(_START.replace("18:18:55.511", "18:19:04.535"),),
        ),
        Sample(
            "2026-12-04 18:19:04.517 [QuartzScheduler_ReportScheduler-A_ClusterManager] WARN "
            "org.quartz.impl.jdbcjobstore.JobStoreTX - This scheduler instance (A) is still active but was "
            "recovered by another instance in the cluster.  This may cause inconsistent behavior.",
            "ownership_lost",
            {"job_id": "DEFAULT.report", "owner": "A", "thread": "ReportScheduler_Worker-1"},
            before=(_START, _APP_START),
        ),
        Sample(
            '{"@timestamp":"2026-12-04T18:18:55.511Z","log.level":"DEBUG",'
            '"process.thread.name":"ReportScheduler_Worker-1","log.logger":"org.quartz.core.JobRunShell",'
            '"message":"Calling execute on job DEFAULT.report","ecs.version":"8.11"}',
            "job_started",
            {"job_id": "DEFAULT.report"},
        ),
        Sample(_CLUSTER + "detected 1 failed or restarted instances.", None),
        Sample(_CLUSTER + 'Scanning for instance "A"\'s failed in-progress jobs.', None),
        Sample(_CLUSTER + "......Freed 1 acquired trigger(s).", None),
        Sample(
            _CLUSTER.replace("ClusterManager] ", "MisfireHandler] ").replace("ClusterManager: ", "")
            + "Handling 1 trigger(s) that missed their scheduled fire-time.",
            None,
        ),
    ),
    loggers=("org.quartz.core.JobRunShell", "org.quartz.impl.jdbcjobstore"),
    advice=(
        "Quartz logs a job's start only at DEBUG (org.quartz.core.JobRunShell) and its normal end never: "
        "turn that logger to DEBUG and log the job's own start and end with its key "
        "(context.getJobDetail().getKey()). A job that requestsRecovery is run again by another instance "
        "once its instance misses check-ins for clusterCheckinInterval + 7.5 s (a GC pause, a frozen VM), "
        "and nothing stops the first run: make the job idempotent, or keep requestsRecovery off."
    ),
    hints=("org.quartz.", "QuartzScheduler_", "_ClusterManager", "Quartz Scheduler v."),
    enable='org.quartz.core.JobRunShell at DEBUG (logback: <logger name="org.quartz.core.JobRunShell" '
    'level="DEBUG"/>; slf4j-simple: -Dorg.slf4j.simpleLogger.log.org.quartz.core.JobRunShell=debug)',
    cannot_measure="the check-ins (DEBUG, the instance's: renewals go unlogged), the lease's length "
    "(clusterCheckinInterval + 7.5 s: pass --lease-ttl), a job's normal end (the application's own line), "
    "which job a recovery was for (the recovering instance's next start is taken)",
    join=join,
    silent_renewals=True,
)
