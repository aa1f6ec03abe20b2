"""Clock steps within one pod's log: where its wall clock jumped, by how much, and which way.

A pod writes its lines in the order things happened, on one wall clock. Two facts in its own log show
when that clock stepped (an NTP step, a VM resumed with a stale clock):
- the timestamps run backwards from one line to the next, by more than the logger's usual jitter
  (`Settings.clock_jitter_ms`): the clock stepped back by at least that much;
- two lines of one execution carry `elapsedMs` (a monotonic duration) and their wall-clock difference
  disagrees with their elapsedMs difference by more than the jitter: the clock stepped by exactly the
  disagreement (forward or back).

The times compared are the logged ones (`clock_step_ms` added back where the events were built with a
step undone: `leaselog.clocks.undo`). The log's line order is read from the file (`file`, `line`), not from `seq`: the events are numbered by
time within a file (a log written newest first, an async appender's small reorderings), which would
put the lines after a backward step before the ones they follow. A file written newest first (an export)
is read in reverse line order: its runs' lifecycles (trigger, acquisition, start, end, release) run
backwards in line order, or, where they cannot tell, its lines' times mostly do.

A pod's lines in a file sorted by time (a Loki export, `kubectl logs --prefix`) are compared in the order the
pod wrote them (`leaselog.write_order`, as the events were built): there elapsedMs shows a step, and the
log never runs backwards in line order. Rows are told apart by that place (one line can hold several
records: an OTLP batch).

Job-scoped: the lines compared are one thread's on one pod in one file (all of the pod's where no thread is
named) for a log running backwards, one execution's for elapsedMs. One row per step of the pod's clock: the
lanes that each show it (overlapping spans, alike in size) count once. A file whose runs' lifecycles go forward in some
places and backward in others (shuffled, sorted by another key) is in no write order: its line order
shows no step.
"""

from __future__ import annotations

import polars as pl

from leaselog.clocks.rules import (
    CLOSES,
    LIFECYCLE,
    disagrees,
    is_timeline,
    ms,
    new_group,
    restart_explains,
    spike,
)
from leaselog.time_resolution import RESOLUTION_COLUMN, coarse_ms
from leaselog.write_order import write_positions

__all__ = ["STEP_COLUMNS", "clock_steps", "execution_steps"]

# the columns of `clock_steps` (one row per step: the line before it and the first line after it)
STEP_COLUMNS: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "pod": pl.String(),
    "file": pl.String(),
    "line": pl.Int64(),
    "prev_line": pl.Int64(),
    "execution_id": pl.String(),
    "prev_execution_id": pl.String(),
    "at": pl.Datetime("us", "UTC"),
    "prev_at": pl.Datetime("us", "UTC"),
    # signed: + the clock jumped forward, - it stepped back (exact when `exact`, else a lower bound)
    "step_ms": pl.Float64(),
    "exact": pl.Boolean(),
    # the events after it are read with the step undone (`clock_step_ms` set: leaselog.clocks.undo)
    "undone": pl.Boolean(),
    # how far the timestamps run backwards from the line before to this one (null: they do not)
    "back_ms": pl.Float64(),
    "elapsed_ms": pl.Float64(),
    "prev_elapsed_ms": pl.Float64(),
    # a forward step between two runs that a restart of the process explains as well (null: none can):
    # the moment the new process would have started (`at` less its elapsedMs)
    "restart_at": pl.Datetime("us", "UTC"),
    # how far the step's true size may lie either side of `step_ms` through the file's time resolution
    # alone (leaselog.time_resolution; 0: the times are as fine as the figures)
    "within_ms": pl.Float64(),
}

# one execution's lines on one pod in one file (its lifecycle and its elapsedMs are compared along it)
_GROUP = ["job_id", "_pod", "file", "execution_id"]


def _prev(col: str, keys: list[str]) -> pl.Expr:
    return pl.when(~new_group(keys)).then(pl.col(col).shift(1))


# a step's row before it is phrased: its first line and the line before it (the place in write order,
# the time, elapsedMs and execution of each), and its size
_STEP_ROW = [
    "job_id",
    "file",
    "line",
    "_ord",
    "prev_line",
    "prev_at",
    "prev_elapsed_ms",
    "prev_ord",
    "prev_execution_id",
    "step_ms",
]


def _line_before(keys: list[str]) -> list[pl.Expr]:
    """The line before each one in `keys`' lanes (sorted): its line, place, time, elapsedMs, execution."""
    return [
        _prev("line", keys).alias("prev_line"),
        _prev("_ord", keys).alias("prev_ord"),
        _prev("t", keys).alias("prev_at"),
        _prev("elapsed_ms", keys).alias("prev_elapsed_ms"),
        _prev("execution_id", keys).alias("prev_execution_id"),
    ]


