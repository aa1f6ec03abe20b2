"""A completion was accepted with a fencing token lower than one already accepted: a stale write.

Anti-pattern: attaching a fencing token without the destination enforcing it. A worker that paused,
lost its lease and resumed sent its write with the old token after the new owner's write with a higher
token had been accepted, and the destination took it: the stale result overwrote (or joined) the new one.

Best practice: fencing uses an increasing ownership sequence, and the destination atomically rejects a
token older than the highest it has accepted. A random UUID identifies an owner but supplies no order.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.certainty import certainty_columns
from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import completions, details, evidence, one_or_two
from leaselog.checks.phrasing import moments, text
from leaselog.timebase import ms_expr


def stale(ctx: CheckContext) -> pl.DataFrame:
    acc = (
        completions(ctx)
        .filter((pl.col("outcome") == "accepted") & pl.col("token").is_not_null())
        .sort("t", "seq")
    )
    acc = acc.with_columns(
        pl.col("token").cum_max().shift(1).over("job_id", "timeline").alias("max_before"),
    )
    s = acc.filter(pl.col("token") < pl.col("max_before"))
    # the accepted completion that set the higher token (the first one to reach it)
    hi = acc.select(
        "job_id",
        "timeline",
        pl.col("token").alias("max_before"),
        pl.col("execution_id").alias("hi_execution_id"),
        pl.col("pod").alias("hi_pod"),
        pl.col("t").alias("hi_t"),
        pl.col("file").alias("hi_file"),
        pl.col("line").alias("hi_line"),
        pl.col("clock").alias("hi_clock"),
    ).unique(["job_id", "timeline", "max_before"], keep="first", maintain_order=True)
    return s.join(hi, on=["job_id", "timeline", "max_before"], how="left").with_columns(
        ms_expr("hi_t", "t").alias("after_ms")
    )


def detect(ctx: CheckContext) -> pl.DataFrame:
    found = stale(ctx).select(
        "job_id",
        "execution_id",
        "pod",
        "clock",
        "t",
        "token",
        "file",
        "line",
        "max_before",
        "hi_execution_id",
        "hi_pod",
        "hi_t",
        "hi_file",
        "hi_line",
        "hi_clock",
        "after_ms",
    )
    return found.with_columns(
        # how far to trust the order of the two accepted writes, across pods' clocks
        *certainty_columns(pl.col("after_ms"), ("pod", "hi_pod"), ("clock", "hi_clock"), ctx.settings),
        pl.concat_list("execution_id", "hi_execution_id").alias("execution_ids"),
        one_or_two("pod", "hi_pod").alias("pods"),
        pl.col("hi_t").alias("start"),
        pl.col("t").alias("end"),
        pl.col("after_ms").alias("duration_ms"),
        evidence(
            (pl.col("hi_file"), pl.col("hi_line"), pl.format("token {} accepted", text("max_before"))),
            (pl.col("file"), pl.col("line"), pl.format("older token {} accepted", text("token"))),
        ).alias("evidence"),
        details(token=pl.col("token"), highestAcceptedBefore=pl.col("max_before")).alias("details"),
    ).with_columns(
        # what the logs cannot prove is never an error
        pl.when(pl.col("certainty") == "certain")
        .then(pl.lit(CHECK.severity))
        .otherwise(pl.lit("warning"))
        .alias("severity"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    rows = rows.with_columns(
        moments(rows, "t", "clock").alias("t_when"),
        moments(rows, "hi_t", "hi_clock").alias("hi_when"),
    )
    return rows.select(
        pl.format(
            "{} ({})'s completion of {} with fencing token {} was accepted at {}, although {} ({}) had already "
            "had token {} accepted at {}: a stale write from an owner that had lost its lease. The destination "
            "must atomically reject a token older than the highest it has accepted; attaching a number alone "
            "does nothing.{}",
            text("execution_id"),
            text("pod"),
            text("job_id"),
            text("token"),
            "t_when",
            text("hi_execution_id"),
            text("hi_pod"),
            text("max_before"),
            "hi_when",
            "caveat",
        ).alias("message")
    ).to_series()


CHECK = Check("LL502", "stale_write_accepted", "error", detect, explain)
