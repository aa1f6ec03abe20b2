"""A stop was requested (or ownership lost) but the worker took longer than the stop target to stop.

Anti-pattern: cancellation is cooperative. A checkpoint can stop the next batch, but a worker that
checks rarely, or is stuck in a long unbounded call, keeps running for a long time after it was asked
to stop, and all that time it works without a valid lease.

Best practice: bounded work units with a cancellation check before each, bounded I/O timeouts, and a
stop target (`--stop-slo`, default 5s) measured from the request (or the ownership loss, when no stop
was requested but the worker did stop) to a logged `job_stopped`.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import STOP_STATUSES, ev, ms_expr
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL204"
KIND = "stop_delayed"
SEVERITY = "warning"


def stop_delays(executions: pl.DataFrame) -> pl.DataFrame:
    """Every execution with a stop request or explicit ownership loss, with the delay until it ended.

    `confirmed` says whether a job_stopped/job_finished after the request ends the delay; otherwise the
    delay runs to the last work line seen after the request (a lower bound).
    """
    x = executions.with_columns(
        pl.coalesce("stop_requested_at", "ownership_lost_at").alias("stop_from"),
        pl.when(pl.col("stop_requested_at").is_not_null())
        .then(pl.col("stop_requested_line"))
        .otherwise(pl.col("ownership_lost_line"))
        .alias("stop_from_line"),
        pl.when(pl.col("stop_requested_at").is_not_null())
        .then(pl.col("stop_requested_file"))
        .otherwise(pl.col("ownership_lost_file"))
        .alias("stop_from_file"),
        pl.when(pl.col("stop_requested_at").is_not_null())
        .then(pl.lit("stop request"))
        .otherwise(pl.lit("ownership loss"))
        .alias("stop_from_kind"),
    ).filter(pl.col("stop_from").is_not_null())
    confirmed = pl.col("ended_at").is_not_null() & (pl.col("ended_at") >= pl.col("stop_from"))
    return x.with_columns(
        confirmed.alias("confirmed"),
        pl.when(confirmed).then(pl.col("ended_at")).otherwise(pl.col("last_work_at")).alias("stop_to"),
        pl.when(confirmed)
        .then(pl.col("ended_line"))
        .otherwise(pl.col("last_work_line"))
        .alias("stop_to_line"),
        pl.when(confirmed)
        .then(pl.col("ended_file"))
        .otherwise(pl.col("last_work_file"))
        .alias("stop_to_file"),
    ).with_columns(ms_expr("stop_from", "stop_to").alias("stop_delay_ms"))


def check(ctx: CheckContext) -> list[Finding]:
    slo = ctx.settings.stop_slo_ms
    # an ownership loss with no stop request counts here only when the worker did stop in the end;
    # one that just kept working is ownership_loss_unhandled's finding, not a slow stop
    # a requested stop the job never honoured (it ran on to a normal finish) is stop_ignored's finding
    # (LL206), whatever its delay
    stopped = (pl.col("end_event") == "job_stopped") | pl.col("finish_status").str.to_lowercase().is_in(
        STOP_STATUSES
    ).fill_null(False)
    handled = ((pl.col("stop_from_kind") == "stop request") & ~(pl.col("confirmed") & ~stopped)) | (
        pl.col("confirmed") & (pl.col("end_event") == "job_stopped")
    )
    d = (
        stop_delays(ctx.executions)
        .filter((pl.col("stop_delay_ms") > slo) & handled)
        .sort("job_id", "stop_from")
    )
    out: list[Finding] = []
    for r in d.iter_rows(named=True):
        ck = r["clock"]
        why = f" ({r['stop_reason']})" if r["stop_from_kind"] == "stop request" and r["stop_reason"] else ""
        start = (
            f"{r['execution_id']} ({r['pod']}) had a {r['stop_from_kind']}{why} on {r['job_id']} at "
            f"{when(r['stop_from'], ck)}"
        )
        if r["confirmed"] and r["end_event"] == "job_stopped":
            message = f"{start} and confirmed it stopped at {when(r['stop_to'], ck)}"
        elif r["confirmed"]:
            message = (
                f"{start} and confirmed it stopped at {when(r['stop_to'], ck)} (job_finished, status "
                f"{r['finish_status']})"
            )
        else:
            message = (
                f"{start}; no stop was ever confirmed, and it was still working at {when(r['stop_to'], ck)}"
            )
        delay = format_duration(r["stop_delay_ms"])
        message += (
            f": {'at least ' if not r['confirmed'] else ''}{delay}, over the {format_duration(slo)} stop target. "
            "Cancellation is cooperative: the work between the request and the stop ran without a valid "
            "lease; check the distance between checkpoints."
        )
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=r["job_id"],
                execution_ids=(r["execution_id"],),
                pods=(r["pod"],),
                start=r["stop_from"],
                end=r["stop_to"],
                duration_ms=r["stop_delay_ms"],
                message=message,
                evidence=(
                    *ev(r["stop_from_file"], r["stop_from_line"], r["stop_from_kind"]),
                    *ev(
                        r["stop_to_file"], r["stop_to_line"], "stopped" if r["confirmed"] else "still working"
                    ),
                ),
                details={"stopSloMs": slo, "confirmed": r["confirmed"], "from": r["stop_from_kind"]},
            )
        )
    return out
