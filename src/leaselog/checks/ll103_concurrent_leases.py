"""Two leases for one key were valid at the same moment: the lock itself failed.

Anti-pattern: Redis granted a second worker the key while the first worker's lease (acquire or last
confirmed renewal + TTL) was still valid. With one healthy Redis and an owner-checked lock this cannot
happen; it takes a failover that lost the key (asynchronous replication), clocks that disagree more
than the logs assume, or a bug in the lock. It is the sharp opposite of the article's incident, where
the leases belonged to different periods and only the *executions* overlapped (overlapping_executions).

Where the logs show why, the finding says it: a worker's `lock_reconnected` line (its lock client lost
the connection and reconnected, to a new primary after a failover: "master changed") inside the two
leases' window; the lock's Redis failing over in that window, as its own logs say (a Sentinel's
`+switch-master`, else its `+promoted-slave` or `+failover-end`, the promoted server's `MASTER MODE
enabled`, or a Redis Cluster replica's `Failover election won` or `Taking over the master`: `lock_failover`,
a fact of the whole fleet); and one fencing token handed to both (the promoted replica lost the counter's
increment along with the key).

Where nothing says the lock lost the key (no reconnect, no failover of the lock's Redis in the window, no
token handed out twice) and the later lease's fencing token is larger (the counter kept
the earlier acquisition's increment: the lock's Redis had it), clocks that disagree by the figure explain
the pair as well, and the finding is uncertain. Between times written coarser than a millisecond (whole
seconds) the figure is given with its range (`leaselog.checks.resolution`), and what lies within the
resolution is not proven either.

Best practice: know the lock's failover behaviour and topology (a replica promoted without the key hands
it out again), protect writes with fencing tokens the destination enforces, make a lock count only once a
replica has it (`WAIT 1 <ms>` after the `SET NX`, or `min-replicas-to-write` on the lock's Redis), and
keep pod clocks synchronised so the logs can tell a lock failure from clock skew.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.anchors import gone
from leaselog.checks.causal import refuted_leases, step_certainty, step_columns, step_note, with_step
from leaselog.checks.certainty import certainty_columns
from leaselog.checks.contract import Check, CheckContext, failovers_of
from leaselog.checks.frames import (
    details,
    events_where,
    evidence,
    isoformat,
    json_object,
    json_value,
    one_or_two,
    pairs_of,
)
from leaselog.checks.offsets import behind_columns, behind_note, with_behind
from leaselog.checks.phrasing import durations, moments, text
from leaselog.checks.resolution import resolution_columns, resolution_note, with_resolution
from leaselog.timebase import ms_expr

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
    "lease_end",
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


def reconnects(found: pl.DataFrame, ctx: CheckContext) -> pl.DataFrame:
    """`found` with the first `lock_reconnected` line of each of the pair's executions between the earlier
    acquisition and the end of the later lease (`reconnect_t`/`_file`/`_line`/`_message`, `_b` for b)."""
    rc = events_where(
        ctx, pl.col("event") == "lock_reconnected", ["job_id", "execution_id", "t", "file", "line", "message"]
    )
    keys = found.with_row_index("_pair").select("_pair", "job_id", "acquired_at", "valid_until_b")
    out = found.with_row_index("_pair")
    for suffix in ("", "_b"):
        who = found.with_row_index("_pair").select(
            "_pair", pl.col(f"execution_id{suffix}").alias("execution_id")
        )
        first = (
            keys.join(who, on="_pair")
            .join(rc, on=["job_id", "execution_id"])
            .filter((pl.col("t") >= pl.col("acquired_at")) & (pl.col("t") <= pl.col("valid_until_b")))
            .sort("_pair", "t")
            .group_by("_pair", maintain_order=True)
            .first()
            .select(
                "_pair",
                *(pl.col(c).alias(f"reconnect_{c}{suffix}") for c in ("t", "file", "line", "message")),
            )
        )
        out = out.join(first, on="_pair", how="left", maintain_order="left")
    return out.drop("_pair")


_FAILOVER = ("t", "file", "line", "rule", "master", "previous_primary", "primary", "message")
_SWITCH = "redis-server/switch-master"
_ELECTED = "redis-server/cluster-election-won"
_TAKEOVER = "redis-server/cluster-takeover"


def failovers(found: pl.DataFrame, ctx: CheckContext) -> pl.DataFrame:
    """`found` with the lock's Redis failing over between the earlier acquisition and the end of the later
    lease, on the wall clock (`failover_t`/`_file`/`_line`/`_rule`/`_master`/`_previous_primary`/`_primary`/
    `_message`): Sentinel's first `+switch-master` there, else the first other failover line; null: none."""
    facts = failovers_of(ctx)
    cols = [f"failover_{c}" for c in _FAILOVER]
    if not facts.height or not found.height:
        return found.with_columns(
            [pl.lit(None, dtype=facts.schema[c]).alias(f"failover_{c}") for c in _FAILOVER]
        )
    pairs = found.with_row_index("_pair")
    first = (
        pairs.filter((pl.col("clock") == "wall") & (pl.col("clock_b") == "wall"))
        .select("_pair", "acquired_at", "valid_until_b")
        .join(facts.select([pl.col(c).alias(f"failover_{c}") for c in _FAILOVER]), how="cross")
        .filter(pl.col("failover_t").is_between(pl.col("acquired_at"), pl.col("valid_until_b")))
        .sort("_pair", pl.col("failover_rule") != _SWITCH, "failover_t", "failover_file", "failover_line")
        .group_by("_pair", maintain_order=True)
        .first()
        .select("_pair", *cols)
    )
    return pairs.join(first, on="_pair", how="left", maintain_order="left").drop("_pair")


