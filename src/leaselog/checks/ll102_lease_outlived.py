"""An execution kept running after its lease expired: for that long it ran as a zombie.

Anti-pattern: a Redis lock with a TTL is a lease. Its expiry makes the key available again; it does not
stop the code that acquired it. The job ran longer than the TTL (and no renewal, or no *confirmed*
renewal, extended it), so from the expiry on it ran without the exclusivity it assumed.

Best practice: a local lease deadline with a margin, renewal independent of the work loop, and a check
before each bounded unit of work that stops once the deadline has passed or ownership is uncertain.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.causal import step_certainty, step_columns, step_note, with_step
from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import at_file, details, evidence
from leaselog.checks.phrasing import durations, moments, text
from leaselog.checks.resolution import (
    resolution_certainty,
    resolution_columns,
    resolution_note,
    with_resolution,
)
from leaselog.facts.zombies import zombies
from leaselog.unlogged_renewals import UNLOGGED


def detect(ctx: CheckContext) -> pl.DataFrame:
    """One row per zombie (the executions `zombies` gives, in its order: job, expiry), with the first
    other acquisition of the key after this one's (`next_*`, `taken_over` when it came while it ran)."""
    z = zombies(ctx)
    # only what the findings are made of goes through the joins below (executions have ~80 columns)
    z = z.select(
        "job_id", "execution_id", "timeline", "pod", "clock", "ttl_ms", "renewals", "end_kind", "acquired_at",
        "expires_at", "end", "zombie_ms", "runtime_ms", "acquired_file", "acquired_line", "ended_file",
        "ended_line", "last_file", "last_line", "lease_end", "last_confirmed_at", "release_deleted",
        "release_outcome", "released_at", "released_file", "released_line",
    )  # fmt: skip
    # who took the key over while the zombie ran (first other acquisition after the expiry)
    # (lazy: the filter copies only these columns of the wide executions frame, not all of them)
    acq = (
        ctx.executions.lazy()
        .filter(pl.col("acquired_at").is_not_null())
        .select(
            "job_id",
            "timeline",
            pl.col("execution_id").alias("next_id"),
            pl.col("acquired_at").alias("next_at"),
            pl.col("acquired_file").alias("next_file"),
            pl.col("acquired_line").alias("next_line"),
        )
        .collect()
    )
    taken = (
        z.join(acq, on=["job_id", "timeline"], how="inner")
        .filter((pl.col("next_id") != pl.col("execution_id")) & (pl.col("next_at") >= pl.col("acquired_at")))
        .sort("next_at")
        .group_by("job_id", "execution_id", maintain_order=True)
        .first()
    )
    # a zombie nobody took over is still a zombie: keep it, with no next owner
    alone = z.join(taken.select("job_id", "execution_id"), on=["job_id", "execution_id"], how="anti")
    z = pl.concat([taken, alone], how="diagonal_relaxed").sort("job_id", "expires_at")
    # the takeover counts only when it happened while the zombie still ran
    taken_over = pl.col("taken_over")
    facts = {
        "ttlMs": pl.col("ttl_ms"),
        "runtimeMs": pl.col("runtime_ms"),
        "openEnded": (pl.col("end_kind") == "open").fill_null(False),
        # its renewals went unlogged: the zombie time is a lower bound (zombieAtMostMs the upper one)
        "renewalsUnlogged": (pl.col("lease_end") == UNLOGGED).fill_null(False),
    }
    # a release that deleted the key after the logged expiry: Redis says the lease still held then, the
    # clock says it had expired (leaselog.checks.causal): the logs disagree, nothing is proven (a lease
    # whose renewals went unlogged has no logged expiry to contradict)
    # (nor has a delete by name, with no owner check: ShedLock's unlock deletes whoever's key is there)
    contradicted = (
        pl.col("release_deleted").fill_null(False)
        & (pl.col("released_at") > pl.col("expires_at"))
        & (pl.col("lease_end") != UNLOGGED)
        & (pl.col("release_outcome") != "unchecked").fill_null(True)
    ).fill_null(False)
    # a clock step in the execution's log: the figure may be off by up to the step
    z = step_columns(ctx, z, ("execution_id",)).with_columns(
        contradicted.alias("contradicted"), pl.lit("certain").alias("certainty")
    )
    # whole-second (or other coarse) timestamps: the zombie time is known only to their resolution
    z = resolution_columns(ctx, z, ("execution_id",), "zombie_ms")
    return (
        z.with_columns(
            (pl.col("next_at") <= pl.col("end")).fill_null(False).alias("taken_over"),
            pl.when(pl.col("contradicted"))
            .then(pl.lit("uncertain"))
            .otherwise(step_certainty(pl.col("zombie_ms"), ctx.settings.max_skew_ms))
            .alias("certainty"),
        )
        .with_columns(
            # (one pod's clock: proven where the range lies above zero)
            resolution_certainty(pl.col("zombie_ms"), pl.lit(False), ctx.settings.max_skew_ms).alias(
                "certainty"
            )
        )
        .with_columns(
            pl.when(pl.col("certainty") == "certain")
            .then(pl.lit(CHECK.severity))
            .otherwise(pl.lit("warning"))
            .alias("severity"),
            pl.when(taken_over)
            .then(pl.concat_list("execution_id", "next_id"))
            .otherwise(pl.concat_list("execution_id"))
            .alias("execution_ids"),
            pl.concat_list("pod").alias("pods"),
            # the finding runs from the expiry to the zombie's end (`end`, the execution's own)
            pl.col("expires_at").alias("start"),
            pl.col("zombie_ms").alias("duration_ms"),
            evidence(
                (pl.col("acquired_file"), pl.col("acquired_line"), "lease acquired"),
                (at_file("ended", "last"), pl.coalesce("ended_line", "last_line"), "still running / ends"),
                (
                    pl.col("next_file"),
                    pl.when(taken_over).then(pl.col("next_line")),
                    "another execution acquires",
                ),
                (
                    pl.col("released_file"),
                    pl.when(pl.col("contradicted")).then(pl.col("released_line")),
                    "release deletes the key after the logged expiry",
                ),
            ).alias("evidence"),
            with_resolution(
                with_step(
                    pl.when(pl.col("lease_end") == UNLOGGED)
                    .then(
                        # renewals unlogged: the figure is a lower bound; this is the upper one (no renewal succeeded
                        # after the last one seen)
                        details(**facts, zombieAtMostMs=_at_most_ms())
                    )
                    .when(pl.col("contradicted"))
                    .then(
                        details(
                            **facts,
                            releaseDeletedAfterExpiryMs=(
                                pl.col("released_at") - pl.col("expires_at")
                            ).dt.total_microseconds()
                            / 1000,
                        )
                    )
                    .otherwise(details(**facts))
                )
            ).alias("details"),
        )
    )


