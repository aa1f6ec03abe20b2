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

from leaselog.checks.base import (
    CheckContext,
    at,
    completions,
    cross_pod_certainty,
    ev,
    handover_skew_note,
    pairs_of,
    when,
)
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL101"
KIND = "overlapping_executions"
SEVERITY = "error"

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
    """Every pair (a started first, b later) of one job's executions whose intervals intersect."""
    x = executions.select("job_id", *_COLS)

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


def _results(completed: set[str], accepted: set[str], a: str, b: str) -> str:
    """Which of the two overlapping executions' results was accepted: load versus corruption.

    `completed`: execution ids with a completion attempt; `accepted`: those with an accepted one.
    """
    if a not in completed and b not in completed:
        return ""
    mine = [x for x in dict.fromkeys([a, b]) if x in accepted]
    if len(mine) == 2:
        return " Both results were accepted: a duplicate committed effect (see duplicate_effect)."
    if len(mine) == 1:
        other = b if mine[0] == a else a
        return (
            f" Only {mine[0]}'s result was accepted ({other}'s was turned away or never completed): the "
            "overlapping computation was load, not corruption."
        )
    return " Neither completion was accepted."


def check(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    found = pairs(ctx.executions)
    # only the executions in a pair are looked up: their completions and their leases' confirm latency
    ids = pl.concat([found["execution_id"], found["execution_id_b"]]).unique()
    comp = completions(ctx).filter(pl.col("execution_id").is_in(ids.implode()))
    completed = set(comp["execution_id"].drop_nulls().to_list())
    accepted = set(comp.filter(pl.col("outcome") == "accepted")["execution_id"].drop_nulls().to_list())
    mine = ctx.leases.filter(pl.col("execution_id").is_in(ids.implode(), nulls_equal=True))
    lat = dict(zip(mine["execution_id"], mine["confirm_latency_ms"], strict=True))
    for r in found.iter_rows(named=True):
        a, b = r["execution_id"], r["execution_id_b"]
        ck_a, ck_b = r["clock"], r["clock_b"]
        size = r["overlap_ms"]
        certainty, caveat = cross_pod_certainty(size, [r["pod"], r["pod_b"]], [ck_a, ck_b], ctx.settings)
        leases_overlapped = (
            r["valid_until"] is not None
            and r["acquired_at_b"] is not None
            and r["valid_until"] > r["acquired_at_b"]
        )
        if r["acquired_at_b"] is not None and r["valid_until"] is not None and not leases_overlapped:
            opening = (
                f"{b} acquired {r['job_id']} at {when(r['acquired_at_b'], ck_b)} after {a}'s lease "
                f"{'expired' if r['valid_until'] == r['expires_at'] else 'ended'} at {when(r['valid_until'], ck_a)}; "
            )
        else:
            opening = f"{b} started {r['job_id']} at {when(r['start_b'], ck_b)} while {a} was running; "
        if r["end_kind"] == "open":
            running = f"{a}'s log ends at {when(r['end'], ck_a)} with no finish (at least that long)"
        else:
            running = f"{a} kept running until {when(r['end'], ck_a)}"
        if r["end_b"] < r["end"]:
            running += f", past {b}'s own end at {when(r['end_b'], ck_b)}"
        tail = (
            " The leases overlapped too (see concurrent_leases)."
            if leases_overlapped
            else " The leases never overlapped; the executions did."
        )
        skew_bound, skew_note = None, ""
        if not leases_overlapped and r["acquired_at_b"] is not None and ck_a == "wall" and ck_b == "wall":
            gap = (r["acquired_at_b"] - r["valid_until"]).total_seconds() * 1000 if r["valid_until"] else None
            skew_bound, skew_note = handover_skew_note(r["pod"], r["pod_b"], gap, lat.get(a))
        message = (
            f"{opening}{running}: {format_duration(size)} of overlapping execution.{tail}"
            f"{_results(completed, accepted, a, b)}{skew_note}{caveat}"
        )
        evidence = [
            *ev(*at(r, "started", "acquired"), f"{a} starts"),
            *ev(*at(r, "acquired", suffix="_b"), f"{b} acquires"),
            *ev(*at(r, "started", suffix="_b"), f"{b} starts"),
            *ev(*at(r, "ended", "last"), f"{a} last seen / ends"),
        ]
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                certainty=certainty,
                job_id=r["job_id"],
                execution_ids=(a, b),
                pods=tuple(dict.fromkeys([r["pod"], r["pod_b"]])),
                start=r["overlap_start"],
                end=r["overlap_end"],
                duration_ms=size,
                message=message,
                evidence=tuple(evidence),
                details={
                    "leasesOverlapped": leases_overlapped,
                    "openEnded": r["end_kind"] == "open",
                    "skewBoundMs": skew_bound,
                },
            )
        )
    return out
