"""Lease events read from a lock library's own lines (leaselog.reading.dialects), once they have a time.

- **Absolute lease ends.** ShedLock logs when a lock will be held *until* (`lockAtMostUntil`, UTC), not for
  how long: `lease_until` becomes `lease_ms`, measured from the line's own time.
- **The same moment logged twice.** When the application logs its own lease events too, one acquisition
  (or release, denial, renewal) appears both as the app's line and as the library's: the library's is
  dropped when the app's line says the same event of the same job on the same pod within
  `SAME_MOMENT_MS`. The app's line is kept: it usually carries the execution id and the TTL.
- **Joining the app's executions.** A library line without an execution id, on a job and pod whose app
  lines carry execution ids, belongs to the app's execution acquired last before it (a Redisson watchdog
  failure joins the run it hit).

Every step is a no-op, and cheap, when no dialect read any line.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from leaselog.values import fast_utc, iso_zoned

__all__ = ["SAME_MOMENT_MS", "settle_lease_ends"]

SAME_MOMENT_MS = 2000
_BEGINS = ("lock_acquired", "job_started", "job_triggered")


def settle_lease_ends(df: pl.DataFrame) -> pl.DataFrame:
    """`df` (the reader's raw columns with `t_wall`) with lease ends turned into lease lengths, app/library
    duplicates dropped and library lines joined to the app's executions."""
    if "dialect" not in df.columns or df["dialect"].null_count() == df.height:
        return df
    until = pl.col("lease_until")
    end = pl.coalesce(fast_utc(until), iso_zoned(until))
    ms = (end - pl.col("t_wall")).dt.total_milliseconds()
    df = df.with_columns(
        pl.when(pl.col("lease_ms").is_null() & until.is_not_null() & (ms >= 0))
        .then(ms.cast(pl.String))
        .otherwise(pl.col("lease_ms"))
        .alias("lease_ms")
    )
    return _join_app(_drop_echoes(df))


def _drop_echoes(df: pl.DataFrame) -> pl.DataFrame:
    lib = pl.col("dialect").is_not_null()
    if df.select((~lib).any()).item() is not True:
        return df
    keys = ["job_id", "pod", "event"]
    app = (
        df.filter(~lib & pl.col("t_wall").is_not_null())
        .select(*keys, pl.col("t_wall").alias("t_app"))
        .sort("t_app")
    )
    rows = df.with_row_index("_row")
    mine = rows.filter(lib & pl.col("t_wall").is_not_null()).select("_row", *keys, "t_wall").sort("t_wall")
    near = dt.timedelta(milliseconds=SAME_MOMENT_MS)
    # the app's line nearest in time (either side) to each library line, of the same job, pod and event
    hit = mine.join_asof(
        app,
        left_on="t_wall",
        right_on="t_app",
        by=keys,
        strategy="nearest",
        tolerance=near,
        check_sortedness=False,
    ).filter(pl.col("t_app").is_not_null())
    if hit.is_empty():
        return df
    return rows.filter(~pl.col("_row").is_in(hit["_row"].implode())).drop("_row")


def _join_app(df: pl.DataFrame) -> pl.DataFrame:
    lib = pl.col("dialect").is_not_null()
    orphan = lib & pl.col("execution_id").is_null() & pl.col("t_wall").is_not_null()
    if df.select(orphan.any()).item() is not True:
        return df
    runs = (
        df.filter(~lib & pl.col("execution_id").is_not_null() & pl.col("event").is_in(_BEGINS))
        .select("job_id", "pod", pl.col("t_wall").alias("t_app"), pl.col("execution_id").alias("_app_exec"))
        .sort("t_app")
    )
    if runs.is_empty():
        return df
    rows = df.with_row_index("_row")
    joined = (
        rows.filter(orphan)
        .select("_row", "job_id", "pod", "t_wall")
        .sort("t_wall")
        .join_asof(
            runs,
            left_on="t_wall",
            right_on="t_app",
            by=["job_id", "pod"],
            strategy="backward",
            check_sortedness=False,
        )
        .select("_row", "_app_exec")
    )
    return (
        rows.join(joined, on="_row", how="left")
        .with_columns(pl.coalesce("execution_id", "_app_exec").alias("execution_id"))
        .sort("_row")
        .drop("_row", "_app_exec")
    )
