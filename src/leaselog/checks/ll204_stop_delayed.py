"""A stop was requested (or ownership lost) but the worker took longer than the stop target to stop.

Anti-pattern: cancellation is cooperative. A checkpoint can stop the next batch, but a worker that
checks rarely, or is stuck in a long unbounded call, keeps running for a long time after it was asked
to stop, and all that time it works without a valid lease.

Best practice: bounded work units with a cancellation check before each, bounded I/O timeouts, and a
stop target (`--stop-slo`, default 5s) measured from the request (or the ownership loss, when no stop
was requested but the worker did stop) to a logged `job_stopped`.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import STOP_STATUSES, details, evidence
from leaselog.checks.phrasing import durations, moments, text
from leaselog.durations import format_duration
from leaselog.facts.stops import stop_delays


def detect(ctx: CheckContext) -> pl.DataFrame:
    slo = ctx.settings.stop_slo_ms
    # an ownership loss with no stop request counts here only when the worker did stop in the end;
    # one that just kept working is ownership_loss_unhandled's finding, not a slow stop
    # a requested stop the job never honoured (it ran on to a normal finish) is stop_ignored's finding
    # (LL206), whatever its delay
    stopped = (pl.col("end_event") == "job_stopped") | pl.col("finish_status").str.to_lowercase().is_in(
        STOP_STATUSES
    ).fill_null(False)
    handled = ((pl.col("stop_from_kind") == "stop request") & ~(pl.col("confirmed") & ~stopped)) | (
        pl.col("confirmed") & (pl.col("end_event") == "job_stopped")
    )
    d = stop_delays(ctx).filter((pl.col("stop_delay_ms") > slo) & handled).sort("job_id", "stop_from")
    confirmed = pl.col("confirmed")
    # (the execution's own trigger, start and end are no trigger or span of the finding)
    return d.rename(
        {"trigger": "execution_trigger", "start": "execution_start", "end": "execution_end"}
    ).with_columns(
        pl.concat_list("execution_id").alias("execution_ids"),
        pl.concat_list("pod").alias("pods"),
        pl.col("stop_from").alias("start"),
        pl.col("stop_to").alias("end"),
        pl.col("stop_delay_ms").alias("duration_ms"),
        evidence(
            (pl.col("stop_from_file"), pl.col("stop_from_line"), pl.col("stop_from_kind")),
            (
                pl.col("stop_to_file"),
                pl.col("stop_to_line"),
                pl.when(confirmed).then(pl.lit("stopped")).otherwise(pl.lit("still working")),
            ),
        ).alias("evidence"),
        details(stopSloMs=pl.lit(slo), confirmed=confirmed, **{"from": pl.col("stop_from_kind")}).alias(
            "details"
        ),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    ck = "clock"
    confirmed, reason = pl.col("confirmed"), pl.col("stop_reason")
    why = (
        pl.when((pl.col("stop_from_kind") == "stop request") & reason.is_not_null() & (reason != ""))
        .then(pl.format(" ({})", reason))
        .otherwise(pl.lit(""))
    )
    begin = pl.format(
        "{} ({}) had a {}{} on {} at {}",
        text("execution_id"),
        text("pod"),
        text("stop_from_kind"),
        why,
        text("job_id"),
        moments(rows, "stop_from", ck),
    )
    stop_to = moments(rows, "stop_to", ck)
    how = (
        pl.when(confirmed & (pl.col("end_event") == "job_stopped"))
        .then(pl.format(" and confirmed it stopped at {}", stop_to))
        .when(confirmed)
        .then(
            pl.format(
                " and confirmed it stopped at {} (job_finished, status {})", stop_to, text("finish_status")
            )
        )
        .otherwise(pl.format("; no stop was ever confirmed, and it was still working at {}", stop_to))
    )
    return rows.select(
        pl.concat_str(
            begin,
            how,
            pl.format(
                ": {}{}, over the {} stop target. Cancellation is cooperative: the work between the request and "
                "the stop ran without a valid lease; check the distance between checkpoints.",
                pl.when(confirmed).then(pl.lit("")).otherwise(pl.lit("at least ")),
                durations(rows["stop_delay_ms"]),
                pl.lit(format_duration(ctx.settings.stop_slo_ms)),
            ),
        ).alias("message")
    ).to_series()


CHECK = Check("LL204", "stop_delayed", "warning", detect, explain)
