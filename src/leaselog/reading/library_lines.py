"""The reader's last word on lines a lock library's dialect read (leaselog.reading.dialects), once every
line of every input is read (stack traces attached):

- a rule that needs a literal confirmed (Spring's "Unexpected error occurred in scheduled task" is about
  an expired RedisLockRegistry lock only when its trace says so) keeps its line only if the line's message
  or the trace attached to it holds the literal; else the line is an unrelated one (counted ignored);
- a message that names no lock (an unlock failure, an expiry exception) is about the job last acquired or
  denied on the same thread of the same file; with none before it, the line is counted ignored;
- a message naming several locks (Redisson's `[a, b]`) gives one event per lock;
- a message that also says other events (ShedLock's `Locked` is a scheduler tick too) gives them, right
  before its own, on the same line.
"""

from __future__ import annotations

import polars as pl

from leaselog.reading.dialects import DIALECTS
from leaselog.reading.report import InputReport, Stream
from leaselog.vocabulary import JOBLESS_EVENTS

__all__ = ["settle_library_rows"]

# `raw_event` labels of rules with a literal to confirm, rules taking the job from the thread, job lists
_CONFIRM = {f"{d.name}/{r.name or r.event}": r.confirm for d in DIALECTS for r in d.rules if r.confirm}
_FROM_THREAD = [f"{d.name}/{r.name or r.event}" for d in DIALECTS for r in d.rules if r.job_from_thread]
_LISTS = [f"{d.name}/{r.name or r.event}" for d in DIALECTS for r in d.rules if r.job_list]
_ALSO = {f"{d.name}/{r.name or r.event}": r.also for d in DIALECTS for r in d.rules if r.also}


def settle_library_rows(raw: pl.DataFrame, streams: list[Stream]) -> pl.DataFrame:
    """`raw` with library rows settled; each stream's report accounts for the lines dropped (streams not
    given: nothing is accounted, as when `leaselog watch` settles the rows it keeps)."""
    if "dialect" not in raw.columns or raw["dialect"].null_count() == raw.height:
        return raw

    # a process's start or a failover is read (its line is used) but is no lease event of a job
    # (leaselog.clocks.undo reads the one, the fleet's facts keep the other)
    reports = {st.index: st.report for st in streams}
    for file_index, n in (
        raw.filter(pl.col("event").is_in(JOBLESS_EVENTS)).group_by("file_index").len().iter_rows()
    ):
        if file_index in reports:
            reports[file_index].events -= n
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
        # (a process's start or a failover names no job, and needs none)
        keep = keep & (pl.col("job_id").is_not_null() | pl.col("event").is_in(JOBLESS_EVENTS))
    raw = _drop(raw, keep, reports)
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
    raw = _also(raw, streams) if _ALSO else raw
    # facts that span lines, each dialect's own (Dialect.join)
    joined = False
    for dialect in DIALECTS:
        if dialect.join is not None:
            raw = dialect.join(raw)
            joined = True
    if joined:
        # a line whose job only a join could name (a Quartz recovery no start follows), and did not
        named = (
            pl.col("dialect").is_null()
            | pl.col("job_id").is_not_null()
            | pl.col("event").is_in(JOBLESS_EVENTS)
        )
        raw = _drop(raw, named, reports)
    return raw


def _drop(raw: pl.DataFrame, keep: pl.Expr, reports: dict[int, InputReport]) -> pl.DataFrame:
    """`raw` without the rows `keep` rejects; the reports account for them (a line none of whose rows is
    kept is counted ignored)."""
    raw = raw.with_row_index("_row")
    dropped = raw.filter(~keep)
    if not dropped.is_empty():
        kept_lines = raw.filter(keep).select("file_index", "line").unique()
        for file_index, n in dropped.group_by("file_index").len().iter_rows():
            if file_index in reports:
                reports[file_index].events -= n
        gone = (
            dropped.select("file_index", "line")
            .unique()
            .join(kept_lines, on=["file_index", "line"], how="anti")
        )
        for file_index, n in gone.group_by("file_index").len().iter_rows():
            if file_index in reports:
                reports[file_index].used -= n
                reports[file_index].ignored += n
        for file_index, name, n in dropped.group_by("file_index", "dialect").len().iter_rows():
            if file_index in reports:
                reports[file_index].dialects[name] -= n
        raw = raw.filter(keep)
    return raw.drop("_row")


def _also(raw: pl.DataFrame, streams: list[Stream]) -> pl.DataFrame:
    label = pl.col("raw_event")
    extra = []
    for name, events in _ALSO.items():
        rows = raw.filter(label == name)
        for k, event in enumerate(events):
            # a record index of its own: never taken for a shipper's repeat of the line
            added_row = rows.with_columns(pl.lit(event).alias("event"))
            if "dup_record" in rows.columns:
                added_row = added_row.with_columns(pl.lit(-1 - k, pl.Int64).alias("dup_record"))
            extra.append(added_row)
    added = pl.concat(extra) if extra else raw.clear()
    if added.is_empty():
        return raw
    reports = {st.index: st.report for st in streams}
    for file_index, n in added.group_by("file_index").len().iter_rows():
        if file_index in reports:
            reports[file_index].events += n
    # each added event right before the line's own (a stable sort by file and line keeps that order)
    return pl.concat([added, raw]).sort("file_index", "line", maintain_order=True)
