"""The order a pod wrote its lines in, where a file holds them in another order (sorted by their times).

A pod writes its lines one after the other; a log file keeps them in that order (flat JSON, ECS, logfmt,
docker, CRI, OTLP batches, ...), and then a clock step shows in line order: the timestamps jump, while
`elapsedMs` (a monotonic duration logged beside each timestamp) runs on. Some renderings sort the lines by
their timestamps instead: a Loki export (newest first), `kubectl logs --prefix --timestamps` (every pod in
one file, by time). There a step back moves the lines logged after it to where their wrong times put
them, among the lines logged before it, and line order shows no step.

How such a file is recognised: by its data, pod by pod (the same rule wherever the order is needed:
building the events, the clock-step check, the runs of a reused id). A pod's lines (with a wall-clock
time) whose times never go back in line order are in time order oldest first; whose times never go
forward, with at least two lines that run back and runs' lifecycles that do not run forward, newest first
(one pair of lines that runs back is as likely a step back in a file written in order). A pod that writes
its own file in order has its times go back where its clock stepped back, so it is read in line order as
before; where they never go back, its time order is its line order and nothing moves. Newest first is
read from its end. The reader's format is not used: a flat JSON file sorted by time is read the same way.

In time order, the lines written after a step back have their own origin: the wall time at which their
`elapsedMs` was zero (time less elapsedMs) lies the step before the origin of the lines written before
it. The pod's lines with `elapsedMs` are grouped by origin (origins within `Settings.clock_jitter_ms` of
each other are one), and a group is read after the group just before it in `elapsedMs` (the one whose
`elapsedMs` ends last at or before the group's first), in `elapsedMs` order, when all of these hold:
- its origin lies before the other's by more than the jitter (a step back: a step forward moves no line
  out of write order, and a process restarted later counts from a later origin);
- they share a thread (or both name none), and either that thread's run goes on from one group to the
  other (the earlier group's last lifecycle line of it is a trigger, an acquisition or a start, and the
  later group's first one comes after it in the lifecycle: a restarted process begins new runs), or the
  two groups' times overlap both ways and each has two lines or more (one line out of step is that
  line's own time).
The groups read so (and the group they continue, following the links back to the first) are placed at
that first group's origin plus their elapsedMs: the step undone, elapsedMs order within the process.
Every other line (without `elapsedMs`, in a group that continues none) stays at its logged time; lines of
one time keep their line order. A pod's lines in no time order (written in order, shuffled, sorted by
another key) are read in line order, several records of one line (an OTLP batch) in the order they were
read.

What the groups cannot tell: a step back between two runs of a worker whose lines after it lie wholly
before those before it (no run goes on across it, no overlap) is read in time order, and a process
restarted after a step back (its clock still stepped) is placed by its logged time.
"""

from __future__ import annotations

import polars as pl

__all__ = ["LIFECYCLE", "time_order", "write_positions"]

# the order of a run's lines whatever its clock says (the events that have one): where it starts again in
# a lane (a release, then a trigger), a new run begins, perhaps in a restarted process whose elapsedMs
# began again from another origin
LIFECYCLE: dict[str, int] = {
    "job_triggered": 0,
    "lock_denied": 1,
    "lock_acquired": 1,
    "job_started": 2,
    "job_finished": 3,
    "job_stopped": 3,
    "lock_released": 4,
}
# a lifecycle line after which the run goes on (a later lifecycle line of the same run follows)
_OPEN = ("job_triggered", "lock_acquired", "job_started")


def _rank() -> pl.Expr:
    return pl.col("event").replace_strict(LIFECYCLE, default=None, return_dtype=pl.Int8)


def _ms(t: pl.Expr) -> pl.Expr:
    return t.dt.epoch("us").cast(pl.Float64) / 1000


