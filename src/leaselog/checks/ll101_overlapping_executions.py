"""Two executions of the same job ran at the same time.

Anti-pattern: a worker acquires the lock, runs past its lease, and another worker acquires the same key
and starts the same job while the first keeps going. Nothing crashed and Redis never granted two valid
leases at once: the *leases* belonged to different periods, the *executions* overlapped. The cost is
duplicate computation (load); whether results were duplicated is a separate question (`duplicate_effect`).

Best practice: bound the job by its lease. Renew on a task independent of the work loop, stop at the next
checkpoint when ownership is lost or uncertain, and measure overlapping execution separately from
duplicate committed effects.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.causal import refuted_overlaps, step_certainty, step_columns, step_note, with_step
from leaselog.checks.certainty import certainty_columns, handover_skew_columns
from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import (
    at_file,
    completions,
    evidence,
    one_or_two,
    pairs_of,
    skew_details,
    timedelta_ms,
)
from leaselog.checks.offsets import behind_columns, behind_note, with_behind
from leaselog.checks.phrasing import durations, moments, text
from leaselog.checks.resolution import (
    resolution_certainty,
    resolution_columns,
    resolution_note,
    with_resolution,
)
from leaselog.timebase import ms_expr
from leaselog.unlogged_renewals import UNLOGGED

_COLS = [
    "execution_id",
    "pod",
    "clock",
    "start",
    "end",
    "end_kind",
    "acquired_at",
    "valid_until",
    "expires_at",
    "lease_end",
    "started_line",
    "started_file",
    "acquired_line",
    "acquired_file",
    "ended_line",
    "ended_file",
    "last_line",
    "last_file",
    "first_seq",
]


def pairs(executions: pl.DataFrame) -> pl.DataFrame:
    """Every pair (a started first, b later) of one job's executions whose intervals intersect.

    An attempt that never ran (denied the lock, or triggered and nothing more) has no interval: it
    overlaps nothing.
    """
    x = executions.select("job_id", *_COLS).filter(
        pl.col("start").is_not_null() & pl.col("end").is_not_null()
    )

    def choose(p: pl.DataFrame) -> pl.DataFrame:
        p = p.filter(
            (pl.col("start") < pl.col("start_b"))
            | ((pl.col("start") == pl.col("start_b")) & (pl.col("first_seq") < pl.col("first_seq_b")))
        )
        p = p.with_columns(
            pl.max_horizontal("start", "start_b").alias("overlap_start"),
            pl.min_horizontal("end", "end_b").alias("overlap_end"),
        ).with_columns(
            ((pl.col("overlap_end") - pl.col("overlap_start")).dt.total_microseconds() / 1000).alias(
                "overlap_ms"
            )
        )
        return p.filter(pl.col("overlap_ms") > 0).sort("job_id", "overlap_start")

    return pairs_of(x, ["job_id"], ["start", "first_seq", "end"], choose, "_b")


def _results() -> pl.Expr:
    """Which of the two overlapping executions' results was accepted: load versus corruption."""
    a_ok, b_ok = pl.col("a_accepted"), pl.col("b_accepted")
    a, b = pl.col("execution_id"), pl.col("execution_id_b")
    one, other = pl.when(a_ok).then(text("execution_id")), pl.when(a_ok).then(text("execution_id_b"))
    return (
        pl.when(~pl.col("completed"))
        .then(pl.lit(""))
        .when(a_ok & b_ok & a.ne_missing(b))
        .then(pl.lit(" Both results were accepted: a duplicate committed effect (see duplicate_effect)."))
        .when(a_ok | b_ok)
        .then(
            pl.format(
                " Only {}'s result was accepted ({}'s was turned away or never completed): the overlapping "
                "computation was load, not corruption.",
                one.otherwise(text("execution_id_b")),
                other.otherwise(text("execution_id")),
            )
        )
        .otherwise(pl.lit(" Neither completion was accepted."))
    )


