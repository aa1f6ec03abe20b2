"""A stop was requested and never honoured: the job ran on to its normal finish.

Anti-pattern: treating a cancel request as a stop. The worker logged `job_stop_requested` (its lease was
uncertain, or it hit its maximum runtime), and then the work simply went on to `job_finished` as if
nothing had been asked: no checkpoint looked at the request. The article's point: "a cancel request is
not the same as stopping". Reported whatever `--stop-slo` is, since a quick finish is still not a stop
(a stop that was honoured, only slowly, is `stop_delayed`; one with no later event, `stop_unconfirmed`).

Best practice: check the cancellation flag before each bounded unit of work and before completing, end
with `job_stopped` (or `job_finished` with a stopped/cancelled status) when the request was honoured,
and never commit a result after a stop was requested for lost ownership.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import STOP_STATUSES, details, evidence
from leaselog.checks.phrasing import durations, moments, text
from leaselog.timebase import ms_expr


def ignored(executions: pl.DataFrame) -> pl.DataFrame:
    """Executions with a stop request, no `job_stopped`, and a normal `job_finished` at or after the request."""
    return (
        executions.filter(
            pl.col("stop_requested_at").is_not_null()
            & pl.col("stopped_at").is_null()
            & (pl.col("finished_at") >= pl.col("stop_requested_at")).fill_null(False)
            & ~pl.col("finish_status").str.to_lowercase().is_in(STOP_STATUSES).fill_null(False)
        )
        .with_columns(ms_expr("stop_requested_at", "finished_at").alias("ran_on_ms"))
        .sort("job_id", "stop_requested_at")
    )


def detect(ctx: CheckContext) -> pl.DataFrame:
    # (the execution's own trigger, start and end are no trigger or span of the finding)
    return (
        ignored(ctx.executions)
        .rename({"trigger": "execution_trigger", "start": "execution_start", "end": "execution_end"})
        .with_columns(
            pl.concat_list("execution_id").alias("execution_ids"),
            pl.concat_list("pod").alias("pods"),
            pl.col("stop_requested_at").alias("start"),
            pl.col("finished_at").alias("end"),
            pl.col("ran_on_ms").alias("duration_ms"),
            evidence(
                (pl.col("stop_requested_file"), pl.col("stop_requested_line"), "stop requested"),
                (pl.col("finished_file"), pl.col("finished_line"), "finished anyway"),
            ).alias("evidence"),
            details(reason=pl.col("stop_reason"), finishStatus=pl.col("finish_status")).alias("details"),
        )
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    return rows.select(
        pl.format(
            "{} ({}) requested a stop of {} at {}{} and never honoured it: no job_stopped followed, the job ran on "
            "for {} to its normal finish at {} (job_finished{}). A cancel request is not the same as "
            "stopping: no checkpoint looked at the request.",
            text("execution_id"),
            text("pod"),
            text("job_id"),
            moments(rows, "stop_requested_at", "clock"),
            pl.when(pl.col("stop_reason").is_not_null())
            .then(pl.format(" ({})", pl.col("stop_reason")))
            .otherwise(pl.lit("")),
            durations(rows["ran_on_ms"]),
            moments(rows, "finished_at", "clock"),
            pl.when(pl.col("finish_status").is_not_null())
            .then(pl.format(", status {}", pl.col("finish_status")))
            .otherwise(pl.lit("")),
        ).alias("message")
    ).to_series()


CHECK = Check("LL206", "stop_ignored", "warning", detect, explain)
