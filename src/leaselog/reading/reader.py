"""Read every input line and account for it: used (a lease event), ignored (valid, unrelated), malformed.

Streaming: a file is read in blocks of a few MiB and only lease events are kept, so memory follows the
lease events, not the input size. Lines that cannot hold a lease event (none of the job-id field names
occurs in them) are only checked for shape, not parsed: that is what keeps the unrelated 80% of a
fleet's log cheap.

A file's shape is a first guess made from its first lines (blank lines, the Spring banner and JVM noise
skipped); every line that does not fit it is noise (ignored), a stack-trace continuation (attached to the
event above), or read in its own shape (`formats.line_format`). Nothing a line's neighbours are changes
how it is read, and a file's result does not depend on its length. After every input is read,
`identity.post_process` settles pods (a shared GELF host gives way to file names) and drops a shipper's
exact repeats of a line.

Two paths read the same lines the same way:

- the **columnar path**, for JSON shapes whose record is the line's own object (flat, ECS, Logstash):
  polars splits a block into lines and, in one pass, keeps only those that need a closer look: the
  candidates (a literal search for the job-id names' common prefix, then the needles on the few that
  have it) and the lines that are not plainly one object. The candidates are decoded in bulk with an
  explicit schema (only the field names seen so far, plus any new one found in the block: a field
  first appearing late is never missed, and nothing is read twice) and mapped onto canonical columns
  with expressions. Two threads overlap: one reads and splits block k+1 while the other decodes
  block k (polars releases the GIL);
- the **per-line path** (orjson, `Format.parse`, `FieldMapper.extract`) for every other shape, for
  message rules, and as the fallback for any line the columnar path cannot vouch for: nested objects,
  lines that do not decode, invalid UTF-8, lines of another shape (a banner, a console line, a BOM),
  lines that write a field name twice (last wins, as orjson decides; polars would take the first),
  lines longer than `max_line_bytes`. A block that fails columnar reading is re-read line by line,
  so a malformed line is always located by file:line.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import IO, Any

import polars as pl

from leaselog.reading.blocks import line_kinds, split_block
from leaselog.reading.columnar import (
    BLOCK_BYTES,
    ColumnarDecoder,
    Cut,
    Split,
    continues_event,
    cut_blocks,
    owned_lines,
)
from leaselog.reading.documents import document
from leaselog.reading.fields import RAW_COLUMNS, FieldMapper
from leaselog.reading.formats import (
    BOM,
    FORMATS,
    MONTH_DAY,
    TIME_OF_DAY,
    Format,
    Malformed,
    detect_format,
    fields_json,
    is_noise,
    line_format,
    looks_like_continuation,
    pod_from_path,
)
from leaselog.reading.formats.json_shapes import parse_flat
from leaselog.reading.identity import note_pod_sources, post_process
from leaselog.reading.library_hints import library_hints
from leaselog.reading.library_lines import settle_library_rows
from leaselog.reading.report import MAX_LOCATED, RAW_SCHEMA, InputReport, Stream
from leaselog.reading.sources import Source
from leaselog.reading.streams import (
    DEFAULT_MAX_LINE_BYTES,
    capped_lines,
    disk_position,
    open_binary,
)

__all__ = ["RAW_SCHEMA", "SNIFF_LINES", "InputReport", "ReadResult", "Reader"]

SNIFF_LINES = 20  # lines of a known shape the first guess is made from (blank lines and noise skipped)
MAX_HEAD_LINES = 2000  # ... looked for in at most this many lines
MAX_ATTACHED = 8192  # characters of stack trace kept on one event's message
NO_SHAPE = "no known log format (not JSON, a console line or logfmt)"
_DATE_IN_NAME = re.compile(r"(20\d\d)-?([01]\d)-?([0-3]\d)")


@dataclass
class ReadResult:
    raw: pl.DataFrame  # RAW_SCHEMA: the lease events' raw canonical columns plus the canonical `event`
    inputs: list[InputReport]
    malformed: list[tuple[str, int, str]]  # file, line, reason (up to MAX_LOCATED per file and reason)

    @property
    def event_names(self) -> list[str]:
        return self.raw["event"].to_list()


ProgressFn = Callable[[int], None]


def _columnar(fmt: Format | None, mapper: FieldMapper) -> bool:
    """Whether a file in this format can take the columnar path: its record is the line's JSON object."""
    return (
        fmt is not None
        and fmt.parse is parse_flat
        and fmt.join is None
        and not mapper.rules
        and mapper.needles is not None
    )


