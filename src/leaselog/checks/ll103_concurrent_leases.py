"""Two leases for one key were valid at the same moment: the lock itself failed.

Anti-pattern: Redis granted a second worker the key while the first worker's lease (acquire or last
confirmed renewal + TTL) was still valid. With one healthy Redis and an owner-checked lock this cannot
happen; it takes a failover that lost the key (asynchronous replication), clocks that disagree more
than the logs assume, or a bug in the lock. It is the sharp opposite of the article's incident, where
the leases belonged to different periods and only the *executions* overlapped (overlapping_executions).

Best practice: know the lock's failover behaviour and topology (a replica promoted without the key hands
it out again, and a fencing counter kept in the same Redis can hand a token out twice); protect writes
with fencing tokens the destination itself checks; make an acquisition count only once a replica has it
(`WAIT 1 <timeout>` after `SET NX`, or `min-replicas-to-write` on the lock's Redis); keep pod clocks
synchronised so the logs can tell a lock failure from clock skew. The finding names what made the two
leases valid at once where the logs show it: a reconnect or failover line, a token handed out twice.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.causal import refuted_leases, step_certainty, step_columns, step_note, with_step
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


# words of a line that says the lock's Redis changed under the workers: a reconnect, a new master or
# primary, a Sentinel or Cluster failover, a replica promoted, a READONLY reply from a demoted master
_FAILOVER = (
    r"(?i)reconnect|master.?changed|switch.?master|fail.?over|promot|new (master|primary)|readonly|"
    r"role.?change|\+sdown|\+odown"
)


def _failover_lines(ctx: CheckContext, found: pl.DataFrame) -> pl.DataFrame:
    """Per pair, the first line of either execution (from a's acquisition to the end of the two leases)
    whose event name, message or reason speaks of a failover or reconnect: `failover_file`,
    `failover_line`, `failover_text`, `failover_execution`."""
    keys = ["job_id", "execution_id", "execution_id_b"]
    none = found.select(keys).with_columns(
        pl.lit(None, dtype=pl.String).alias("failover_file"),
        pl.lit(None, dtype=pl.Int64).alias("failover_line"),
        pl.lit(None, dtype=pl.String).alias("failover_text"),
        pl.lit(None, dtype=pl.String).alias("failover_execution"),
    )
    if not found.height:
        return none
    said = pl.concat_str([pl.col(c).fill_null("") for c in ("raw_event", "message", "reason")], separator=" ")
    jobs = found["job_id"].unique().implode()
    lines = (
        ctx.events.lazy()
        .filter(pl.col("job_id").is_in(jobs))
        .filter(said.str.contains(_FAILOVER))
        .select(
            "job_id",
            "execution_id",
            "t",
            "file",
            "line",
            pl.coalesce(
                *(
                    pl.when(pl.col(c).str.contains(_FAILOVER)).then(pl.col(c))
                    for c in ("message", "reason", "raw_event")
                )
            ).alias("text"),
        )
        .collect()
    )
    if not lines.height:
        return none
    pairs = found.select(*keys, "acquired_at", "both_until")
    hits = pl.concat(
        [
            pairs.join(lines, on=["job_id", "execution_id"], how="inner"),
            pairs.join(
                lines.rename({"execution_id": "execution_id_b"}), on=["job_id", "execution_id_b"], how="inner"
            ).with_columns(pl.col("execution_id_b").alias("_who")),
        ],
        how="diagonal_relaxed",
    )
    return (
        hits.filter((pl.col("t") >= pl.col("acquired_at")) & (pl.col("t") <= pl.col("both_until")))
        .sort("t", "line")
        .group_by(keys, maintain_order=True)
        .first()
        .select(
            *keys,
            pl.col("file").alias("failover_file"),
            pl.col("line").alias("failover_line"),
            pl.col("text").str.strip_chars().str.slice(0, 120).alias("failover_text"),
            pl.coalesce("_who", "execution_id").alias("failover_execution"),
        )
    )


def detect(ctx: CheckContext) -> pl.DataFrame:
    # a release that deleted the key proves no one else held it before that release (leaselog.checks.causal):
    # an acquisition the clocks put inside such a lease is a clock or a line that is wrong (clock_step,
    # clock_contradiction), not two leases at once
    found = pairs(ctx.executions, ctx.leases).join(
        refuted_leases(ctx),
        on=["job_id", "execution_id", "execution_id_b"],
        how="anti",
        maintain_order="left",
    )
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
    # a clock step in either execution's log: the figure may be off by up to the step
    found = step_columns(ctx, found, ("execution_id", "execution_id_b"))
    # what made two leases valid at once, where the logs show it: a failover line, a token handed out twice
    found = found.join(
        _failover_lines(ctx, found),
        on=["job_id", "execution_id", "execution_id_b"],
        how="left",
        maintain_order="left",
        nulls_equal=True,
    ).with_columns(
        (pl.col("fencing_token").is_not_null() & (pl.col("fencing_token") == pl.col("fencing_token_b")))
        .fill_null(False)
        .alias("token_twice")
    )
    found = found.with_columns(
        step_certainty(pl.col("proven_ms"), ctx.settings.max_skew_ms).alias("certainty")
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
            (
                pl.col("failover_file"),
                pl.col("failover_line"),
                "the lock's Redis changed (failover / reconnect)",
            ),
        ).alias("evidence"),
        with_step(
            details(
                confirmLatencyMs=pl.col("confirm_latency_ms"),
                fencingTokens=pl.concat_list("fencing_token", "fencing_token_b"),
                fencingTokenTwice=pl.col("token_twice"),
                failoverLine=pl.when(pl.col("failover_line").is_not_null()).then(
                    pl.format("{}:{}", pl.col("failover_file"), pl.col("failover_line"))
                ),
            )
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
            pl.when(pl.col("failover_line").is_not_null())
            .then(
                pl.format(
                    " The logs show the lock's Redis changing under them at {}:{} ({}: `{}`): a failover or "
                    "reconnect to a new primary that never saw {}'s acquisition hands the key out again.",
                    text("failover_file"),
                    text("failover_line"),
                    text("failover_execution"),
                    text("failover_text"),
                    a,
                )
            )
            .otherwise(pl.lit("")),
            pl.when(pl.col("token_twice"))
            .then(
                pl.format(
                    " Both got fencing token {}: the token was handed out twice, so the counter lost its last "
                    "increment too (as a promoted replica that missed it would): a resource checking tokens "
                    "would accept both (keep the counter where a failover cannot lose it).",
                    text("fencing_token"),
                )
            )
            .otherwise(pl.lit("")),
            pl.lit(
                " Remedies: fencing tokens the resource itself checks (it refuses a token not above the highest "
                "it has accepted), and on the lock's Redis `WAIT` (or `min-replicas-to-write`) so an "
                "acquisition counts only once a replica holds it."
            ),
            pl.col("caveat"),
            step_note(rows),
        ).alias("message")
    ).to_series()


CHECK = Check("LL103", "concurrent_leases", "error", detect, explain)
