"""The one timeline every event is put on: a pseudo timeline for inputs without wall-clock times, and the
frame's compaction once built."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

PSEUDO_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def compact(columns: list[pl.Series]) -> pl.DataFrame:
    """A frame's columns (`frame.get_columns()`) as one frame of one contiguous chunk per column, its
    all-null columns as polars' cheap nulls.

    The reader hands over one chunk per block read (dozens). Every group-by and gather on a chunked
    column copies it into one chunk first, again each time: on 200 000 jobs reconstruct took twice as
    long and held +0.7 GB instead of +0.3 GB. A plain `rechunk` would also write out the columns that
    are null throughout (most of the optional ones), which cost next to nothing while chunked.
    `columns` is emptied as it goes: when nothing else holds the frame, each column's chunks are freed
    once its copy is made, so the events are held about once, not twice.
    """
    schema = pl.Schema({s.name: s.dtype for s in columns})
    out: list[pl.Series] = []
    columns.reverse()  # (popped from the end, in the frame's order)
    while columns:
        s = columns.pop()
        out.append(
            pl.repeat(None, s.len(), dtype=s.dtype, eager=True).alias(s.name)
            if s.null_count() == s.len()
            else s.rechunk()
        )
        del s
    return pl.DataFrame(out, schema=schema)


def gathered(columns: list[pl.Series], order: pl.Series) -> pl.DataFrame:
    """A frame's columns (`frame.get_columns()`) in the row order `order` (a permutation of the rows), the
    frame held about once instead of twice.

    A frame's `sort` gathers every column before the unsorted ones can go: on a million events (42 columns,
    most of them strings or null throughout: 16 bytes a row each) that was 0.9 GB more at its peak. Here
    `columns` is emptied as it goes: when nothing else holds the frame, each column is freed once its
    gathered copy is made, and a column null throughout is kept as it is (the same under any order).
    """
    schema = pl.Schema({s.name: s.dtype for s in columns})
    out: list[pl.Series] = []
    columns.reverse()  # (popped from the end, in the frame's order)
    while columns:
        s = columns.pop()
        out.append(s if s.null_count() == s.len() else s.gather(order))
        del s
    return pl.DataFrame(out, schema=schema)


def pseudo_times(df: pl.DataFrame) -> pl.DataFrame:
    """Place events of files without wall-clock time on a pseudo timeline.

    Within one pod, differences come from `elapsedMs` (a local monotonic clock); across pods, only the
    line order of one file is known. A pod's clock is anchored where it first appears, as late as the line
    order allows: just before the next line of a pod already placed. (A newcomer's first line is typically
    its acquire, and a lock that worked granted it as late as possible, after the previous lease ended;
    placing it early would invent two valid leases at once.) The timeline is kept in line order.
    Cross-pod durations on it are estimates, which is why cross-pod findings on `clock != "wall"` events
    are reported as uncertain. Loops only over rows lacking wall-clock time: such logs (demo output) are
    small.
    """
    wall = df.filter(pl.col("clock") == "wall").with_columns(pl.col("t_wall").alias("t"))
    rest = df.filter(pl.col("clock") != "wall")
    base = int(PSEUDO_EPOCH.timestamp() * 1_000_000)
    files = rest["file_index"].to_list()
    pods = [p or "" for p in rest["pod"].to_list()]
    elapsed = rest["elapsed_ms"].to_list()
    t_out: list[int] = []
    anchors: dict[tuple[int, str], float] = {}
    last_by_file: dict[int, float] = {}
    order_step = 1000.0  # 1 ms per line when not even elapsedMs is known

    def next_placed(i: int, fi: int) -> float | None:
        """Time of the next line in file `fi` after row i whose pod already has an anchor."""
        for j in range(i + 1, len(files)):
            if files[j] != fi:
                return None
            k = (fi, pods[j])
            if k in anchors and elapsed[j] is not None:
                return float(anchors[k] + elapsed[j] * 1000)
        return None

    for i, (fi, pod, el) in enumerate(zip(files, pods, elapsed, strict=True)):
        prev = last_by_file.get(fi)
        key = (fi, pod)
        earliest = prev + order_step if prev is not None else 0.0
        if el is None:
            t = earliest
        else:
            if key not in anchors:
                nxt = next_placed(i, fi)
                first_t = max(earliest, nxt - order_step) if nxt is not None else earliest
                anchors[key] = first_t - el * 1000
            t = max(anchors[key] + el * 1000, prev if prev is not None else 0.0)
        last_by_file[fi] = t
        t_out.append(base + int(t))
    rest = rest.with_columns(pl.Series("t", t_out, dtype=pl.Int64).cast(pl.Datetime("us", "UTC")))
    return pl.concat([wall, rest], how="vertical").sort("seq")


def ms_expr(a: str | pl.Expr, b: str | pl.Expr) -> pl.Expr:
    """Milliseconds from a to b (columns or expressions), as a float."""
    ea = pl.col(a) if isinstance(a, str) else a
    eb = pl.col(b) if isinstance(b, str) else b
    return (eb - ea).dt.total_microseconds() / 1000
