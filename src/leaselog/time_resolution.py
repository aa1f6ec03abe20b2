"""How finely each file's timestamps are written: its time resolution, found from the values themselves.

A timestamp written to whole seconds (zerolog's and logrus's JSON defaults, RFC 3339 without a fraction;
syslog; a Log4j or Logback pattern without `.SSS`) says only that the moment lies within that second: it
is truncated, not rounded. The resolution is read from the raw time text of every line with a wall-clock
time:

- a time of day (`HH:MM:SS`, in any of the shapes leaselog reads) has as many fractional digits as follow
  its seconds (none: 1 s; three: 1 ms; six: 1 µs);
- an epoch number is seconds, milliseconds, microseconds or nanoseconds by its magnitude, and its fraction
  refines that unit (`1762160400` is 1 s, `1762160400.25` 10 ms, `1762160400123` 1 ms).

A file's resolution is the finest seen among its lines of one kind (RFC3339Nano and `%.9f`-less shapes
trim trailing zeros: `09:00:05Z` beside `09:00:04.12Z` is a line of the same 10 ms writer whose fraction
happened to be zero), and where a file mixes kinds (text times and epoch numbers), the coarsest kind
governs what its events can prove. A line whose time text is neither is left out (it says nothing of the
file's writer).
"""

from __future__ import annotations

import polars as pl

__all__ = ["RESOLUTION_COLUMN", "coarse_ms", "execution_resolution", "time_resolution"]

RESOLUTION_COLUMN = "ts_resolution_ms"

# an epoch number by its integer digits: (most digits, the unit in ms)
_EPOCH_UNITS = ((11, 1000.0), (14, 1.0), (17, 0.001))
_NANOSECONDS_MS = 0.000001


def _row_resolution(ts: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(resolution in ms, kind) of one raw time text: null where it is neither a time of day nor a number."""
    text = ts.str.strip_chars()
    whole = text.str.extract(r"^-?(\d+)(?:\.\d*)?$", 1)
    number_fraction = text.str.extract(r"^-?\d+\.(\d*)$", 1).str.len_chars().fill_null(0)
    digits = whole.str.len_chars()
    unit = pl.lit(_NANOSECONDS_MS)
    for most, ms in reversed(_EPOCH_UNITS):
        unit = pl.when(digits <= most).then(pl.lit(ms)).otherwise(unit)
    day_fraction = text.str.extract(r"\d{1,2}:\d{2}:\d{2}[.,](\d+)", 1).str.len_chars().fill_null(0)
    of_day = text.str.contains(r"\d{1,2}:\d{2}:\d{2}")
    ten = pl.lit(10.0)
    resolution = (
        pl.when(whole.is_not_null())
        .then(unit / ten.pow(number_fraction))
        .when(of_day)
        .then(pl.lit(1000.0) / ten.pow(day_fraction))
        .otherwise(None)
    )
    kind = (
        pl.when(whole.is_not_null())
        .then(pl.format("epoch {}", unit))
        .when(of_day)
        .then(pl.lit("time of day"))
        .otherwise(None)
    )
    return resolution, kind


def time_resolution(df: pl.DataFrame) -> pl.DataFrame:
    """`df` (raw `ts`, parsed `t_wall`, `file_index`) with `ts_resolution_ms`: its file's time resolution
    in ms (null on a line without a wall-clock time, or in a file none of whose times tells)."""
    resolution, kind = _row_resolution(pl.col("ts"))
    timed = pl.col("t_wall").is_not_null() & pl.col("ts").is_not_null()
    per_file = (
        df.lazy()
        .filter(timed)
        .select("file_index", resolution.alias("_res"), kind.alias("_kind"))
        .drop_nulls("_res")
        .group_by("file_index", "_kind")
        .agg(pl.col("_res").min())
        .group_by("file_index")
        .agg(pl.col("_res").max().alias(RESOLUTION_COLUMN))
        .collect()
    )
    # (a file's value put on its lines by a lookup: a join would copy every column of the wide frame)
    by_file = dict(per_file.iter_rows())
    of_file = pl.col("file_index").replace_strict(by_file, default=None, return_dtype=pl.Float64)
    return df.with_columns(pl.when(pl.col("t_wall").is_not_null()).then(of_file).alias(RESOLUTION_COLUMN))


def coarse_ms(resolution: pl.Expr) -> pl.Expr:
    """How far two times of a file may disagree with the same moments' elapsedMs through truncation alone
    (ms): the resolution where it is coarser than the millisecond figures are given in, else 0 (at 1 ms or
    finer the logger's jitter bound already covers the last digit)."""
    return pl.when(resolution > 1.0).then(resolution).otherwise(0.0).fill_null(0.0)


def execution_resolution(events: pl.DataFrame) -> pl.DataFrame:
    """(`job_id`, `execution_id`, `resolution_ms`) of each execution whose lines are written coarser than
    1 ms: the coarsest of its lines' files (its moments are known to that, no finer)."""
    if RESOLUTION_COLUMN not in events.columns:
        return pl.DataFrame(
            schema={"job_id": pl.String, "execution_id": pl.String, "resolution_ms": pl.Float64}
        )
    return (
        events.lazy()
        .filter(pl.col(RESOLUTION_COLUMN) > 1.0)
        .group_by("job_id", "execution_id")
        .agg(pl.col(RESOLUTION_COLUMN).max().alias("resolution_ms"))
        .collect()
    )