def with_failover(details_json: pl.Expr) -> pl.Expr:
    """A finding's details (a JSON object) plus `redisFailover` (when, where, from and to) where one is cited."""
    cited = json_object(
        at=json_value(isoformat(pl.col("failover_t"))),
        master=json_value(pl.col("failover_master")),
        previousPrimary=json_value(pl.col("failover_previous_primary")),
        primary=json_value(pl.col("failover_primary")),
        file=json_value(pl.col("failover_file")),
        line=json_value(pl.col("failover_line")),
    )
    added = pl.concat_str(
        details_json.str.strip_suffix("}"),
        pl.when(details_json == "{}").then(pl.lit("")).otherwise(pl.lit(",")),
        pl.lit('"redisFailover":'),
        cited,
        pl.lit("}"),
    )
    return pl.when(pl.col("failover_t").is_null()).then(details_json).otherwise(added)


def detect(ctx: CheckContext) -> pl.DataFrame:
    # a release that deleted the key while its lease held proves no one else held it before that release
    # (leaselog.checks.causal): an acquisition the clocks put inside such a lease is a clock or a line that
    # is wrong (clock_step, clock_contradiction), not two leases at once
    found = pairs(ctx.executions, ctx.leases).join(
        refuted_leases(ctx),
        on=["job_id", "execution_id", "execution_id_b"],
        how="anti",
        maintain_order="left",
    )
    # the facts that order two pods' events (leaselog.checks.anchors) may prove b's pod's clock runs behind
    # a's: a's lease's end compared with b's acquisition is then too late by that much, and two leases at
    # once that it covers were never valid at once
    found = behind_columns(ctx, found, "pod", "pod_b").with_columns(
        pl.min_horizontal(
            "size_ms", ms_expr("acquired_at_b", "valid_until") - pl.col("behind_ms").fill_null(0.0)
        ).alias("left_ms")
    )
    # a's lock found the key no longer a's (a renewal rejected, a release that deleted nothing,
    # leaselog.checks.anchors): a's lease had ended by then. Its logged expiry is late by up to its last
    # confirming call's latency (Redis restarted the TTL somewhere inside the call): a key gone within that
    # window expired as the TTL said; one gone before it was lost (a failover), and two leases at once
    # are the lock failing
    earliest = pl.col("valid_until") - pl.duration(
        microseconds=(pl.col("confirm_latency_ms").fill_null(0.0) * 1000).cast(pl.Int64)
    )
    found = found.join(
        gone(ctx), on=["job_id", "execution_id"], how="left", maintain_order="left"
    ).with_columns(
        pl.min_horizontal(
            "left_ms",
            ms_expr(
                pl.col("acquired_at_b"),
                pl.when(pl.col("gone_at").is_not_null()).then(pl.max_horizontal("gone_at", earliest)),
            ),
        ).alias("left_ms")
    )
    found = found.filter(pl.col("left_ms") > 0)
    found = failovers(reconnects(found, ctx), ctx)
    # whole-second (or other coarse) timestamps: the figure is known only to their resolution
    found = resolution_columns(ctx, found, ("execution_id", "execution_id_b"), "size_ms")
    # Redis started A's TTL somewhere inside the confirming call: the logged expiry is late by up to that
    # latency (and truncated times by up to their resolution), so only the part beyond skew + latency
    # (+ resolution) is proven.
    beyond_latency = pl.col("size_ms") - pl.col("confirm_latency_ms").fill_null(0.0)
    proven = beyond_latency - pl.col("resolution_ms").fill_null(0.0)
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
    offset_doubt = pl.col("behind_ms").is_not_null() & (
        pl.col("left_ms") - pl.col("confirm_latency_ms").fill_null(0.0) <= ctx.settings.max_skew_ms
    )
    # the whole of it lies inside the confirming call's latency: nothing of it is proven
    latency_doubt = (beyond_latency <= 0).fill_null(False)
    # beyond the latency, yet within the times' resolution: nothing of it is proven either
    resolution_doubt = (pl.col("proven_ms") <= 0).fill_null(False) & ~latency_doubt
    # nothing in the logs says the lock lost the key (no reconnect, no failover in the lock's Redis logs, no
    # token handed out twice), and the fencing counter kept a's increment (b's token is larger): the lock's
    # Redis had a's acquisition, and b's SET NX found the key gone. Two pods' clocks apart by the figure
    # explain that as well as a lock that lost the key (an eviction, a flush): the logs cannot tell which
    counter_doubt = (
        pl.col("pod").ne_missing(pl.col("pod_b"))
        & pl.col("reconnect_t").is_null()
        & pl.col("reconnect_t_b").is_null()
        & pl.col("failover_t").is_null()
        & (pl.col("fencing_token_b") > pl.col("fencing_token"))
    ).fill_null(False)
    found = found.with_columns(
        offset_doubt.alias("offset_doubt"),
        latency_doubt.alias("latency_doubt"),
        counter_doubt.alias("counter_doubt"),
        pl.when(offset_doubt | latency_doubt | counter_doubt | resolution_doubt)
        .then(pl.lit("uncertain"))
        .otherwise(step_certainty(pl.col("proven_ms"), ctx.settings.max_skew_ms))
        .alias("certainty"),
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
            (pl.col("reconnect_file"), pl.col("reconnect_line"), pl.format("{} reconnects to Redis", a_id)),
            (
                pl.col("reconnect_file_b"),
                pl.col("reconnect_line_b"),
                pl.format("{} reconnects to Redis", b_id),
            ),
            (pl.col("failover_file"), pl.col("failover_line"), _failover_note()),
        ).alias("evidence"),
        with_resolution(
            with_failover(
                with_behind(
                    with_step(
                        details(
                            confirmLatencyMs=pl.col("confirm_latency_ms"),
                            fencingTokens=pl.concat_list("fencing_token", "fencing_token_b"),
                        )
                    )
                )
            )
        ).alias("details"),
    )


