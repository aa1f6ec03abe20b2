"""Ownership was lost or became uncertain, and the execution kept working without a stop request.

Anti-pattern: the worker learned (a rejected, timed-out, failed or late renewal, or an explicit
`ownership_lost`) that it might no longer own the job, and carried on anyway (after a timed-out or failed
renewal, past the expiry of the lease it had confirmed: until then the lease provably held). Ownership checks protect
renewal and release; they do not stop stale application work. From that moment its work ran without
the exclusivity it assumed, possibly beside a new owner.

Best practice: ownership loss must produce deliberate, observable behaviour at defined stopping points:
permanently mark the execution ownership-uncertain, request cancellation (log `job_stop_requested`),
check before each bounded unit of work and before completing, and log when it actually stopped.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import ev, events_where, ms_expr
from leaselog.checks.phrasing import renewal_phrase, when
from leaselog.durations import format_duration
from leaselog.findings import Finding
from leaselog.reconstruct import WORK_EVENTS

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
    if u.height == 0:
        return []
    keys = ["job_id", "execution_id"]
    # what happened on the line that cast doubt, and on the last work line (joined, not looked up per row).
    # One line can hold several records (an OTLP export's batch): only the record of the right kind, at
    # the right moment, is taken, and at most one per line, so a finding is never repeated.
    cols = [*keys, "file", "line", "t", "event", "raw_event", "renewal_outcome", "reason"]
    doubt_ev = events_where(ctx, pl.col("event").is_in(["lease_renewal", "ownership_lost"]), cols).unique(
        [*keys, "file", "line", "t"], keep="first", maintain_order=True
    )
    work_ev = events_where(ctx, pl.col("event").is_in(WORK_EVENTS), cols).unique(
        [*keys, "file", "line", "t"], keep="last", maintain_order=True
    )
    u = u.join(
        doubt_ev.rename(
            {
                "file": "ownership_uncertain_file",
                "line": "ownership_uncertain_line",
                "t": "ownership_uncertain_at",
                "event": "cause_event",
                "raw_event": "cause_raw",
            }
        ),
        on=[*keys, "ownership_uncertain_file", "ownership_uncertain_line", "ownership_uncertain_at"],
        how="left",
    ).join(
        work_ev.select(
            *keys,
            pl.col("file").alias("last_work_file"),
            pl.col("line").alias("last_work_line"),
            pl.col("t").alias("last_work_at"),
            pl.coalesce("raw_event", "event").alias("last_name"),
        ),
        on=[*keys, "last_work_file", "last_work_line", "last_work_at"],
        how="left",
    )
    accepted = (
        events_where(ctx, (pl.col("event") == "completion") & (pl.col("outcome") == "accepted"))
        .join(u.select(*keys, "ownership_uncertain_at"), on=keys, how="inner")
        .filter(pl.col("t") > pl.col("ownership_uncertain_at"))
        .group_by(keys)
        .agg(pl.col("t").min().alias("accepted_at"))
    )
    u = u.join(accepted, on=keys, how="left")
    # A renewal that timed out or errored only puts ownership in doubt: the lease it had confirmed still
    # held until its expiry, and a worker that retries the renewal meanwhile (and finishes, or stops, in
    # time) never worked without it. Left unhandled, it counts once the execution worked past that expiry.
    only_doubt = (pl.col("cause_event") == "lease_renewal") & pl.col("renewal_outcome").is_in(
        ["timeout", "error"]
    )
    u = u.filter(
        ~only_doubt.fill_null(False) | (pl.col("last_work_at") > pl.col("valid_until")).fill_null(True)
    )
    out: list[Finding] = []
    for r in u.iter_rows(named=True):
        ck = r["clock"]
        if r["cause_event"] == "ownership_lost":
            cause = "ownership_lost" + (f" ({r['reason']})" if r["reason"] else "")
        else:
            outcome = r["renewal_outcome"]
            cause = renewal_phrase(outcome, outcome == "success")
        message = (
            f"{r['execution_id']} ({r['pod']}) lost its hold on {r['job_id']} at "
            f"{when(r['ownership_uncertain_at'], ck)} ({cause}) but no stop was requested: it kept working for "
            f"{format_duration(r['worked_ms'])}, until {when(r['last_work_at'], ck)} ({r['last_name'] or 'work'})."
        )
        if r["accepted_at"] is not None:
            message += f" Its completion was still accepted at {when(r['accepted_at'], ck)}."
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
                    *ev(
                        r["ownership_uncertain_file"],
                        r["ownership_uncertain_line"],
                        "ownership lost / uncertain",
                    ),
                    *ev(r["last_work_file"], r["last_work_line"], "still working"),
                ),
                details={"cause": cause, "completionAcceptedAfter": r["accepted_at"] is not None},
            )
        )
    return out
