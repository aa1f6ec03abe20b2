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

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import details, evidence, isoformat
from leaselog.checks.phrasing import durations, moments, text


def failed(renewals: pl.DataFrame) -> pl.DataFrame:
    return renewals.filter((pl.col("renewal_outcome") != "success") | pl.col("late")).sort("seq")


def detect(ctx: CheckContext) -> pl.DataFrame:
    f = failed(ctx.renewals)
    # (only the executions with a failed renewal are looked up: usually none or a few)
    nxt = ctx.executions.filter(pl.col("execution_id").is_in(f["execution_id"].unique().implode())).select(
        "job_id",
        "execution_id",
        "stop_requested_at",
        "stop_requested_line",
        "stopped_at",
        "end_kind",
        # (the execution's end: `end` of the rows is the finding's)
        pl.col("end").alias("execution_end"),
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
    late, late_by, outcome = pl.col("late").fill_null(False), pl.col("late_by_ms"), pl.col("renewal_outcome")
    # what the failure was, in the order the cases are told apart: a success the worker itself logged as
    # late (its deadline keeps a margin before the expiry); a success after the lease's deadline; a
    # rejection; a timeout or error that a later owner-checked success in time cleared; a timeout; any other
    case = (
        pl.when(late & (late_by.is_null() | (late_by <= 0)))
        .then(pl.lit("late_own"))
        .when(late)
        .then(pl.lit("late"))
        .when(outcome == "rejected")
        .then(pl.lit("rejected"))
        .when(pl.col("confirmed_at").is_not_null())
        .then(pl.lit("cleared"))
        .when(outcome == "timeout")
        .then(pl.lit("timeout"))
        .otherwise(pl.lit("failed"))
    )
    f = f.with_columns(
        case.alias("case"),
        # a latency is a duration: a negative one in the log (a clock step mid-call) is no figure to report
        pl.when(pl.col("latency_ms") >= 0).then(pl.col("latency_ms")).alias("lat_ms"),
        # when the execution asked to stop, against this renewal
        pl.when(pl.col("stop_requested_at").is_not_null() & (pl.col("stop_requested_at") >= pl.col("t")))
        .then(pl.lit("after"))
        .when(pl.col("stop_requested_at").is_not_null())
        .then(pl.lit("before"))
        .when(pl.col("end_kind") == "open")
        .then(pl.lit("log_ends"))
        .otherwise(pl.lit("none"))
        .alias("stop"),
    ).with_columns(
        pl.when(pl.col("case").is_in(["late_own", "late"]))
        .then(pl.lit("late"))
        .when(pl.col("case").is_in(["rejected", "timeout"]))
        .then(pl.col("case"))
        .when(outcome.fill_null("") == "")
        .then(pl.lit("error"))
        .otherwise(outcome)
        .alias("what")
    )
    return f.with_columns(
        pl.concat_list("execution_id").alias("execution_ids"),
        pl.concat_list("pod").alias("pods"),
        pl.col("t").alias("start"),
        pl.col("t").alias("end"),
        pl.col("lat_ms").alias("duration_ms"),
        # a rejection proves the lease is gone; the others leave it uncertain
        pl.when(pl.col("what") == "rejected")
        .then(pl.lit("error"))
        .otherwise(pl.lit(CHECK.severity))
        .alias("severity"),
        evidence((pl.col("file"), pl.col("line"), pl.format("renewal {}", "what"))).alias("evidence"),
        details(
            outcome=pl.col("what"),
            latencyMs=pl.col("lat_ms"),
            deadline=isoformat(pl.col("deadline")),
            # (a success the worker logged late may still be before the lease's deadline)
            lateByMs=pl.when(late & (late_by.fill_null(0) > 0)).then(late_by),
        ).alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    who = pl.format("{} ({})", text("execution_id"), text("pod"))
    job, outcome = text("job_id"), text("renewal_outcome")
    at, deadline = moments(rows, "t", "clock"), moments(rows, "deadline", "clock")
    lat_text = durations(rows["lat_ms"])
    has_lat = pl.col("lat_ms").is_not_null()
    lat_after = pl.when(has_lat).then(pl.format(" after {}", lat_text)).otherwise(pl.lit(""))
    lat_paren = pl.when(has_lat).then(pl.format(" (latency {})", lat_text)).otherwise(pl.lit(""))
    case = pl.col("case")
    what = (
        pl.when(case == "late_own")
        .then(
            pl.format(
                "{} renewed its lease on {}, and logged the success at {} as late{}: it came after the worker's "
                "own deadline, which keeps a safety margin before the lease's expiry at {}. The worker cannot "
                "count on it: ownership is uncertain and the execution must stop.",
                who,
                job,
                at,
                lat_paren,
                deadline,
            )
        )
        .when(case == "late")
        .then(
            pl.format(
                "{} renewed its lease on {}, but the success arrived at {}, {} after the local lease deadline {}{}: "
                "a success that arrives too late cannot justify another full lease interval starting at response "
                "time. Another worker may already hold the key.",
                who,
                job,
                at,
                durations(rows["late_by_ms"]),
                deadline,
                lat_paren,
            )
        )
        .when(case == "rejected")
        .then(
            pl.format(
                "{}'s lease renewal on {} was rejected at {}{}: the key no longer held its ownership value, so the "
                "lease was gone (expired, or another worker owns it). The execution has lost ownership and must "
                "stop at its next checkpoint.",
                who,
                job,
                at,
                lat_after,
            )
        )
        .when(case == "cleared")
        .then(
            pl.format(
                "{}'s lease renewal on {} {} at {}{}, leaving its ownership uncertain until a renewal at {} "
                "succeeded before the lease ran out: that owner-checked renewal proved the key was still its own.",
                who,
                job,
                pl.when(pl.col("renewal_outcome") == "timeout")
                .then(pl.lit("timed out"))
                .otherwise(pl.format("failed ({})", outcome)),
                at,
                lat_after,
                moments(rows, "confirmed_at", "clock"),
            )
        )
        .when(case == "timeout")
        .then(
            pl.format(
                "{}'s lease renewal on {} timed out at {}{}: a client timeout leaves the outcome uncertain (Redis "
                "may or may not have extended the lease), so ownership is uncertain from here on and the execution "
                "must stop.",
                who,
                job,
                at,
                lat_after,
            )
        )
        .otherwise(
            pl.format(
                "{}'s lease renewal on {} failed at {} ({}{}): the renewal did not happen as far as the worker can "
                "tell, so ownership is uncertain and the execution must stop.",
                who,
                job,
                at,
                outcome,
                lat_after,
            )
        )
    )
    stop = (
        pl.when(pl.col("stop") == "after")
        .then(pl.format(" It requested a stop at {}.", moments(rows, "stop_requested_at", "clock")))
        .when(pl.col("stop") == "before")
        .then(
            pl.format(" It had requested a stop already, at {}.", moments(rows, "stop_requested_at", "clock"))
        )
        .when(pl.col("stop") == "log_ends")
        .then(pl.format(" Its log ends at {} with no stop request.", moments(rows, "execution_end", "clock")))
        .otherwise(pl.lit(" No stop was requested."))
    )
    return rows.select(pl.concat_str(what, stop).alias("message")).to_series()


CHECK = Check("LL201", "renewal_failed", "warning", detect, explain)
