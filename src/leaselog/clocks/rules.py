"""The rules a pod's own log is judged by when its wall clock may have stepped, each written once.

`leaselog.clocks.undo` (the steps undone while the events are built) and `leaselog.clocks.steps` (the
`clock_steps` frame every clock check reads) apply these same rules to the lines they compare:

- `disagrees`: two lines' wall-clock difference and their `elapsedMs` difference disagree beyond what the
  logger's jitter allows (`Settings.clock_jitter_ms`);
- `spike`: one line out of step with both its neighbours by opposite amounts is that line's own time;
- `is_timeline`: `elapsedMs` is a timeline (not the duration of one call) where at least two of its steps,
  and twice as many as disagree, agree with the wall clock;
- `same_step`: two lanes of one pod's file that each show a step over overlapping spans, alike in size,
  show one step of the pod's clock;
- `restart_explains`: a forward jump between two runs that a restart of the process explains as well.
"""

from __future__ import annotations

import polars as pl

from leaselog.write_order import LIFECYCLE

__all__ = [
    "CLOSES",
    "LIFECYCLE",
    "disagrees",
    "is_timeline",
    "ms",
    "new_group",
    "restart_explains",
    "same_step",
    "spike",
]

# the lifecycle events after which a run is over (an attempt turned away, a finish, a stop, a release)
CLOSES = ["lock_denied", "job_finished", "job_stopped", "lock_released"]


def ms(delta: pl.Expr) -> pl.Expr:
    """A duration as milliseconds (float)."""
    return delta.dt.total_microseconds() / 1000


def new_group(keys: list[str]) -> pl.Expr:
    """True on the first row of each run of equal keys (the frame sorted by them; nulls equal to nulls);
    `.over` is slow with one group per job and pod."""
    start = pl.lit(False)
    for k in keys:
        start = start | pl.col(k).ne_missing(pl.col(k).shift(1)).fill_null(True)
    return start


def disagrees(drift: pl.Expr, jitter_ms: float | pl.Expr) -> pl.Expr:
    """True where a drift (wall-clock difference less elapsedMs difference, ms) is beyond the jitter (a
    number, or an expression: the jitter with the file's time resolution added, leaselog.time_resolution)."""
    return drift.abs() > jitter_ms


def is_timeline(agree: pl.Expr, disagree: pl.Expr) -> pl.Expr:
    """Whether elapsedMs is a timeline, from how many of its steps agree and disagree with the wall clock."""
    return (agree >= 2) & (agree >= 2 * disagree)


def spike(keys: list[str], jitter_ms: float | pl.Expr) -> pl.Expr:
    """True where `_off` (a drift beyond the jitter, in `_drift`) is one half of a spike: the next (or
    previous) pair of the same group drifts back by as much, within the jitter. One line out of step with
    both its neighbours is that line's own time, not a step of the clock. The frame is sorted by `keys`,
    then line order."""
    new = new_group(keys)
    last = new.shift(-1).fill_null(True)
    d = pl.col("_drift")
    with_next = ~last & pl.col("_off").shift(-1) & ((d + d.shift(-1)).abs() <= jitter_ms)
    with_prev = ~new & pl.col("_off").shift(1) & ((d + d.shift(1)).abs() <= jitter_ms)
    return (pl.col("_off") & (with_next.fill_null(False) | with_prev.fill_null(False))).fill_null(False)


def same_step(jitter_ms: float | pl.Expr) -> pl.Expr:
    """True on a detected step (rows sorted by `_p`, then `line`; columns `prev_line`, `line`, `_drift`)
    that is the one the row before it already shows: one clock steps for every thread of its pod, so two
    lanes of a pod's file (threads, executions) each see it between their own two lines, and those two
    spans overlap, with the same size within the jitter."""
    same_p = pl.col("_p") == pl.col("_p").shift(1)
    overlaps = pl.col("prev_line") < pl.col("line").shift(1)
    alike = (pl.col("_drift") - pl.col("_drift").shift(1)).abs() <= jitter_ms
    return (same_p & overlaps & alike).fill_null(False)


def restart_explains(
    between_runs: pl.Expr,
    step_ms: pl.Expr,
    elapsed_ms: pl.Expr,
    gap_ms: pl.Expr,
    container: pl.Expr,
    earlier_last: pl.Expr,
    line: pl.Expr,
    earlier_x: pl.Expr,
    x: pl.Expr,
) -> pl.Expr:
    """The one restart rule: a forward jump (`step_ms` > 0) at a run's first line, between two runs of the
    job on the pod (`between_runs`: the caller's lanes say where one run ends and the next begins), reads as well as a restart of the process when that line's elapsedMs is shorter than
    the wall-clock gap before it (`gap_ms`: the new process counted anew from a start inside the gap; a
    restart always reads as a forward step, its elapsedMs running past the old one's last value only if it
    began after it). Not where the line names its container (`container`: another one would have begun a
    new origin), nor where the earlier run, by its own execution id, logs a line after this one
    (`earlier_last`, the place of its last line, against `line`: it lived across; an id the two runs share,
    `earlier_x` equal to `x` as a restarted process's counter gives, says nothing of that). A start-up line between
    would have said so; without one the logs cannot tell, and the lines stay as logged."""
    return (
        between_runs
        & (step_ms > 0)
        & (elapsed_ms < gap_ms)
        & container.is_null()
        & (earlier_last.is_null() | (earlier_last <= line) | earlier_x.eq_missing(x))
    ).fill_null(False)