def _earliest_expiry() -> pl.Expr:
    """The earliest the lease can have expired: its last confirmed renewal (or acquisition) + TTL."""
    return pl.col("last_confirmed_at") + pl.duration(milliseconds=pl.col("ttl_ms"))


def _at_most_ms() -> pl.Expr:
    return (pl.col("end") - _earliest_expiry()).dt.total_microseconds() / 1000


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    ck = "clock"
    unlogged = pl.col("lease_end") == UNLOGGED
    rows = rows.with_columns(
        step_note(rows),
        resolution_note(rows),
        moments(rows.with_columns(_earliest_expiry().alias("_earliest")), "_earliest", ck).alias(
            "earliest_when"
        ),
        durations(rows.select(_at_most_ms())["end"]).alias("at_most_text"),
    )
    bounded = pl.format(
        "{} ({}) acquired {} at {} with a {} lease. Its renewals are not logged (the lock library logs them only "
        "at a more verbose level, or never), so the lease lapsed between {} (the {} plus the lease length) and "
        "{}, when {} acquired the key, which the lock grants only once the lease has lapsed. {} {}: at least {} "
        "as a zombie without the lock (at most {}, had no renewal succeeded).",
        text("execution_id"),
        text("pod"),
        text("job_id"),
        moments(rows, "acquired_at", ck),
        durations(rows["ttl_ms"]),
        "earliest_when",
        pl.when(pl.col("last_confirmed_at") == pl.col("acquired_at"))
        .then(pl.lit("acquisition"))
        .otherwise(pl.lit("last renewal seen")),
        moments(rows, "expires_at", ck),
        text("next_id"),
        pl.when(pl.col("end_kind") == "open")
        .then(pl.lit("Its log ends at"))
        .otherwise(pl.lit("It kept running until")),
        moments(rows, "end", ck),
        durations(rows["zombie_ms"]),
        "at_most_text",
    )
    return rows.select(
        pl.when(unlogged)
        .then(bounded)
        .otherwise(
            pl.concat_str(
                pl.format(
                    "{} ({}) acquired {} at {} with a {} lease; the lease expired at {} ({}) and {} {}: {} as a "
                    "zombie without the lock.",
                    text("execution_id"),
                    text("pod"),
                    text("job_id"),
                    moments(rows, "acquired_at", ck),
                    durations(rows["ttl_ms"]),
                    moments(rows, "expires_at", ck),
                    pl.when(pl.col("renewals") == 0)
                    .then(pl.lit("no renewal extended it"))
                    .otherwise(pl.lit("no later renewal was confirmed")),
                    pl.when(pl.col("end_kind") == "open")
                    .then(pl.lit("its log ends"))
                    .otherwise(pl.lit("it kept running until")),
                    moments(rows, "end", ck),
                    durations(rows["zombie_ms"]),
                ),
                pl.when("taken_over")
                .then(
                    pl.format(
                        " Meanwhile {} acquired the key at {}.", text("next_id"), moments(rows, "next_at", ck)
                    )
                )
                .otherwise(pl.lit("")),
                pl.when(pl.col("contradicted"))
                .then(
                    pl.format(
                        " Yet its release at {} deleted the key: Redis says it still held the lease then. These "
                        "logs disagree: a clock that stepped, a renewal line missing or a wrong TTL in the log; at "
                        "least one clock or one line is wrong, so this zombie time is not proven.",
                        moments(rows, "released_at", ck),
                    )
                )
                .otherwise(pl.lit("")),
            )
        )
        + pl.col("resolution_note")
        + pl.col("step_note")
    ).to_series()


CHECK = Check("LL102", "lease_outlived", "error", detect, explain)
