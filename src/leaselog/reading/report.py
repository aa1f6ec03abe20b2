"""What the reader hands on: the raw lease-event rows' schema, and what happened to each input's lines."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from leaselog.reading.fields import RAW_COLUMNS
from leaselog.reading.formats import FORMATS, Format

MAX_LOCATED = 1000  # malformed lines located per file and reason; the rest are counted

# The reader's output: one row per lease event, raw strings as logged (build_events types them).
RAW_SCHEMA: dict[str, pl.DataType] = {
    **{c: pl.String() for c in RAW_COLUMNS},
    "line": pl.Int64(),
    "file_index": pl.Int64(),
    "event": pl.String(),
}


@dataclass
class InputReport:
    """What happened to one input's lines. used + ignored + malformed == lines."""

    path: str
    format: str
    lines: int = 0
    used: int = 0
    ignored: int = 0
    malformed: int = 0
    events: int = 0
    unmapped_events: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    # where this file's pods came from: the field (`kubernetes.pod_name`, `pod` ..) or "file name"
    pod_source: str | None = None
    pod_note: str | None = None  # why the file name was taken over a field that names no pod
    duplicates: int = 0  # lines dropped as exact repeats of an earlier line of the file (counted ignored)
    skipped: str | None = None  # why a file named by a folder was not read (nothing else is then set)
    same_as: str | None = None  # the input this one is the same file as (read once, there)
    # lines read in another shape than `format` (the file's first guess): shape -> lines
    other_shapes: Counter[str] = field(default_factory=Counter)
    # lines a lock library's dialect read (leaselog.reading.dialects): dialect -> events
    dialects: Counter[str] = field(default_factory=Counter)
    # lock libraries whose package or logger the file names though none of their lease lines is there
    # (their loggers are at a level that hides them): dialect names
    library_hints: list[str] = field(default_factory=list)
    # a file read as one JSON document (leaselog.reading.documents): its lines in the file; `lines`
    # then counts its records, each one line of evidence
    document: int | None = None

    def notes(self) -> list[str]:
        """What the Inputs table says under a file, beyond its counts."""
        out = []
        if self.pod_note:
            out.append(self.pod_note)
        if self.document is not None:
            out.append(
                f"one JSON document of {self.document} lines: each of its {self.lines} records read as a line"
            )
        if self.skipped:
            out.append(f"skipped: {self.skipped}")
        if self.same_as:
            out.append(f"the same file as {self.same_as}: read once")
        if self.other_shapes:
            shapes = ", ".join(f"{k} ({v})" for k, v in self.other_shapes.most_common())
            out.append(f"also lines of another shape than {self.format}: {shapes}")
        if +self.dialects:
            read = ", ".join(f"{k} ({v})" for k, v in (+self.dialects).most_common())
            out.append(f"lock-library lines read by dialect: {read}")
        shape = FORMATS.get(self.format)
        if shape is not None and shape.note and self.lines:
            out.append(shape.note)
        if self.duplicates:
            out.append(
                f"{self.duplicates} exact duplicate line(s) dropped (a shipper's retry), counted ignored"
            )
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> InputReport:
        """The inverse of `as_dict` (a stored analysis read back)."""
        return cls(
            path=d["path"],
            format=d["format"],
            lines=d["lines"],
            used=d["used"],
            ignored=d["ignored"],
            malformed=d["malformed"],
            events=d["events"],
            unmapped_events=Counter(d.get("unmapped_events") or {}),
            error=d.get("error"),
            pod_source=d.get("pod_source"),
            pod_note=d.get("pod_note"),
            duplicates=d.get("duplicates", 0),
            skipped=d.get("skipped"),
            same_as=d.get("same_as"),
            other_shapes=Counter(d.get("other_shapes") or {}),
            dialects=Counter(d.get("dialects") or {}),
            library_hints=list(d.get("library_hints") or []),
            document=d.get("document"),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "lines": self.lines,
            "used": self.used,
            "ignored": self.ignored,
            "malformed": self.malformed,
            "events": self.events,
            "unmapped_events": dict(self.unmapped_events.most_common(20)),
            **({"error": self.error} if self.error else {}),
            "pod_source": self.pod_source,
            **({"pod_note": self.pod_note} if self.pod_note else {}),
            "duplicates": self.duplicates,
            **({"skipped": self.skipped} if self.skipped else {}),
            **({"same_as": self.same_as} if self.same_as else {}),
            **({"other_shapes": dict(self.other_shapes)} if self.other_shapes else {}),
            **({"dialects": dict(+self.dialects)} if +self.dialects else {}),
            **({"library_hints": self.library_hints} if self.library_hints else {}),
            **({"document": self.document} if self.document is not None else {}),
        }


@dataclass
class Stream:
    """Per-file state shared by the reader's two paths."""

    index: int
    report: InputReport
    fmt: Format | None
    pod_fallback: str
    day: str | None = None  # the date time-of-day-only lines are on (console logs), if known
    last_tod: str = ""  # the last time of day read (a smaller one later means the next day)
    # pod source key (or "" for the file name) -> the values it gave (a few kept)
    pod_values: dict[str, set[str]] = field(default_factory=dict)


def account_rejected(
    rejected: pl.DataFrame,
    kept: pl.DataFrame,
    inputs: list[InputReport],
    malformed_rows: list[tuple[str, int, str]],
    *,
    events: bool = True,
) -> None:
    """Events the typing rejected: each removed from its input's events (`events` False: rows never
    counted as lease events, such as a failover's); a line none of whose events was kept moves from used to
    malformed (counts are per line: an OTLP line of three records without usable times is one malformed
    line, not three)."""
    by_path = {r.path: r for r in inputs}
    kept_lines = kept.select("file", "line").unique()
    per_line = rejected.group_by("file", "line", maintain_order=True).agg(
        pl.len().alias("events"), pl.col("reason").first()
    )
    lost = per_line.join(kept_lines, on=["file", "line"], how="anti")
    for f, n_events in per_line.group_by("file").agg(pl.col("events").sum()).iter_rows():
        if events:
            by_path[f].events -= n_events
    for f, n in lost.group_by("file").len().iter_rows():
        rep = by_path[f]
        rep.used -= n  # counted as used by the reader; they cannot be placed on the timeline
        rep.malformed += n
    # the first MAX_LOCATED of each file are located (a bad value's reason names it, so no per-reason cap)
    located = lost.filter(pl.int_range(pl.len()).over("file") < MAX_LOCATED)
    malformed_rows.extend(located.select("file", "line", "reason").iter_rows())
