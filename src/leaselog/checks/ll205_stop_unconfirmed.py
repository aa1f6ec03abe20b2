"""A stop was requested, and no later event shows whether the worker stopped.

Anti-pattern: logging `job_stop_requested` and nothing after it. The article insists that a stop request
should have a later event showing whether the worker actually stopped and how long that took; without
it, nobody can tell a clean stop from a worker that kept going, or measure stopping delay at all.

Best practice: log `job_stopped` (or `job_finished` with its status) when the execution actually ends,
with the time since the request, even when the stop came from a cancellation deep in the work.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import ev
from leaselog.checks.phrasing import when
from leaselog.findings import Finding

CODE = "LL205"
KIND = "stop_unconfirmed"
SEVERITY = "warning"


def check(ctx: CheckContext) -> list[Finding]:
    x = ctx.executions.filter(
        pl.col("stop_requested_at").is_not_null()
        & (pl.col("ended_at").is_null() | (pl.col("ended_at") < pl.col("stop_requested_at")))
    ).sort("job_id", "stop_requested_at")
    out: list[Finding] = []
    for r in x.iter_rows(named=True):
        ck = r["clock"]
        why = f" ({r['stop_reason']})" if r["stop_reason"] else ""
        message = (
            f"{r['execution_id']} ({r['pod']}) requested a stop of {r['job_id']} at "
            f"{when(r['stop_requested_at'], ck)}{why}, but no later event shows whether the worker stopped or "
            "how long that took"
        )
        if r["last_seen"] > r["stop_requested_at"]:
            message += f"; its last line is at {when(r['last_seen'], ck)}"
        else:
            message += "; the request is its last line"
        message += ". A stop request needs a later job_stopped event so stopping delay can be measured."
        evidence = [*ev(r["stop_requested_file"], r["stop_requested_line"], "stop requested")]
        if (r["last_file"], r["last_line"]) != (r["stop_requested_file"], r["stop_requested_line"]):
            evidence += ev(r["last_file"], r["last_line"], "last line, no stop confirmed")
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=r["job_id"],
                execution_ids=(r["execution_id"],),
                pods=(r["pod"],),
                start=r["stop_requested_at"],
                end=r["last_seen"],
                message=message,
                evidence=tuple(evidence),
                details={"reason": r["stop_reason"]},
            )
        )
    return out