def write_positions(frame: pl.DataFrame, jitter_ms: float) -> pl.DataFrame:
    """`frame` (columns `_f`: one pod in one file; `_pos`: the row's place in the file as read; `t`: its
    wall time as logged, not null; `elapsed_ms`; `event`; `thread`) with `_w`, the row's place in the order
    its pod wrote it (comparable within one `_f`), and `_sorted`, whether the pod's lines in that file are
    in time order (its line order then shows no step by its times)."""
    x = frame.with_row_index("_i").with_columns(pl.col("_pos").cast(pl.Int64)).sort("_f", "_pos")
    x = x.join(time_order(x), on="_f", how="left")
    # a pod in time order whose elapsedMs never runs against it has nothing to move (most pods)
    e = x.filter((pl.col("_dir") != 0) & pl.col("elapsed_ms").is_not_null())
    de = pl.when(pl.col("_f") == pl.col("_f").shift(1)).then(
        pl.col("elapsed_ms") - pl.col("elapsed_ms").shift(1)
    )
    against = e.select("_f", ((de * pl.col("_dir")) < 0).alias("_against")).filter("_against")
    links = _links(e.join(against.select(pl.col("_f").unique()), on="_f", how="semi"), jitter_ms)
    # (a pod in time order oldest first, with no group to move, is read in line order: nothing changes)
    if not links.height and not (x["_dir"] == -1).any():
        # (most inputs: every row stays where it was read)
        return frame.join(
            x.select("_f", "_dir").unique("_f"), on="_f", how="left", maintain_order="left"
        ).select(
            pl.exclude("_dir"),
            pl.col("_pos").cast(pl.Int64).alias("_w"),
            (pl.col("_dir") != 0).alias("_sorted"),
        )
    moved_f = links.select(pl.col("_f").unique())
    key = (
        x.join(links.select("_i", "_key"), on="_i", how="left")
        .with_columns(
            (pl.col("_f").is_in(moved_f["_f"].implode()) | (pl.col("_dir") == -1)).alias("_timed"),
        )
        .with_columns(
            pl.when(pl.col("_timed")).then(pl.coalesce("_key", _ms(pl.col("t")))).alias("_key"),
            pl.when(pl.col("_timed") & (pl.col("_dir") == -1))
            .then(-pl.col("_pos"))
            .otherwise(pl.col("_pos"))
            .alias("_tie"),
        )
        .sort("_f", "_key", "_tie", nulls_last=False)
        .with_row_index("_w")
    )
    return (
        key.select("_i", pl.col("_w").cast(pl.Int64), (pl.col("_dir") != 0).alias("_sorted"))
        .sort("_i")
        .pipe(lambda k: frame.with_columns(k["_w"], k["_sorted"]))
    )


def time_order(frame: pl.DataFrame) -> pl.DataFrame:
    """(`_f`, `_dir`) for `frame` (`_f`, `_pos`, `t`, `event`, `thread`): 1 where the pod's lines in the file
    are in time order oldest first (their times never go back in line order), -1 newest first (they never
    go forward, at least two lines run back, and the runs' lifecycles do not run forward: one pair of
    lines that runs back is as likely a step back in a file written in order), 0 in no time order."""
    x = frame.select("_f", "_pos", "t", "event", "thread").sort("_f", "_pos")
    same = pl.col("_f") == pl.col("_f").shift(1)
    dt = pl.when(same).then(_ms(pl.col("t")) - _ms(pl.col("t").shift(1)))
    way = (
        x.with_columns(dt.alias("_dt"))
        .group_by("_f")
        .agg((pl.col("_dt") < 0).sum().alias("_back"), (pl.col("_dt") > 0).sum().alias("_ahead"))
    )
    # each thread's lifecycle in line order: a pod whose runs go forward there writes in line order
    ranked = (
        x.select("_f", pl.col("thread").fill_null("").alias("_lane"), "_pos", _rank().alias("_rank"))
        .drop_nulls("_rank")
        .sort("_f", "_lane", "_pos")
    )
    same_lane = (pl.col("_f") == pl.col("_f").shift(1)) & (pl.col("_lane") == pl.col("_lane").shift(1))
    dr = pl.when(same_lane).then(pl.col("_rank") - pl.col("_rank").shift(1))
    life = (
        ranked.with_columns(dr.alias("_dr"))
        .group_by("_f")
        .agg((pl.col("_dr") > 0).sum().alias("_up"), (pl.col("_dr") < 0).sum().alias("_down"))
    )
    return way.join(life, on="_f", how="left").select(
        "_f",
        pl.when(pl.col("_back") == 0)
        .then(1)
        .when(
            (pl.col("_ahead") == 0)
            & (pl.col("_back") >= 2)
            & (pl.col("_up").fill_null(0) <= pl.col("_down").fill_null(0))
        )
        .then(-1)
        .otherwise(0)
        .cast(pl.Int8)
        .alias("_dir"),
    )


