"""A release errored or timed out: the lease may sit in Redis until it expires.

Anti-pattern: cleanup that can fail silently, or whose exception hides the job's own outcome. Unlike a
stale release (the owner check refused to delete someone else's lease), a failed release says nothing
about ownership: the release did not happen, or its outcome is unknown, so the key stays held until
its TTL runs out and the next owner waits that long.

Best practice: attempt an owner-checked release with a bounded timeout in `finally`, record a cleanup
failure separately without hiding the original job outcome, and keep the TTL short enough that a
failed release delays the next owner only briefly.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import ev, events_where, ms_expr
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL302"
KIND = "release_failed"
SEVERITY = "warning"

_OK = ["success", "ok", "deleted", "released", "true", "1"]


def check(ctx: CheckContext) -> list[Finding]:
    rel = events_where(
        ctx,
        (pl.col("event") == "lock_released")
        & pl.col("release_outcome").is_not_null()
        & ~pl.col("release_outcome").is_in(_OK),
    )
    if rel.height == 0:
        return []
    rel = (
        rel.join(
            ctx.executions.select("job_id", "execution_id", "expires_at"),
            on=["job_id", "execution_id"],
            how="left",
        )
        .with_columns(ms_expr("t", "expires_at").alias("held_ms"))
        .sort("seq")
    )
    out: list[Finding] = []
    for r in rel.iter_rows(named=True):
        ck = r["clock"]
        outcome = r["release_outcome"]
        verb = {"timeout": "timed out", "timed_out": "timed out"}.get(outcome, f"failed ({outcome})")
        message = (
            f"{r['execution_id']} ({r['pod']}) tried to release {r['job_id']} at {when(r['t'], ck)} and the "
            f"release {verb}"
        )
        if r["held_ms"] is not None and r["held_ms"] > 0:
            message += (
                f": its lease may stay in Redis until it expires at {when(r['expires_at'], ck)}, keeping the "
                f"next owner out for up to {format_duration(r['held_ms'])}"
            )
        else:
            message += ": whether the key was deleted is unknown"
        message += (
            ". Unlike a stale release, nothing here proves the key was someone else's. Record the cleanup "
            "failure separately without hiding the job's own outcome."
        )
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=r["job_id"],
                execution_ids=(r["execution_id"],),
                pods=(r["pod"],),
                start=r["t"],
                end=r["expires_at"] if r["held_ms"] is not None and r["held_ms"] > 0 else r["t"],
                duration_ms=r["held_ms"] if r["held_ms"] is not None and r["held_ms"] > 0 else None,
                message=message,
                evidence=tuple(ev(r["file"], r["line"], f"release {verb}")),
                details={"outcome": outcome},
            )
        )
    return out
