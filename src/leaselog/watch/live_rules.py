"""What changes when the logs are still being written: the batch checks read an execution without an end
as "its log ends here"; live, it is still running. Three rules, applied on live ticks only (the final pass
at exit is the batch engine alone):

- **Still running?** The wall clock has passed an execution's lease expiry plus the clock-skew bound, and
  no line of it has come since (no end, no line past expiry either). Its logs cannot prove it still runs
  (it may have died without a word, its log may lag), so the finding is an `uncertain` `lease_outlived`
  (a warning), worded as the question it is: "no line yet, still running?". It has the identity of the
  `lease_outlived` the logs would establish (same execution, same start: the expiry), so a line past
  expiry turns it into that finding. Only for leases that expired while watching.
- **Overlap as it starts.** `overlapping_executions` is run with every running execution's end moved to
  the newest time read: a second execution that acquires while the first has not finished overlaps it
  from that moment (the batch check sees no overlap until both have logged past it). Where the overlap
  rests on an execution that has logged nothing since the other started, it is `uncertain` (a warning)
  and says so.
- **Absence waits.** Findings about something *not* logged (a crash: the log just ends; an attempt with
  no outcome; a stop never confirmed) are held back while an execution they name has logged within the
  last `hold_ms` (by the newest line's time, or the wall clock for a live lease): its next line may
  simply not be written yet.

A finding these rules made that the logs never establish is withdrawn at exit.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import polars as pl

from leaselog.checks import BY_CODE, CheckContext, findings_of
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Evidence, Finding, records

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


ABSENCE_CODES = ("LL205", "LL402", "LL601")  # crash/takeover, attempts not run, stop unconfirmed
RUNNING = ("open", "no_outcome")  # end_kinds of executions that may still log


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


def live_overlaps(ctx: CheckContext, newest: datetime | None) -> list[Finding]:
    """`overlapping_executions` with each running execution taken as running until `newest`."""
    ll101 = BY_CODE.get("LL101")
    x = ctx.executions
    if ll101 is None or newest is None or not x.height:
        return []
    running = (pl.col("end_kind") == "open") & (pl.col("clock") == "wall") & pl.col("start").is_not_null()
    if not x.select(running.any()).item():
        return []
    grown = x.with_columns(
        pl.when(running & (pl.col("end") < newest)).then(pl.lit(newest)).otherwise(pl.col("end")).alias("end")
    )
    found = records(findings_of(ll101, replace(ctx, executions=grown, derived={})))
    last_seen = dict(zip(zip(x["job_id"], x["execution_id"], strict=True), x["last_seen"], strict=True))
    out = []
    for f in found:
        quiet = [
            e
            for e in f.execution_ids
            if f.start is not None and last_seen.get((f.job_id, e), f.start) < f.start
        ]
        if quiet:
            since = ", ".join(f"{e} since {when(last_seen[(f.job_id, e)])}" for e in quiet)
            f = f.model_copy(
                update={
                    "certainty": "uncertain",
                    "severity": "warning" if f.severity == "error" else f.severity,
                    "message": f"{f.message} (Live: no line of {since}, and no end: still running?)",
                }
            )
        out.append(f)
    return out


def hold_back(
    findings: list[Finding],
    executions: pl.DataFrame,
    newest: datetime | None,
    now: datetime,
    started: datetime,
    hold_ms: float,
) -> list[Finding]:
    """`findings` without the absence findings whose executions may still log (see the module doc)."""
    if not any(f.code in ABSENCE_CODES for f in findings):
        return findings
    hold = timedelta(milliseconds=hold_ms)
    x = executions.filter(pl.col("end_kind").is_in(RUNNING))
    recent = set()
    for job, ex, seen in zip(x["job_id"], x["execution_id"], x["last_seen"], strict=True):
        if seen is None:
            continue
        silent = (newest - seen) if newest is not None else timedelta(0)
        if seen >= started - GRACE:  # a line read live: the wall clock tells how long it has been quiet
            silent = max(silent, now - seen)
        if silent < hold:
            recent.add((job, ex))
    return [
        f
        for f in findings
        if f.code not in ABSENCE_CODES or not any((f.job_id, e) in recent for e in f.execution_ids)
    ]