def _links(e: pl.DataFrame, jitter_ms: float) -> pl.DataFrame:
    """Rows `_i` of the groups (by origin) moved, each with `_key`, its place in time (ms): its process's
    first group's origin plus its elapsedMs; and every row of a group another continues (the same)."""
    empty = pl.DataFrame(schema={"_i": pl.UInt32, "_key": pl.Float64, "_f": e.schema["_f"]})
    if not e.height:
        return empty
    e = (
        e.with_columns((_ms(pl.col("t")) - pl.col("elapsed_ms")).alias("_o"))
        .sort("_f", "_o")
        .with_columns(
            (
                (pl.col("_f") != pl.col("_f").shift(1)).fill_null(True)
                | ((pl.col("_o") - pl.col("_o").shift(1)) > jitter_ms).fill_null(True)
            )
            .cum_sum()
            .alias("_c"),
            pl.col("thread").fill_null("").alias("_lane"),
            _rank().alias("_rank"),
        )
    )
    groups = e.group_by("_c").agg(
        pl.col("_f").first(),
        pl.len().alias("_n"),
        pl.col("elapsed_ms").min().alias("_el_min"),
        pl.col("elapsed_ms").max().alias("_el_max"),
        _ms(pl.col("t")).min().alias("_t_min"),
        _ms(pl.col("t")).max().alias("_t_max"),
        pl.col("_o").min().alias("_o_ref"),
    )
    if groups.height < 2:
        return empty
    # each thread's lifecycle in the group, in elapsedMs order: its first and its last lifecycle line
    ranked = e.filter(pl.col("_rank").is_not_null()).sort("_c", "elapsed_ms", "_pos")
    lanes = ranked.group_by("_c", "_lane").agg(
        pl.col("_rank").first().alias("_first"),
        pl.col("_rank").last().alias("_last"),
        pl.col("event").last().is_in(list(_OPEN)).alias("_open"),
    )
    shared = e.select("_c", "_lane").unique()
    # the group just before each in elapsedMs (the one whose elapsedMs ends last at or before its start):
    # another group ending exactly where it starts, else the last ending before (never the group itself,
    # which ends where it starts when all its lines share one elapsedMs)
    before = groups.select(
        "_f",
        pl.col("_c").alias("_pc"),
        pl.col("_el_max").alias("_p_el_max"),
        pl.col("_n").alias("_pn"),
        pl.col("_t_min").alias("_pt_min"),
        pl.col("_t_max").alias("_pt_max"),
        pl.col("_o_ref").alias("_po_ref"),
    )
    tied = (
        groups.join(before, left_on=["_f", "_el_min"], right_on=["_f", "_p_el_max"])
        .filter(pl.col("_pc") != pl.col("_c"))
        .with_columns(pl.col("_el_min").alias("_p_el_max"))
        .unique("_c", keep="first", maintain_order=True)
    )
    strict = (
        groups.join(tied.select("_c"), on="_c", how="anti")
        .sort("_el_min")
        .join_asof(
            before.sort("_p_el_max"),
            left_on="_el_min",
            right_on="_p_el_max",
            by="_f",
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
    )
    cand = (
        pl.concat([tied.select(strict.columns), strict])
        .filter(pl.col("_pc").is_not_null() & (pl.col("_pc") != pl.col("_c")))
        .filter(pl.col("_po_ref") - pl.col("_o_ref") > jitter_ms)
    )
    if not cand.height:
        return empty
    runs_on = (
        cand.select("_c", "_pc")
        .join(lanes.select("_c", "_lane", "_first"), on="_c")
        .join(
            lanes.select(pl.col("_c").alias("_pc"), "_lane", "_last", "_open"),
            on=["_pc", "_lane"],
        )
        .filter(pl.col("_open") & (pl.col("_first") > pl.col("_last")))
        .select("_c")
        .unique()
    )
    share = (
        cand.select("_c", "_pc")
        .join(shared, on="_c")
        .join(shared.rename({"_c": "_pc"}), on=["_pc", "_lane"])
        .select("_c")
        .unique()
    )
    overlap = (
        (pl.col("_t_min") < pl.col("_pt_max"))
        & (pl.col("_t_max") > pl.col("_pt_min"))
        & (pl.col("_n") >= 2)
        & (pl.col("_pn") >= 2)
    )
    link = pl.concat(
        [
            cand.join(runs_on, on="_c", how="semi"),
            cand.filter(overlap).join(share, on="_c", how="semi"),
        ]
    ).unique("_c")
    if not link.height:
        return empty
    # each moved group's process's first group (following the links back), whose origin it is read at
    parent = link.select("_c", "_pc")
    while True:
        up = parent.join(parent.rename({"_c": "_pc", "_pc": "_up"}), on="_pc", how="left").select(
            "_c", pl.coalesce("_up", "_pc").alias("_pc")
        )
        if up.sort("_c").equals(parent.sort("_c")):
            break
        parent = up
    roots = parent.select(pl.col("_pc").unique()).with_columns(pl.col("_pc").alias("_c"))
    root = pl.concat([parent, roots.select("_c", "_pc")]).unique("_c")
    root = root.join(groups.select(pl.col("_c").alias("_pc"), pl.col("_o_ref").alias("_root_o")), on="_pc")
    return e.join(root.select("_c", "_root_o"), on="_c").select(
        "_i", (pl.col("_root_o") + pl.col("elapsed_ms")).alias("_key"), "_f"
    )
