"""A stop was requested and never honoured: the job ran on to its normal finish.

Anti-pattern: treating a cancel request as a stop. The worker logged `job_stop_requested` (its lease was
uncertain, or it hit its maximum runtime), and then the work simply went on to `job_finished` as if
nothing had been asked: no checkpoint looked at the request. The article's point: "a cancel request is
not the same as stopping". Reported whatever `--stop-slo` is, since a quick finish is still not a stop
(a stop that was honoured, only slowly, is `stop_delayed`; one with no later event, `stop_unconfirmed`).

Best practice: check the cancellation flag before each bounded unit of work and before completing, end
with `job_stopped` (or `job_finished` with a stopped/cancelled status) when the request was honoured,
and never commit a result after a stop was requested for lost ownership.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import STOP_STATUSES, ms_expr
from leaselog.checks.phrasing import durations, moments, text
from leaselog.findings import Evidence, Finding, Severity

CODE = "LL206"
KIND = "stop_ignored"
SEVERITY: Severity = "warning"


def ignored(executions: pl.DataFrame) -> pl.DataFrame:
    """Executions with a stop request, no `job_stopped`, and a normal `job_finished` at or after the request."""
    return (
        executions.filter(
            pl.col("stop_requested_at").is_not_null()
            & pl.col("stopped_at").is_null()
            & (pl.col("finished_at") >= pl.col("stop_requested_at")).fill_null(False)
            & ~pl.col("finish_status").str.to_lowercase().is_in(STOP_STATUSES).fill_null(False)
        )
        .with_columns(ms_expr("stop_requested_at", "finished_at").alias("ran_on_ms"))
        .sort("job_id", "stop_requested_at")
    )


def check(ctx: CheckContext) -> list[Finding]:
    x = ignored(ctx.executions)
    if x.height == 0:
        return []
    message = pl.format(
        "{} ({}) requested a stop of {} at {}{} and never honoured it: no job_stopped followed, the job ran on "
        "for {} to its normal finish at {} (job_finished{}). A cancel request is not the same as "
        "stopping: no checkpoint looked at the request.",
        text("execution_id"),
        text("pod"),
        text("job_id"),
        moments(x, "stop_requested_at", "clock"),
        pl.when(pl.col("stop_reason").is_not_null())
        .then(pl.format(" ({})", pl.col("stop_reason")))
        .otherwise(pl.lit("")),
        durations(x["ran_on_ms"]),
        moments(x, "finished_at", "clock"),
        pl.when(pl.col("finish_status").is_not_null())
        .then(pl.format(", status {}", pl.col("finish_status")))
        .otherwise(pl.lit("")),
    )
    x = x.with_columns(message.alias("message"))
    out: list[Finding] = []
    for job_id, execution_id, pod, asked, finished, ran_on, reason, status, msg, rf, rl, ff, fl in zip(
        *(x[c].to_list() for c in _USED), strict=True
    ):
        out.append(
            Finding.of(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=job_id,
                execution_ids=(execution_id,),
                pods=(pod,),
                start=asked,
                end=finished,
                duration_ms=ran_on,
                message=msg,
                evidence=Evidence.known((rf, rl, "stop requested"), (ff, fl, "finished anyway")),
                details={"reason": reason, "finishStatus": status},
            )
        )
    return out


# what a finding is made of (only these columns reach Python), in the order `check` unpacks them
_USED = [
    "job_id",
    "execution_id",
    "pod",
    "stop_requested_at",
    "finished_at",
    "ran_on_ms",
    "stop_reason",
    "finish_status",
    "message",
    "stop_requested_file",
    "stop_requested_line",
    "finished_file",
    "finished_line",
]
