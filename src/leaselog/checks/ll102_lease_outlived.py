"""An execution kept running after its lease expired: for that long it ran as a zombie.

Anti-pattern: a Redis lock with a TTL is a lease. Its expiry makes the key available again; it does not
stop the code that acquired it. The job ran longer than the TTL (and no renewal, or no *confirmed*
renewal, extended it), so from the expiry on it ran without the exclusivity it assumed.

Best practice: a local lease deadline with a margin, renewal independent of the work loop, and a check
before each bounded unit of work that stops once the deadline has passed or ownership is uncertain.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext, derived
from leaselog.checks.frames import at_file
from leaselog.checks.phrasing import durations, moments, text
from leaselog.findings import NO_LINE, Evidence, Finding, Severity
from leaselog.reconstruct import elapsed_bounds

CODE = "LL102"
KIND = "lease_outlived"
SEVERITY: Severity = "error"


def zombies(executions: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Executions whose last moment alive lies after their lease's expiry (not after a release)."""
    return (
        executions.filter(pl.col("expires_at").is_not_null() & (pl.col("lease_end") == "expired"))
        # (elapsed_bounds reads only the events without a wall clock: picked out by the lazy engine, which
        # scans the event frame several times faster than an eager filter)
        .join(
            elapsed_bounds(events.lazy().filter(pl.col("clock") != "wall").collect()),
            on=["job_id", "execution_id"],
            how="left",
        )
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
    z = derived(ctx, "zombies", lambda: zombies(ctx.executions, ctx.events))
    if z.height == 0:
        return []
    # only what the findings are made of goes through the joins below (executions have ~80 columns)
    z = z.select(
        "job_id", "execution_id", "timeline", "pod", "clock", "ttl_ms", "renewals", "end_kind", "acquired_at",
        "expires_at", "end", "zombie_ms", "runtime_ms", "acquired_file", "acquired_line", "ended_file",
        "ended_line", "last_file", "last_line",
    )  # fmt: skip
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
    # the takeover counts only when it happened while the zombie still ran
    z = z.with_columns((pl.col("next_at") <= pl.col("end")).fill_null(False).alias("taken_over"))
    ck = "clock"
    message = pl.concat_str(
        pl.format(
            "{} ({}) acquired {} at {} with a {} lease; the lease expired at {} ({}) and {} {}: {} as a "
            "zombie without the lock.",
            text("execution_id"),
            text("pod"),
            text("job_id"),
            moments(z, "acquired_at", ck),
            durations(z["ttl_ms"]),
            moments(z, "expires_at", ck),
            pl.when(pl.col("renewals") == 0)
            .then(pl.lit("no renewal extended it"))
            .otherwise(pl.lit("no later renewal was confirmed")),
            pl.when(pl.col("end_kind") == "open")
            .then(pl.lit("its log ends"))
            .otherwise(pl.lit("it kept running until")),
            moments(z, "end", ck),
            durations(z["zombie_ms"]),
        ),
        pl.when("taken_over")
        .then(pl.format(" Meanwhile {} acquired the key at {}.", text("next_id"), moments(z, "next_at", ck)))
        .otherwise(pl.lit("")),
    )
    z = z.with_columns(
        message.alias("message"),
        at_file("ended", "last").alias("ends_file"),
        pl.coalesce("ended_line", "last_line").alias("ends_line"),
    )
    out: list[Finding] = []
    for (
        job_id, execution_id, pod, expires_at, end, zombie_ms, ttl_ms, runtime_ms, end_kind, message_text,
        acquired_file, acquired_line, ends_file, ends_line, taken_over, next_id, next_file, next_line,
    ) in zip(*(z[c].to_list() for c in _USED), strict=True):  # fmt: skip
        evidence = Evidence.known(
            (acquired_file, acquired_line, "lease acquired"),
            (ends_file, ends_line, "still running / ends"),
            (next_file, next_line, "another execution acquires") if taken_over else NO_LINE,
        )
        out.append(
            Finding.of(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=job_id,
                execution_ids=(execution_id, next_id) if taken_over else (execution_id,),
                pods=(pod,),
                start=expires_at,
                end=end,
                duration_ms=zombie_ms,
                message=message_text,
                evidence=evidence,
                details={"ttlMs": ttl_ms, "runtimeMs": runtime_ms, "openEnded": end_kind == "open"},
            )
        )
    return out


# what a finding is made of (only these columns reach Python), in the order `check` unpacks them
_USED = [
    "job_id",
    "execution_id",
    "pod",
    "expires_at",
    "end",
    "zombie_ms",
    "ttl_ms",
    "runtime_ms",
    "end_kind",
    "message",
    "acquired_file",
    "acquired_line",
    "ends_file",
    "ends_line",
    "taken_over",
    "next_id",
    "next_file",
    "next_line",
]
