"""A lease renewal failed: rejected, timed out, errored, or succeeded too late to count.

Anti-pattern: treating a renewal as fire-and-forget. A rejected renewal means the key no longer holds
this worker's ownership value; a timeout or error leaves the outcome uncertain (Redis may or may not
have extended the lease); and a success whose response arrives after the local lease deadline cannot
justify another full lease interval starting at response time. In each case the worker no longer knows
it owns the job, yet nothing forces it to stop.

Best practice: renew on a task independent of the work loop, with a bounded Redis timeout; on rejection,
timeout, exception or late response, permanently mark the execution ownership-uncertain and request
cancellation; do not revive the attempt with a later success.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import ev
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL201"
KIND = "renewal_failed"
SEVERITY = "warning"


def failed(renewals: pl.DataFrame) -> pl.DataFrame:
    return renewals.filter((pl.col("renewal_outcome") != "success") | pl.col("late")).sort("seq")


def check(ctx: CheckContext) -> list[Finding]:
    f = failed(ctx.renewals)
    if f.height == 0:
        return []
    nxt = ctx.executions.select(
        "job_id", "execution_id", "stop_requested_at", "stop_requested_line", "stopped_at", "end_kind", "end"
    )
    f = f.join(nxt, on=["job_id", "execution_id"], how="left")
    # a timeout or error followed by an owner-checked success that still came in time: the success proved
    # the key was still this execution's (the lease never lapsed), which the finding says
    confirmed = (
        ctx.renewals.filter((pl.col("renewal_outcome") == "success") & ~pl.col("late"))
        .select("job_id", "execution_id", pl.col("seq").alias("ok_seq"), pl.col("t").alias("confirmed_at"))
        .sort("ok_seq")
    )
    f = f.sort("seq").join_asof(
        confirmed,
        left_on="seq",
        right_on="ok_seq",
        by=["job_id", "execution_id"],
        strategy="forward",
        allow_exact_matches=False,
        check_sortedness=False,
    )
    out: list[Finding] = []
    for r in f.iter_rows(named=True):
        ck = r["clock"]
        who = f"{r['execution_id']} ({r['pod']})"
        at = when(r["t"], ck)
        # a latency is a duration: a negative one in the log (a clock step mid-call) is no figure to report
        lat = r["latency_ms"] if r["latency_ms"] is None or r["latency_ms"] >= 0 else None
        lat_s = f" after {format_duration(lat)}" if lat is not None else ""
        outcome = r["renewal_outcome"]
        if r["late"] and (r["late_by_ms"] is None or r["late_by_ms"] <= 0):
            # the worker's own verdict: its local deadline keeps a margin before the lease's expiry
            what = "late"
            message = (
                f"{who} renewed its lease on {r['job_id']}, and logged the success at {at} as late"
                f"{' (latency ' + format_duration(lat) + ')' if lat is not None else ''}: it came after the "
                "worker's own deadline, which keeps a safety margin before the lease's expiry at "
                f"{when(r['deadline'], ck)}. The worker cannot count on it: ownership is uncertain and the "
                "execution must stop."
            )
        elif r["late"]:
            what = "late"
            message = (
                f"{who} renewed its lease on {r['job_id']}, but the success arrived at {at}, "
                f"{format_duration(r['late_by_ms'])} after the local lease deadline {when(r['deadline'], ck)}"
                f"{' (latency ' + format_duration(lat) + ')' if lat is not None else ''}: a success that "
                "arrives too late cannot justify another full lease interval starting at response time. "
                "Another worker may already hold the key."
            )
        elif outcome == "rejected":
            what = "rejected"
            message = (
                f"{who}'s lease renewal on {r['job_id']} was rejected at {at}{lat_s}: the key no longer held "
                "its ownership value, so the lease was gone (expired, or another worker owns it). The "
                "execution has lost ownership and must stop at its next checkpoint."
            )
        elif r["confirmed_at"] is not None:
            what = outcome or "error"
            how = "timed out" if outcome == "timeout" else f"failed ({outcome})"
            message = (
                f"{who}'s lease renewal on {r['job_id']} {how} at {at}{lat_s}, leaving its ownership uncertain "
                f"until a renewal at {when(r['confirmed_at'], ck)} succeeded before the lease ran out: that "
                "owner-checked renewal proved the key was still its own."
            )
        elif outcome == "timeout":
            what = "timeout"
            message = (
                f"{who}'s lease renewal on {r['job_id']} timed out at {at}{lat_s}: a client timeout leaves "
                "the outcome uncertain (Redis may or may not have extended the lease), so ownership is "
                "uncertain from here on and the execution must stop."
            )
        else:
            what = outcome or "error"
            message = (
                f"{who}'s lease renewal on {r['job_id']} failed at {at} ({outcome}{lat_s}): the renewal did not "
                "happen as far as the worker can tell, so ownership is uncertain and the execution must stop."
            )
        if r["stop_requested_at"] is not None and r["stop_requested_at"] >= r["t"]:
            message += f" It requested a stop at {when(r['stop_requested_at'], ck)}."
        elif r["stop_requested_at"] is not None:
            message += f" It had requested a stop already, at {when(r['stop_requested_at'], ck)}."
        elif r["end_kind"] == "open":
            message += f" Its log ends at {when(r['end'], ck)} with no stop request."
        else:
            message += " No stop was requested."
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                # a rejection proves the lease is gone; the others leave it uncertain
                severity="error" if what == "rejected" else SEVERITY,
                job_id=r["job_id"],
                execution_ids=(r["execution_id"],),
                pods=(r["pod"],),
                start=r["t"],
                end=r["t"],
                duration_ms=lat,
                message=message,
                evidence=tuple(ev(r["file"], r["line"], f"renewal {what}")),
                details={
                    "outcome": what,
                    "latencyMs": lat,
                    "deadline": None if r["deadline"] is None else r["deadline"].isoformat(),
                    # (a success the worker logged late may still be before the lease's deadline)
                    "lateByMs": r["late_by_ms"] if r["late"] and (r["late_by_ms"] or 0) > 0 else None,
                },
            )
        )
    return out
