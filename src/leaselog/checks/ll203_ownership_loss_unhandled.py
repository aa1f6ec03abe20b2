"""Ownership was lost or became uncertain, and the execution kept working without a stop request.

Anti-pattern: the worker learned (a rejected, timed-out, failed or late renewal, or an explicit
`ownership_lost`) that it might no longer own the job, and carried on anyway. Ownership checks protect
renewal and release; they do not stop stale application work. From that moment its work ran without
the exclusivity it assumed, possibly beside a new owner.

Best practice: ownership loss must produce deliberate, observable behaviour at defined stopping points:
permanently mark the execution ownership-uncertain, request cancellation (log `job_stop_requested`),
check before each bounded unit of work and before completing, and log when it actually stopped.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.base import CheckContext, ev, event_at, ms_expr, renewal_phrase, when
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL203"
KIND = "ownership_loss_unhandled"
SEVERITY = "error"


def unhandled(executions: pl.DataFrame) -> pl.DataFrame:
    return (
        executions.filter(
            pl.col("ownership_uncertain_at").is_not_null()
            & pl.col("stop_requested_at").is_null()
            & pl.col("stopped_at").is_null()
            & (pl.col("last_work_at") > pl.col("ownership_uncertain_at"))
        )
        .with_columns(ms_expr("ownership_uncertain_at", "last_work_at").alias("worked_ms"))
        .sort("job_id", "ownership_uncertain_at")
    )


def check(ctx: CheckContext) -> list[Finding]:
    u = unhandled(ctx.executions)
    out: list[Finding] = []
    for r in u.iter_rows(named=True):
        ck = r["clock"]
        cause_ev = event_at(ctx.events, r["file"], r["ownership_uncertain_line"])
        if cause_ev is None or cause_ev["event"] == "lease_renewal":
            outcome = cause_ev["renewal_outcome"] if cause_ev else None
            late = outcome == "success"
            cause = renewal_phrase(outcome, late)
        else:
            reason = cause_ev["reason"]
            cause = f"ownership_lost{f' ({reason})' if reason else ''}"
        last_ev = event_at(ctx.events, r["last_file"], r["last_work_line"])
        last_name = last_ev["raw_event"] or last_ev["event"] if last_ev else "work"
        accepted = ctx.events.filter(
            (pl.col("job_id") == r["job_id"])
            & (pl.col("execution_id") == r["execution_id"])
            & (pl.col("event") == "completion")
            & (pl.col("outcome") == "accepted")
            & (pl.col("t") > r["ownership_uncertain_at"])
        )
        message = (
            f"{r['execution_id']} ({r['pod']}) lost its hold on {r['job_id']} at "
            f"{when(r['ownership_uncertain_at'], ck)} ({cause}) but no stop was requested: it kept working for "
            f"{format_duration(r['worked_ms'])}, until {when(r['last_work_at'], ck)} ({last_name})."
        )
        if accepted.height:
            message += f" Its completion was still accepted at {when(accepted['t'][0], ck)}."
        message += (
            " Ownership loss must produce deliberate, observable behaviour: mark the execution "
            "ownership-uncertain, request cancellation and stop at the next checkpoint."
        )
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=r["job_id"],
                execution_ids=(r["execution_id"],),
                pods=(r["pod"],),
                start=r["ownership_uncertain_at"],
                end=r["last_work_at"],
                duration_ms=r["worked_ms"],
                message=message,
                evidence=(
                    *ev(r["file"], r["ownership_uncertain_line"], "ownership lost / uncertain"),
                    *ev(r["last_file"], r["last_work_line"], "still working"),
                ),
                details={"cause": cause, "completionAcceptedAfter": bool(accepted.height)},
            )
        )
    return out