def _failover_note() -> pl.Expr:
    """The evidence note of the failover line cited."""
    rule = pl.col("failover_rule")
    return (
        pl.when(rule == _SWITCH)
        .then(pl.lit("Sentinel switches the primary"))
        .when(rule == "redis-server/promoted-slave")
        .then(pl.lit("Sentinel promotes a replica"))
        .when(rule == "redis-server/failover-end")
        .then(pl.lit("Sentinel ends a failover"))
        .when(rule == _ELECTED)
        .then(pl.lit("a Redis Cluster replica wins its failover election"))
        .when(rule == _TAKEOVER)
        .then(pl.lit("a Redis Cluster replica takes over its primary"))
        .otherwise(pl.lit("a replica becomes a primary"))
    )


def _failover_said(rows: pl.DataFrame) -> pl.Expr:
    """What the lock's Redis logged of its failover: ` Sentinel switched ... (file:line).`, or nothing."""
    rule, at = pl.col("failover_rule"), moments(rows, "failover_t", "failover_clock")
    where = pl.format("({}:{})", text("failover_file"), text("failover_line"))
    return (
        pl.when(pl.col("failover_t").is_null())
        .then(pl.lit(""))
        .when(rule == _SWITCH)
        .then(
            pl.format(
                " Sentinel switched the primary of {} from {} to {} at {} {}.",
                text("failover_master"),
                text("failover_previous_primary"),
                text("failover_primary"),
                at,
                where,
            )
        )
        .when(rule == "redis-server/promoted-slave")
        .then(
            pl.format(
                " Sentinel promoted the replica {} to primary of {} (was {}) at {} {}.",
                text("failover_primary"),
                text("failover_master"),
                text("failover_previous_primary"),
                at,
                where,
            )
        )
        .when(rule == "redis-server/failover-end")
        .then(
            pl.format(
                " Sentinel ended a failover of {} (primary {}) at {} {}.",
                text("failover_master"),
                text("failover_previous_primary"),
                at,
                where,
            )
        )
        .when(rule == _ELECTED)
        .then(
            pl.format(
                " A replica of the lock's Redis Cluster won its failover election and became a primary (\"Failover "
                "election won: I'm the new master.\") at {} {}.",
                at,
                where,
            )
        )
        .when(rule == _TAKEOVER)
        .then(
            pl.format(
                " A replica of the lock's Redis Cluster took over its primary without an election (CLUSTER FAILOVER "
                'TAKEOVER: "Taking over the master (user request).") at {} {}.',
                at,
                where,
            )
        )
        .otherwise(
            pl.format(
                ' A replica of the lock\'s Redis became a primary ("MASTER MODE enabled") at {} {}.',
                at,
                where,
            )
        )
    )


