"""Clock steps inside one execution, undone by its own elapsedMs.

An execution that logs `elapsedMs` (a monotonic duration since it began) beside each timestamp carries a
second clock that never steps. Where two of its consecutive lines (one pod, one file, in the order the pod
wrote them: line order, or, in a file sorted by time, the order `leaselog.write_order` recovers from
elapsedMs) are further apart on the wall clock than on elapsedMs by more than the logger's jitter
(`Settings.clock_jitter_ms`), the wall clock stepped between them by exactly the difference (an NTP
step, a VM resumed with a stale clock). The lines after the step are then read with it undone: every
duration within the execution (runtime, renewal gaps, time past the lease) is right whichever side of the
step was the true time, and an end is never timed before its own start. `clock_step_ms` keeps what was
subtracted from each line's logged time, so the step itself is still reported (`clock_step`, LL104) and
the logged time can be shown.

elapsedMs is compared within one run (it never goes back, there or anywhere in the job's lines on the pod,
and its lifecycle does not start again after a run left open: a process restarted after a crash counts
from a new origin; a worker's uptime spans the runs it finished, so a step between two of them shows; and
a run left open that logs its end after the lifecycle started again, two finishes or two releases
following, lived on beside the new run in one process, so a step between the two shows too), and counts
only where it is a timeline: over the job's lines on the pod in the file, at least two of its steps, and
twice as many as disagree, agree with the wall clock (an `elapsedMs` that is the duration of one call
agrees nowhere). Lines without an execution id are taken by job, pod and thread. A step is the pod's
clock's: found in one lane (an execution, a thread), it is undone for every line of the job on that pod
in that file from its first line on, and two lanes that show it count it once.
"""

from __future__ import annotations

import polars as pl

from leaselog.clocks.rules import (
    CLOSES,
    LIFECYCLE,
    disagrees,
    is_timeline,
    ms,
    restart_explains,
    same_step,
    spike,
)
from leaselog.time_resolution import RESOLUTION_COLUMN, coarse_ms
from leaselog.vocabulary import PROCESS_STARTED
from leaselog.write_order import write_positions

__all__ = ["undo_clock_steps"]