def _nothing_to_see(events: pl.DataFrame) -> bool:
    """True when no line can show a step, found without sorting (most inputs): no step was undone
    (`clock_step_ms` all null), no wall-clock line carries elapsedMs (nothing to hold the clock against),
    and, the events being in `seq` order, no file's lines come out of line order (build_events puts a
    file's lines in time order, so its time never runs back in line order)."""
    if "clock_step_ms" not in events.columns or events["clock_step_ms"].null_count() != events.height:
        return False
    if events.select((pl.col("elapsed_ms").is_not_null() & (pl.col("clock") == "wall")).any()).item():
        return False
    if not events["seq"].is_sorted():
        return False
    back = (pl.col("file") == pl.col("file").shift(1)) & (pl.col("line") < pl.col("line").shift(1))
    return not bool(events.select(back.fill_null(False).any()).item())


def clock_steps(events: pl.DataFrame, jitter_ms: float) -> pl.DataFrame:
    """Every clock step the lines of one job on one pod in one file show (`STEP_COLUMNS`), in job, file
    and line order."""
    if not events.height:
        return pl.DataFrame(schema=STEP_COLUMNS)
    if _nothing_to_see(events):
        return pl.DataFrame(schema=STEP_COLUMNS)
    # the times as logged: a step inside an execution is undone when the events are built
    # (`leaselog.clocks.undo`), and `clock_step_ms` says by how much
    undone = pl.col("clock_step_ms") if "clock_step_ms" in events.columns else pl.lit(None, dtype=pl.Float64)
    fresh = pl.col("new_origin").fill_null(False) if "new_origin" in events.columns else pl.lit(False)
    container = pl.col("container_id") if "container_id" in events.columns else pl.lit(None, dtype=pl.String)
    coarse = coarse_ms(pl.col(RESOLUTION_COLUMN)) if RESOLUTION_COLUMN in events.columns else pl.lit(0.0)
    logged = pl.col("t") + pl.duration(microseconds=(undone.fill_null(0.0) * 1000).round(0).cast(pl.Int64))
    x = (
        events.lazy()
        .filter((pl.col("clock") == "wall") & pl.col("file").is_not_null() & pl.col("line").is_not_null())
        .select(
            "job_id",
            "execution_id",
            "pod",
            "file",
            "line",
            "event",
            logged.alias("t"),
            "elapsed_ms",
            "thread",
            undone.is_not_null().alias("_moved"),
            undone.fill_null(0.0).alias("_undo"),
            fresh.alias("_fresh"),
            container.alias("_c"),
            coarse.alias("_coarse"),
            # the lane a log is written in order along: a thread (one writes its lines one after the
            # other, whatever execution they are of); a log that names no thread is one lane per pod
            pl.col("thread").fill_null("").alias("_lane"),
        )
        .with_columns(pl.col("pod").fill_null("").alias("_pod"))
        .collect()
    )
    if not x.height:
        return pl.DataFrame(schema=STEP_COLUMNS)
    # the order each pod wrote its lines in (leaselog.write_order, as the events were built with): a file
    # sorted by time is read in its pods' write order, any other in line order (one line's records in the
    # order they were read: the events' own order)
    x = (
        x.with_row_index("_seqi")
        .sort("file", "line", "_seqi")
        .with_row_index("_pos")
        .with_columns(pl.struct("_pod", "file").hash().alias("_f"))
    )
    x = write_positions(x, jitter_ms).drop("_seqi", "_pos", "_f", "thread").sort([*_GROUP, "_w"])
    # which way each file runs: one written newest first is read from its end. The lifecycle decides
    # (a run's trigger, acquisition, start, end and release come in that order, whatever the clock says);
    # where it cannot, the times of all the file's lines do
    rank = pl.col("event").replace_strict(LIFECYCLE, default=None, return_dtype=pl.Int8)
    step = rank - pl.when(~new_group(_GROUP)).then(rank.shift(1))
    dt = ms(pl.col("t") - _prev("t", ["file"]))
    lifecycle = (
        x.with_columns(step.alias("_dr"))
        .group_by("file")
        .agg((pl.col("_dr") < 0).sum().alias("_down"), (pl.col("_dr") > 0).sum().alias("_up"))
    )
    timing = (
        x.select("file", "line", "t")
        .sort("file", "line")
        .with_columns(dt.alias("_dt"))
        .group_by("file")
        .agg((pl.col("_dt") < 0).sum().alias("_back"), (pl.col("_dt") > 0).sum().alias("_ahead"))
    )
    way = lifecycle.join(timing, on="file").select(
        "file",
        (
            (pl.col("_down") > pl.col("_up"))
            # (one pair of lines that runs back is a step as likely as a file written backwards)
            | (
                (pl.col("_down") == pl.col("_up"))
                & (pl.col("_back") > pl.col("_ahead"))
                & (pl.col("_back") >= 2)
            )
        ).alias("_reversed"),
        # a file whose runs' lifecycles go forward in line order in some places and backward in others
        # (lines shuffled, sorted by another key, put together from several sources) is in no write
        # order: its line order says nothing about its clock
        ((pl.col("_down") > 0) & (pl.col("_up") > 0)).alias("_unordered"),
    )
    x = (
        x.join(way, on="file", how="left")
        .with_columns(
            # a pod's lines in time order are read in its write order, whichever way the file runs
            pl.when(pl.col("_reversed").fill_null(False) & ~pl.col("_sorted"))
            .then(-pl.col("_w"))
            .otherwise(pl.col("_w"))
            .alias("_ord")
        )
        .sort([*_GROUP, "_ord"])
    )
    # (a) consecutive lines of one lane (a thread, else an execution) whose time runs backwards, in a
    # file written in order (a pod's lines in time order never run backwards in line order)
    lanes = ["job_id", "_pod", "file", "_lane"]
    back = (
        x.filter(~pl.col("_unordered").fill_null(False) & ~pl.col("_sorted"))
        .sort([*lanes, "_ord"])
        .with_columns(
            _prev("t", lanes).alias("prev_at"),
            _prev("line", lanes).alias("prev_line"),
            _prev("execution_id", lanes).alias("prev_execution_id"),
            _prev("elapsed_ms", lanes).alias("_prev_el"),
            _prev("_ord", lanes).alias("prev_ord"),
        )
        .with_columns(ms(pl.col("prev_at") - pl.col("t")).alias("back_ms"))
        .filter(pl.col("back_ms") > jitter_ms + pl.col("_coarse"))
    )
    # (b) consecutive lines of one execution whose wall clock disagrees with their elapsedMs
    keys = _GROUP
    e = (
        x.filter(pl.col("elapsed_ms").is_not_null())
        .sort([*keys, "_ord"])
        .with_columns(
            _prev("t", keys).alias("prev_at"),
            _prev("line", keys).alias("prev_line"),
            _prev("elapsed_ms", keys).alias("prev_elapsed_ms"),
            _prev("_ord", keys).alias("prev_ord"),
        )
        .with_columns(
            (pl.col("elapsed_ms") - pl.col("prev_elapsed_ms")).alias("_del"),
            (ms(pl.col("t") - pl.col("prev_at")) - (pl.col("elapsed_ms") - pl.col("prev_elapsed_ms"))).alias(
                "_drift"
            ),
        )
    )
    # elapsedMs is a timeline only where it never goes back and most steps agree with the wall clock
    # (an `elapsedMs` that is the duration of one operation agrees nowhere): a level shift, not noise
    # (beyond the jitter and the time resolution: truncated times disagree with elapsedMs by up to it)
    tol = jitter_ms + pl.col("_coarse")
    off = disagrees(pl.col("_drift"), tol)
    timeline = (
        e.group_by(keys)
        .agg(
            (pl.col("_del") >= 0).all().alias("_monotonic"),
            (~off).sum().alias("_agree"),
            off.sum().alias("_disagree"),
        )
        .filter(pl.col("_monotonic") & is_timeline(pl.col("_agree"), pl.col("_disagree")))
        .select(keys)
    )
    # one line whose two sides disagree by opposite amounts is that line's own time (stamped late, a pause
    # between reading elapsedMs and the clock), not a step of the clock
    e = e.with_columns(off.fill_null(False).alias("_off")).with_columns(spike(keys, tol).alias("_spike"))
    # (a row is told by its place in write order: one line can hold several records, an OTLP batch)
    back = back.join(e.filter("_spike").select("_ord"), on="_ord", how="anti")
    exact = (
        e.join(timeline, on=keys, how="semi")
        .filter(pl.col("_off") & ~pl.col("_spike"))
        .with_columns(pl.col("execution_id").alias("prev_execution_id"), pl.col("_drift").alias("step_ms"))
        .select(*_STEP_ROW, pl.lit(True).alias("exact"))
    )
    # (c) where the events were built with a step undone (leaselog.clocks.undo: along the job's lines on
    # the pod, across its runs), the step is where the correction changes
    pod_lines = ["job_id", "_pod", "file"]
    moved = (
        x.sort([*pod_lines, "_w"])
        .with_columns(
            *_line_before(pod_lines),
            (pl.col("_undo") - _prev("_undo", pod_lines)).alias("step_ms"),
        )
        .filter(pl.col("step_ms").abs() > 0)
        .select(*_STEP_ROW, pl.lit(True).alias("exact"))
    )
    # (d) a jump forward between two runs that a restart explains as well is left as logged
    # (leaselog.clocks.undo): it is where the job's lines on the pod with elapsedMs, one run over and the
    # next begun with no start-up line between, advance more on the wall clock than on elapsedMs (kept
    # only where a restart explains it: `_restart_at`)
    closes = pl.col("event").is_in(CLOSES)
    begins = (
        pl.col("event").replace_strict(LIFECYCLE, default=None, return_dtype=pl.Int8)
        <= LIFECYCLE["job_started"]
    )
    jumps = (
        x.filter(pl.col("elapsed_ms").is_not_null())
        .sort([*pod_lines, "_w"])
        .with_columns(
            *_line_before(pod_lines),
            pl.when(~new_group(pod_lines)).then(closes.shift(1)).alias("_closed"),
            (pl.col("_undo") == _prev("_undo", pod_lines)).alias("_same_undo"),
        )
        .with_columns(
            (ms(pl.col("t") - pl.col("prev_at")) - (pl.col("elapsed_ms") - pl.col("prev_elapsed_ms"))).alias(
                "step_ms"
            )
        )
        .filter(
            pl.col("_closed").fill_null(False)
            & begins.fill_null(False)
            & ~pl.col("_fresh")
            & (pl.col("elapsed_ms") >= pl.col("prev_elapsed_ms")).fill_null(False)
            & (pl.col("step_ms") > tol).fill_null(False)
            & pl.col("_same_undo").fill_null(False)
        )
        .select(*_STEP_ROW, pl.lit(True).alias("exact"))
    )
    exact = pl.concat([exact, moved.join(exact, on="_ord", how="anti")])
    exact = pl.concat([exact, jumps.join(exact, on="_ord", how="anti")])
    rows = x.select("pod", "_pod", "execution_id", "t", "elapsed_ms", "_moved", "_ord", "_c", "_coarse")
    found = (
        exact.join(back.select("_ord", "back_ms"), on="_ord", how="left")
        .vstack(
            back.join(exact, on="_ord", how="anti").select(
                "job_id",
                "file",
                "line",
                "_ord",
                "prev_line",
                "prev_at",
                pl.col("_prev_el").alias("prev_elapsed_ms"),
                "prev_ord",
                "prev_execution_id",
                (-pl.col("back_ms")).alias("step_ms"),
                pl.lit(False).alias("exact"),
                "back_ms",
            )
        )
        .join(rows, on="_ord", how="left")
        .unique("_ord", keep="first", maintain_order=True)
    )
    found = (
        _one_per_step(found, jitter_ms)
        .join(jumps.select("_ord", pl.lit(True).alias("_jump")), on="_ord", how="left")
        .with_columns(pl.col("_jump").fill_null(False))
        .with_columns(
            (pl.col("exact") & pl.col("_moved").fill_null(False) & ~pl.col("_jump")).alias("undone")
        )
    )
    # a jump of (d) that no restart explains was undone (and found by (c)), or is none
    found = (
        _restart_at(found, x)
        .filter(~pl.col("_jump") | pl.col("restart_at").is_not_null())
        .with_columns(pl.col("_coarse").fill_null(0.0).alias("within_ms"))
    )
    return (
        found.select([pl.col("t").alias("at") if c == "at" else pl.col(c) for c in STEP_COLUMNS])
        .cast(pl.Schema(STEP_COLUMNS))
        .sort("job_id", "file", "line")
    )


