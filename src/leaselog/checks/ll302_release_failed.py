"""A release errored or timed out: the lease may sit in Redis until it expires.

Anti-pattern: cleanup that can fail silently, or whose exception hides the job's own outcome. Unlike a
stale release (the owner check refused to delete someone else's lease), a failed release says nothing
about ownership: the release did not happen, or its outcome is unknown, so the key stays held until
its TTL runs out and the next owner waits that long.

Best practice: attempt an owner-checked release with a bounded timeout in `finally`, record a cleanup
failure separately without hiding the original job outcome, and keep the TTL short enough that a
failed release delays the next owner only briefly.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import details, events_where, evidence
from leaselog.checks.phrasing import durations, moments, text
from leaselog.timebase import ms_expr

# (`unchecked`: a release that deleted the key by name, with no owner check: ShedLock's unlock)
_OK = ["success", "ok", "deleted", "released", "true", "1", "unchecked"]


def detect(ctx: CheckContext) -> pl.DataFrame:
    rel = events_where(
        ctx,
        (pl.col("event") == "lock_released")
        & pl.col("release_outcome").is_not_null()
        & ~pl.col("release_outcome").is_in(_OK),
        ["job_id", "execution_id", "pod", "clock", "t", "release_outcome", "file", "line", "seq"],
    )
    rel = (
        rel.join(
            ctx.executions.select("job_id", "execution_id", "expires_at"),
            on=["job_id", "execution_id"],
            how="left",
        )
        .with_columns(ms_expr("t", "expires_at").alias("held_ms"))
        .sort("seq")
    )
    # the lease may keep the key until it expires (when it had not expired yet)
    held = (pl.col("held_ms") > 0).fill_null(False)
    outcome = pl.col("release_outcome")
    timed_out = outcome.is_in(["timeout", "timed_out"])
    return rel.with_columns(
        held.alias("held"),
        timed_out.alias("timed_out"),
        pl.concat_list("execution_id").alias("execution_ids"),
        pl.concat_list("pod").alias("pods"),
        pl.col("t").alias("start"),
        pl.when(held).then(pl.col("expires_at")).otherwise(pl.col("t")).alias("end"),
        pl.when(held).then(pl.col("held_ms")).alias("duration_ms"),
        evidence(
            (
                pl.col("file"),
                pl.col("line"),
                pl.when(timed_out)
                .then(pl.lit("release timed out"))
                .otherwise(pl.format("release failed ({})", outcome)),
            )
        ).alias("evidence"),
        details(outcome=outcome).alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    rows = rows.with_columns(
        moments(rows, "t", "clock").alias("t_when"),
        moments(rows, "expires_at", "clock").alias("expires_when"),
        durations(rows["held_ms"]).alias("held_text"),
    )
    verb = (
        pl.when("timed_out")
        .then(pl.lit("timed out"))
        .otherwise(pl.format("failed ({})", text("release_outcome")))
    )
    return rows.select(
        pl.format(
            "{} ({}) tried to release {} at {} and the release {}{}. Unlike a stale release, nothing here proves "
            "the key was someone else's. Record the cleanup failure separately without hiding the job's own "
            "outcome.",
            text("execution_id"),
            text("pod"),
            text("job_id"),
            "t_when",
            verb,
            pl.when("held")
            .then(
                pl.format(
                    ": its lease may stay in Redis until it expires at {}, keeping the next owner out for up to {}",
                    "expires_when",
                    "held_text",
                )
            )
            .otherwise(pl.lit(": whether the key was deleted is unknown")),
        ).alias("message")
    ).to_series()


CHECK = Check("LL302", "release_failed", "warning", detect, explain)
