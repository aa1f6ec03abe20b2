"""The one rule only a live run can apply: the wall clock has passed an execution's lease expiry plus the
clock-skew bound, and no line of it has come since (no end, no line past expiry either).

Its logs cannot prove it still runs (it may have died without a word, its log may lag), so the finding is
an `uncertain` `lease_outlived` (a warning), worded as the question it is: "no line yet, still running?".
It has the identity of the `lease_outlived` the logs would establish (same execution, same start: the
expiry), so a line past expiry turns it into that finding; at exit, one the logs never established is
withdrawn. It only applies to leases that expired while watching (not to old logs read from the start).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from leaselog.checks.base import when
from leaselog.durations import format_duration
from leaselog.findings import Evidence, Finding

EXEC_COLUMNS = [
    "job_id",
    "execution_id",
    "pod",
    "clock",
    "end_kind",
    "acquired_at",
    "expires_at",
    "ttl_ms",
    "start",
    "end",
    "last_seen",
    "acquired_file",
    "acquired_line",
    "last_file",
    "last_line",
]
GRACE = timedelta(seconds=60)  # leases that expired up to this long before the watch started count too


def still_running(
    executions: pl.DataFrame, now: datetime, started: datetime, max_skew_ms: float
) -> list[Finding]:
    """The "no line yet, still running?" findings for `executions` at wall-clock time `now`."""
    if not executions.height or "expires_at" not in executions.columns:
        return []
    skew = timedelta(milliseconds=max_skew_ms)
    x = executions.filter(
        (pl.col("end_kind") == "open")
        & (pl.col("clock") == "wall")
        & pl.col("expires_at").is_not_null()
        & (pl.col("expires_at") >= started - GRACE)
        & (pl.col("expires_at") + skew < now)
        & (pl.col("last_seen") <= pl.col("expires_at"))
    )
    out = []
    for r in x.iter_rows(named=True):
        expires: datetime = r["expires_at"]
        past = (now - expires).total_seconds() * 1000
        message = (
            f"{r['execution_id']} ({r['pod']}) acquired {r['job_id']} at {when(r['acquired_at'])} with a "
            f"{format_duration(r['ttl_ms'])} lease that expired at {when(expires)}; the wall clock is "
            f"{format_duration(past)} past it (more than the {format_duration(max_skew_ms)} skew bound) "
            f"and no line of it since {when(r['last_seen'])}, nor an end: no line yet, still running?"
        )
        out.append(
            Finding.of(
                kind="lease_outlived",
                code="LL102",
                severity="warning",
                certainty="uncertain",
                job_id=r["job_id"],
                execution_ids=(r["execution_id"],),
                pods=(r["pod"],),
                start=expires,
                end=now,
                duration_ms=past,
                message=message,
                evidence=Evidence.known(
                    (r["acquired_file"], r["acquired_line"], "lease acquired"),
                    (r["last_file"], r["last_line"], "last line seen"),
                ),
                details={"ttlMs": r["ttl_ms"], "openEnded": True, "stillRunning": True},
            )
        )
    return out
