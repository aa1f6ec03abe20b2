"""A pod's wall clock stepped while it ran the job: its own log runs backwards, or disagrees with elapsedMs.

Anti-pattern: a host whose clock is stepped (an NTP step, a VM resumed with a stale clock, a manual
`date -s`) while it runs a job. Every timestamp after the step is off by the step's size: the log runs
backwards (lines out of order by more than the logger's usual jitter), or two lines of one execution
are further apart (or closer) on the wall clock than on their own monotonic `elapsedMs`. Any figure that
compares a moment before the step with one after it, or the stepped pod's moments with another pod's,
is off by up to the step: an overlap, a zombie time, a gap between renewals, and even the order of a
release and the next acquisition across pods. The causal facts in the logs (a release that deleted the
key comes before the next acquisition; fencing tokens increase) then win over the clock.

Best practice: slew clocks rather than step them on hosts that run leased jobs (chrony's `makestep`
only at boot), measure lease deadlines on a monotonic clock, and log `elapsedMs` beside the timestamp so
a step can be seen and sized; order events across pods by fencing tokens, not timestamps.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.causal import explained_by_steps
from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import details, evidence, steps_of
from leaselog.checks.offsets import step_rows
from leaselog.checks.phrasing import durations, moments, resolution_words, text
from leaselog.execution_runs import UNTOLD_NAMES


def _untold_steps(ctx: CheckContext, steps: pl.DataFrame) -> pl.DataFrame:
    """(job_id, file, line, `_untold`, `_one_origin`) of the steps beside a run the logs cannot tell from
    another (no thread, no distinct id: leaselog.execution_runs): whether the job's elapsedMs on that pod
    in that file never goes back in line order (one origin, the process's: any two of its lines compare,
    whichever run wrote each, so the step is the pod's clock's, not a guess of whose line is whose)."""
    untold = (
        ctx.executions.lazy()
        .filter(pl.col("execution_from").is_in(list(UNTOLD_NAMES)))
        .select("job_id", "execution_id")
        .collect()
    )
    keys = ["job_id", "pod", "file"]
    if not untold.height or not steps.height:
        return pl.DataFrame(
            schema={
                "job_id": pl.String,
                "file": pl.String,
                "line": pl.Int64,
                "_untold": pl.Boolean,
                "_one_origin": pl.Boolean,
            }
        )
    near = steps.filter(
        pl.struct("job_id", "execution_id").is_in(untold.to_struct().implode())
        | pl.struct("job_id", pl.col("prev_execution_id").alias("execution_id")).is_in(
            untold.to_struct().implode()
        )
    ).select(*keys, "line")
    one_origin = (
        ctx.events.lazy()
        .filter(pl.col("elapsed_ms").is_not_null() & pl.col("file").is_not_null())
        .join(near.lazy().select(keys).unique(), on=keys, how="semi", nulls_equal=True)
        .sort(*keys, "line", "seq")
        .group_by(keys)
        .agg((pl.col("elapsed_ms").diff().min().fill_null(0.0) >= 0).alias("_one_origin"))
        .collect()
    )
    return (
        near.join(one_origin, on=keys, how="left", nulls_equal=True)
        .select(
            "job_id", "file", "line", pl.lit(True).alias("_untold"), pl.col("_one_origin").fill_null(False)
        )
        .unique(["job_id", "file", "line"])
    )


def detect(ctx: CheckContext) -> pl.DataFrame:
    explained = explained_by_steps(ctx)
    # a step no line shows (no elapsedMs on the pod), where the ordering facts show its offset change
    by_facts = step_rows(ctx)
    steps = steps_of(ctx).with_columns(
        pl.lit(False).alias("by_facts"),
        pl.lit(None, dtype=pl.String).alias("other_pod"),
        pl.lit(None, dtype=pl.Float64).alias("size_ms"),
    )
    if by_facts.height:
        steps = pl.concat(
            [steps, by_facts.with_columns(pl.lit(True).alias("by_facts")).select(steps.columns)],
            how="vertical_relaxed",
        )
    size = pl.col("step_ms").abs()
    two = (
        pl.col("prev_execution_id").ne_missing(pl.col("execution_id"))
        & pl.col("prev_execution_id").is_not_null()
    )
    steps = steps.join(_untold_steps(ctx, steps), on=["job_id", "file", "line"], how="left")
    fields = {
        "stepMs": pl.col("step_ms").abs(),
        "direction": pl.when(pl.col("step_ms") > 0).then(pl.lit("forward")).otherwise(pl.lit("backward")),
        "sizeExact": pl.col("exact") & (pl.col("within_ms").fill_null(0.0) == 0.0),
        "logRunsBackMs": pl.col("back_ms"),
        "file": pl.col("file"),
        "line": pl.col("line"),
        "contradicts": pl.col("contradicts"),
        "byCausalFacts": pl.col("by_facts"),
    }
    return steps.join(explained, on=["job_id", "file", "line"], how="left").with_columns(
        pl.when(two)
        .then(pl.concat_list("prev_execution_id", "execution_id"))
        .otherwise(pl.concat_list("execution_id"))
        .alias("execution_ids"),
        pl.when(pl.col("other_pod").is_null())
        .then(pl.concat_list("pod"))
        .otherwise(pl.concat_list("pod", "other_pod"))
        .alias("pods"),
        pl.min_horizontal("prev_at", "at").alias("start"),
        pl.max_horizontal("prev_at", "at").alias("end"),
        size.alias("duration_ms"),
        # a forward step between two runs that a restart of the process explains as well: the logs cannot
        # tell which (leaselog.clocks.steps)
        pl.when(pl.col("restart_at").is_not_null())
        .then(pl.lit("uncertain"))
        .otherwise(pl.lit("certain"))
        .alias("certainty"),
        evidence(
            (pl.col("file"), pl.col("prev_line"), "last line before the step"),
            (pl.col("file"), pl.col("line"), "first line after the step"),
        ).alias("evidence"),
        # beside runs not told apart: whether the pod's elapsedMs keeps one origin across them (then the
        # step holds whichever run wrote each line: leaselog.caveats keeps it certain)
        # at a coarse time resolution, how far the size may be off either way
        pl.when(pl.col("within_ms").fill_null(0.0) > 0.0)
        .then(details(**fields, sizeWithinMs=pl.col("within_ms")))
        .when(pl.col("restart_at").is_not_null())
        .then(details(**fields, orRestartAt=pl.col("restart_at").dt.to_string("%Y-%m-%dT%H:%M:%S%.3fZ")))
        .when(pl.col("_untold").fill_null(False) & ~pl.col("by_facts"))
        .then(details(**fields, elapsedOneOrigin=pl.col("_one_origin")))
        .otherwise(details(**fields))
        .alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    rows = rows.with_columns(pl.lit("wall").alias("_wall"))
    rows = rows.with_columns(
        durations(rows["duration_ms"]).alias("_size"),
        durations(rows["within_ms"]).alias("_within"),
        durations(rows["duration_ms"] + rows["within_ms"].fill_null(0.0)).alias("_upto"),
        resolution_words(rows["within_ms"]).alias("_words"),
        durations(rows["back_ms"]).alias("back_text"),
        moments(rows, "prev_at", "_wall").alias("prev_when"),
        moments(rows, "at", "_wall").alias("at_when"),
        moments(rows, "restart_at", "_wall").alias("restart_when"),
        durations(rows["elapsed_ms"]).alias("since_start"),
        durations(rows["elapsed_ms"] - rows["prev_elapsed_ms"]).alias("elapsed_text"),
        durations(pl.Series([ctx.settings.clock_jitter_ms] * rows.height, dtype=pl.Float64)).alias("jitter"),
    )
    # at a coarse time resolution the size is known only to it: said with the size
    rows = rows.with_columns(
        pl.when(pl.col("_words").is_not_null())
        .then(pl.format("{} (give or take {}: its timestamps are {})", "_size", "_within", "_words"))
        .otherwise(pl.col("_size"))
        .alias("size_text")
    )
    where = pl.format("{}:{}", text("file"), text("line"))
    forward = pl.col("step_ms") > 0
    how = (
        pl.when(pl.col("exact") & forward)
        .then(
            pl.format(
                "{}'s clock jumped forward by {} at {} ({}): from {} to {} its timestamps advance {} more than "
                "its elapsedMs ({}).",
                text("pod"),
                "size_text",
                where,
                text("execution_id"),
                "prev_when",
                "at_when",
                "_size",
                "elapsed_text",
            )
        )
        .when(pl.col("exact"))
        .then(
            pl.format(
                "{}'s clock stepped back by {} at {} ({}): from {} to {} its timestamps fall {} behind its "
                "elapsedMs ({}){}.",
                text("pod"),
                "size_text",
                where,
                text("execution_id"),
                "prev_when",
                "at_when",
                "_size",
                "elapsed_text",
                pl.when(pl.col("back_ms").is_not_null())
                .then(pl.format("; the log runs {} backwards", "back_text"))
                .otherwise(pl.lit("")),
            )
        )
        .when(pl.col("by_facts"))
        .then(
            pl.format(
                "{}'s clock stepped {} by at least {} between {}:{} and {}:{} ({} and {}){}: the facts that order "
                "its events against {}'s (a release that deleted the key, a worker turned away by the lock, "
                "fencing tokens) put the two clocks at one offset before and at another after, and {} logs no "
                "elapsedMs to show the step itself.",
                text("pod"),
                pl.when(forward).then(pl.lit("forward")).otherwise(pl.lit("back")),
                "size_text",
                text("file"),
                text("prev_line"),
                text("file"),
                text("line"),
                "prev_when",
                "at_when",
                pl.when(pl.col("other_pod").is_not_null())
                .then(pl.format(" (or {}'s clock the other way: neither logs elapsedMs)", text("other_pod")))
                .otherwise(pl.lit("")),
                pl.coalesce(pl.col("other_pod"), pl.lit("another pod")),
                text("pod"),
            )
        )
        .otherwise(
            pl.format(
                "{}'s log runs {} backwards at {} ({} after {}): its clock stepped back by at least that "
                "much (more than a logger's jitter of {}).",
                text("pod"),
                "back_text",
                where,
                "at_when",
                "prev_when",
                "jitter",
            )
        )
    )
    return rows.select(
        pl.concat_str(
            how,
            pl.when(pl.col("undone"))
            .then(
                pl.format(
                    " leaselog reads this execution's lines from here on with the step undone, so its own "
                    "durations hold; comparisons of {}'s moments with another pod's may still be off by up to {}.",
                    text("pod"),
                    "_upto",
                )
            )
            .otherwise(
                pl.format(
                    " Figures that compare a moment before this line with one after it, or {}'s moments with "
                    "another pod's, may be off by {}{}.",
                    text("pod"),
                    "_upto",
                    pl.when(pl.col("exact"))
                    .then(pl.lit(""))
                    .otherwise(pl.lit(" or more (without elapsedMs the step's full size is unknown)")),
                )
            ),
            pl.when(pl.col("restart_at").is_not_null())
            .then(
                pl.format(
                    " Or the clock did not step: {} may have restarted between the two runs, at about {}, after "
                    "its line before the step ({}), and counted elapsedMs anew ({} at this line); no start-up "
                    "line between says which, so this step is uncertain (log the process's start, as Spring "
                    'Boot\'s "Started ... in" line does, to tell).',
                    text("pod"),
                    "restart_when",
                    "prev_when",
                    "since_start",
                )
            )
            .otherwise(pl.lit("")),
            pl.when(pl.col("contradicts").is_not_null())
            .then(pl.format(" {}", pl.col("contradiction_text")))
            .otherwise(pl.lit("")),
        ).alias("message")
    ).to_series()


CHECK = Check("LL104", "clock_step", "warning", detect, explain)
