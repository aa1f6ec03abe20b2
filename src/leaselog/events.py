"""Canonical events: the typed polars frame every later layer reads (the vocabulary and its aliases are in
leaselog.vocabulary).

The reader hands over one row of raw strings per lease event (already picked out of whatever log shape it
came in, its event already canonical: leaselog.reading.fields); `build_events` types them, and
`why_unusable` / `split_rejected` set apart the lines whose values cannot be used. The stages after typing
(clocks, failovers, execution identity, numbering, offsets) are `leaselog.pipeline`'s to run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl
import polars.selectors as cs

from leaselog.config import Settings
from leaselog.dialect_rows import settle_lease_ends
from leaselog.reading.fields import RAW_COLUMNS
from leaselog.thread_spellings import whole_thread_names
from leaselog.time_resolution import time_resolution
from leaselog.timebase import gathered
from leaselog.values import TIME_SHAPES, fall_back, times, typed_values

_STRING_FIELDS = (
    "pod",
    "thread",
    "job_id",
    "execution_id",
    "owner",
    "reason",
    "status",
    "trigger",
    "topic",
    "message_id",
)
_FLOAT_FIELDS = ("elapsed_ms", "latency_ms", "idle_ms")
_INT_FIELDS = ("lease_ms", "fencing_token", "partition", "offset", "delivery_count", "attempt")

# The typed frame: column -> dtype. Documented column by column in `leaselog.schema`.
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "t": pl.Datetime("us", "UTC"),
    "clock": pl.Categorical(),
    "seq": pl.Int64(),
    "pod": pl.String(),
    "thread": pl.String(),
    # the container instance (its runtime id): another id on a pod is another process, counting anew
    "container_id": pl.String(),
    "job_id": pl.String(),
    "execution_id": pl.String(),
    # how its execution was identified: an index into leaselog.execution_runs.IDENTITIES
    "identity": pl.Int8(),
    "event": pl.Categorical(),
    "raw_event": pl.Categorical(),
    "elapsed_ms": pl.Float64(),
    # ms taken off the logged time: a clock step inside the execution, undone by its elapsedMs
    "clock_step_ms": pl.Float64(),
    # the job's first line on the pod after a process's start-up line: elapsedMs counts anew from it
    "new_origin": pl.Boolean(),
    # the time resolution of the line's file, ms (leaselog.time_resolution; null: no wall-clock time)
    "ts_resolution_ms": pl.Float64(),
    "lease_ms": pl.Int64(),
    "fencing_token": pl.Int64(),
    "owner": pl.String(),
    "renewal_outcome": pl.String(),
    "latency_ms": pl.Float64(),
    "late": pl.Boolean(),
    "reason": pl.String(),
    "status": pl.Categorical(),
    "released": pl.Boolean(),
    "release_outcome": pl.String(),
    "outcome": pl.String(),
    "trigger": pl.Categorical(),
    "topic": pl.Categorical(),
    "partition": pl.Int64(),
    "offset": pl.Int64(),
    "message_id": pl.String(),
    "delivery_count": pl.Int64(),
    "idle_ms": pl.Float64(),
    "entry_kept": pl.Boolean(),
    "attempt": pl.Int64(),
    "message": pl.String(),
    "file": pl.String(),
    "line": pl.Int64(),
    "fields": pl.String(),
}


def as_string(s: pl.Series) -> pl.Series:
    """`s` as strings: an events column that is Categorical (few values, held as 4-byte codes) as the
    String the frames built from the events have."""
    return s.cast(pl.String) if s.dtype == pl.Categorical else s


_OUTCOMES = {
    "success": "success",
    "succeeded": "success",
    "ok": "success",
    "renewed": "success",
    "true": "success",
    "1": "success",
    "rejected": "rejected",
    "denied": "rejected",
    "lost": "rejected",
    "not_owner": "rejected",
    "false": "rejected",
    "0": "rejected",
    "timeout": "timeout",
    "timed_out": "timeout",
    "timedout": "timeout",
    "error": "error",
    "exception": "error",
    "failed": "error",
    "failure": "error",
}


@dataclass
class Typed:
    """The reader's rows with their values typed (not yet events: `build_events`)."""

    frame: pl.DataFrame
    # why a present value is unusable, one expression a field (read by `why_unusable`)
    reasons: list[pl.Expr]
    # what the reader of the output must know about how the events were read (shown as notes)
    notes: list[str] = field(default_factory=list)
    # file -> the zone its zone-less (local) timestamps were read in
    local_time_files: dict[str, str] = field(default_factory=dict)