def _restart_at(found: pl.DataFrame, x: pl.DataFrame) -> pl.DataFrame:
    """`found` with `restart_at`: a forward step between two runs of the job on the pod, after the earlier
    run's last line, whose first line's elapsedMs is shorter than the wall-clock gap before it, reads as
    well as a restart of the process (it counted elapsedMs anew, from a start after the line before; a
    restart always reads as a forward step: the new process's elapsedMs runs past the old one's last
    value only if it began after it). A start-up line between would have said so (a new elapsedMs
    origin: leaselog.clocks.undo); without one the logs cannot tell. A run that logs a line after the
    step's first line lived across it: its process did not restart. Nor did it where the line names its
    container: another container would have begun a new origin."""
    last = (
        x.filter(pl.col("execution_id").is_not_null())
        .group_by("job_id", "_pod", "file", "execution_id")
        .agg(pl.col("_ord").max().alias("_prev_last"))
        .rename({"execution_id": "prev_execution_id"})
    )
    restart = pl.col("exact") & restart_explains(
        # (the executions are told apart by now: another one is another run)
        pl.col("prev_execution_id").is_not_null()
        & pl.col("prev_execution_id").ne_missing(pl.col("execution_id")),
        pl.col("step_ms"),
        pl.col("elapsed_ms"),
        ms(pl.col("t") - pl.col("prev_at")),
        pl.col("_c"),
        pl.col("_prev_last"),
        pl.col("_ord"),
        pl.col("prev_execution_id"),
        pl.col("execution_id"),
    )
    return (
        found.join(
            last, on=["job_id", "_pod", "file", "prev_execution_id"], how="left", maintain_order="left"
        )
        .with_columns(
            pl.when(restart)
            .then(
                pl.col("t") - pl.duration(microseconds=(pl.col("elapsed_ms") * 1000).round(0).cast(pl.Int64))
            )
            .alias("restart_at")
        )
        .drop("_prev_last")
    )


