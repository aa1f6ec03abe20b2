"""Attempts at a job that never ran: turned away by the lock, or triggered with no outcome.

Anti-pattern: reading every `job_triggered` as an execution. A scheduler catch-up, a retry or a duplicate
delivery that finds the lock held logs its trigger and a `lock_denied`, and does nothing: the lock did
its job, and the attempt has no execution interval (it cannot overlap, outlive a lease or crash). An
attempt that logs `job_triggered` and nothing after it (no acquire, no denial) is a different case: it
crashed before it reached the lock, or its log was cut short; it never ran either.

Best practice: keep the lock in front of every trigger path, and log the denial (`lock_denied`) so the
turned-away attempts can be told from crashes; when triggers are turned away often, look at why the
same job is triggered again while it runs (scheduler catch-up, eager retries, duplicate publishes).

One `info` finding per job, summarising its attempts that never ran (never one per attempt).
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import evidence_record, json_object, json_value, known_evidence
from leaselog.checks.phrasing import moments, text
from leaselog.reconstruct import NEVER_RAN

MAX_NAMED = 10  # attempts and holders named in a message (the finding lists every execution id)
MAX_EVIDENCE = (
    20  # lines cited (a poller turned away every second for an hour is one finding, not 3 600 lines)
)


def not_run(executions: pl.DataFrame) -> pl.DataFrame:
    """One row per attempt that never ran, with its moment and the execution holding the lock then."""
    # (lazy, as below: the filter then copies only the selected columns of the wide executions frame)
    x = (
        executions.lazy()
        .filter(pl.col("end_kind").is_in(NEVER_RAN))
        .select(
            "job_id",
            "timeline",
            "execution_id",
            "pod",
            "clock",
            "end_kind",
            "trigger",
            "first_seq",
            pl.coalesce("denied_at", "triggered_at", "first_seen").alias("at"),
            pl.coalesce("triggered_at", "first_seen").alias("from"),
            pl.coalesce("denied_line", "triggered_line", "first_line").alias("at_line"),
            pl.when(pl.col("denied_line").is_not_null())
            .then(pl.col("denied_file"))
            .when(pl.col("triggered_line").is_not_null())
            .then(pl.col("triggered_file"))
            .otherwise(pl.col("first_file"))
            .alias("at_file"),
        )
        .with_row_index("_row")
        .collect()
    )
    if x.height == 0:
        return x.with_columns(pl.lit(None, dtype=pl.String).alias("holder"))
    holders = (
        executions.lazy()
        .filter(pl.col("acquired_at").is_not_null())
        .select(
            "job_id",
            "timeline",
            pl.col("execution_id").alias("holder"),
            pl.col("acquired_at").alias("h_from"),
            pl.coalesce("valid_until", "end").alias("h_to"),
        )
        .collect()
    )
    held = (
        x.select("_row", "job_id", "timeline", "at")
        .join(holders, on=["job_id", "timeline"], how="inner")
        .filter(
            (pl.col("h_from") <= pl.col("at")) & (pl.col("h_to").is_null() | (pl.col("at") <= pl.col("h_to")))
        )
        .sort("_row", "h_from")
        .group_by("_row", maintain_order=True)
        .agg(pl.col("holder").last())
    )
    # attempts at the same moment are listed by id: their order in the input depends on how the logs were
    # shipped (one file per pod, or merged), and the finding must not
    return x.join(held, on="_row", how="left").drop("_row").sort("job_id", "timeline", "at", "execution_id")


def detect(ctx: CheckContext) -> pl.DataFrame:
    x = not_run(ctx.executions)
    denied = pl.col("end_kind") == "denied"
    # the triggers of the attempts turned away, counted per job, in the order of their names
    triggers = (
        x.filter(denied)
        .group_by("job_id", "timeline", pl.col("trigger").fill_null("unlogged"))
        .agg(pl.len().alias("count"))
        .sort("trigger")
        .group_by("job_id", "timeline", maintain_order=True)
        .agg(
            pl.struct("trigger", "count").alias("triggers"),
            (json_value(pl.col("trigger")) + ":" + pl.col("count").cast(pl.String))
            .str.join(",")
            .alias("entries"),
        )
    )
    record = evidence_record(
        pl.col("at_file"),
        pl.col("at_line"),
        pl.format(
            "{} {}",
            text("execution_id"),
            pl.when(denied)
            .then(pl.lit("turned away by the lock"))
            .otherwise(pl.lit("triggered, no outcome")),
        ),
    )
    groups = x.group_by("job_id", "timeline", maintain_order=True).agg(
        pl.col("execution_id").alias("execution_ids"),
        pl.col("pod").drop_nulls().unique(maintain_order=True).alias("pods"),
        pl.col("execution_id").filter(denied).alias("denied"),
        pl.col("execution_id").filter(pl.col("end_kind") == "no_outcome").alias("no_outcome"),
        # the executions holding the lock when attempts were turned away, first seen first
        pl.col("holder")
        .filter(denied & pl.col("holder").is_not_null() & (pl.col("holder") != ""))
        .unique(maintain_order=True)
        .alias("held_by"),
        record.head(MAX_EVIDENCE).alias("evidence"),
        pl.col("clock").first(),
        pl.col("from").min().alias("start"),
        pl.col("at").max().alias("end"),
    )
    groups = groups.join(triggers, on=["job_id", "timeline"], how="left", maintain_order="left")
    return groups.with_columns(
        known_evidence(pl.col("evidence")),
        pl.col("triggers").fill_null(
            pl.lit([], dtype=pl.List(pl.Struct({"trigger": pl.String, "count": pl.UInt32})))
        ),
        json_object(
            denied=pl.col("denied").list.len().cast(pl.String),
            noOutcome=pl.col("no_outcome").list.len().cast(pl.String),
            triggers=pl.concat_str(pl.lit("{"), pl.col("entries").fill_null(""), pl.lit("}")),
            heldBy=json_value(pl.col("held_by")),
        ).alias("details"),
    ).drop("entries")


def _names(ids: str) -> pl.Expr:
    """The first MAX_NAMED ids of a list column, and how many more."""
    n = pl.col(ids).list.len()
    return pl.concat_str(
        pl.col(ids).list.head(MAX_NAMED).list.join(", "),
        pl.when(n > MAX_NAMED).then(pl.format(" and {} more", n - MAX_NAMED)).otherwise(pl.lit("")),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    rows = rows.with_columns(
        moments(rows, "start", "clock").alias("start_when"),
        moments(rows, "end", "clock").alias("end_when"),
    )
    n_denied, n_quiet, n = (pl.col(c).list.len() for c in ("denied", "no_outcome", "execution_ids"))
    count = pl.element().struct.field("count")
    by = pl.col("triggers").list.eval(
        pl.when(count > 1)
        .then(pl.format("{} x{}", pl.element().struct.field("trigger"), count))
        .otherwise(pl.element().struct.field("trigger"))
    )
    turned_away = pl.when(n_denied > 0).then(
        pl.format(
            "{} {} turned away by the lock{} ({}; trigger: {}): the lock doing its job, not an execution",
            n_denied,
            pl.when(n_denied == 1).then(pl.lit("was")).otherwise(pl.lit("were")),
            pl.when(pl.col("held_by").list.len() > 0)
            .then(pl.format(" while {} held it", _names("held_by")))
            .otherwise(pl.lit("")),
            _names("denied"),
            by.list.join(", "),
        )
    )
    quiet = pl.when(n_quiet > 0).then(
        pl.format(
            "{} logged job_triggered and nothing after it ({}): no acquire and no denial, so it crashed before "
            "reaching the lock or its log was cut short; it never ran",
            n_quiet,
            _names("no_outcome"),
        )
    )
    span = (
        pl.when(pl.col("start").eq_missing(pl.col("end")))
        .then(pl.format("at {}", "start_when"))
        .otherwise(pl.format("between {} and {}", "start_when", "end_when"))
    )
    return rows.select(
        pl.format(
            "{} attempt{} at {} never ran ({}): {}. Attempts that never ran have no execution interval: they "
            "overlap nothing and outlive no lease.",
            n,
            pl.when(n > 1).then(pl.lit("s")).otherwise(pl.lit("")),
            text("job_id"),
            span,
            pl.concat_str(turned_away, quiet, separator="; ", ignore_nulls=True),
        ).alias("message")
    ).to_series()


CHECK = Check("LL402", "attempts_not_run", "info", detect, explain)