def _strip_bom(line: bytes) -> bytes:
    while line.startswith(BOM):  # at a file's start, or where files were concatenated
        line = line[3:]
    return line


class Reader:
    """Reads sources into raw canonical columns. One instance per analysis."""

    def __init__(
        self,
        mapper: FieldMapper,
        forced_format: str | None = None,
        progress: ProgressFn | None = None,
        *,
        columnar: bool = True,
        keep_fields: bool = True,
        settle_library: bool = True,
    ) -> None:
        self.mapper = mapper
        self.forced_format = forced_format
        self.progress = progress
        self.columnar = columnar  # False forces the per-line path everywhere (tests compare the two)
        # False leaves `fields` (each event's line or record as JSON, the biggest column by far) null
        self.keep_fields = keep_fields
        # False keeps lock-library rows as read (`library_lines`): a caller reading an input in chunks
        # (`leaselog watch`) settles them over every chunk at once
        self.settle_library = settle_library
        settings = mapper.settings
        self.max_line_bytes: int = getattr(settings, "max_line_bytes", None) or DEFAULT_MAX_LINE_BYTES
        self.log_date: str | None = getattr(settings, "log_date", None)
        # per-line path output, as lists; the columnar path appends finished frames
        self.raw: dict[str, list[Any]] = {k: [] for k in RAW_COLUMNS}
        self.event_names: list[str] = []
        self.line_text: list[str] = []  # each per-line event's line (what exact duplicates are told by)
        self.record_index: list[int] = []  # each per-line event's place among its line's records
        self.frames: list[pl.DataFrame] = []
        self.malformed: list[tuple[str, int, str]] = []
        self._located: Counter[tuple[str, str]] = Counter()
        self._cont_last: tuple[int, int] = (-1, -1)  # (file index, line) of the last continuation line
        self._cont_run = 0  # lines right before it in its run (%wEx's blank line before a trace counts)
        self._blank_last: tuple[int, int] = (-1, -1)  # (file index, line) of the last blank line
        self._decoder = ColumnarDecoder(mapper)
        self._disk = 0  # bytes of the current file on disk already reported to `progress`
        self._streams: list[Stream] = []
        self._pod_keys = mapper.aliases["pod"]

    def read(self, sources: list[Source]) -> ReadResult:
        inputs = [self._read_source(i, s) for i, s in enumerate(sources)]
        for source, report in zip(sources, inputs, strict=True):
            if report.lines and not report.events and self.mapper.dialect_needles:
                report.library_hints = library_hints(source)
        lists = pl.DataFrame(
            {**{k: self.raw[k] for k in RAW_COLUMNS}, "event": self.event_names}, schema=RAW_SCHEMA
        ).with_columns(
            pl.Series("dup_hash", self.line_text, dtype=pl.String).hash(seed=0),
            pl.Series("dup_record", self.record_index, dtype=pl.Int64),
        )
        self.raw = {}
        self.line_text, self.record_index = [], []
        raw = pl.concat([lists, *self.frames], how="vertical") if self.frames else lists
        self.frames = []
        if self.settle_library:
            raw = settle_library_rows(raw, self._streams)
        raw = post_process(raw, self._streams)
        return ReadResult(raw, inputs, self.malformed)

    def _bad(self, report: InputReport, line_no: int, reason: str, count: int = 1) -> None:
        report.malformed += count
        key = (report.path, reason)
        self._located[key] += 1
        if self._located[key] <= MAX_LOCATED:
            self.malformed.append((report.path, line_no, reason))

    def _bad_many(self, report: InputReport, line_nos: list[int], reason: str) -> None:
        key = (report.path, reason)
        room = max(0, MAX_LOCATED - self._located[key])
        self.malformed.extend((report.path, n, reason) for n in line_nos[:room])
        self._located[key] += len(line_nos)
        report.malformed += len(line_nos)

    def _read_source(self, index: int, source: Source) -> InputReport:
        display = "<stdin>" if source.is_stdin else source.path
        report = InputReport(path=display, format="?")
        st = Stream(index, report, None, pod_from_path(report.path))  # kubelet/containers paths name the pod
        st.day = self._day(source)
        self._streams.append(st)
        if source.skipped is not None:
            report.format, report.skipped = "-", source.skipped
            return report
        if source.same_as is not None:
            report.format, report.same_as = "-", source.same_as
            return report
        try:
            fh = open_binary(source)
        except OSError as e:
            report.error = f"cannot open: {e.strerror}"
            return report
        try:
            self._read_stream(st, fh)
        except (OSError, EOFError, zlib.error) as e:  # a cut or corrupt gzip: keep what came before
            if (
                isinstance(fh, gzip.GzipFile)
                and not source.is_stdin
                and report.lines == 0
                and not report.used
                and os.path.isfile(source.path)
            ):
                # gzip's magic bytes but not one line of gzip behind them: not gzip at all, so read the
                # bytes as they are (they end up counted and located like any other bad line)
                fh.close()
                with open(source.path, "rb") as plain:
                    self._read_stream(st, plain)
                return report
            report.error = f"read stopped at line {report.lines + 1}: {e}"
            self._bad(report, report.lines + 1, f"unreadable from here on: {e}")
            # the unreadable rest counts as one malformed line, so the counts still add up
            report.lines = report.used + report.ignored + report.malformed
        finally:
            if not source.is_stdin:
                fh.close()
        return report

    def _day(self, source: Source) -> str | None:
        """The date of lines that carry only a time of day: the option, else a date in the file's name,
        else the file's modification date (UTC)."""
        if self.log_date:
            return self.log_date
        if source.is_stdin:
            return None
        m = _DATE_IN_NAME.search(Path(source.path).name)
        if m is not None:
            try:
                return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))).isoformat()
            except ValueError:
                pass
        try:
            return dt.datetime.fromtimestamp(os.stat(source.path).st_mtime, dt.UTC).date().isoformat()
        except (OSError, ValueError, OverflowError):
            return None

    def _read_stream(self, st: Stream, fh: IO[bytes]) -> None:
        report = st.report
        lines = capped_lines(fh, self.max_line_bytes)
        head: list[bytes] = []
        shaped = 0  # head lines that can carry a shape (not blank, not noise, not a continuation)
        for line in lines:
            head.append(line)
            bare = _strip_bom(line)
            if bare.strip() and not is_noise(bare) and not looks_like_continuation(bare):
                shaped += 1
            if shaped >= SNIFF_LINES or len(head) >= MAX_HEAD_LINES:
                break
        doc = document(head, fh, self.max_line_bytes, report)  # one JSON document: its records, by line
        head = [r for _, r in doc.head(SNIFF_LINES)] if doc is not None else head
        name = self.forced_format or detect_format(head)
        if name is None and self.mapper.rules:
            name = "text"  # prose only: the config's message rules are what reads it
        report.format = name or "unknown"
        fmt = FORMATS.get(name) if name else None
        st.fmt = fmt

        if self.columnar and doc is None and _columnar(fmt, self.mapper) and len(head) >= SNIFF_LINES:
            # the sniffed head is read again as the start of the first block, so a columnar file's
            # events come out as frames in line order (no per-line rows to merge in)
            self._read_blocks(st, fh, b"\n".join(head) + b"\n", self.max_line_bytes)
            return

        stream: Iterable[bytes] = chain(head, lines)
        if fmt is not None and fmt.join is not None:
            # partial lines (CRI `P`, Docker chunks) joined: still one line out per line in, the
            # absorbed parts come out empty and are counted ignored
            stream = fmt.join(stream)
        self._disk = 0
        numbered = doc.records() if doc is not None else enumerate(stream, start=1)
        for n, (line_no, line) in enumerate(numbered, start=1):
            if self.progress is not None and n % 65536 == 0:
                self._advance(fh)
            self._take_line(st, line_no, line)
            report.lines = n
        self._advance(fh)

    def _advance(self, fh: object) -> None:
        """Report progress in bytes of the file on disk (compressed bytes for gzip): what the bar's total
        counts."""
        if self.progress is None:
            return
        pos = disk_position(fh)
        if pos is not None and pos > self._disk:
            self.progress(pos - self._disk)
            self._disk = pos

    # -- the per-line path -------------------------------------------------------------------------------

    def _take_line(self, st: Stream, line_no: int, line: bytes) -> None:
        """Account for one line (already stripped of its line ending) and keep its lease events.

        The line is read in its file's first-guess shape; a line that does not fit it is noise (ignored),
        a stack-trace continuation (attached to the event above), or read in its own shape
        (`line_format`): its neighbours never decide how it is read."""
        report, fmt = st.report, st.fmt
        if line[:1] == b"\xef":
            line = _strip_bom(line)
        if not line.strip():
            report.ignored += 1
            self._blank_last = (st.index, line_no)
            return
        if len(line) > self.max_line_bytes:
            self._bad(
                report, line_no, f"line longer than {self.max_line_bytes} bytes (max_line_bytes): not read"
            )
            return
        if b"\x00" in line:
            self._bad(report, line_no, "binary data (NUL byte)")
            return
        needles = self.mapper.needles
        if (
            needles is not None
            and not any(n in line for n in needles)
            and not any(n in line for n in self.mapper.dialect_needles)
        ):
            self._classify_unrelated(st, line, line_no)
            return
        records: list[dict[str, Any]] | None = None
        error: BaseException | None = None
        if fmt is not None:
            try:
                records = fmt.parse(line)
            except (ValueError, TypeError, RecursionError) as e:  # Malformed, or input no parser foresaw
                error = e
        if records is None:
            if is_noise(line):
                report.ignored += 1
                return
            if looks_like_continuation(line):
                self._continuation(report, st.index, line_no, line)
                return
            own = None if self.forced_format else line_format(line)
            if own is not None and own is not fmt:
                try:
                    records = own.parse(line)
                    report.other_shapes[own.name] += 1
                except (ValueError, TypeError, RecursionError) as e:
                    error = e
            if records is None:
                self._bad(report, line_no, self._why(fmt, line, error))
                return
        if not self._keep(st, line_no, line, records):
            own = None if self.forced_format else line_format(line)
            if own is None or own is fmt or not self._keep(st, line_no, line, _parse_or_none(own, line)):
                report.ignored += 1
                return
            report.other_shapes[own.name] += 1
        report.used += 1

    def _why(self, fmt: Format | None, line: bytes, error: BaseException | None) -> str:
        """Why a line no shape reads is malformed: for a line that starts like JSON, what JSON says;
        else what its file's (text) shape said, or that no shape reads it."""
        if line.lstrip()[:1] == b"{":
            try:
                FORMATS["flat"].parse(line)
            except (ValueError, TypeError, RecursionError) as e:
                error = e
        elif fmt is None or fmt.json_like or error is None:
            return NO_SHAPE
        if error is None:
            return NO_SHAPE
        return str(error) if isinstance(error, Malformed) else f"unreadable: {error!r:.200}"

    def _keep(self, st: Stream, line_no: int, line: bytes, records: list[dict[str, Any]] | None) -> bool:
        """Keep the lease events among a line's records; whether there was one."""
        if not records:
            return False
        report, raw = st.report, self.raw
        used = False
        text: str | None = None
        for k, rec in enumerate(records):
            got = self.mapper.extract(rec)
            if got is None:
                continue
            if isinstance(got, str):
                report.unmapped_events[got] += 1
                continue
            event, row = got
            if TIME_OF_DAY in rec and row.get("ts") is None:
                md = rec.get(MONTH_DAY)
                row["ts"] = self._time_of_day(st, str(rec[TIME_OF_DAY]), None if md is None else str(md))
            if row.get("pod") is None:
                row["pod"] = st.pod_fallback
                source = ""
            else:
                source = next((a for a in self._pod_keys if rec.get(a) not in (None, "")), "?")
            values = st.pod_values.setdefault(source, set())
            if len(values) < 64:
                values.add(str(row["pod"]))
            for c in RAW_COLUMNS:
                raw[c].append(row.get(c))
            raw["file"][-1] = report.path
            raw["line"][-1] = line_no
            raw["file_index"][-1] = st.index
            raw["fields"][-1] = fields_json(rec) if self.keep_fields else None
            if text is None:
                text = line.decode("utf-8", "replace")
            self.line_text.append(text)
            self.record_index.append(k)
            self.event_names.append(event)
            report.events += 1
            if row.get("dialect") is not None:
                report.dialects[str(row["dialect"])] += 1
            used = True
        return used

    def _time_of_day(self, st: Stream, tod: str, month_day: str | None = None) -> str | None:
        """A time of day on the stream's date; a time earlier than the one before means midnight passed.
        With a month and day (klog), only the year is the stream's: the year before when that date would
        lie ahead of the file's date (a December line in a file dated January)."""
        if st.day is None:
            return None
        if month_day is not None:
            year = int(st.day[:4])
            if f"{year}-{month_day}" > st.day and month_day[:2] > st.day[5:7]:
                year -= 1
            return f"{year}-{month_day}T{tod}"
        if st.last_tod and tod < st.last_tod and st.last_tod[:2] >= "20" and tod[:2] <= "03":
            st.day = (dt.date.fromisoformat(st.day) + dt.timedelta(days=1)).isoformat()
        st.last_tod = tod
        return f"{st.day}T{tod}"

    def _classify_unrelated(self, st: Stream, line: bytes, line_no: int) -> None:
        """A line with no job-id name: only its shape is checked (a cheap check, not a parse)."""
        fmt = st.fmt
        if (fmt is not None and fmt.shape_error(line) is None) or is_noise(line):
            st.report.ignored += 1
        elif looks_like_continuation(line):
            self._continuation(st.report, st.index, line_no, line)
        elif not self.forced_format and (own := line_format(line)) is not None:  # a line of another shape
            st.report.ignored += 1
            st.report.other_shapes[own.name] += 1
        else:
            self._bad(st.report, line_no, NO_SHAPE if fmt is None else fmt.shape_error(line) or NO_SHAPE)

    def _continuation(self, report: InputReport, index: int, line_no: int, line: bytes) -> None:
        """A stack-trace or multi-line message continuation: counted ignored, its text attached to the
        message of the event logged right before it (if that line was a lease event)."""
        report.ignored += 1
        prev = (index, line_no - 1)
        # (one blank line before it is the trace's: Spring Boot's %wEx writes a line separator first)
        run = self._cont_run + 1 if self._cont_last == prev else int(self._blank_last == prev)
        self._cont_last, self._cont_run = (index, line_no), run
        raw = self.raw
        if raw["line"] and raw["file_index"][-1] == index and raw["line"][-1] == line_no - 1 - run:
            msg = raw["message"][-1] or ""
            if len(msg) < MAX_ATTACHED:
                raw["message"][-1] = f"{msg}\n{line[: MAX_ATTACHED - len(msg)].decode('utf-8', 'replace')}"

    # -- the columnar path -------------------------------------------------------------------------------

    def _read_blocks(self, st: Stream, fh: IO[bytes], head: bytes, cap: int) -> None:
        """Read a stream in blocks cut at line ends, `head` (lines already taken from it) first.

        Two stages overlap: a worker thread reads block k+1 from the stream and splits it (`blocks.split_block`: polars
        releases the GIL) while this thread accounts for block k (`_block`: decoding, per-line fallback,
        the report). Only one block is read ahead, so memory stays flat.
        """
        self._disk = 0
        blocks = cut_blocks(fh, head, cap, BLOCK_BYTES)

        def produce() -> tuple[Cut, Split | None] | None:
            cut = next(blocks, None)
            if cut is None:
                return None
            return cut, (
                split_block(cut, self._decoder, self.max_line_bytes, self.keep_fields) if cut.size else None
            )

        # the `with` waits for a block still being read ahead, so the stream is not closed under it
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="leaselog-read") as pool:
            ahead = pool.submit(produce)
            while (got := ahead.result()) is not None:
                if got[0].failure is None:
                    ahead = pool.submit(produce)
                self._take_cut(st, *got)
                del got  # not kept alive while the next block is awaited

    def _take_cut(self, st: Stream, cut: Cut, split: Split | None) -> None:
        if cut.size:
            self._block(st, cut, split)
        if cut.failure is not None:  # a truncated gzip: the whole lines before it are counted
            raise cut.failure
        self._advance_to(cut.position)

    def _advance_to(self, position: int | None) -> None:
        """`_advance` with the stream position taken right after a block was read (the stream has been
        read further ahead since)."""
        if self.progress is not None and position is not None and position > self._disk:
            self.progress(position - self._disk)
            self._disk = position

    def _block(self, st: Stream, cut: Cut, split: Split | None) -> None:
        """Account for one block of whole lines: columnar if it can, else line by line."""
        n = self._columnar_block(st, split) if split is not None else None
        if n is None:
            block = cut.block()
            n = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
            self._per_line_block(st, block)
        st.report.lines += n

    def _per_line_block(self, st: Stream, block: bytes) -> None:
        first = st.report.lines + 1
        lines = block.split(b"\n")
        if block.endswith(b"\n"):
            lines.pop()
        for i, line in enumerate(lines):
            self._take_line(st, first + i, line.rstrip(b"\r\n"))

    def _columnar_block(self, st: Stream, split: Split) -> int | None:
        """Account for a split block's lines and return how many; None (nothing counted) when the block
        must go line by line."""
        # the field names this block shows, learned even if it goes line by line (as always)
        self._decoder.learn(split.names)
        n = split.lines
        report = st.report
        start = report.used + report.ignored + report.malformed
        first = report.lines + 1
        flagged = split.flagged.with_columns(pl.col("line").cast(pl.Int64) + first)
        # lines neither candidate nor plainly an object: blank, binary, padded, continuations, junk (rare)
        odd = flagged.filter((~pl.col("candidate") & ~pl.col("object")) | pl.col("nul"))
        kinds = line_kinds(odd)
        if continues_event(kinds, flagged, first):
            return None
        # lines of no JSON shape (a banner, a console line, a BOM, an over-long line): each is read
        # on its own, as the per-line path would
        odd_lines = kinds.filter(pl.col("kind").is_in(["nul", "junk"]))["line"]
        # ... and objects with a job-id name not written as a key (a GELF `_jobId`, a wrapper's escaped
        # line): the per-line path reads them in their own shape
        per_line = flagged.filter(
            pl.col("line").is_in(odd_lines.implode())
            | (pl.col("bare") & ~pl.col("candidate") & pl.col("object"))
        )
        candidates = flagged.filter(pl.col("candidate") & ~pl.col("nul"))
        per_line = pl.concat([per_line, candidates.filter(~pl.col("simple"))])
        candidates = candidates.filter(pl.col("simple"))
        ndjson, fields = split.ndjson, split.fields
        if candidates.height:
            # duplicate keys resolve last-wins: orjson's way, on the per-line path; a lock library's line
            # is read there too (its dialect reads it)
            repeated = split.repeated | candidates["library"]
            if repeated.any():
                per_line = pl.concat([per_line, candidates.filter(repeated)])
                candidates = candidates.filter(~repeated)
                ndjson = candidates["l"].str.join("\n").cast(pl.Binary).item()
                fields = owned_lines(ndjson, candidates["l"]) if fields is not None else None
        if candidates.height:
            decoded = self._decoder.decode(candidates, ndjson, st, fields)
            if decoded is None:  # some line did not decode: let the per-line path say which and why
                per_line = pl.concat([per_line, candidates])
            else:
                frame, unmapped, no_event = decoded
                if frame.height:
                    note_pod_sources(st, frame)
                    self.frames.append(frame.drop("pod_key"))
                report.used += frame.height
                report.events += frame.height
                report.unmapped_events.update(unmapped)
                if no_event:  # a job id's name but no lease event: maybe a line of another shape
                    per_line = pl.concat([per_line, candidates.filter(pl.col("line").is_in(no_event))])
        for line_no, text in per_line.sort("line").select("line", "l").iter_rows():
            self._take_line(st, line_no, text.encode() if text is not None else b"")
        # every line not counted yet is a valid line unrelated to leases, a blank, or a continuation
        report.ignored += n - (report.used + report.ignored + report.malformed - start)
        return n


def _parse_or_none(fmt: Format, line: bytes) -> list[dict[str, Any]] | None:
    try:
        return fmt.parse(line)
    except (ValueError, TypeError, RecursionError):
        return None