def _one_per_step(found: pl.DataFrame, jitter: float) -> pl.DataFrame:
    """One row per step of a pod's clock: the lanes of a pod's file (its threads, its executions) that
    each saw it between two of their lines (spans that overlap, the same way, alike in size or one only a
    lower bound) show the same step; the one elapsedMs sized is kept, else the largest."""
    f = found.with_columns(
        pl.struct("job_id", "_pod", "file").hash().alias("_p"),
        pl.col("_ord").alias("_o"),
        pl.col("prev_ord").alias("_po"),
    ).sort("_p", "_o")
    same_p = pl.col("_p") == pl.col("_p").shift(1)
    overlaps = pl.col("_po") < pl.col("_o").shift(1)
    d, d0 = pl.col("step_ms"), pl.col("step_ms").shift(1)
    jitter_ms = jitter + pl.col("_coarse").fill_null(0.0)
    alike = ((d - d0).abs() <= jitter_ms) | (
        (d.sign() == d0.sign())
        & (
            (~pl.col("exact") & (d.abs() <= d0.abs() + jitter_ms))
            | (~pl.col("exact").shift(1) & (d0.abs() <= d.abs() + jitter_ms))
        )
    )
    same = (same_p & overlaps & alike).fill_null(False)
    return (
        f.with_columns((~same).cum_sum().alias("_step"))
        .with_columns(pl.col("back_ms").max().over("_step").alias("back_ms"))
        .sort("_step", pl.col("exact"), "_o", pl.col("step_ms").abs(), descending=[False, True, False, True])
        .unique("_step", keep="first", maintain_order=True)
        .drop("_p", "_o", "_po", "_step")
    )


