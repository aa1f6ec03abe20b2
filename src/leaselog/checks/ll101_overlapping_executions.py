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

from leaselog.checks.certainty import certainty_columns, handover_skew_note, skew_details
from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import at_file, completions, pairs_of
from leaselog.checks.phrasing import durations, moments, text
from leaselog.findings import Evidence, Finding, Severity

CODE = "LL101"
KIND = "overlapping_executions"
SEVERITY: Severity = "error"

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


def _results(completed: pl.Series, accepted: pl.Series) -> pl.Expr:
    """Which of the two overlapping executions' results was accepted: load versus corruption.

    `completed`: execution ids with a completion attempt; `accepted`: those with an accepted one.
    """
    a, b = pl.col("execution_id"), pl.col("execution_id_b")
    done = (a.is_in(completed.implode()) | b.is_in(completed.implode())).fill_null(False)
    a_ok, b_ok = a.is_in(accepted.implode()).fill_null(False), b.is_in(accepted.implode()).fill_null(False)
    one, other = pl.when(a_ok).then(text("execution_id")), pl.when(a_ok).then(text("execution_id_b"))
    return (
        pl.when(~done)
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


def check(ctx: CheckContext) -> list[Finding]:
    found = pairs(ctx.executions)
    if found.height == 0:
        return []
    # only the executions in a pair are looked up: their completions and their leases' confirm latency
    ids = pl.concat([found["execution_id"], found["execution_id_b"]]).unique()
    comp = completions(ctx).filter(pl.col("execution_id").is_in(ids.implode()))
    completed = comp["execution_id"].drop_nulls().unique()
    accepted = comp.filter(pl.col("outcome") == "accepted")["execution_id"].drop_nulls().unique()
    mine = ctx.leases.filter(pl.col("execution_id").is_in(ids.implode(), nulls_equal=True))
    lat = dict(zip(mine["execution_id"], mine["confirm_latency_ms"], strict=True))

    a, b, job = text("execution_id"), text("execution_id_b"), text("job_id")
    overlapped = (pl.col("valid_until") > pl.col("acquired_at_b")).fill_null(False)
    found = found.with_columns(
        overlapped.alias("leases_overlapped"),
        # the handover's skew bound: only when the leases did not overlap and both pods are on the wall clock
        (
            ~overlapped
            & pl.col("acquired_at_b").is_not_null()
            & (pl.col("clock") == "wall")
            & (pl.col("clock_b") == "wall")
        )
        .fill_null(False)
        .alias("handover"),
        *certainty_columns(
            pl.col("overlap_ms"), ("pod", "pod_b"), ("clock", "clock_b"), ctx.settings, pods_as_given=True
        ),
        moments(found, "acquired_at_b", "clock_b").alias("acquired_b_when"),
        moments(found, "valid_until", "clock").alias("valid_until_when"),
        moments(found, "start_b", "clock_b").alias("start_b_when"),
        moments(found, "end", "clock").alias("end_when"),
        moments(found, "end_b", "clock_b").alias("end_b_when"),
        durations(found["overlap_ms"]).alias("size_text"),
    )
    opening = (
        pl.when(pl.col("acquired_at_b").is_not_null() & pl.col("valid_until").is_not_null() & ~overlapped)
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
        .otherwise(pl.format("{} started {} at {} while {} was running; ", b, job, "start_b_when", a))
    )
    running = pl.concat_str(
        pl.when(pl.col("end_kind") == "open")
        .then(pl.format("{}'s log ends at {} with no finish (at least that long)", a, "end_when"))
        .otherwise(pl.format("{} kept running until {}", a, "end_when")),
        pl.when(pl.col("end_b") < pl.col("end"))
        .then(pl.format(", past {}'s own end at {}", b, "end_b_when"))
        .otherwise(pl.lit("")),
    )
    # the message up to the skew note (which needs the exact gap, from Python datetimes) and the caveat
    found = found.with_columns(
        pl.concat_str(
            opening,
            running,
            pl.format(": {} of overlapping execution.", "size_text"),
            pl.when(overlapped)
            .then(pl.lit(" The leases overlapped too (see concurrent_leases)."))
            .otherwise(pl.lit(" The leases never overlapped; the executions did.")),
            _results(completed, accepted),
        ).alias("message"),
        at_file("started", "acquired").alias("a_start_file"),
        pl.coalesce("started_line", "acquired_line").alias("a_start_line"),
        at_file("ended", "last").alias("a_end_file"),
        pl.coalesce("ended_line", "last_line").alias("a_end_line"),
    )
    out: list[Finding] = []
    for (
        job_id, a_id, b_id, pod, pod_b, valid_until, acquired_at_b, start, end, size, end_kind, overlapped_,
        handover, certainty, caveat, message,
        a_start_file, a_start_line, b_acquired_file, b_acquired_line, b_started_file, b_started_line,
        a_end_file, a_end_line,
    ) in zip(*(found[c].to_list() for c in _USED), strict=True):  # fmt: skip
        skew_bound, skew_note = None, ""
        if handover:
            gap = (acquired_at_b - valid_until).total_seconds() * 1000 if valid_until else None
            skew_bound, skew_note = handover_skew_note(pod, pod_b, gap, lat.get(a_id))
        out.append(
            Finding.of(
                kind=KIND,
                code=CODE,
                # the logs cannot prove an uncertain overlap: never an error
                severity=SEVERITY if certainty == "certain" else "warning",
                certainty=certainty,
                job_id=job_id,
                execution_ids=(a_id, b_id),
                pods=(pod,) if pod == pod_b else (pod, pod_b),
                start=start,
                end=end,
                duration_ms=size,
                message=f"{message}{skew_note}{caveat}",
                evidence=Evidence.known(
                    (a_start_file, a_start_line, f"{a_id} starts"),
                    (b_acquired_file, b_acquired_line, f"{b_id} acquires"),
                    (b_started_file, b_started_line, f"{b_id} starts"),
                    (a_end_file, a_end_line, f"{a_id} last seen / ends"),
                ),
                details={
                    "leasesOverlapped": overlapped_,
                    "openEnded": end_kind == "open",
                    **skew_details(skew_bound),
                },
            )
        )
    return out


# what a finding is made of (only these columns reach Python), in the order `check` unpacks them
_USED = [
    "job_id",
    "execution_id",
    "execution_id_b",
    "pod",
    "pod_b",
    "valid_until",
    "acquired_at_b",
    "overlap_start",
    "overlap_end",
    "overlap_ms",
    "end_kind",
    "leases_overlapped",
    "handover",
    "certainty",
    "caveat",
    "message",
    "a_start_file",
    "a_start_line",
    "acquired_file_b",
    "acquired_line_b",
    "started_file_b",
    "started_line_b",
    "a_end_file",
    "a_end_line",
]
