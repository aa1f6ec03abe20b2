"""One thread, two spellings: a console layout's thread column cut to its last 15 characters, joined back
to the full name the same process's other lines (JSON, ECS) carry.

Spring Boot's default console pattern prints the thread as `[%15.15t]`. Logback's `FormatInfo` (max 15,
`leftTruncate` by default) and `FormattingConverter.write` truncate a longer name from the LEFT, keeping
its last 15 characters, and pad a shorter one on the left to 15: `report-stream-listener-1` is printed
`ream-listener-1`, while a JSON encoder on the same pod writes the whole name. Taken as two threads, one
execution (keyed by thread where no id is logged, its runs cut by thread where one is) would overlap
itself.

Rule, per pod and file: a thread spelling of exactly 15 characters (padding stripped) that is the tail of
exactly one longer spelling seen there is that longer thread. Where two distinct longer names share the
tail, which one logged the line cannot be told: the spelling is left as printed.
"""

from __future__ import annotations

import polars as pl

# Logback's `%15.15t`: the maximum width of Spring Boot's default console thread column
CONSOLE_THREAD_WIDTH = 15


def whole_thread_names(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with each truncated console thread spelling replaced by the one longer thread name it is the
    tail of, on the same pod and file (`pod`, `file_index`, `thread` columns; every other column kept,
    rows in their order)."""
    if df.height == 0 or "thread" not in df.columns:
        return df
    keys = [pl.col("pod").fill_null("").alias("_pod"), pl.col("file_index").alias("_file")]
    # (the string work runs on the distinct spellings of each pod and file, not on every line)
    printed = df.select(*keys, "thread").drop_nulls("thread").unique()
    spellings = printed.with_columns(pl.col("thread").str.strip_chars().alias("_short"))
    width = pl.col("_short").str.len_chars()
    longer = spellings.filter(width > CONSOLE_THREAD_WIDTH).select(
        "_pod",
        "_file",
        pl.col("_short").alias("_whole"),
        pl.col("_short").str.slice(-CONSOLE_THREAD_WIDTH).alias("_short"),
    )
    if longer.height == 0:  # (most logs: no thread longer than the column, nothing to join)
        return df
    whole = (
        spellings.filter(width == CONSOLE_THREAD_WIDTH)
        .join(longer.unique(), on=["_pod", "_file", "_short"])
        .group_by("_pod", "_file", "_short")
        .agg(pl.col("_whole").first(), pl.col("_whole").n_unique().alias("_n"))
        .filter(pl.col("_n") == 1)  # a tail two longer names share is left as printed
        .select("_pod", "_file", "_short", "_whole")
        # each printed spelling (padded or not) of a joined tail
        .join(spellings.select("_pod", "_file", "_short", "thread"), on=["_pod", "_file", "_short"])
        .select("_pod", "_file", "thread", "_whole")
    )
    if whole.height == 0:
        return df
    return (
        df.with_columns(*keys)
        .join(whole, on=["_pod", "_file", "thread"], how="left", maintain_order="left")
        .with_columns(pl.coalesce("_whole", "thread").alias("thread"))
        .drop("_pod", "_file", "_whole")
    )
