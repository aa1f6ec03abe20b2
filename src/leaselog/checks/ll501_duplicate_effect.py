"""Two completions of one job were accepted: a duplicate committed effect.

Anti-pattern: a separate "already completed?" read followed by a write. Two executions that overlapped
(or ran one after the other) both committed their result, so the job's effect happened twice. This is
a correctness problem, not just load: overlapping computation with one accepted result costs CPU, two
accepted results cost correctness (duplicate reports, double charges, duplicate notifications).

Best practice: record the completion identity and apply its effect in one atomic, durable operation,
and define what a second completion receives (the existing result, a conflict, or another explicit
outcome). Remote effects (uploads, notifications) need their own outbox and idempotent receiver.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import completions, details, evidence_record, known_evidence
from leaselog.checks.phrasing import moments, text
from leaselog.timebase import ms_expr


def detect(ctx: CheckContext) -> pl.DataFrame:
    acc = completions(ctx).filter(pl.col("outcome") == "accepted").sort("t", "seq")
    dup = acc.filter(pl.len().over("job_id", "timeline") > 1)
    # one row per job: its accepted completions in time order (who, where, when, with which token)
    groups = dup.group_by("job_id", "timeline", maintain_order=True).agg(
        pl.col("execution_id").alias("completed_by"),
        pl.col("pod").alias("completion_pods"),
        pl.col("t").alias("accepted_at"),
        pl.col("token").alias("tokens"),
        evidence_record(pl.col("file"), pl.col("line"), "completion accepted").alias("evidence"),
        pl.col("clock").first(),
        ms_expr(pl.col("t").first(), pl.col("t").last()).alias("duration_ms"),
    )
    return groups.with_columns(
        pl.col("completed_by").list.unique(maintain_order=True).alias("execution_ids"),
        pl.col("completion_pods").list.unique(maintain_order=True).alias("pods"),
        pl.col("accepted_at").list.first().alias("start"),
        pl.col("accepted_at").list.last().alias("end"),
        known_evidence(pl.col("evidence")),
        details(accepted=pl.col("completed_by").list.len(), tokens=pl.col("tokens")).alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    # one part per accepted completion, each moment on the job's first completion's clock
    each = (
        rows.with_row_index("_row")
        .select("_row", "clock", "completed_by", "completion_pods", "accepted_at", "tokens")
        .explode("completed_by", "completion_pods", "accepted_at", "tokens")
    )
    each = each.with_columns(moments(each, "accepted_at", "clock").alias("when"))
    parts = each.group_by("_row", maintain_order=True).agg(
        pl.format(
            "{} ({}) at {}{}",
            text("completed_by"),
            text("completion_pods"),
            "when",
            pl.when(pl.col("tokens").is_null())
            .then(pl.lit(""))
            .otherwise(pl.format(" with token {}", pl.col("tokens"))),
        )
        .str.join("; ")
        .alias("parts")
    )
    return (
        rows.with_row_index("_row")
        .join(parts, on="_row", how="left", maintain_order="left")
        .select(
            pl.format(
                "{} has {} accepted completions: {}. That is a duplicate committed effect, a correctness problem, "
                "not just load. Recording the completion identity and applying its effect must be one atomic, "
                "durable operation that gives a second completion a defined outcome.",
                text("job_id"),
                pl.col("completed_by").list.len(),
                "parts",
            ).alias("message")
        )
        .to_series()
    )


CHECK = Check("LL501", "duplicate_effect", "error", detect, explain)
