"""A completion was rejected or answered as a duplicate: the safeguard worked.

Anti-pattern: counting successful lock acquisitions as proof of result correctness (this finding is
the evidence that the destination did not rely on it). Here an execution that overlapped, or came second, tried to complete the job and the
destination's durable duplicate/stale-write policy turned it away, so the overlapping computation
cost load, not correctness. The finding is informational: it is evidence that repeated completion
attempts have a defined durable outcome.

Best practice: keep recording accepted, duplicate and rejected completion attempts separately, and
measure the wasted work of the rejected attempt, since increased load is still an impact.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import completions, details, evidence
from leaselog.checks.phrasing import moments, text

REJECTED = ["duplicate", "rejected", "conflict", "stale", "fenced", "already_completed"]


def detect(ctx: CheckContext) -> pl.DataFrame:
    comp = completions(ctx)
    rej = comp.filter(pl.col("outcome").is_in(REJECTED)).select(
        "job_id", "timeline", "execution_id", "pod", "clock", "t", "outcome", "token", "file", "line"
    )
    acc = (
        comp.filter(pl.col("outcome") == "accepted")
        .group_by("job_id", "timeline", maintain_order=True)
        .agg(
            pl.col("execution_id").alias("accepted_by"),
            pl.col("t").alias("acc_ts"),
            pl.col("token").alias("acc_tokens"),
            pl.col("file").alias("acc_files"),
            pl.col("line").alias("acc_lines"),
        )
    )
    rej = rej.join(acc, on=["job_id", "timeline"], how="left")
    # the job's one accepted completion, when it has exactly one
    one = (pl.col("accepted_by").list.len() == 1).fill_null(False)
    return rej.with_columns(
        pl.col("accepted_by").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        pl.when(one).then(pl.col("accepted_by").list.first()).alias("accepted_id"),
        pl.when(one).then(pl.col("acc_ts").list.first()).alias("accepted_at"),
        pl.when(one).then(pl.col("acc_tokens").list.first()).alias("accepted_token"),
        pl.when(one)
        .then(
            pl.concat_list("execution_id", pl.col("accepted_by").list.first()).list.unique(
                maintain_order=True
            )
        )
        .otherwise(pl.concat_list("execution_id"))
        .alias("execution_ids"),
        pl.concat_list("pod").alias("pods"),
        pl.col("t").alias("start"),
        pl.col("t").alias("end"),
        evidence(
            (pl.col("file"), pl.col("line"), pl.format("completion {}", pl.col("outcome"))),
            (
                pl.when(one).then(pl.col("acc_files").list.first()),
                pl.col("acc_lines").list.first(),
                "the accepted completion",
            ),
        ).alias("evidence"),
    ).with_columns(
        details(outcome=pl.col("outcome"), token=pl.col("token"), acceptedBy=pl.col("accepted_by")).alias(
            "details"
        ),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    rows = rows.with_columns(
        moments(rows, "t", "clock").alias("t_when"),
        moments(rows, "accepted_at", "clock").alias("accepted_when"),
    )
    n_accepted = pl.col("accepted_by").list.len()
    return rows.select(
        pl.format(
            "{} ({})'s completion of {} at {}{} was {}: the safeguard worked.{}",
            text("execution_id"),
            text("pod"),
            text("job_id"),
            "t_when",
            pl.when(pl.col("token").is_not_null())
            .then(pl.format(" (fencing token {})", pl.col("token")))
            .otherwise(pl.lit("")),
            pl.when(pl.col("outcome") == "duplicate")
            .then(pl.lit("answered as a duplicate"))
            .otherwise(pl.col("outcome")),
            pl.when(n_accepted == 1)
            .then(
                pl.format(
                    " The one accepted result is {}'s, at {}{}: the overlapping computation was load, not "
                    "corruption.",
                    text("accepted_id"),
                    "accepted_when",
                    pl.when(pl.col("accepted_token").is_not_null())
                    .then(pl.format(" with token {}", pl.col("accepted_token")))
                    .otherwise(pl.lit("")),
                )
            )
            .when(n_accepted > 1)
            .then(pl.format(" But {} other completions were accepted (see duplicate_effect).", n_accepted))
            .otherwise(pl.lit(" No accepted completion for this job is in the logs.")),
        ).alias("message")
    ).to_series()


CHECK = Check("LL503", "completion_rejected", "info", detect, explain)
