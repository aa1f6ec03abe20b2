"""A stream redelivery as an ordering fact: the claim came at least the entry's idle time after its previous
owner last kept it.

A broker hands a pending (delivered, unacknowledged) entry to another consumer only once nobody has
delivered, claimed or reset it for a while: Redis's `XAUTOCLAIM`/`XCLAIM` with `min-idle-time`, a visibility
timeout. A redelivered message's line with `idleMs` says how long at least (the broker counts whole
milliseconds of its own clock). The claim came after the previous owner's last reset of the entry by that
much, and the claimer's line after the claim.

Which line of the previous owner came before one of its resets: not its receiving line, which comes after
the delivery (a pause in between could push it past the claim). A renewal line with `entryKept` says the
execution reset the entry's idle time since its previous lease line (its acquisition or its previous
renewal) while the entry was still its own delivery: no claim had taken it since, so the claim that
redelivered it came later. That previous lease line came before the reset, so at least `idleMs` before the
claim. The previous owner is an execution triggered by the same message (job, topic, message id) with a
smaller delivery count; each execution's last such line is taken (the tightest).

`redelivered(ctx)` gives these facts as `leaselog.checks.anchors` spells them (`first_*` the previous
owner's lease line, `then_*` the claimer's line), with `least_ms` (idleMs): the clocks contradict the fact
where `then_at - first_at` is below it.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.phrasing import durations

_LEASE_LINES = ["lock_acquired", "lease_renewal"]


def _kept(ctx: CheckContext) -> pl.DataFrame:
    """Per execution, the lease line before its last renewal line with `entryKept`: the one logged before it
    (`seq`: the order the lines happened, a file sorted by time read in its write order), in the same file,
    and where both lines carry `elapsedMs`, with the smaller one (the order its process saw)."""
    if not ctx.events.select(pl.col("entry_kept").fill_null(False).any()).item():
        return pl.DataFrame()
    prev = ["pod", "clock", "t", "file", "line", "event", "elapsed_ms"]
    return (
        ctx.events.lazy()
        .filter(pl.col("event").is_in(_LEASE_LINES) & pl.col("execution_id").is_not_null())
        .select("job_id", "execution_id", "seq", "entry_kept", *prev)
        .sort("job_id", "execution_id", "seq")
        .with_columns(pl.col(c).shift(1).over("job_id", "execution_id").alias(f"p_{c}") for c in prev)
        .filter(
            pl.col("entry_kept").fill_null(False)
            & (pl.col("p_file") == pl.col("file"))
            & (pl.col("p_elapsed_ms") < pl.col("elapsed_ms")).fill_null(True)
            & (pl.col("p_clock") == "wall")
            & pl.col("p_pod").is_not_null()
            & pl.col("p_t").is_not_null()
        )
        .group_by("job_id", "execution_id", maintain_order=True)
        .last()
        .select(
            "job_id",
            pl.col("execution_id").alias("first_id"),
            pl.col("p_pod").alias("first_pod"),
            pl.col("p_t").alias("first_at"),
            pl.col("p_file").alias("first_file"),
            pl.col("p_line").alias("first_line"),
            pl.col("p_event").cast(pl.String).alias("first_event"),
        )
        .collect()
    )


def redelivered(ctx: CheckContext) -> pl.DataFrame:
    """`redelivered` facts: the previous owner's lease line before its last reset of the entry (`first_*`),
    then the claimer's line saying the entry was idle at least `least_ms` when claimed (`then_*`)."""
    kept = _kept(ctx)
    if not kept.height:
        return pl.DataFrame()
    claims = (
        ctx.events.lazy()
        .filter(
            (pl.col("event") == "job_triggered")
            & pl.col("idle_ms").is_not_null()
            & pl.col("message_id").is_not_null()
            & pl.col("delivery_count").is_not_null()
            & (pl.col("clock") == "wall")
            & pl.col("pod").is_not_null()
            & pl.col("t").is_not_null()
        )
        .select(
            "job_id",
            "message_id",
            pl.col("topic").cast(pl.String).alias("then_topic"),
            pl.col("delivery_count").alias("then_count"),
            pl.col("execution_id").alias("then_id"),
            pl.col("pod").alias("then_pod"),
            pl.col("t").alias("then_at"),
            pl.col("file").alias("then_file"),
            pl.col("line").alias("then_line"),
            pl.col("idle_ms").alias("least_ms"),
        )
        .collect()
    )
    if not claims.height:
        return pl.DataFrame()
    owners = kept.join(
        ctx.executions.select(
            "job_id",
            pl.col("execution_id").alias("first_id"),
            pl.col("topic").cast(pl.String).alias("first_topic"),
            "message_id",
            pl.col("delivery_count").alias("first_count"),
        ).filter(pl.col("message_id").is_not_null() & pl.col("first_count").is_not_null()),
        on=["job_id", "first_id"],
        how="inner",
    )
    f = claims.join(owners, on=["job_id", "message_id"], how="inner").filter(
        (pl.col("first_count") < pl.col("then_count"))
        & pl.col("first_id").ne_missing(pl.col("then_id"))
        & (
            pl.col("first_topic").is_null()
            | pl.col("then_topic").is_null()
            | (pl.col("first_topic") == pl.col("then_topic"))
        )
    )
    if not f.height:
        return pl.DataFrame()
    return f.with_columns(durations(f["least_ms"]).alias("_idle")).select(
        "job_id",
        pl.lit("redelivered").alias("fact"),
        "first_id",
        "first_pod",
        "first_at",
        "first_file",
        "first_line",
        pl.format(
            "{}, then resets the idle time of message {}, still its delivery (its next renewal line says so)",
            pl.when(pl.col("first_event") == "lock_acquired")
            .then(pl.lit("acquires the key"))
            .otherwise(pl.lit("logs a renewal")),
            pl.col("message_id"),
        ).alias("first_what"),
        "then_id",
        "then_pod",
        "then_at",
        "then_file",
        "then_line",
        pl.format("claims message {}, redelivered once idle {} or more", pl.col("message_id"), "_idle").alias(
            "then_what"
        ),
        "least_ms",
    )
