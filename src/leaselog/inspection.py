"""What leaselog understood of one file: the format it detected, the keys it found and what each fills,
the first events as typed, and the event names it could not map. Built for debugging a mapping
(`leaselog inspect FILE`); the CLI only formats what this returns.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from leaselog.config import Settings
from leaselog.pipeline import read_source
from leaselog.reading.dialects import labelled
from leaselog.reading.fields import FieldMapper
from leaselog.reading.formats import DETECTION_ORDER, FORMATS, Format, line_format, sniff_votes
from leaselog.reading.reader import SNIFF_LINES, InputReport
from leaselog.reading.sources import InputError, Source
from leaselog.reading.streams import DEFAULT_MAX_LINE_BYTES, capped_lines, open_binary

__all__ = ["Inspection", "describe_formats", "inspect_file"]

KEY_SAMPLE_LINES = 200  # lines whose records are looked at for the key table
DIALECT_LINES = 12  # lines listed per dialect that read some

EVENT_COLUMNS = [
    "line",
    "t",
    "pod",
    "job_id",
    "execution_id",
    "event",
    "raw_event",
    "lease_ms",
    "released",
    "renewal_outcome",
    "message",
]


@dataclass
class KeySeen:
    """A source key seen in the file's first records, and the canonical field it fills (None: none)."""

    key: str
    field: str | None
    example: str
    # the canonical field takes another key first when both are present
    shadowed_by: str | None = None


@dataclass
class Inspection:
    path: str
    format: str
    forced: bool
    votes: dict[str, int]  # format -> sample lines it reads (auto-detection looks at the first lines)
    report: InputReport
    keys: list[KeySeen]
    events: pl.DataFrame  # the first events as leaselog typed them (EVENT_COLUMNS)
    event_count: int
    malformed: list[tuple[int, str]]  # the first malformed lines: line, why
    unmapped_events: dict[str, int] = field(default_factory=dict)
    # lines a lock library's dialect read: dialect -> its first lines (and how many it read in all)
    dialect_lines: dict[str, list[int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "forced": self.forced,
            "votes": self.votes,
            "lines": self.report.as_dict(),
            "keys": [k.__dict__ for k in self.keys],
            "events": self.events.with_columns(pl.col("t").dt.to_string("%Y-%m-%dT%H:%M:%S%.3fZ")).to_dicts(),
            "eventCount": self.event_count,
            "malformed": [{"line": n, "reason": r} for n, r in self.malformed],
            "unmappedEvents": self.unmapped_events,
            "dialects": {
                name: {"events": self.report.dialects.get(name, 0), "lines": lines}
                for name, lines in self.dialect_lines.items()
            },
        }


def describe_formats() -> list[dict[str, str | int | None]]:
    """Every format: name, what it is, what it maps where, and its place in auto-detection."""
    return [
        {
            "name": f.name,
            "description": f.description,
            "maps": f.maps,
            "detection": DETECTION_ORDER.index(f.name) + 1 if f.name in DETECTION_ORDER else None,
        }
        for f in FORMATS.values()
    ]


def _head(path: str, n: int) -> list[bytes]:
    """The file's first lines (those before a gzip's cut, if it is cut short)."""
    fh = open_binary(Source(path))
    out: list[bytes] = []
    try:
        for line in capped_lines(fh, DEFAULT_MAX_LINE_BYTES):
            out.append(line)
            if len(out) >= n:
                break
    except (OSError, EOFError, zlib.error):
        pass  # a truncated gzip: the reader says where it stopped
    finally:
        fh.close()
    return out


def _example(v: Any) -> str:
    s = v if isinstance(v, str) else repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _keys(
    fmt: Format | None, lines: list[bytes], mapper: FieldMapper, *, forced: bool = False
) -> list[KeySeen]:
    owner: dict[str, str] = {}
    for canon, names in mapper.aliases.items():
        for name in names:
            owner.setdefault(name, canon)
    seen: dict[str, Any] = {}
    present_sets: list[set[str]] = []
    if fmt is not None:
        source = fmt.join(iter(lines)) if fmt.join is not None else iter(lines)
        for line in source:
            if not line.strip():
                continue
            try:
                records = fmt.parse(line)
            except (ValueError, TypeError, RecursionError):  # Malformed is a ValueError
                own = None if forced else line_format(line)  # a line of another shape, as the reader does
                if own is None:
                    continue
                try:
                    records = own.parse(line)
                except (ValueError, TypeError, RecursionError):
                    continue
            for rec in records:
                present_sets.append(set(rec))
                for k, v in rec.items():
                    seen.setdefault(k, v)
    out = []
    for k, v in seen.items():
        filled = owner.get(k)
        shadow: str | None = None
        if filled is not None:
            # a key earlier in the precedence list wins whenever both sit in one record
            earlier = mapper.aliases[filled][: mapper.aliases[filled].index(k)]
            for rec_keys in present_sets:
                if k in rec_keys:
                    hit = next((e for e in earlier if e in rec_keys), None)
                    if hit:
                        shadow = hit
                        break
        out.append(KeySeen(k, filled, _example(v), shadow))
    return out


def inspect_file(path: str | Path, *, settings: Settings | None = None, events: int = 20) -> Inspection:
    """Read one file as `analyze` would and report what was understood."""
    s = settings or Settings()
    p = str(path)
    if not Path(p).exists() or Path(p).is_dir():
        raise InputError(f"{p}: no such file")
    mapper = FieldMapper(s)
    head = _head(p, max(SNIFF_LINES, KEY_SAMPLE_LINES))
    votes = sniff_votes(head[:SNIFF_LINES])
    # read as analyze reads (a lease event that cannot be placed on the timeline counted malformed)
    read = read_source([Source(p)], s)
    report = read.inputs[0]
    if report.error and report.used + report.ignored == 0:  # as analyze: a cut gzip's lines still count
        raise InputError(f"{p}: {report.error}")
    fmt = FORMATS.get(report.format)
    ev = read.events.sort("line")
    rows = read.malformed
    malformed = [(n, why) for _, n, why in rows]
    return Inspection(
        path=p,
        format=report.format,
        forced=s.format is not None,
        votes={k: v for k, v in votes.items() if v},
        report=report,
        keys=_keys(fmt, head, mapper, forced=s.format is not None),
        events=ev.head(events).select(EVENT_COLUMNS),
        event_count=ev.height,
        malformed=sorted(malformed)[:20],
        unmapped_events=dict(report.unmapped_events.most_common(20)),
        dialect_lines={
            name: lines[:DIALECT_LINES]
            for name, lines in pl.concat(
                [
                    ev.filter(labelled(ev, lambda raw: raw.str.contains("/", literal=True))).select(
                        pl.col("raw_event").cast(pl.String), "line"
                    ),
                    # (a failover of the lock's Redis is read by a dialect too, and kept apart from the events)
                    read.failovers.select(pl.col("rule").alias("raw_event"), "line"),
                ]
            )
            .sort("line", maintain_order=True)
            .group_by(pl.col("raw_event").str.split("/").list.first().alias("dialect"), maintain_order=True)
            .agg(pl.col("line").unique(maintain_order=True))
            .iter_rows()
            if name in report.dialects
        },
    )