def execution_steps(steps: pl.DataFrame) -> pl.DataFrame:
    """Per (job, execution) whose lines a step lies between or after: the largest step's size (ms, no
    sign; `step_open_ms`: of those not undone), and where the first one is (`step_file`, `step_line`)."""
    both = pl.concat(
        [
            steps.select("job_id", "execution_id", "pod", "file", "line", "step_ms", "undone", "restart_at"),
            steps.select(
                "job_id",
                pl.col("prev_execution_id").alias("execution_id"),
                "pod",
                "file",
                "line",
                "step_ms",
                "undone",
                "restart_at",
            ),
        ]
    ).drop_nulls("execution_id")
    return (
        both.sort("job_id", "file", "line")
        .group_by("job_id", "execution_id", maintain_order=True)
        .agg(
            pl.col("step_ms").abs().max().alias("step_abs_ms"),
            # the largest step not undone (no elapsedMs sized it: the times after it stay as logged), or
            # undone where a restart explains it as well (then the undoing may be what is wrong)
            pl.col("step_ms")
            .filter(~pl.col("undone") | pl.col("restart_at").is_not_null())
            .abs()
            .max()
            .alias("step_open_ms"),
            pl.col("step_ms").first().alias("first_step_ms"),
            pl.col("pod").first().alias("step_pod"),
            pl.col("file").first().alias("step_file"),
            pl.col("line").first().alias("step_line"),
        )
    )
