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

from dataclasses import replace

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import details, events_where, evidence
from leaselog.checks.phrasing import durations, moments, renewal_phrases, text
from leaselog.reconstruct import WORK_EVENTS
from leaselog.timebase import ms_expr


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


def detect(ctx: CheckContext) -> pl.DataFrame:
    u = unhandled(ctx.executions)
    keys = ["job_id", "execution_id"]
    # what happened on the line that cast doubt, and on the last work line (joined, not looked up per row).
    # One line can hold several records (an OTLP export's batch): only the record of the right kind, at
    # the right moment, is taken, and at most one per line, so a finding is never repeated.
    cols = [*keys, "file", "line", "t", "event", "raw_event", "renewal_outcome", "reason"]
    # only the events of the executions found are looked at (usually none or a few: then none at all)
    ours = pl.col("execution_id").is_in(u["execution_id"].unique().implode())
    if u.height == 0:
        ctx = replace(ctx, events=ctx.events.clear())
    doubt_ev = events_where(
        ctx, ours & pl.col("event").is_in(["lease_renewal", "ownership_lost"]), cols
    ).unique([*keys, "file", "line", "t"], keep="first", maintain_order=True)
    work_ev = events_where(ctx, ours & pl.col("event").is_in(WORK_EVENTS), cols).unique(
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
        events_where(ctx, ours & (pl.col("event") == "completion") & (pl.col("outcome") == "accepted"))
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
    lost = pl.col("cause_event") == "ownership_lost"
    reason = pl.col("reason")
    cause = (
        pl.when(lost & reason.is_not_null() & (reason != ""))
        .then(pl.format("ownership_lost ({})", reason))
        .when(lost)
        .then(pl.lit("ownership_lost"))
        .otherwise(renewal_phrases(pl.col("renewal_outcome"), pl.col("renewal_outcome") == "success"))
    )
    # (the execution's own trigger is no trigger of the finding)
    return (
        u.rename({"trigger": "execution_trigger"})
        .with_columns(
            cause.alias("cause"),
            pl.concat_list("execution_id").alias("execution_ids"),
            pl.concat_list("pod").alias("pods"),
            pl.col("ownership_uncertain_at").alias("start"),
            pl.col("last_work_at").alias("end"),
            pl.col("worked_ms").alias("duration_ms"),
            evidence(
                (
                    pl.col("ownership_uncertain_file"),
                    pl.col("ownership_uncertain_line"),
                    "ownership lost / uncertain",
                ),
                (pl.col("last_work_file"), pl.col("last_work_line"), "still working"),
            ).alias("evidence"),
        )
        .with_columns(
            details(cause=pl.col("cause"), completionAcceptedAfter=pl.col("accepted_at").is_not_null()).alias(
                "details"
            )
        )
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    ck = "clock"
    last_name = pl.col("last_name")
    return rows.select(
        pl.concat_str(
            pl.format(
                "{} ({}) lost its hold on {} at {} ({}) but no stop was requested: it kept working for {}, until "
                "{} ({}).",
                text("execution_id"),
                text("pod"),
                text("job_id"),
                moments(rows, "ownership_uncertain_at", ck),
                pl.col("cause"),
                durations(rows["worked_ms"]),
                moments(rows, "last_work_at", ck),
                pl.when(last_name.is_null() | (last_name == "")).then(pl.lit("work")).otherwise(last_name),
            ),
            pl.when(pl.col("accepted_at").is_not_null())
            .then(pl.format(" Its completion was still accepted at {}.", moments(rows, "accepted_at", ck)))
            .otherwise(pl.lit("")),
            pl.lit(
                " Ownership loss must produce deliberate, observable behaviour: mark the execution "
                "ownership-uncertain, request cancellation and stop at the next checkpoint."
            ),
        ).alias("message")
    ).to_series()


CHECK = Check("LL203", "ownership_loss_unhandled", "error", detect, explain)