def detect(ctx: CheckContext) -> pl.DataFrame:
    # a handoff the logs prove (one's release deleted the key after it had ended, the other acquired after
    # that release: leaselog.checks.causal) is no overlap, whatever the clocks say
    found = pairs(ctx.executions).join(
        refuted_overlaps(ctx),
        on=["job_id", "execution_id", "execution_id_b"],
        how="anti",
        maintain_order="left",
    )
    # the facts that order two pods' events (leaselog.checks.anchors) may prove b's pod's clock runs behind
    # a's: a's end compared with b's start is then too late by that much, and an overlap it covers is none
    found = behind_columns(ctx, found, "pod", "pod_b").with_columns(
        pl.min_horizontal("overlap_ms", ms_expr("start_b", "end") - pl.col("behind_ms").fill_null(0.0)).alias(
            "left_ms"
        )
    )
    found = found.filter(pl.col("left_ms") > 0)
    # only the executions in a pair are looked up (by job and id: two jobs may name their executions
    # alike): their completions and their leases' confirm latency
    exec_keys = ["job_id", "execution_id"]
    ids = pl.concat(
        [found.select(exec_keys), found.select("job_id", pl.col("execution_id_b").alias("execution_id"))]
    ).unique()
    comp = completions(ctx).join(ids, on=exec_keys, how="semi")

    def keys_of(rows: pl.DataFrame) -> pl.Series:
        return rows.select(exec_keys).drop_nulls().unique().to_struct().implode()

    completed = keys_of(comp)
    accepted = keys_of(comp.filter(pl.col("outcome") == "accepted"))
    # the confirm latency of a's lease (its last one), by job and execution id as the lease frame has it
    latency = (
        ctx.leases.join(ids, on=exec_keys, how="semi", nulls_equal=True)
        .group_by(exec_keys)
        .agg(pl.col("confirm_latency_ms").last())
    )
    a = pl.struct("job_id", "execution_id")
    b = pl.struct("job_id", pl.col("execution_id_b").alias("execution_id"))
    overlapped = (pl.col("valid_until") > pl.col("acquired_at_b")).fill_null(False)
    # the handover's skew bound: only when the leases did not overlap, both pods are on the wall clock and
    # the earlier lease's expiry is known (not only bounded by this acquisition: renewals unlogged)
    handover = (
        ~overlapped
        & (pl.col("lease_end") != UNLOGGED)
        & pl.col("acquired_at_b").is_not_null()
        & (pl.col("clock") == "wall")
        & (pl.col("clock_b") == "wall")
    ).fill_null(False)
    # the gap as `timedelta.total_seconds() * 1000` computes it (the figure is in the JSON output)
    gap = pl.col("acquired_at_b") - pl.col("valid_until")
    found = found.join(latency, on=exec_keys, how="left", nulls_equal=True).with_columns(
        overlapped.alias("leases_overlapped"),
        handover.alias("handover"),
        pl.when(handover).then(timedelta_ms(gap)).alias("handover_gap_ms"),
        (a.is_in(completed) | b.is_in(completed)).fill_null(False).alias("completed"),
        a.is_in(accepted).fill_null(False).alias("a_accepted"),
        b.is_in(accepted).fill_null(False).alias("b_accepted"),
        *certainty_columns(
            pl.col("overlap_ms"), ("pod", "pod_b"), ("clock", "clock_b"), ctx.settings, pods_as_given=True
        ),
    )
    # a clock step in either execution's log: the figure may be off by up to the step
    found = step_columns(ctx, found, ("execution_id", "execution_id_b"))
    offset_doubt = pl.col("behind_ms").is_not_null() & (pl.col("left_ms") <= ctx.settings.max_skew_ms)
    found = found.with_columns(
        offset_doubt.alias("offset_doubt"),
        pl.when(offset_doubt)
        .then(pl.lit("uncertain"))
        .otherwise(step_certainty(pl.col("overlap_ms"), ctx.settings.max_skew_ms))
        .alias("certainty"),
    )
    # whole-second (or other coarse) timestamps: the overlap is known only to their resolution
    found = resolution_columns(ctx, found, ("execution_id", "execution_id_b"), "overlap_ms")
    found = found.with_columns(
        resolution_certainty(
            pl.col("overlap_ms"), pl.col("pod").ne_missing(pl.col("pod_b")), ctx.settings.max_skew_ms
        ).alias("certainty")
    )
    bound = pl.when(
        pl.col("pod").is_not_null() & pl.col("pod_b").is_not_null() & (pl.col("pod") != pl.col("pod_b"))
    ).then(
        pl.col("handover_gap_ms")
        + pl.col("confirm_latency_ms").fill_null(0.0)
        # (times written coarser than 1 ms: the later acquisition may lie that much after its written time)
        + pl.col("resolution_ms").fill_null(0.0)
    )
    a_id, b_id = text("execution_id"), text("execution_id_b")
    # `start`/`end` of the rows are the finding's (the overlap); a's own are `start_a`/`end_a`
    return found.rename({"start": "start_a", "end": "end_a"}).with_columns(
        pl.concat_list("execution_id", "execution_id_b").alias("execution_ids"),
        one_or_two("pod", "pod_b").alias("pods"),
        pl.col("overlap_start").alias("start"),
        pl.col("overlap_end").alias("end"),
        pl.col("overlap_ms").alias("duration_ms"),
        # the logs cannot prove an uncertain overlap: never an error
        pl.when(pl.col("certainty") == "certain")
        .then(pl.lit(CHECK.severity))
        .otherwise(pl.lit("warning"))
        .alias("severity"),
        evidence(
            (
                at_file("started", "acquired"),
                pl.coalesce("started_line", "acquired_line"),
                pl.format("{} starts", a_id),
            ),
            (pl.col("acquired_file_b"), pl.col("acquired_line_b"), pl.format("{} acquires", b_id)),
            (pl.col("started_file_b"), pl.col("started_line_b"), pl.format("{} starts", b_id)),
            (
                at_file("ended", "last"),
                pl.coalesce("ended_line", "last_line"),
                pl.format("{} last seen / ends", a_id),
            ),
        ).alias("evidence"),
        with_resolution(
            with_behind(
                with_step(
                    skew_details(
                        bound,
                        leasesOverlapped=pl.col("leases_overlapped"),
                        openEnded=(pl.col("end_kind") == "open").fill_null(False),
                        # the earlier lease's renewals went unlogged: its end is bounded by this acquisition
                        renewalsUnlogged=(pl.col("lease_end") == UNLOGGED).fill_null(False),
                    )
                )
            )
        ).alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    a, b, job = text("execution_id"), text("execution_id_b"), text("job_id")
    overlapped = pl.col("leases_overlapped")
    rows = rows.with_columns(
        moments(rows, "acquired_at_b", "clock_b").alias("acquired_b_when"),
        moments(rows, "valid_until", "clock").alias("valid_until_when"),
        moments(rows, "start_b", "clock_b").alias("start_b_when"),
        moments(rows, "end_a", "clock").alias("end_when"),
        moments(rows, "end_b", "clock_b").alias("end_b_when"),
        durations(rows["overlap_ms"]).alias("size_text"),
        *handover_skew_columns(
            rows, "pod", "pod_b", "handover_gap_ms", "confirm_latency_ms", pl.col("handover"), "resolution_ms"
        ),
        step_note(rows),
        behind_note(rows, "pod", "pod_b", "left_ms", "offset_doubt"),
        resolution_note(rows),
    )
    opening = (
        pl.when(
            pl.col("acquired_at_b").is_not_null()
            & pl.col("valid_until").is_not_null()
            & ~overlapped
            & (pl.col("lease_end") != UNLOGGED)
        )
        .then(
            pl.format(
                "{} acquired {} at {} after {}'s lease {} at {}; ",
                b,
                job,
                "acquired_b_when",
                a,
                pl.when(pl.col("valid_until") == pl.col("expires_at"))
                .then(pl.lit("expired"))
                .otherwise(pl.lit("ended")),
                "valid_until_when",
            )
        )
        .when(pl.col("lease_end") == UNLOGGED)
        .then(
            pl.format(
                "{} acquired {} at {}, once {}'s lease had lapsed ({}'s renewals are not logged: the lock grants "
                "the key only after the lease lapsed, so this is the latest it can have lasted); ",
                b,
                job,
                "acquired_b_when",
                a,
                a,
            )
        )
        .otherwise(pl.format("{} started {} at {} while {} was running; ", b, job, "start_b_when", a))
    )
    running = pl.concat_str(
        pl.when(pl.col("end_kind") == "open")
        .then(pl.format("{}'s log ends at {} with no finish (at least that long)", a, "end_when"))
        .otherwise(pl.format("{} kept running until {}", a, "end_when")),
        pl.when(pl.col("end_b") < pl.col("end_a"))
        .then(pl.format(", past {}'s own end at {}", b, "end_b_when"))
        .otherwise(pl.lit("")),
    )
    return rows.select(
        pl.concat_str(
            opening,
            running,
            pl.format(": {} of overlapping execution.", "size_text"),
            pl.when(overlapped)
            .then(pl.lit(" The leases overlapped too (see concurrent_leases)."))
            .otherwise(pl.lit(" The leases never overlapped; the executions did.")),
            _results(),
            pl.col("skew_note"),
            pl.col("caveat"),
            pl.col("resolution_note"),
            pl.col("step_note"),
            pl.col("behind_note"),
        ).alias("message")
    ).to_series()


CHECK = Check("LL101", "overlapping_executions", "error", detect, explain)
