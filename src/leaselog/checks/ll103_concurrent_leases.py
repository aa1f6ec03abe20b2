"""Two leases for one key were valid at the same moment: the lock itself failed.

Anti-pattern: Redis granted a second worker the key while the first worker's lease (acquire or last
confirmed renewal + TTL) was still valid. With one healthy Redis and an owner-checked lock this cannot
happen; it takes a failover that lost the key (asynchronous replication), clocks that disagree more
than the logs assume, or a bug in the lock. It is the sharp opposite of the article's incident, where
the leases belonged to different periods and only the *executions* overlapped (overlapping_executions).

Best practice: know the lock's failover behaviour and topology (a replica promoted without the key hands
it out again), protect writes with fencing tokens the destination enforces, and keep pod clocks
synchronised so the logs can tell a lock failure from clock skew.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.certainty import certainty_columns
from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import details, evidence, ms_expr, one_or_two, pairs_of
from leaselog.checks.phrasing import durations, moments, text

_COLS = [
    "execution_id",
    "pod",
    "clock",
    "acquired_at",
    "valid_until",
    "expires_at",
    "last_confirmed_at",
    "ttl_ms",
    "acquired_file",
    "acquired_line",
    "fencing_token",
    "first_seq",
]


def pairs(executions: pl.DataFrame, leases: pl.DataFrame) -> pl.DataFrame:
    """Pairs (a acquired first, b later) of one job's leases where b was acquired before a's lease ended."""
    lz = leases.select(
        "job_id", "execution_id", "last_confirmed_file", "last_confirmed_line", "confirm_latency_ms"
    )
    # (lazy: the filter copies only these columns of the wide executions frame, not all of them)
    x = (
        executions.lazy()
        .filter(pl.col("acquired_at").is_not_null() & pl.col("valid_until").is_not_null())
        .select("job_id", "timeline", *_COLS)
        .collect()
    )

    def choose(p: pl.DataFrame) -> pl.DataFrame:
        p = p.filter(
            (pl.col("acquired_at") < pl.col("acquired_at_b"))
            | (
                (pl.col("acquired_at") == pl.col("acquired_at_b"))
                & (pl.col("first_seq") < pl.col("first_seq_b"))
            )
        )
        p = p.filter(pl.col("acquired_at_b") < pl.col("valid_until")).with_columns(
            ms_expr("acquired_at_b", pl.min_horizontal("valid_until", "valid_until_b")).alias("size_ms"),
            pl.min_horizontal("valid_until", "valid_until_b").alias("both_until"),
        )
        return p.filter(pl.col("size_ms") > 0).sort("job_id", "acquired_at_b")

    # a's lease's last confirmation (an execution has at most one lease), looked up for the pairs only
    return pairs_of(
        x, ["job_id", "timeline"], ["acquired_at", "first_seq", "valid_until"], choose, "_b"
    ).join(lz, on=["job_id", "execution_id"], how="left", maintain_order="left")


def detect(ctx: CheckContext) -> pl.DataFrame:
    found = pairs(ctx.executions, ctx.leases)
    # Redis started A's TTL somewhere inside the confirming call: the logged expiry is late by up to that
    # latency, so only the part beyond skew + latency is proven.
    proven = pl.col("size_ms") - pl.col("confirm_latency_ms").fill_null(0.0)
    a_id, b_id = text("execution_id"), text("execution_id_b")
    # a's last confirmation is cited apart only when it is another line than its acquire
    apart = ~(
        pl.col("last_confirmed_file").eq_missing(pl.col("acquired_file"))
        & pl.col("last_confirmed_line").eq_missing(pl.col("acquired_line"))
    )
    found = found.with_columns(
        proven.alias("proven_ms"),
        *certainty_columns(proven, ("pod", "pod_b"), ("clock", "clock_b"), ctx.settings),
    )
    return found.with_columns(
        pl.concat_list("execution_id", "execution_id_b").alias("execution_ids"),
        one_or_two("pod", "pod_b").alias("pods"),
        pl.col("acquired_at_b").alias("start"),
        pl.col("both_until").alias("end"),
        pl.col("size_ms").alias("duration_ms"),
        # what the logs cannot prove is never an error
        pl.when(pl.col("certainty") == "certain")
        .then(pl.lit(CHECK.severity))
        .otherwise(pl.lit("warning"))
        .alias("severity"),
        # an uncertain size on two wall clocks still says how far apart the clocks must be, if Redis behaved
        (
            (pl.col("certainty") == "uncertain")
            & pl.col("pod").ne_missing(pl.col("pod_b"))
            & (pl.col("clock") == "wall")
            & (pl.col("clock_b") == "wall")
            & (pl.col("proven_ms") > 0)
        )
        .fill_null(False)
        .alias("clocks_disagree"),
        evidence(
            (pl.col("acquired_file"), pl.col("acquired_line"), pl.format("{} acquires", a_id)),
            (
                pl.col("last_confirmed_file"),
                pl.when(apart).then(pl.col("last_confirmed_line")),
                pl.format("{}'s lease last confirmed", a_id),
            ),
            (
                pl.col("acquired_file_b"),
                pl.col("acquired_line_b"),
                pl.format("{} acquires while {}'s lease is valid", b_id, a_id),
            ),
        ).alias("evidence"),
        details(
            confirmLatencyMs=pl.col("confirm_latency_ms"),
            fencingTokens=pl.concat_list("fencing_token", "fencing_token_b"),
        ).alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    a, b = text("execution_id"), text("execution_id_b")
    confirmed = (
        pl.when(pl.col("last_confirmed_at").eq_missing(pl.col("acquired_at")))
        .then(pl.format("acquired at {}", moments(rows, "acquired_at", "clock")))
        .otherwise(pl.format("last renewed at {}", moments(rows, "last_confirmed_at", "clock")))
    )
    return rows.select(
        pl.concat_str(
            pl.format(
                "{} ({}) acquired {} at {} while {}'s lease ({}, {} with a {} TTL) was valid until {}: two valid "
                "leases for one key for {}. Redis should never allow that: it takes a failover that lost the key, "
                "clocks that disagree, or a bug in the lock. Unlike overlapping executions with disjoint leases, "
                "here the lock itself failed.",
                b,
                text("pod_b"),
                text("job_id"),
                moments(rows, "acquired_at_b", "clock_b"),
                a,
                text("pod"),
                confirmed,
                durations(rows["ttl_ms"]),
                moments(rows, "valid_until", "clock"),
                durations(rows["size_ms"]),
            ),
            pl.when(pl.col("clocks_disagree"))
            .then(
                pl.format(
                    " If Redis behaved, {}'s clock runs at least {} ahead of {}'s.",
                    text("pod"),
                    durations(rows["proven_ms"]),
                    text("pod_b"),
                )
            )
            .otherwise(pl.lit("")),
            pl.col("caveat"),
        ).alias("message")
    ).to_series()


CHECK = Check("LL103", "concurrent_leases", "error", detect, explain)
