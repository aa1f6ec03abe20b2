"""A stop was requested, and no later event shows whether the worker stopped.

Anti-pattern: logging `job_stop_requested` and nothing after it. The article insists that a stop request
should have a later event showing whether the worker actually stopped and how long that took; without
it, nobody can tell a clean stop from a worker that kept going, or measure stopping delay at all.

Best practice: log `job_stopped` (or `job_finished` with its status) when the execution actually ends,
with the time since the request, even when the stop came from a cancellation deep in the work.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import details, evidence
from leaselog.checks.phrasing import moments, text


def detect(ctx: CheckContext) -> pl.DataFrame:
    x = ctx.executions.filter(
        pl.col("stop_requested_at").is_not_null()
        & (pl.col("ended_at").is_null() | (pl.col("ended_at") < pl.col("stop_requested_at")))
    ).sort("job_id", "stop_requested_at")
    # the last line is cited apart only when it is another line than the request
    apart = ~(
        pl.col("last_file").eq_missing(pl.col("stop_requested_file"))
        & pl.col("last_line").eq_missing(pl.col("stop_requested_line"))
    )
    # (the execution's own trigger, start and end are no trigger or span of the finding)
    return x.rename(
        {"trigger": "execution_trigger", "start": "execution_start", "end": "execution_end"}
    ).with_columns(
        pl.concat_list("execution_id").alias("execution_ids"),
        pl.concat_list("pod").alias("pods"),
        pl.col("stop_requested_at").alias("start"),
        pl.col("last_seen").alias("end"),
        (pl.col("last_seen") > pl.col("stop_requested_at")).fill_null(False).alias("seen_after"),
        evidence(
            (pl.col("stop_requested_file"), pl.col("stop_requested_line"), "stop requested"),
            (pl.col("last_file"), pl.when(apart).then(pl.col("last_line")), "last line, no stop confirmed"),
        ).alias("evidence"),
        details(reason=pl.col("stop_reason")).alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    reason = pl.col("stop_reason")
    return rows.select(
        pl.format(
            "{} ({}) requested a stop of {} at {}{}, but no later event shows whether the worker stopped or how "
            "long that took{}. A stop request needs a later job_stopped event so stopping delay can be measured.",
            text("execution_id"),
            text("pod"),
            text("job_id"),
            moments(rows, "stop_requested_at", "clock"),
            pl.when(reason.is_not_null() & (reason != ""))
            .then(pl.format(" ({})", reason))
            .otherwise(pl.lit("")),
            pl.when(pl.col("seen_after"))
            .then(pl.format("; its last line is at {}", moments(rows, "last_seen", "clock")))
            .otherwise(pl.lit("; the request is its last line")),
        ).alias("message")
    ).to_series()


CHECK = Check("LL205", "stop_unconfirmed", "warning", detect, explain)