def build_events(
    raw: pl.DataFrame | dict[str, list[Any]], event_names: list[str] | None, settings: Settings
) -> Typed:
    """Type the reader's raw columns: the frame the later stages read (`t_wall` the wall time read, the
    values typed, a `_why_<field>` column for each field some value of which it cannot hold).

    `raw` is the reader's frame (RAW_COLUMNS as strings, `line`/`file_index` integers, and the canonical
    `event`), or the same as lists with the canonical names in `event_names`.
    """
    if isinstance(raw, pl.DataFrame):
        df = raw
    else:
        names = event_names or []
        n = len(names)
        data: dict[str, Any] = {k: raw.get(k, [None] * n) for k in RAW_COLUMNS}
        df = pl.DataFrame(
            {
                **{
                    k: pl.Series(k, v, dtype=pl.String)
                    for k, v in data.items()
                    if k not in ("line", "file_index")
                },
                "line": pl.Series("line", data["line"], dtype=pl.Int64),
                "file_index": pl.Series("file_index", data["file_index"], dtype=pl.Int64),
                "event": pl.Series("event", names, dtype=pl.String),
            }
        )
    # only `df` holds the raw columns from here: each one a typed column replaces is freed as it goes,
    # when the caller handed its last reference over (`pipeline.read_source`)
    del raw
    tz = settings.timezone
    # the reader hands its rows over in file and line order, almost always: then sorting the wide
    # frame (seconds at a million events) is skipped
    in_order = df.select(
        (
            (pl.col("file_index").diff() > 0)
            | ((pl.col("file_index").diff() == 0) & (pl.col("line").diff() >= 0))
        )
        .fill_null(True)
        .all()
    ).item()
    if not in_order:
        order = df.select(pl.arg_sort_by("file_index", "line", maintain_order=True)).to_series()
        columns = df.get_columns()
        del df  # (gathered frees each column once sorted: the frame is held once, not twice)
        df = gathered(columns, order)
    # a console line's thread cut to its last 15 characters (Logback's `%15.15t`) is the one longer thread
    # of its pod and file that it is the tail of: one thread, not two (leaselog.thread_spellings)
    df = whole_thread_names(df)
    df = times(df, tz)
    df = time_resolution(df)
    df = settle_lease_ends(df)
    notes: list[str] = []
    local_files: dict[str, str] = {}
    if df["naive"].any():
        if tz != "UTC":
            df = fall_back(df, tz)
        for f, example in (
            df.filter("naive").group_by("file", maintain_order=True).agg(pl.col("ts").first()).iter_rows()
        ):
            local_files[f] = tz
            notes.append(
                f"{f}: timestamps without a zone (e.g. `{example}`) read as {tz} time"
                + (" (--timezone ZONE if they are another zone's local time)" if tz == "UTC" else "")
            )
    df, reasons = typed_values(df, _FLOAT_FIELDS, _INT_FIELDS)
    df = df.with_columns(
        pl.col("renewal_outcome")
        .str.to_lowercase()
        .replace_strict(_OUTCOMES, default=pl.col("renewal_outcome").str.to_lowercase()),
        pl.col("outcome").str.to_lowercase(),
        pl.col("release_outcome").str.to_lowercase(),
        pl.col("trigger").str.to_lowercase(),
        *(
            pl.col(c)
            .str.to_lowercase()
            .replace_strict(
                {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False},
                default=None,
                return_dtype=pl.Boolean,
            )
            for c in ("late", "entry_kept")
        ),
    )
    # a renewal line without an outcome is a success (e.g. `lease_renewed`, or a plain renewal log)
    df = df.with_columns(
        pl.when(pl.col("event") == "lease_renewal")
        .then(pl.col("renewal_outcome").fill_null("success"))
        .otherwise(pl.col("renewal_outcome"))
        .alias("renewal_outcome")
    )
    return Typed(df, reasons, notes, local_files)


def why_unusable(df: pl.DataFrame, reasons: list[pl.Expr]) -> tuple[pl.DataFrame, list[str]]:
    """`df` with `_why`: why each line cannot be used ("" when it can), from the typed values' reasons and
    its timestamp; and a note for each file none of whose lease events' timestamps could be read."""
    # A timestamp that is present but unreadable makes its line malformed; so does a missing one in a file
    # with wall-clock times (the event cannot be placed).
    file_has_wall = pl.col("t_wall").is_not_null().any().over("file_index")
    reasons = [
        pl.when(pl.col("ts").is_not_null() & pl.col("t_wall").is_null())
        .then(
            pl.when(pl.col("ts").cast(pl.Float64, strict=False).is_not_null())
            .then(
                pl.format(
                    "without a parseable timestamp: `{}` is no epoch time between 1970 and 2200",
                    pl.col("ts").str.slice(0, 40),
                )
            )
            .otherwise(
                pl.format(
                    "without a parseable timestamp: `{}` is in no shape leaselog reads",
                    pl.col("ts").str.slice(0, 60),
                )
            )
        )
        .when(pl.col("ts").is_null() & file_has_wall)
        .then(pl.lit("without a parseable timestamp (missing; the file's other lines have one)"))
        .otherwise(None),
        *reasons,
    ]
    df = df.with_columns(pl.concat_str(reasons, separator="; ", ignore_nulls=True).alias("_why")).drop(
        cs.starts_with("_why_")
    )
    unreadable = (
        df.filter(pl.col("ts").is_not_null() & pl.col("t_wall").is_null())
        .group_by("file", maintain_order=True)
        .agg(pl.len(), pl.col("ts").first())
    )
    # (counted only when needed: a group-by on the file names of a million events holds ~0.4 GB)
    totals = dict(df.group_by("file").len().iter_rows()) if unreadable.height else {}
    notes = [
        f"{f}: none of its {n_bad} lease events' timestamps could be read (e.g. `{example}`); "
        f"leaselog reads {TIME_SHAPES}"
        for f, n_bad, example in unreadable.iter_rows()
        if n_bad == totals.get(f)
    ]
    return df, notes


def split_rejected(df: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the lines that can be used, the others as (file, line, reason)): `_why` says which."""
    bad = pl.col("_why") != ""
    rejected = df.filter(bad).select(
        "file", "line", pl.format("lease event `{}`: {}", pl.col("raw_event"), pl.col("_why")).alias("reason")
    )
    if rejected.height:  # (filtering copies every column: only when there is something to drop)
        df = df.filter(~bad)
    return df, rejected
