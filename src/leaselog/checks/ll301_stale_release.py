"""A release found someone else's lease (or none): the owner check refused to delete it.

Anti-pattern: the worker's lease had already expired, so its owner-checked release (`release_deleted_0`)
deleted nothing. The check did its job, protecting the new owner's lease from a late cleanup, but it is
proof that the worker finished its work after it had lost the lock.

Best practice: keep the owner-checked release (a plain GET then DEL would have deleted the new owner's
lock), and treat a stale release as a symptom: the work before it ran unprotected.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.base import CheckContext, ev, when
from leaselog.findings import Finding

CODE = "LL301"
KIND = "stale_release"
SEVERITY = "warning"


# what a finding is phrased from (rows carry only these into Python)
_USED = [
    "job_id",
    "execution_id",
    "pod",
    "clock",
    "t",
    "raw_event",
    "file",
    "line",
    "expires_at",
    "holder",
    "holder_pod",
    "holder_acquired",
    "holder_file",
    "holder_line",
]


def check(ctx: CheckContext) -> list[Finding]:
    rel = ctx.events.filter((pl.col("event") == "lock_released") & (pl.col("released") == False))  # noqa: E712
    if rel.height == 0:
        return []
    holders = ctx.leases.select(
        "job_id",
        pl.col("execution_id").alias("holder"),
        pl.col("pod").alias("holder_pod"),
        pl.col("acquired_at").alias("holder_acquired"),
        pl.col("valid_until").alias("holder_until"),
        pl.col("acquired_file").alias("holder_file"),
        pl.col("acquired_line").alias("holder_line"),
    )
    own = ctx.leases.select("job_id", "execution_id", "expires_at", "acquired_at")
    rel = rel.join(own, on=["job_id", "execution_id"], how="left")
    cand = rel.join(holders, on="job_id", how="left").filter(
        pl.col("holder").is_null()
        | (
            (pl.col("holder") != pl.col("execution_id"))
            & (pl.col("holder_acquired") <= pl.col("t"))
            & (pl.col("holder_until").is_null() | (pl.col("holder_until") >= pl.col("t")))
        )
    )
    # keep releases that matched no holder too
    found = cand.group_by("seq", maintain_order=True).first()
    missing = rel.join(found.select("seq"), on="seq", how="anti").with_columns(
        pl.lit(None, dtype=pl.String).alias("holder")
    )
    out: list[Finding] = []
    rows = pl.concat([found, missing], how="diagonal_relaxed").sort("seq").select(_USED)
    for r in rows.iter_rows(named=True):
        ck = r["clock"]
        base = f"{r['execution_id']} ({r['pod']}) released {r['job_id']} at {when(r['t'], ck)} and deleted nothing"
        raw = r["raw_event"]
        if raw and raw != "lock_released":
            base += f" ({raw})"
        ids: tuple[str, ...] = (r["execution_id"],)
        pods: tuple[str, ...] = (r["pod"],)
        evidence = ev(r["file"], r["line"], "release deleted nothing")
        if r["holder"] is not None:
            message = (
                f"{base}: the key belonged to {r['holder']} ({r['holder_pod']}), which acquired it at "
                f"{when(r['holder_acquired'], ck)}. The owner check protected {r['holder']}'s lease; "
                f"{r['execution_id']}'s work before this release ran without the lock."
            )
            ids += (r["holder"],)
            pods = tuple(dict.fromkeys([*pods, r["holder_pod"]]))
            evidence += ev(r["holder_file"], r["holder_line"], "current owner acquired")
        elif r.get("expires_at") is not None and r["expires_at"] > r["t"]:
            # by the log the lease was still valid: the key vanished (failover, eviction, manual delete)
            message = (
                f"{base}, although by its log its lease was valid until {when(r['expires_at'], ck)}: the key was "
                "gone or held by an owner not in these logs (a failover that lost it, an eviction, a manual "
                "delete). Whatever ran after that point ran without the lock."
            )
        else:
            expiry = f" at {when(r['expires_at'], ck)}" if r.get("expires_at") is not None else ""
            message = (
                f"{base}: its lease had already expired{expiry} and no other execution in these logs held the "
                "key at that moment. The work before this release ran without the lock."
            )
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=r["job_id"],
                execution_ids=ids,
                pods=pods,
                start=r["t"],
                end=r["t"],
                message=message,
                evidence=tuple(evidence),
            )
        )
    return out