def undo_clock_steps(df: pl.DataFrame, jitter_ms: float) -> pl.DataFrame:
    """`df` (build_events' frame: `file_index`, `line`, `pod`, `thread`, `job_id`, `execution_id`,
    `t_wall`, `elapsed_ms`) with `clock_step_ms` (ms subtracted from the line's logged time; null: none),
    `t_wall` less it, and `new_origin` (true: the job's first line on the pod after a start-up line, or
    after its container changed). A step is seen where it shows (one execution's lines, or one thread's
    without ids) and undone for every line of the job on that pod in that file from the step's first
    line on: the pod's clock stepped for all its threads."""
    # a lane: one thread's lines (it writes them one after the other, whatever execution they are of), else
    # one execution's; the job's on its pod where neither is logged
    who = pl.coalesce(pl.col("thread"), pl.lit("\x00") + pl.col("execution_id").fill_null(""))
    pod = pl.col("pod").fill_null("")
    # the container instance, where the lines name it: another one on the pod is a restarted process
    container = pl.col("container_id") if "container_id" in df.columns else pl.lit(None, dtype=pl.String)
    # what truncation alone makes the file's times disagree with elapsedMs by (leaselog.time_resolution)
    coarse = coarse_ms(pl.col(RESOLUTION_COLUMN)) if RESOLUTION_COLUMN in df.columns else pl.lit(0.0)
    narrow = (
        df.lazy()
        .with_row_index("_row")
        # (a process's start, which no job has, is kept only to say where the pod's elapsedMs begins anew)
        .filter(
            (pl.col("job_id").is_not_null() | (pl.col("event") == PROCESS_STARTED))
            & pl.col("t_wall").is_not_null()
        )
        .select(
            "_row",
            pl.struct("job_id", who.alias("who"), pod, "file_index").hash().alias("_k"),
            pl.struct("job_id", pod, "file_index").hash().alias("_p"),
            pl.struct(pod, "file_index").hash().alias("_f"),
            "t_wall",
            "elapsed_ms",
            "thread",
            "event",
            "execution_id",
            container.alias("_c"),
            coarse.alias("_coarse"),
            (pl.col("event") == PROCESS_STARTED).alias("_start"),
            pl.col("event").replace_strict(LIFECYCLE, default=None, return_dtype=pl.Int8).alias("_rank"),
            # whether the run is over at this line (an attempt turned away, a finish, a stop, a release)
            pl.when(pl.col("event").is_in(list(LIFECYCLE)))
            .then(pl.col("event").is_in(CLOSES))
            .alias("_closes"),
            pl.col("event").is_in(["job_finished", "job_stopped"]).alias("_fin"),
            (pl.col("event") == "lock_released").alias("_rel"),
        )
        .collect()
    )
    none = df.with_columns(
        pl.lit(None, dtype=pl.Float64).alias("clock_step_ms"),
        pl.lit(None, dtype=pl.Boolean).alias("new_origin"),
    )
    if not narrow.height or narrow["elapsed_ms"].null_count() == narrow.height:
        return none
    # `line` from here on: the line's place in the order its pod wrote it (leaselog.write_order: a file
    # sorted by time is read in its pods' write order; any other file in line order, its rows as read)
    narrow = write_positions(
        narrow.with_columns(pl.col("_row").alias("_pos"), pl.col("t_wall").alias("t")), jitter_ms
    ).select(pl.exclude("_pos", "t", "_sorted", "_w", "thread", "event"), pl.col("_w").alias("line"))
    # a line of another container than the pod's line before it in the file (that names one) is the
    # first of a restarted process: it starts a new elapsedMs origin, as a start-up line does
    # (most logs name no container: nothing to sort for)
    if narrow["_c"].null_count() == narrow.height:
        narrow = narrow.with_columns(pl.lit(False).alias("_cstart"))
    else:
        before = pl.col("_c").forward_fill().shift(1).over("_f")
        narrow = narrow.sort("_f", "line").with_columns(
            (pl.col("_c").is_not_null() & before.is_not_null() & (pl.col("_c") != before)).alias("_cstart")
        )
    origins = _after_start(narrow)
    if origins.height:
        flagged = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(origins["_row"].implode())
        none = none.with_columns(pl.when(flagged).then(True).alias("new_origin"))
    # an epoch: the pod's lines in the file (of every job) from one elapsedMs origin, in line order (where
    # elapsedMs goes back there, a process restarted, or an execution counts from its own start; at a
    # start-up line, a process started, whatever uptime it gives)
    el = (
        narrow.filter(pl.col("elapsed_ms").is_not_null())
        .sort("_f", "line")
        .with_columns(
            (
                (pl.col("_f") != pl.col("_f").shift(1)).fill_null(True)
                | pl.col("_start")
                | pl.col("_cstart")
                | (pl.col("elapsed_ms") < pl.col("elapsed_ms").shift(1)).fill_null(False)
            )
            .cum_sum()
            .alias("_epoch")
        )
        .filter(~pl.col("_start"))
        .sort("_k", "line")
    )
    new_k = (pl.col("_k") != pl.col("_k").shift(1)).fill_null(True)
    # a run: the lines of one key in one epoch (elapsedMs never goes back within a run), not across a
    # lifecycle that starts again after a run left open (a crash: the restarted process counts elapsedMs
    # from a new origin, which may lie past the old one's last value); runs that ended go on into the next
    # (a worker's uptime spans its runs: a step between two runs shows). A run left open that logs its end
    # after the lifecycle started again (two finishes, or two releases, before it starts again once more)
    # did not die there: two runs of one lane lived at once (no thread or id tells them apart), in one
    # process, and its elapsedMs runs on across them
    rank = pl.col("_rank").forward_fill().over("_k")
    closed = pl.col("_closes").forward_fill().over("_k")
    again = (pl.col("_rank") < rank.shift(1)).fill_null(False)
    begins = again & (pl.col("_rank") <= LIFECYCLE["job_started"])
    el = el.with_columns((new_k | begins).cum_sum().alias("_life")).with_columns(
        ((pl.col("_fin").sum().over("_life") > 1) | (pl.col("_rel").sum().over("_life") > 1)).alias("_both")
    )
    el = el.with_columns(
        (
            new_k
            | (pl.col("_epoch") != pl.col("_epoch").shift(1)).fill_null(True)
            | (pl.col("elapsed_ms") < pl.col("elapsed_ms").shift(1)).fill_null(True)
            | (again & ~closed.shift(1) & ~pl.col("_both")).fill_null(False)
        )
        .cum_sum()
        .alias("_g")
    )
    new_g = (pl.col("_g") != pl.col("_g").shift(1)).fill_null(True)

    def prev(c: str) -> pl.Expr:
        return pl.when(~new_g).then(pl.col(c).shift(1))

    el = el.with_columns(
        (ms(pl.col("t_wall") - prev("t_wall")) - (pl.col("elapsed_ms") - prev("elapsed_ms"))).alias("_drift"),
        prev("line").alias("prev_line"),
        prev("t_wall").alias("_prev_t"),
        prev("elapsed_ms").alias("_prev_el"),
        prev("_life").alias("_prev_life"),
        prev("execution_id").alias("_prev_x"),
    )
    # (a step only beyond the jitter and the time resolution: truncated times disagree by up to it)
    tol = jitter_ms + pl.col("_coarse")
    drift_off = disagrees(pl.col("_drift"), tol).fill_null(False)
    if not el.select(drift_off.any()).item():
        return none
    # a line whose two sides drift by opposite amounts is that line's own time (stamped late, a pause
    # between reading elapsedMs and the clock), not a step: it is left as logged
    el = el.with_columns(drift_off.alias("_off")).with_columns(spike(["_g"], tol).alias("_spike"))
    # whether elapsedMs is a timeline is the logger's habit: it is judged over every lane of the job on
    # the pod in the file (one thread alone may log too few lines to tell)
    timeline = (
        el.group_by("_p")
        .agg(
            (pl.col("_drift").is_not_null() & ~pl.col("_off")).sum().alias("_agree"),
            pl.col("_off").sum().alias("_disagree"),
        )
        .filter(is_timeline(pl.col("_agree"), pl.col("_disagree")))
        .select("_p")
    )
    # a jump forward between two runs (the earlier one over, not living on) that a restart explains as
    # well (leaselog.clocks.rules.restart_explains): the logs cannot tell, and the lines stay as logged
    # (leaselog.clocks.steps reports the jump as an uncertain step)
    last = narrow.group_by("_p", "execution_id").agg(pl.col("line").max().alias("_last"))
    restarts = (
        el.join(last.rename({"execution_id": "_prev_x"}), on=["_p", "_prev_x"], how="left")
        .filter(
            restart_explains(
                # (a run: the lines of one lane in one lifecycle; one left open that logs its end after
                # the next began lived on beside it)
                (pl.col("_life") != pl.col("_prev_life")) & ~pl.col("_both"),
                pl.col("_drift"),
                pl.col("elapsed_ms"),
                ms(pl.col("t_wall") - pl.col("_prev_t")),
                pl.col("_c"),
                pl.col("_last"),
                pl.col("line"),
                pl.col("_prev_x"),
                pl.col("execution_id"),
            )
        )
        .select("_p", "line")
    )
    steps = (
        el.join(timeline, on="_p", how="semi")
        .filter(pl.col("_off") & ~pl.col("_spike"))
        .join(restarts, on=["_p", "line"], how="anti")
        .select("_p", "line", "prev_line", "_drift", "_prev_t", "_prev_el", "_coarse")
        .sort("_p", "line")
    )
    steps = steps.filter(~same_step(tol))
    # a step moves every line after it against every line before it (back to the step before): where an
    # earlier line of the job on the pod agrees with the step's first line, the line before it was of
    # another origin (two attempts of one pod interleaved without ids or threads), not a step
    steps = steps.with_row_index("_s").with_columns(
        pl.col("line").shift(1).over("_p").fill_null(-1).alias("_since")
    )
    at = narrow.join(steps.select("_s", "_p", "line"), on=["_p", "line"]).select(
        "_s", pl.col("t_wall").alias("_tl"), pl.col("elapsed_ms").alias("_el")
    )
    agreed = (
        narrow.filter(pl.col("elapsed_ms").is_not_null() & pl.col("_p").is_in(steps["_p"].unique().implode()))
        .join(steps.select("_s", "_p", "_since", "prev_line").join(at, on="_s"), on="_p")
        .filter((pl.col("line") >= pl.col("_since")) & (pl.col("line") < pl.col("prev_line")))
        .filter(
            ~disagrees(ms(pl.col("_tl") - pl.col("t_wall")) - (pl.col("_el") - pl.col("elapsed_ms")), tol)
        )
        .select("_s")
        .unique()
    )
    steps = steps.join(agreed, on="_s", how="anti").drop("_s", "_since")
    if not steps.height:
        return none
    # another lane's line between the two that show the step (a renewal thread's, say) was logged after
    # it when its own elapsedMs, held against the line before the step, drifts by the step: the step's
    # first line is then the earliest such line
    between = (
        narrow.filter(pl.col("elapsed_ms").is_not_null() & pl.col("_p").is_in(steps["_p"].unique().implode()))
        .select(
            "_p", pl.col("line").alias("_l"), pl.col("t_wall").alias("_t"), pl.col("elapsed_ms").alias("_e")
        )
        .join(steps.with_row_index("_s"), on="_p")
        .filter((pl.col("_l") > pl.col("prev_line")) & (pl.col("_l") < pl.col("line")))
        .filter(
            ~disagrees(
                ms(pl.col("_t") - pl.col("_prev_t")) - (pl.col("_e") - pl.col("_prev_el")) - pl.col("_drift"),
                tol,
            )
        )
        .group_by("_s")
        .agg(pl.col("_l").min().alias("_first"))
    )
    steps = (
        steps.with_row_index("_s")
        .join(between, on="_s", how="left")
        .with_columns(pl.coalesce("_first", "line").alias("line"))
        .drop("_s", "_first")
    )
    # the correction accumulates over the steps of the job's lines on that pod in that file, from each
    # step's first line on, whatever thread or execution the line is of
    corr = steps.with_columns(pl.col("_drift").cum_sum().over("_p").alias("_corr")).select(
        "_p", "line", "_corr"
    )
    rows = (
        narrow.select("_row", "_p", "line")
        .filter(pl.col("_p").is_in(corr["_p"].unique().implode()))
        .sort("line")
        .join_asof(corr.sort("line"), on="line", by="_p", strategy="backward", check_sortedness=False)
        .filter(pl.col("_corr").fill_null(0.0) != 0.0)
        .select("_row", "_corr")
    )
    return (
        none.with_row_index("_row")
        .join(rows, on="_row", how="left", maintain_order="left")
        .with_columns(
            pl.col("_corr").alias("clock_step_ms"),
            pl.when(pl.col("_corr").is_not_null())
            .then(
                pl.col("t_wall") - pl.duration(microseconds=(pl.col("_corr") * 1000).round(0).cast(pl.Int64))
            )
            .otherwise(pl.col("t_wall"))
            .alias("t_wall"),
        )
        .drop("_row", "_corr")
    )


def _after_start(narrow: pl.DataFrame) -> pl.DataFrame:
    """(`_row`) of each job's first line with elapsedMs on a pod in a file after a process's start-up line
    there, or the first line of another container (in write order): from it on, the job's elapsedMs
    counts from the new process's start."""
    starts = (
        narrow.filter(pl.col("_start") | pl.col("_cstart"))
        .select("_f", pl.col("line").alias("_start_line"))
        .sort("_start_line")
    )
    if not starts.height:
        return pl.DataFrame(schema={"_row": pl.UInt32})
    lines = (
        narrow.filter(~pl.col("_start") & pl.col("elapsed_ms").is_not_null())
        .select("_row", "_p", "_f", "line")
        .sort("_p", "line")
        .with_columns(pl.col("line").shift(1).over("_p").alias("_prev"))
        .sort("line")
    )
    return (
        lines.join_asof(
            starts,
            left_on="line",
            right_on="_start_line",
            by="_f",
            strategy="backward",
            check_sortedness=False,
        )
        .filter(
            pl.col("_start_line").is_not_null()
            & (pl.col("_prev").is_null() | (pl.col("_prev") < pl.col("_start_line")))
        )
        .select("_row")
    )
