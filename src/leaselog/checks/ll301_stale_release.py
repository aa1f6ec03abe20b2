"""A release found someone else's lease (or none): the owner check refused to delete it.

Anti-pattern: the worker's lease had already expired, so its owner-checked release (`release_deleted_0`)
deleted nothing. The check did its job, protecting the new owner's lease from a late cleanup, but it is
proof that the worker finished its work after it had lost the lock.

Best practice: keep the owner-checked release (a plain GET then DEL would have deleted the new owner's
lock), and treat a stale release as a symptom: the work before it ran unprotected.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import events_where, evidence, one_or_two
from leaselog.checks.phrasing import moments, text


def detect(ctx: CheckContext) -> pl.DataFrame:
    rel = events_where(
        ctx,
        (pl.col("event") == "lock_released") & (pl.col("released") == False),  # noqa: E712
        ["job_id", "execution_id", "pod", "clock", "t", "raw_event", "file", "line", "seq"],
    )
    # only the leases of the jobs released this way matter (a few of the hundreds of thousands)
    leases = ctx.leases.filter(pl.col("job_id").is_in(rel["job_id"].implode()))
    holders = leases.select(
        "job_id",
        pl.col("execution_id").alias("holder"),
        pl.col("pod").alias("holder_pod"),
        pl.col("acquired_at").alias("holder_acquired"),
        pl.col("valid_until").alias("holder_until"),
        pl.col("acquired_file").alias("holder_file"),
        pl.col("acquired_line").alias("holder_line"),
    )
    own = leases.select("job_id", "execution_id", "expires_at", "acquired_at")
    rel = rel.join(own, on=["job_id", "execution_id"], how="left")
    cand = rel.join(holders, on="job_id", how="left").filter(
        pl.col("holder").is_null()
        | (
            (pl.col("holder") != pl.col("execution_id"))
            & (pl.col("holder_acquired") <= pl.col("t"))
            & (pl.col("holder_until").is_null() | (pl.col("holder_until") >= pl.col("t")))
        )
    )
    # keep releases that matched no holder too
    found = cand.group_by("seq", maintain_order=True).first()
    missing = rel.join(found.select("seq"), on="seq", how="anti").with_columns(
        pl.lit(None, dtype=pl.String).alias("holder")
    )
    rows = pl.concat([found, missing], how="diagonal_relaxed").sort("seq")
    held = pl.col("holder").is_not_null()
    return rows.with_columns(
        pl.when(held)
        .then(pl.concat_list("execution_id", "holder"))
        .otherwise(pl.concat_list("execution_id"))
        .alias("execution_ids"),
        pl.when(held).then(one_or_two("pod", "holder_pod")).otherwise(pl.concat_list("pod")).alias("pods"),
        pl.col("t").alias("start"),
        pl.col("t").alias("end"),
        evidence(
            (pl.col("file"), pl.col("line"), "release deleted nothing"),
            (pl.when(held).then(pl.col("holder_file")), pl.col("holder_line"), "current owner acquired"),
        ).alias("evidence"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    ck, raw = "clock", pl.col("raw_event")
    rows = rows.with_columns(
        moments(rows, "t", ck).alias("t_when"),
        moments(rows, "expires_at", ck).alias("expired_when"),
        moments(rows, "holder_acquired", ck).alias("holder_when"),
    )
    base = pl.format(
        "{} ({}) released {} at {} and deleted nothing{}",
        text("execution_id"),
        text("pod"),
        text("job_id"),
        "t_when",
        pl.when((raw != "") & (raw != "lock_released")).then(pl.format(" ({})", raw)).otherwise(pl.lit("")),
    )
    message = (
        pl.when(pl.col("holder").is_not_null())
        .then(
            pl.format(
                "{}: the key belonged to {} ({}), which acquired it at {}. The owner check protected {}'s "
                "lease; {}'s work before this release ran without the lock.",
                base,
                text("holder"),
                text("holder_pod"),
                "holder_when",
                text("holder"),
                text("execution_id"),
            )
        )
        # by the log the lease was still valid: the key vanished (failover, eviction, manual delete)
        .when((pl.col("expires_at") > pl.col("t")).fill_null(False))
        .then(
            pl.format(
                "{}, although by its log its lease was valid until {}: the key was gone or held by an owner "
                "not in these logs (a failover that lost it, an eviction, a manual delete). Whatever ran "
                "after that point ran without the lock.",
                base,
                "expired_when",
            )
        )
        .otherwise(
            pl.format(
                "{}: its lease had already expired{} and no other execution in these logs held the key at "
                "that moment. The work before this release ran without the lock.",
                base,
                pl.when(pl.col("expires_at").is_not_null())
                .then(pl.format(" at {}", "expired_when"))
                .otherwise(pl.lit("")),
            )
        )
    )
    return rows.select(message.alias("message")).to_series()


CHECK = Check("LL301", "stale_release", "warning", detect, explain)
