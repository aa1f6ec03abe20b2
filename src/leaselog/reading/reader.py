"""Read every input line and account for it: used (a lease event), ignored (valid, unrelated), malformed.

Streaming: a file is read line by line and only lease events are kept, so memory follows the lease
events, not the input size. Lines that cannot hold a lease event (none of the job-id field names occurs
in them) are only checked for shape, not parsed: that is what keeps the unrelated 80% of a fleet's log
cheap.
"""

from __future__ import annotations

import gzip
import io
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from leaselog.events import RAW_COLUMNS, FieldMapper
from leaselog.reading.formats import FORMATS, Format, Malformed, detect_format
from leaselog.reading.sources import Source

MAX_LOCATED = 1000  # malformed lines located per file and reason; the rest are counted
SNIFF_LINES = 20


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
        }


@dataclass
class ReadResult:
    raw: dict[str, list[Any]]
    event_names: list[str]
    inputs: list[InputReport]
    malformed: list[tuple[str, int, str]]  # file, line, reason (up to MAX_LOCATED per file and reason)


ProgressFn = Callable[[int], None]


def _open_binary(source: Source) -> IO[bytes]:
    if source.is_stdin:
        stream: IO[bytes] = sys.stdin.buffer
        head = stream.peek(2)[:2] if isinstance(stream, io.BufferedReader) else b""
        if head == b"\x1f\x8b":
            return gzip.GzipFile(fileobj=stream)  # type: ignore[return-value]
        return stream
    fh = open(source.path, "rb")  # noqa: SIM115 - closed by the caller
    if fh.read(2) == b"\x1f\x8b":
        fh.close()
        return gzip.open(source.path, "rb")
    fh.seek(0)
    return fh


def _looks_like_continuation(line: bytes) -> bool:
    """Stack-trace and multi-line message continuations: they belong to the previous event."""
    return line[:1] in (b" ", b"\t") or line.startswith((b"Caused by:", b"...", b"at ", b"Exception", b"java."))


class Reader:
    """Reads sources into raw canonical columns. One instance per analysis."""

    def __init__(self, mapper: FieldMapper, forced_format: str | None = None,
                 progress: ProgressFn | None = None) -> None:
        self.mapper = mapper
        self.forced_format = forced_format
        self.progress = progress
        self.raw: dict[str, list[Any]] = {k: [] for k in RAW_COLUMNS}
        self.event_names: list[str] = []
        self.malformed: list[tuple[str, int, str]] = []
        self._located: Counter[tuple[str, str]] = Counter()

    def read(self, sources: list[Source]) -> ReadResult:
        inputs = [self._read_source(i, s) for i, s in enumerate(sources)]
        return ReadResult(self.raw, self.event_names, inputs, self.malformed)

    def _bad(self, report: InputReport, line_no: int, reason: str) -> None:
        report.malformed += 1
        key = (report.path, reason)
        self._located[key] += 1
        if self._located[key] <= MAX_LOCATED:
            self.malformed.append((report.path, line_no, reason))

    def _read_source(self, index: int, source: Source) -> InputReport:
        display = "<stdin>" if source.is_stdin else source.path
        report = InputReport(path=display, format="?")
        try:
            fh = _open_binary(source)
        except OSError as e:
            report.error = f"cannot open: {e.strerror}"
            return report
        try:
            self._read_stream(index, fh, report, Path(display).name)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            report.error = f"read stopped at line {report.lines + 1}: {e}"
            self._bad(report, report.lines + 1, f"unreadable from here on: {e}")
        finally:
            if not source.is_stdin:
                fh.close()
        return report

    def _lines(self, fh: IO[bytes]) -> Iterator[bytes]:
        for raw in fh:
            yield raw.rstrip(b"\r\n")

    def _read_stream(self, index: int, fh: IO[bytes], report: InputReport, file_name: str) -> None:
        lines = self._lines(fh)
        head: list[bytes] = []
        for line in lines:
            head.append(line)
            if len(head) >= SNIFF_LINES:
                break
        name = self.forced_format or detect_format(head)
        report.format = name or "unknown"
        fmt = FORMATS.get(name) if name else None

        def all_lines() -> Iterator[bytes]:
            yield from head
            yield from lines

        needles = self.mapper.needles
        pod_fallback = file_name.split(".")[0]
        extract = self.mapper.extract
        raw = self.raw
        names = self.event_names
        progress = self.progress
        nbytes = 0
        line_no = 0
        for line_no, line in enumerate(all_lines(), start=1):
            if progress is not None:
                nbytes += len(line) + 1
                if line_no % 65536 == 0:
                    progress(nbytes)
                    nbytes = 0
            if not line.strip():
                report.ignored += 1
                continue
            if b"\x00" in line:
                self._bad(report, line_no, "binary data (NUL byte)")
                continue
            if fmt is None:
                self._bad(report, line_no, "no known log format (not JSON, not logfmt)")
                continue
            if needles is not None and not any(n in line for n in needles):
                self._classify_unrelated(fmt, line, line_no, report)
                continue
            try:
                records = fmt.parse(line)
            except Malformed as e:
                if fmt.json_like and _looks_like_continuation(line):
                    report.ignored += 1
                else:
                    self._bad(report, line_no, str(e))
                continue
            used = False
            for rec in records:
                got = extract(rec)
                if got is None:
                    continue
                if isinstance(got, str):
                    report.unmapped_events[got] += 1
                    continue
                event, row = got
                if row.get("pod") is None:
                    row["pod"] = pod_fallback
                for k in RAW_COLUMNS:
                    raw[k].append(row.get(k))
                raw["file"][-1] = report.path
                raw["line"][-1] = line_no
                raw["file_index"][-1] = index
                raw["fields"][-1] = _fields_json(rec)
                names.append(event)
                report.events += 1
                used = True
            if used:
                report.used += 1
            else:
                report.ignored += 1
        report.lines = line_no
        if progress is not None and nbytes:
            progress(nbytes)

    def _classify_unrelated(self, fmt: Format, line: bytes, line_no: int, report: InputReport) -> None:
        s = line.strip()
        if fmt.json_like:
            if s[:1] == b"{" and s[-1:] == b"}":
                report.ignored += 1
            elif _looks_like_continuation(line):
                report.ignored += 1
            else:
                self._bad(report, line_no, "not a JSON object")
        else:
            try:
                fmt.parse(line)
            except Malformed as e:
                self._bad(report, line_no, str(e))
                return
            report.ignored += 1


def _fields_json(rec: dict[str, Any]) -> str:
    import orjson

    try:
        return orjson.dumps(rec, default=str).decode()
    except TypeError:
        return str(rec)
