"""The clocks contradict what Redis proves: an acquisition logged before the release that freed the key.

Anti-pattern: reading the order of two pods' events off their timestamps when the logs themselves prove
another order. A release that deleted the key (`released=true`, an owner-checked delete) shows the key
still held that owner's value: no other worker can have acquired it in between. When another worker's
acquisition is timestamped before that release (beyond the clock-skew bound, with no clock step in
either log to explain it), the clocks put the acquisition where Redis says it cannot be: one pod's
clock is off by at least the difference, or a line's time is wrong. Taking the clock order at its word
would invent two leases at once and an overlap; leaselog reports neither and states the contradiction.

Best practice: keep pod clocks synchronised (and know by how much they may differ: `--max-skew`, or
per-pod `--clock-offset`), hand out fencing tokens at acquisition and log them, so the order of two
acquisitions never rests on timestamps.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.anchors import contradicted
from leaselog.checks.causal import unexplained
from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import details, evidence, one_or_two
from leaselog.checks.phrasing import text


def detect(ctx: CheckContext) -> pl.DataFrame:
    return pl.concat([_handoffs(ctx), _facts(ctx)], how="diagonal_relaxed").sort("start")


def _facts(ctx: CheckContext) -> pl.DataFrame:
    """The other ordering facts (leaselog.checks.anchors) the clocks contradict: one finding per job, kind of
    fact and pair of pods (the largest contradiction)."""
    f = contradicted(ctx)
    first, then = text("first_id"), text("then_id")
    return f.with_columns(
        pl.concat_list("first_id", "then_id").alias("execution_ids"),
        pl.concat_list("first_pod", "then_pod").alias("pods"),
        pl.min_horizontal("first_at", "then_at").alias("start"),
        pl.max_horizontal("first_at", "then_at").alias("end"),
        pl.col("contradiction_ms").alias("duration_ms"),
        pl.lit("uncertain").alias("certainty"),
        evidence(
            (pl.col("first_file"), pl.col("first_line"), pl.format("{} {}", first, pl.col("first_what"))),
            (pl.col("then_file"), pl.col("then_line"), pl.format("{} {}", then, pl.col("then_what"))),
        ).alias("evidence"),
        details(
            clockDisagreementMs=pl.col("contradiction_ms"),
            fact=pl.col("fact"),
            factsContradicted=pl.col("facts_contradicted"),
            clockBehind=pl.col("then_pod"),
            clockAhead=pl.col("first_pod"),
        ).alias("details"),
    )


def _handoffs(ctx: CheckContext) -> pl.DataFrame:
    h = unexplained(ctx)
    x, y = text("execution_id"), text("execution_id_y")
    return h.with_columns(
        pl.concat_list("execution_id", "execution_id_y").alias("execution_ids"),
        one_or_two("pod", "pod_y").alias("pods"),
        pl.col("acquired_at_y").alias("start"),
        pl.col("released_at").alias("end"),
        pl.col("contradiction_ms").alias("duration_ms"),
        # the logs cannot say which clock (or line) is wrong
        pl.lit("uncertain").alias("certainty"),
        evidence(
            (pl.col("acquired_file_y"), pl.col("acquired_line_y"), pl.format("{} acquires", y)),
            (pl.col("released_file"), pl.col("released_line"), pl.format("{}'s release deletes the key", x)),
        ).alias("evidence"),
        details(
            clockDisagreementMs=pl.col("contradiction_ms"),
            causalOrder=pl.when(pl.col("y_after"))
            .then(pl.lit("release, then acquisition"))
            .otherwise(pl.lit("acquisition, then the earlier acquisition")),
            byFencingTokens=pl.col("by_tokens"),
            executionsOverlapped=~pl.col("no_overlap"),
        ).alias("details"),
        pl.lit("release").alias("fact"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    return rows.select(
        pl.format(
            "These logs disagree. {} What would resolve it: synchronised clocks (or the pods' offsets given "
            "with --clock-offset), or a line whose time is wrong.",
            pl.col("contradiction_text"),
        ).alias("message")
    ).to_series()


CHECK = Check("LL105", "clock_contradiction", "warning", detect, explain)
