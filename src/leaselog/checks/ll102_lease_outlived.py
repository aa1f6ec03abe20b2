"""An execution kept running after its lease expired: for that long it ran as a zombie.

Anti-pattern: a Redis lock with a TTL is a lease. Its expiry makes the key available again; it does not
stop the code that acquired it. The job ran longer than the TTL (and no renewal, or no *confirmed*
renewal, extended it), so from the expiry on it ran without the exclusivity it assumed.

Best practice: a local lease deadline with a margin, renewal independent of the work loop, and a check
before each bounded unit of work that stops once the deadline has passed or ownership is uncertain.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.base import CheckContext, at, ev, when
from leaselog.durations import format_duration
from leaselog.findings import Finding
from leaselog.reconstruct import elapsed_bounds

CODE = "LL102"
KIND = "lease_outlived"
SEVERITY = "error"


# what a finding is phrased from (rows carry only these into Python)
_USED = [
    "job_id",
    "execution_id",
    "pod",
    "clock",
    "ttl_ms",
    "renewals",
    "end_kind",
    "acquired_at",
    "expires_at",
    "end",
    "zombie_ms",
    "runtime_ms",
    "acquired_file",
    "acquired_line",
    "ended_file",
    "ended_line",
    "last_file",
    "last_line",
    "next_id",
    "next_at",
    "next_file",
    "next_line",
]


def zombies(executions: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Executions whose last moment alive lies after their lease's expiry (not after a release)."""
    return (
        executions.filter(pl.col("expires_at").is_not_null() & (pl.col("lease_end") == "expired"))
        .join(elapsed_bounds(events), on=["job_id", "execution_id"], how="left")
        .with_columns(
            # without a wall clock, measure on the pod's own elapsedMs: end - acquire - lease length
            pl.when(
                (pl.col("clock") != "wall")
                & pl.col("end_elapsed_ms").is_not_null()
                & pl.col("acquired_elapsed_ms").is_not_null()
            )
            .then(
                pl.col("end_elapsed_ms")
                - pl.col("acquired_elapsed_ms")
                - (pl.col("expires_at") - pl.col("acquired_at")).dt.total_microseconds() / 1000
            )
            .otherwise((pl.col("end") - pl.col("expires_at")).dt.total_microseconds() / 1000)
            .alias("zombie_ms")
        )
        .filter(pl.col("zombie_ms") > 0)
        .sort("job_id", "expires_at")
    )


def check(ctx: CheckContext) -> list[Finding]:
    z = zombies(ctx.executions, ctx.events)
    if z.height == 0:
        return []
    # who took the key over while the zombie ran (first other acquisition after the expiry)
    acq = ctx.executions.filter(pl.col("acquired_at").is_not_null()).select(
        "job_id",
        "timeline",
        pl.col("execution_id").alias("next_id"),
        pl.col("acquired_at").alias("next_at"),
        pl.col("acquired_file").alias("next_file"),
        pl.col("acquired_line").alias("next_line"),
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
    out: list[Finding] = []
    for r in z.select(_USED).iter_rows(named=True):
        ck = r["clock"]
        ttl = format_duration(r["ttl_ms"])
        renewed = "no renewal extended it" if r["renewals"] == 0 else "no later renewal was confirmed"
        until = "its log ends" if r["end_kind"] == "open" else "it kept running until"
        message = (
            f"{r['execution_id']} ({r['pod']}) acquired {r['job_id']} at {when(r['acquired_at'], ck)} with a "
            f"{ttl} lease; the lease expired at {when(r['expires_at'], ck)} ({renewed}) and {until} "
            f"{when(r['end'], ck)}: {format_duration(r['zombie_ms'])} as a zombie without the lock."
        )
        takeover: tuple[str, ...] = ()
        if r["next_id"] is not None and r["next_at"] <= r["end"]:
            message += f" Meanwhile {r['next_id']} acquired the key at {when(r['next_at'], ck)}."
            takeover = (r["next_id"],)
        evidence = [
            *ev(r["acquired_file"], r["acquired_line"], "lease acquired"),
            *ev(*at(r, "ended", "last"), "still running / ends"),
        ]
        if takeover:
            evidence += ev(r["next_file"], r["next_line"], "another execution acquires")
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=r["job_id"],
                execution_ids=(r["execution_id"], *takeover),
                pods=(r["pod"],),
                start=r["expires_at"],
                end=r["end"],
                duration_ms=r["zombie_ms"],
                message=message,
                evidence=tuple(evidence),
                details={
                    "ttlMs": r["ttl_ms"],
                    "runtimeMs": r["runtime_ms"],
                    "openEnded": r["end_kind"] == "open",
                },
            )
        )
    return out