def _why(rows: pl.DataFrame) -> pl.Expr:
    """What the logs say made both leases valid: a reconnect to Redis (a failover), one token twice."""
    a, b = text("execution_id"), text("execution_id_b")
    first_b = pl.col("reconnect_t_b").is_not_null() & (
        pl.col("reconnect_t").is_null() | (pl.col("reconnect_t_b") < pl.col("reconnect_t"))
    )
    told = (
        pl.when(first_b)
        .then(
            pl.format(
                ' {} logged at {} that its lock client reconnected to Redis ("{}")',
                b,
                moments(rows, "reconnect_t_b", "clock_b"),
                text("reconnect_message_b"),
            )
        )
        .when(pl.col("reconnect_t").is_not_null())
        .then(
            pl.format(
                ' {} logged at {} that its lock client reconnected to Redis ("{}")',
                a,
                moments(rows, "reconnect_t", "clock"),
                text("reconnect_message"),
            )
        )
    )
    both = pl.col("reconnect_t").is_not_null() & pl.col("reconnect_t_b").is_not_null()
    reconnect = pl.concat_str(
        told,
        pl.when(both)
        .then(pl.format(", and {} too", pl.when(first_b).then(a).otherwise(b)))
        .otherwise(pl.lit("")),
        pl.lit(": a failover, to a primary that did not have the key."),
    )
    token = pl.col("fencing_token").is_not_null() & (pl.col("fencing_token") == pl.col("fencing_token_b"))
    twice = pl.format(
        " Both were handed fencing token {}: the counter went back with the key, so a resource that checks "
        "tokens cannot tell their writes apart.",
        text("fencing_token"),
    )
    failover = (
        pl.col("reconnect_t").is_not_null()
        | pl.col("reconnect_t_b").is_not_null()
        | pl.col("failover_t").is_not_null()
        | token
    )
    return pl.concat_str(
        reconnect.fill_null(""),
        _failover_said(rows),
        pl.when(token).then(twice).otherwise(pl.lit("")),
        pl.when(failover)
        .then(
            pl.lit(
                " Remedies: fencing tokens the resource checks (from a counter that survives a failover), and "
                "a lock that counts only once a replica has it: `WAIT 1 <ms>` after the `SET NX`, or "
                "`min-replicas-to-write` on the lock's Redis."
            )
        )
        .otherwise(pl.lit("")),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    a, b = text("execution_id"), text("execution_id_b")
    confirmed = (
        pl.when(pl.col("last_confirmed_at").eq_missing(pl.col("acquired_at")))
        .then(pl.format("acquired at {}", moments(rows, "acquired_at", "clock")))
        .otherwise(pl.format("last renewed at {}", moments(rows, "last_confirmed_at", "clock")))
    )
    rows = rows.with_columns(
        # where a's release failed: the two leases at once had it done nothing
        ms_expr("acquired_at_b", pl.min_horizontal("expires_at", "valid_until_b")).alias("upto_ms"),
        step_note(rows),
        behind_note(rows, "pod", "pod_b", "left_ms", "offset_doubt"),
        pl.lit("wall").alias("failover_clock"),
        resolution_note(rows),
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
            _why(rows),
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
            pl.when(pl.col("counter_doubt"))
            .then(
                pl.format(
                    " Yet nothing in the logs says the lock lost the key (no reconnect to Redis, no failover in its "
                    "logs, no fencing token handed out twice), and the fencing counter kept {}'s increment ({} got token {}, {} got {}): "
                    "the lock's Redis had {}'s acquisition, so {}'s SET NX found the key gone. Clocks of {} and "
                    "{} that disagree by {} explain that as well as a lock that lost the key (an eviction, a "
                    "flush): this is not proven (compare the pods' clocks, or log the lock client's reconnects).",
                    a,
                    a,
                    text("fencing_token"),
                    b,
                    text("fencing_token_b"),
                    a,
                    b,
                    text("pod"),
                    text("pod_b"),
                    durations(rows["size_ms"]),
                )
            )
            .otherwise(pl.lit("")),
            pl.when(pl.col("latency_doubt"))
            .then(
                pl.format(
                    " {}'s last confirming call took {}: Redis started its TTL somewhere inside that call, so "
                    "the lease may have ended before {} acquired: this is not proven.",
                    a,
                    durations(rows["confirm_latency_ms"]),
                    b,
                )
            )
            .otherwise(pl.lit("")),
            pl.when((pl.col("lease_end") == "release_unknown") & (pl.col("upto_ms") > pl.col("size_ms")))
            .then(
                pl.format(
                    " {}'s release at {} failed, and whether it deleted the key the logs cannot tell: its lease "
                    "stood at least until then, and if the release did nothing, until {}, which makes {} of two "
                    "leases at once.",
                    a,
                    moments(rows, "valid_until", "clock"),
                    moments(rows, "expires_at", "clock"),
                    durations(rows["upto_ms"]),
                )
            )
            .otherwise(pl.lit("")),
            pl.col("resolution_note"),
            pl.col("step_note"),
            pl.col("behind_note"),
        ).alias("message")
    ).to_series()


CHECK = Check("LL103", "concurrent_leases", "error", detect, explain)
