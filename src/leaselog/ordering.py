"""The events in the order they happened, on one timeline: numbered (`seq`), each pod's clock offset taken
off, and each event's clock (`wall`, `elapsed`, `order`) with pseudo-times where there is no wall clock.
The last stages of reading the events (`leaselog.pipeline.events_of`)."""

from __future__ import annotations

import polars as pl

from leaselog.events import EVENT_SCHEMA
from leaselog.timebase import gathered, pseudo_times

__all__ = ["number_events", "place_events"]


def number_events(df: pl.DataFrame) -> pl.DataFrame:
    """Events are numbered (`seq`) in the order they happened: within a file by time where it has wall
    clocks (a Loki export lists its lines newest first; an async appender can write a line after a later
    one), by line otherwise. Files whose times never go back (almost all) skip the sort."""
    same_file = pl.col("file_index").diff() == 0
    step = pl.col("t_wall").diff()
    if df.select((same_file & (step < 0)).fill_null(False).any()).item():
        # a file written newest first breaks ties of equal times newest first too: by line, then by the
        # place the record was read at (the records of a one-line export response share one line)
        back = (same_file & (step < 0)).cast(pl.Int64).sum().over("file_index")
        ahead = (same_file & (step > 0)).cast(pl.Int64).sum().over("file_index")
        newest_first = back > ahead
        read_at = pl.int_range(pl.len(), dtype=pl.Int64)
        line_key = pl.when(newest_first).then(-pl.col("line")).otherwise(pl.col("line"))
        read_key = pl.when(newest_first).then(-read_at).otherwise(read_at)
        order = df.select(
            pl.arg_sort_by([pl.col("file_index"), pl.col("t_wall"), line_key, read_key], maintain_order=True)
        ).to_series()
        columns = df.get_columns()
        del df  # (gathered frees each column once sorted: the frame is held once, not twice)
        df = gathered(columns, order)
    return df.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))


def place_events(df: pl.DataFrame, offsets: dict[str, float]) -> pl.DataFrame:
    """The canonical events (EVENT_SCHEMA): each pod's clock offset (ms) taken off its wall times, each
    event's clock, and `t` on one timeline (pseudo-times where some event has no wall clock)."""
    if offsets:
        off = pl.col("pod").replace_strict(offsets, default=0.0, return_dtype=pl.Float64)
        df = df.with_columns(
            (pl.col("t_wall") - pl.duration(microseconds=(off * 1000).round(0).cast(pl.Int64))).alias(
                "t_wall"
            )
        )
    df = df.with_columns(
        pl.when(pl.col("t_wall").is_not_null())
        .then(pl.lit("wall"))
        .when(pl.col("elapsed_ms").is_not_null())
        .then(pl.lit("elapsed"))
        .otherwise(pl.lit("order"))
        .alias("clock")
    )
    all_wall = not (df["clock"] != "wall").any()
    df = df.with_columns(pl.col("t_wall").alias("t")) if all_wall else pseudo_times(df)
    return df.select([pl.col(c).cast(dt) for c, dt in EVENT_SCHEMA.items()])
