"""The reader's last word on lines a lock library's dialect read (leaselog.reading.dialects), once every
line of every input is read (stack traces attached):

- a rule that needs a literal confirmed (Spring's "Unexpected error occurred in scheduled task" is about
  an expired RedisLockRegistry lock only when its trace says so) keeps its line only if the line's message
  or the trace attached to it holds the literal; else the line is an unrelated one (counted ignored);
- a message that names no lock (an unlock failure, an expiry exception) is about the job last acquired or
  denied on the same thread of the same file; with none before it, the line is counted ignored;
- a message naming several locks (Redisson's `[a, b]`) gives one event per lock.
"""

from __future__ import annotations

import polars as pl

from leaselog.reading.dialects import DIALECTS
from leaselog.reading.report import Stream

__all__ = ["settle_library_rows"]

# `raw_event` labels of rules with a literal to confirm, rules taking the job from the thread, job lists
_CONFIRM = {f"{d.name}/{r.name or r.event}": r.confirm for d in DIALECTS for r in d.rules if r.confirm}
_FROM_THREAD = [f"{d.name}/{r.name or r.event}" for d in DIALECTS for r in d.rules if r.job_from_thread]
_LISTS = [f"{d.name}/{r.name or r.event}" for d in DIALECTS for r in d.rules if r.job_list]


def settle_library_rows(raw: pl.DataFrame, streams: list[Stream]) -> pl.DataFrame:
    if "dialect" not in raw.columns or raw["dialect"].null_count() == raw.height:
        return raw
    label = pl.col("raw_event")
    keep = pl.lit(True)
    for name, literal in _CONFIRM.items():
        keep = keep & ~(
            (label == name) & ~pl.col("message").fill_null("").str.contains(literal, literal=True)
        )
    lone = pl.col("dialect").is_not_null() & label.is_in(_FROM_THREAD) & pl.col("job_id").is_null()
    if _FROM_THREAD and raw.select(lone.any()).item():
        # the per-line path's rows come before the columnar path's: put every file's rows in line order
        raw = raw.sort("file_index", "line", maintain_order=True)
        # rows are in file and line order within each input: the job last named on the same thread
        before = (
            pl.when(~lone)
            .then(pl.col("job_id"))
            .forward_fill()
            .over(["file_index", pl.col("thread").fill_null("")])
        )
        raw = raw.with_columns(pl.when(lone).then(before).otherwise(pl.col("job_id")).alias("job_id"))
        keep = keep & pl.col("job_id").is_not_null()
    raw = raw.with_row_index("_row")
    dropped = raw.filter(~keep)
    if not dropped.is_empty():
        kept_lines = raw.filter(keep).select("file_index", "line").unique()
        reports = {st.index: st.report for st in streams}
        for file_index, n in dropped.group_by("file_index").len().iter_rows():
            reports[file_index].events -= n
        gone = (
            dropped.select("file_index", "line")
            .unique()
            .join(kept_lines, on=["file_index", "line"], how="anti")
        )
        for file_index, n in gone.group_by("file_index").len().iter_rows():
            rep = reports[file_index]
            rep.used -= n
            rep.ignored += n
        for file_index, name, n in dropped.group_by("file_index", "dialect").len().iter_rows():
            reports[file_index].dialects[name] -= n
        raw = raw.filter(keep)
    raw = raw.drop("_row")
    if (
        _LISTS
        and raw.select(label.is_in(_LISTS) & pl.col("job_id").str.contains(",", literal=True))
        .to_series()
        .any()
    ):
        many = label.is_in(_LISTS)
        raw = (
            raw.with_columns(
                pl.when(many)
                .then(pl.col("job_id").str.split(","))
                .otherwise(pl.concat_list(pl.col("job_id")))
            )
            .explode("job_id")
            .with_columns(pl.col("job_id").str.strip_chars())
        )
    return raw
