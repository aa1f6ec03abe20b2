"""Read every input line and account for it: used (a lease event), ignored (valid, unrelated), malformed.

Streaming: a file is read in blocks of a few MiB and only lease events are kept, so memory follows the
lease events, not the input size. Lines that cannot hold a lease event (none of the job-id field names
occurs in them) are only checked for shape, not parsed: that is what keeps the unrelated 80% of a
fleet's log cheap.

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
  lines that do not decode, invalid UTF-8. A block that fails columnar reading is re-read line by line,
  so a malformed line is always located by file:line.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import orjson
import polars as pl

from leaselog.events import RAW_COLUMNS, FieldMapper, normalise_event_name
from leaselog.reading.formats import FORMATS, Format, Malformed, detect_format, pod_from_path
from leaselog.reading.formats.json_shapes import parse_flat
from leaselog.reading.sources import Source

MAX_LOCATED = 1000  # malformed lines located per file and reason; the rest are counted
SNIFF_LINES = 20
MAX_ATTACHED = 8192  # characters of stack trace kept on one event's message
# columnar block: big enough to amortise polars calls, small enough that reading stays flat in memory
BLOCK_BYTES = 16 * 1024 * 1024

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
    raw: pl.DataFrame  # RAW_SCHEMA: the lease events' raw canonical columns plus the canonical `event`
    inputs: list[InputReport]
    malformed: list[tuple[str, int, str]]  # file, line, reason (up to MAX_LOCATED per file and reason)

    @property
    def event_names(self) -> list[str]:
        return self.raw["event"].to_list()


ProgressFn = Callable[[int], None]


def _open_binary(source: Source) -> IO[bytes]:
    if source.is_stdin:
        stream: IO[bytes] = sys.stdin.buffer
        head = stream.peek(2)[:2] if isinstance(stream, io.BufferedReader) else b""
        if head == b"\x1f\x8b":
            return cast(IO[bytes], gzip.GzipFile(fileobj=stream))
        return stream
    fh = open(source.path, "rb")  # noqa: SIM115 - closed by the caller
    if fh.read(2) == b"\x1f\x8b":
        fh.close()
        return cast(IO[bytes], gzip.open(source.path, "rb"))
    fh.seek(0)
    return fh


def _disk_position(fh: IO[bytes]) -> int | None:
    """How far into the file on disk a stream has read (a GzipFile's underlying file), if known."""
    raw = getattr(fh, "fileobj", None) or fh
    try:
        return int(raw.tell())
    except (OSError, ValueError, AttributeError):
        return None


def _read_some(fh: IO[bytes], size: int) -> tuple[bytes, BaseException | None]:
    """Up to `size` bytes, and the error that stopped the read early (what came before it is kept)."""
    parts: list[bytes] = []
    got = 0
    read1 = getattr(fh, "read1", fh.read)
    try:
        while got < size:
            piece = read1(size - got)
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
    except (OSError, EOFError, zlib.error) as e:  # gzip.BadGzipFile is an OSError; corrupt data is zlib's
        return b"".join(parts), e
    return b"".join(parts), None  # one piece (a plain file's usual read) is returned as is, not copied


_CONTINUATION_STARTS = (b"Caused by:", b"...", b"at ", b"Exception", b"java.")
# the same test as a regex, for the columnar path
_CONTINUATION_RE = r"^(?:[ \t]|Caused by:|\.\.\.|at |Exception|java\.)"


def _looks_like_continuation(line: bytes) -> bool:
    """Stack-trace and multi-line message continuations: they belong to the previous event."""
    return line[:1] in (b" ", b"\t") or line.startswith(_CONTINUATION_STARTS)


def _columnar(fmt: Format | None, mapper: FieldMapper) -> bool:
    """Whether a file in this format can take the columnar path: its record is the line's JSON object."""
    return (
        fmt is not None
        and fmt.parse is parse_flat
        and fmt.join is None
        and not mapper.rules
        and mapper.needles is not None
    )


@dataclass
class _Stream:
    """Per-file state shared by both paths."""

    index: int
    report: InputReport
    fmt: Format | None
    pod_fallback: str


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
    ) -> None:
        self.mapper = mapper
        self.forced_format = forced_format
        self.progress = progress
        self.columnar = columnar  # False forces the per-line path everywhere (tests compare the two)
        # False leaves `fields` (each event's line or record as JSON, the biggest column by far) null
        self.keep_fields = keep_fields
        # per-line path output, as lists; the columnar path appends finished frames
        self.raw: dict[str, list[Any]] = {k: [] for k in RAW_COLUMNS}
        self.event_names: list[str] = []
        self.frames: list[pl.DataFrame] = []
        self.malformed: list[tuple[str, int, str]] = []
        self._located: Counter[tuple[str, str]] = Counter()
        self._cont_last: tuple[int, int] = (-1, -1)  # (file index, line) of the last continuation line
        self._cont_run = 0  # continuation lines right before it
        self._decoder = _ColumnarDecoder(mapper)
        self._disk = 0  # bytes of the current file on disk already reported to `progress`

    def read(self, sources: list[Source]) -> ReadResult:
        inputs = [self._read_source(i, s) for i, s in enumerate(sources)]
        lists = pl.DataFrame(
            {**{k: self.raw[k] for k in RAW_COLUMNS}, "event": self.event_names}, schema=RAW_SCHEMA
        )
        raw = pl.concat([lists, *self.frames], how="vertical") if self.frames else lists
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
        try:
            fh = _open_binary(source)
        except OSError as e:
            report.error = f"cannot open: {e.strerror}"
            return report
        try:
            self._read_stream(index, fh, report, Path(display).name)
        except (OSError, EOFError, zlib.error) as e:  # a cut or corrupt gzip: keep what came before
            if (
                isinstance(fh, gzip.GzipFile)
                and not source.is_stdin
                and report.lines == 0
                and not report.used
            ):
                # gzip's magic bytes but not one line of gzip behind them: not gzip at all, so read the
                # bytes as they are (they end up counted and located like any other bad line)
                fh.close()
                with open(source.path, "rb") as plain:
                    self._read_stream(index, plain, report, Path(display).name)
                return report
            report.error = f"read stopped at line {report.lines + 1}: {e}"
            self._bad(report, report.lines + 1, f"unreadable from here on: {e}")
            # the unreadable rest counts as one malformed line, so the counts still add up
            report.lines = report.used + report.ignored + report.malformed
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
        if name is None and self.mapper.rules:
            name = "text"  # prose only: the config's message rules are what reads it
        report.format = name or "unknown"
        fmt = FORMATS.get(name) if name else None
        st = _Stream(index, report, fmt, pod_from_path(report.path))  # kubelet/containers paths name the pod

        if self.columnar and _columnar(fmt, self.mapper) and len(head) >= SNIFF_LINES:
            # the sniffed head is read again as the start of the first block, so a columnar file's
            # events come out as frames in line order (no per-line rows to merge in)
            self._read_blocks(st, fh, b"\n".join(head) + b"\n")
            return

        def all_lines() -> Iterator[bytes]:
            yield from head
            yield from lines

        stream: Iterable[bytes] = all_lines()
        if fmt is not None and fmt.join is not None:
            # partial lines (CRI `P`, Docker chunks) joined: still one line out per line in, the
            # absorbed parts come out empty and are counted ignored
            stream = fmt.join(stream)
        self._disk = 0
        line_no = 0
        for line_no, line in enumerate(stream, start=1):
            if self.progress is not None and line_no % 65536 == 0:
                self._advance(fh)
            self._take_line(st, line_no, line)
            report.lines = line_no
        self._advance(fh)

    def _advance(self, fh: IO[bytes]) -> None:
        """Report progress in bytes of the file on disk (compressed bytes for gzip): what the bar's total
        counts."""
        if self.progress is None:
            return
        pos = _disk_position(fh)
        if pos is not None and pos > self._disk:
            self.progress(pos - self._disk)
            self._disk = pos

    # -- the per-line path -------------------------------------------------------------------------------

    def _take_line(self, st: _Stream, line_no: int, line: bytes) -> None:
        """Account for one line (already stripped of its line ending) and keep its lease events."""
        report, fmt = st.report, st.fmt
        if not line.strip():
            report.ignored += 1
            return
        if b"\x00" in line:
            self._bad(report, line_no, "binary data (NUL byte)")
            return
        if fmt is None:
            self._bad(report, line_no, "no known log format (not JSON, not logfmt)")
            return
        needles = self.mapper.needles
        if needles is not None and not any(n in line for n in needles):
            self._classify_unrelated(fmt, line, line_no, report, st.index)
            return
        try:
            records = fmt.parse(line)
        except (ValueError, TypeError, RecursionError) as e:  # Malformed, or input no parser foresaw
            if _looks_like_continuation(line):
                self._continuation(report, st.index, line_no, line)
            else:
                self._bad(report, line_no, str(e) if isinstance(e, Malformed) else f"unreadable: {e!r:.200}")
            return
        used = False
        raw = self.raw
        for rec in records:
            got = self.mapper.extract(rec)
            if got is None:
                continue
            if isinstance(got, str):
                report.unmapped_events[got] += 1
                continue
            event, row = got
            if row.get("pod") is None:
                row["pod"] = st.pod_fallback
            for k in RAW_COLUMNS:
                raw[k].append(row.get(k))
            raw["file"][-1] = report.path
            raw["line"][-1] = line_no
            raw["file_index"][-1] = st.index
            raw["fields"][-1] = _fields_json(rec) if self.keep_fields else None
            self.event_names.append(event)
            report.events += 1
            used = True
        if used:
            report.used += 1
        else:
            report.ignored += 1

    def _classify_unrelated(
        self, fmt: Format, line: bytes, line_no: int, report: InputReport, index: int = -1
    ) -> None:
        why = fmt.shape_error(line)  # a cheap shape check, not a parse: these lines hold no lease event
        if why is None:
            report.ignored += 1
        elif _looks_like_continuation(line):
            self._continuation(report, index, line_no, line)
        else:
            self._bad(report, line_no, why)

    def _continuation(self, report: InputReport, index: int, line_no: int, line: bytes) -> None:
        """A stack-trace or multi-line message continuation: counted ignored, its text attached to the
        message of the event logged right before it (if that line was a lease event)."""
        report.ignored += 1
        run = self._cont_run + 1 if self._cont_last == (index, line_no - 1) else 0
        self._cont_last, self._cont_run = (index, line_no), run
        raw = self.raw
        if raw["line"] and raw["file_index"][-1] == index and raw["line"][-1] == line_no - 1 - run:
            msg = raw["message"][-1] or ""
            if len(msg) < MAX_ATTACHED:
                raw["message"][-1] = f"{msg}\n{line[: MAX_ATTACHED - len(msg)].decode('utf-8', 'replace')}"

    # -- the columnar path -------------------------------------------------------------------------------

    def _read_blocks(self, st: _Stream, fh: IO[bytes], head: bytes) -> None:
        """Read a stream in blocks cut at line ends, `head` (lines already taken from it) first.

        Two stages overlap: a worker thread reads block k+1 from the stream and splits it (`_split`: polars
        releases the GIL) while this thread accounts for block k (`_block`: decoding, per-line fallback,
        the report). Only one block is read ahead, so memory stays flat.
        """
        self._disk = 0
        blocks = _cut_blocks(fh, head)

        def produce() -> tuple[_Cut, _Split | None] | None:
            cut = next(blocks, None)
            if cut is None:
                return None
            return cut, (self._split(cut) if cut.size else None)

        # the `with` waits for a block still being read ahead, so the stream is not closed under it
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="leaselog-read") as pool:
            ahead = pool.submit(produce)
            while (got := ahead.result()) is not None:
                if got[0].failure is None:
                    ahead = pool.submit(produce)
                self._take_cut(st, *got)
                del got  # not kept alive while the next block is awaited

    def _take_cut(self, st: _Stream, cut: _Cut, split: _Split | None) -> None:
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

    def _block(self, st: _Stream, cut: _Cut, split: _Split | None) -> None:
        """Account for one block of whole lines: columnar if it can, else line by line."""
        n = self._columnar_block(st, split) if split is not None else None
        if n is None:
            block = cut.block()
            n = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
            self._per_line_block(st, block)
        st.report.lines += n

    def _per_line_block(self, st: _Stream, block: bytes) -> None:
        first = st.report.lines + 1
        lines = block.split(b"\n")
        if block.endswith(b"\n"):
            lines.pop()
        for i, line in enumerate(lines):
            self._take_line(st, first + i, line.rstrip(b"\r\n"))

    def _split(self, cut: _Cut) -> _Split | None:
        """Split a block into lines and keep the few that need a closer look; None when the block must go
        line by line. Runs in the read-ahead thread: it only reads the decoder's fixed needles and
        `keep_fields`, never the report nor the field names learned."""
        lines = _chunk_lines(cut)
        if lines is None:
            lines = _block_lines(cut.block())
            if lines is None:
                return None
        n = lines.height
        line = pl.col("l")
        plain_object = line.str.starts_with("{") & line.str.ends_with("}")
        # One pass over the whole block keeps only the lines that may hold a lease event (the job-id
        # names' common prefix occurs), the lines that are not plainly one object (blank, padded,
        # continuations, junk) and, when the block has a NUL at all, the lines with one. Every other
        # line, most of a fleet's log, is a valid line unrelated to leases: counted, not looked at again.
        keep = self._decoder.prefilter(line) | ~plain_object
        has_nul = b"\x00" in cut.prefix or cut.data.find(b"\x00", 0, cut.end) >= 0
        if has_nul:
            keep = keep | line.str.contains("\x00", literal=True)
        decoder = self._decoder
        flagged = (
            lines.with_row_index("line")  # 0-based in the block: `_columnar_block` adds the first line's
            .filter(keep.fill_null(True))  # null: an empty line
            .with_columns(
                decoder.candidate(line).fill_null(False).alias("candidate"),
                plain_object.fill_null(False).alias("object"),
                (line.str.contains("\x00", literal=True) if has_nul else pl.lit(False))
                .fill_null(False)
                .alias("nul"),
            )
            # what the columnar path decodes: nested objects are flattened by the per-line path, and
            # so are lines not plainly one object
            .with_columns(
                (pl.col("object") & (line.str.count_matches("{", literal=True) == 1)).alias("simple")
            )
        )
        # the lines the columnar path decodes, as one NDJSON text: searched for field names not seen
        # before, then parsed by `_ColumnarDecoder.decode` (unless the block goes line by line)
        texts = flagged.filter(pl.col("candidate") & ~pl.col("nul") & pl.col("simple"))["l"]
        joined = texts.str.join("\n")
        ndjson = joined.cast(pl.Binary).item()
        # the `fields` column's lines, in buffers of their own (here: this thread has less to do)
        fields = _owned_lines(ndjson, texts) if self.keep_fields and texts.len() else None
        return _Split(n, flagged, texts, joined, ndjson, fields)

    def _columnar_block(self, st: _Stream, split: _Split) -> int | None:
        """Account for a split block's lines and return how many; None (nothing counted) when the block
        must go line by line."""
        # the field names this block shows, learned even if it goes line by line (as always)
        self._decoder.learn(split.texts, split.joined)
        n = split.lines
        report = st.report
        start = report.used + report.ignored + report.malformed
        first = report.lines + 1
        line = pl.col("l")
        flagged = split.flagged.with_columns(pl.col("line").cast(pl.Int64) + first)
        # lines neither candidate nor plainly an object: blank, binary, padded, continuations, junk (rare)
        odd = flagged.filter((~pl.col("candidate") & ~pl.col("object")) | pl.col("nul"))
        if odd.height:
            stripped = line.str.strip_chars()
            kinds = odd.select(
                "line",
                pl.when(line.is_null() | (stripped == ""))
                .then(pl.lit("blank"))
                .when(pl.col("nul"))
                .then(pl.lit("nul"))
                .when(stripped.str.starts_with("{") & stripped.str.ends_with("}"))
                .then(pl.lit("ignored"))
                .when(line.str.contains(_CONTINUATION_RE))
                .then(pl.lit("continuation"))
                .otherwise(pl.lit("junk"))
                .alias("kind"),
            )
        else:
            kinds = pl.DataFrame(schema={"line": pl.Int64, "kind": pl.String})
        if self._continues_event(kinds, flagged, first):
            return None
        if odd.height:
            for kind, reason in (("nul", "binary data (NUL byte)"), ("junk", "not a JSON object")):
                located = kinds.filter(pl.col("kind") == kind)["line"].to_list()
                if located:
                    self._bad_many(report, located, reason)
        candidates = flagged.filter(pl.col("candidate") & ~pl.col("nul"))
        per_line = candidates.filter(~pl.col("simple"))
        candidates = candidates.filter(pl.col("simple"))
        if candidates.height:
            decoded = self._decoder.decode(candidates, split.ndjson, st, split.fields)
            if decoded is None:  # some line did not decode: let the per-line path say which and why
                per_line = pl.concat([per_line, candidates])
            else:
                frame, unmapped = decoded
                if frame.height:
                    self.frames.append(frame)
                report.used += frame.height
                report.events += frame.height
                report.unmapped_events.update(unmapped)
        for line_no, text in per_line.select("line", "l").iter_rows():
            self._take_line(st, line_no, text.encode())
        # every line not counted yet is a valid line unrelated to leases, a blank, or a continuation
        report.ignored += n - (report.used + report.ignored + report.malformed - start)
        return n

    @staticmethod
    def _continues_event(kinds: pl.DataFrame, flagged: pl.DataFrame, first: int) -> bool:
        """Whether a continuation run (stack trace) follows a candidate line, or a line before the block.

        The per-line path attaches such text to the event's message, so such a block goes line by line.
        `flagged` holds every candidate line (the lines it leaves out are plain objects, not candidates).
        """
        cont = pl.concat(
            [
                kinds.filter(pl.col("kind") == "continuation")["line"],
                # candidates that are not plainly an object are few: the regex only runs on those
                flagged.filter(pl.col("candidate") & ~pl.col("object")).filter(
                    pl.col("l").str.contains(_CONTINUATION_RE)
                )["line"],
            ]
        ).sort()
        if cont.is_empty():
            return False
        starts = cont.filter(~(cont - 1).is_in(cont.implode()))
        anchors = starts - 1
        if (anchors < first).any():
            return True
        cand = flagged.filter(pl.col("candidate"))["line"]
        return bool(anchors.is_in(cand.implode()).any())


@dataclass
class _Cut:
    """One block of whole lines, `prefix + data[:end]`, not joined unless needed (joining 16 MiB costs a
    copy and, with sizes that vary, page faults): `data` is the chunk just read, `prefix` the start of its
    first line, read with the chunk before (or, for a stream's first block, the lines sniffed)."""

    prefix: bytes
    data: bytes
    end: int
    position: int | None  # the stream's position on disk right after it was read (for progress)
    failure: BaseException | None = None  # the read error that ended the stream after this block

    @property
    def size(self) -> int:
        return len(self.prefix) + self.end

    def block(self) -> bytes:
        if not self.prefix and self.end == len(self.data):
            return self.data
        return b"".join((self.prefix, memoryview(self.data)[: self.end]))


def _cut_blocks(fh: IO[bytes], head: bytes) -> Iterator[_Cut]:
    """A stream's bytes in blocks of about BLOCK_BYTES cut after a newline, `head` first."""
    rest = head  # the bytes read but not handed out yet (a line's start, or the head)
    while True:
        chunk, failure = _read_some(fh, BLOCK_BYTES)
        if failure is not None:  # a truncated gzip: the whole lines read so far, then the error
            data = rest + chunk
            yield _Cut(b"", data, data.rfind(b"\n") + 1, None, failure)
            return
        if not chunk:
            if rest:  # the last line has no newline
                yield _Cut(b"", rest, len(rest), _disk_position(fh))
            return
        cut = chunk.rfind(b"\n")
        if cut < 0:
            data = rest + chunk
            cut = data.rfind(b"\n")  # only the head can hold one
            if cut < 0:  # one line longer than a block: keep reading
                rest = data
                continue
            yield _Cut(b"", data, cut + 1, _disk_position(fh))
            rest = data[cut + 1 :]
            continue
        yield _Cut(rest, chunk, cut + 1, _disk_position(fh))
        rest = chunk[cut + 1 :]


def _block_lines(block: bytes) -> pl.DataFrame | None:
    """A block's lines (column `l`, null for an empty line), or None when it must go line by line."""
    try:
        # a one-column "CSV" whose separator cannot occur in a valid line is polars' fast line
        # splitter; it keeps empty lines (null) so row i is line first+i. Invalid UTF-8, or the
        # separator inside a line, make it fail: that block then goes line by line.
        lines = _read_lines(block)
    except pl.exceptions.PolarsError:
        return None
    n = lines.height
    # every byte is a line's or its newline's (cheaper than counting newlines); CRLF lines lost
    # their CR, so for those count the newlines to be sure no line was split or merged
    tail = 0 if block.endswith(b"\n") else 1
    if _line_bytes(lines) + n - tail != len(block) and block.count(b"\n") + tail != n:
        return None
    return lines


def _chunk_lines(cut: _Cut) -> pl.DataFrame | None:
    """`_block_lines` without joining the block: the chunk read is split as it is, its first row (the
    end of the line `prefix` starts) and its last (a line the next block holds) fixed up. None when that
    does not plainly give the block's lines (say the chunk's edge cut a UTF-8 character in two): the
    joined block is then split as before."""
    data, end, prefix = cut.data, cut.end, cut.prefix
    if b"\n" in prefix or end == 0:  # the sniffed lines, or a chunk that ends no line
        return None
    try:
        rows = _read_lines(data)
        first = 0
        parts = []
        if prefix:  # the first row is the end of a line that began in the chunk before
            seam = _read_lines(prefix + data[: data.find(b"\n") + 1])
            if seam.height != 1:
                return None
            parts.append(seam)
            first = 1
    except pl.exceptions.PolarsError:
        return None
    last = rows.height - (1 if end < len(data) else 0)  # the last row is the next block's
    if last < first:
        return None
    parts.append(rows.slice(first, last - first))
    lines = pl.concat(parts) if len(parts) > 1 else parts[0]
    # every byte of the block is a line's or its newline's, the block ends with one: the rows are its
    # lines, one for one (else, with CRLF lines say, the block is split as before)
    if _line_bytes(lines) + lines.height != cut.size or data[end - 1 : end] != b"\n":
        return None
    return lines


def _read_lines(text: bytes) -> pl.DataFrame:
    return pl.read_csv(text, has_header=False, separator="\x1f", quote_char=None, schema={"l": pl.String})


def _line_bytes(lines: pl.DataFrame) -> int:
    return int(lines["l"].str.len_bytes().sum() or 0)


@dataclass
class _Split:
    """A block split into lines: how many, and the few that need a closer look."""

    lines: int
    # line (0-based in the block), l (the text), candidate, object, nul, simple (what the columnar path
    # decodes); the lines left out are valid objects unrelated to leases
    flagged: pl.DataFrame
    texts: pl.Series  # the lines the columnar path decodes (candidate, no NUL, simple)
    joined: pl.Series  # those lines joined by newlines, one string
    ndjson: bytes  # the same, as bytes (what `read_ndjson` reads)
    fields: pl.Series | None  # those lines in buffers of their own, if `fields` is kept


class _ColumnarDecoder:
    """Decodes candidate lines in bulk and maps them onto canonical columns (FieldMapper.extract, vectorised)."""

    def __init__(self, mapper: FieldMapper) -> None:
        self.mapper = mapper
        self.aliases = mapper.aliases
        self.keys: list[str] = list(dict.fromkeys(k for keys in self.aliases.values() for k in keys))
        job_keys = self.aliases["job_id"]
        # a JSON key is always written in quotes; a dotted name may be nested (`"job":{"id":..}`)
        self.needles: list[str] = list(
            dict.fromkeys([*(f'"{k}"' for k in job_keys), *(f'"{k.split(".", 1)[0]}"' for k in job_keys)])
        )
        # the needles' common prefix (`"job`): a literal search for it is many times faster than the
        # multi-needle one, which then only runs on the few lines that have it
        prefix = _common_prefix(self.needles)
        self.prefix: str | None = prefix if len(prefix) >= 3 else None
        self._needles_regex = _any_literal(self.needles)
        # field names seen so far: the decode schema grows when a block shows a new one (a narrow
        # schema decodes faster than all ~120 spellings)
        self.known: set[str] = set()
        self._unseen_regex: tuple[list[str], str] = ([], "")  # `learn`'s search, rebuilt when `known` grows

    def prefilter(self, line: pl.Expr) -> pl.Expr:
        """A cheap test every candidate line passes (the needles' literal common prefix, if any)."""
        if self.prefix is not None:
            return line.str.contains(self.prefix, literal=True)
        return self.candidate(line)

    def candidate(self, line: pl.Expr) -> pl.Expr:
        """The exact test: one of the needles occurs. A regex of the needles as literals: the same test
        as `contains_any`, and faster."""
        return line.str.contains(self._needles_regex)

    def learn(self, texts: pl.Series, joined: pl.Series) -> None:
        """Field names not seen before that occur in these lines as keys (a literal search: no line is
        decoded; a name found elsewhere in a line may be taken too, which only widens the schema).

        `joined` is the lines joined. One regex search over it for an unseen name written as a key (after
        `{` or `,`) is several times faster than a multi-needle search line by line, and every key of a
        JSON object is written so; only when it finds one are the lines searched one by one."""
        unseen = [k for k in self.keys if k not in self.known]
        if not unseen or texts.is_empty():
            return
        if self._unseen_regex[0] != unseen:
            self._unseen_regex = (unseen, r'[{,]\s*"' + _any_literal(unseen) + '"')
        if not joined.str.contains(self._unseen_regex[1]).any():
            return
        quoted = [f'"{k}"' for k in unseen]
        found = texts.filter(texts.str.contains_any(quoted)).str.extract_many(quoted)
        self.known.update(q[1:-1] for q in found.explode().drop_nulls().unique().to_list())

    def decode(
        self, candidates: pl.DataFrame, ndjson: bytes, st: _Stream, fields: pl.Series | None
    ) -> tuple[pl.DataFrame, Counter[str]] | None:
        """(lease-event rows in RAW_SCHEMA, unmapped event names), or None if some line does not decode.

        `ndjson` is the candidates' lines joined by newlines; `fields` the lines for the `fields` column
        (None: left null)."""
        texts = candidates["l"]
        schema = {k: pl.String() for k in self.keys if k in self.known}
        try:
            decoded = pl.read_ndjson(ndjson, schema=schema)
        except pl.exceptions.PolarsError:
            return None
        if decoded.height != candidates.height:
            return None
        # the decoded columns are renamed k0, k1 ..: a field named like one of the columns added below
        # (`line`, `canonical` ..) cannot clash with them
        column_of = {k: f"k{i}" for i, k in enumerate(schema)}
        decoded.columns = list(column_of.values())

        def pick(canonical: str) -> pl.Expr:
            # the first alias with a non-empty value, as FieldMapper.extract does
            cols = [
                pl.when(pl.col(c) != "").then(pl.col(c))
                for c in (column_of.get(k) for k in self.aliases[canonical])
                if c is not None
            ]
            return pl.coalesce(cols) if cols else pl.lit(None, dtype=pl.String)

        # first what decides which rows are lease events: job id, event name (and message)
        has_message = bool(self.mapper.message_events)
        rows = decoded.with_columns(
            candidates["line"].alias("line"),
            (texts if fields is None else fields).alias("l"),
            pick("job_id").alias("job_id"),
            pick("event").alias("event_name"),
            *([pick("message").alias("message")] if has_message else []),
        )
        # event names repeat: map each distinct name once, in Python, exactly as FieldMapper does
        distinct = rows["event_name"].unique().drop_nulls().to_list()
        hits = {n: self.mapper.event_aliases.get(normalise_event_name(n)) for n in distinct}
        to_canonical = {n: h[0] for n, h in hits.items() if h is not None}
        event_name = pl.col("event_name")
        canonical = event_name.replace_strict(to_canonical, default=None, return_dtype=pl.String)
        raw_event = event_name
        if has_message:  # a record without an event name may say it in its message
            by_message = pl.when(event_name.is_null()).then(
                _normalised(pl.col("message")).replace_strict(
                    self.mapper.message_events, default=None, return_dtype=pl.String
                )
            )
            raw_event = (
                pl.when(event_name.is_null() & by_message.is_not_null())
                .then(pl.col("message"))
                .otherwise(event_name)
            )
            canonical = pl.coalesce(canonical, by_message)
        rows = rows.with_columns(canonical.alias("canonical"), raw_event.alias("raw_event"))
        has_job = pl.col("job_id").is_not_null()
        unmapped = rows.filter(has_job & pl.col("canonical").is_null() & pl.col("raw_event").is_not_null())
        names: Counter[str] = Counter(dict(unmapped["raw_event"].value_counts().iter_rows()))
        used = has_job & pl.col("canonical").is_not_null()
        if rows.select(used.all()).item() is not True:
            rows = rows.filter(used)

        # then the lease events' rows: every RAW_SCHEMA column in one select
        implied_by_name: dict[str, dict[str, str]] = {}
        for n, h in hits.items():
            for f, v in (h[1] if h is not None else {}).items():
                implied_by_name.setdefault(f, {})[n] = v

        def column(c: str, dtype: pl.DataType) -> pl.Expr:
            if c in ("line", "raw_event"):
                return pl.col(c)
            if c == "event":
                return pl.col("canonical")
            if c == "fields":  # the line itself
                return pl.lit(None, dtype=dtype) if fields is None else pl.col("l")
            if c == "file":
                return pl.lit(st.report.path, dtype=dtype)
            if c == "file_index":
                return pl.lit(st.index, dtype=dtype)
            if c not in self.aliases:
                return pl.lit(None, dtype=dtype)
            value = pick(c)
            if c in implied_by_name:  # an event name that says an outcome (`release_deleted_0`)
                value = pl.coalesce(
                    value, event_name.replace_strict(implied_by_name[c], default=None, return_dtype=pl.String)
                )
            if c == "pod":
                value = value.fill_null(st.pod_fallback)
            return value

        return rows.select(column(c, t).cast(t).alias(c) for c, t in RAW_SCHEMA.items()), names


def _owned_lines(ndjson: bytes, texts: pl.Series) -> pl.Series:
    """`texts` (lines of a block) in buffers of their own: polars string views would otherwise keep every
    block's whole text alive (memory would follow the input, not the events kept). Split again from
    `ndjson` (those lines joined), which was just parsed, rather than copied out of the block."""
    copy = pl.read_csv(ndjson, has_header=False, separator="\x1f", quote_char=None, schema={"l": pl.String})[
        "l"
    ]
    if copy.len() == texts.len() and copy.str.len_bytes().sum() == texts.str.len_bytes().sum():
        return copy  # the same lines (splitting only ever drops a CR, which would change the sum)
    return texts + ""


def _any_literal(words: list[str]) -> str:
    """A regex (Rust syntax) that matches where any of `words` occurs, each taken literally: every
    character but [A-Za-z0-9_] is escaped."""

    def literal(word: str) -> str:
        return "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"\\x{{{ord(c):X}}}" for c in word)

    return "(?:" + "|".join(literal(w) for w in words) + ")"


def _common_prefix(words: list[str]) -> str:
    prefix = min(words, default="")
    last = max(words, default="")
    i = 0
    while i < len(prefix) and prefix[i] == last[i]:
        i += 1
    return prefix[:i]


def _normalised(name: pl.Expr) -> pl.Expr:
    """events.normalise_event_name as an expression."""
    return name.str.strip_chars().str.to_lowercase().str.replace_all(r"[\s.\-/:]+", "_")


def _fields_json(rec: dict[str, Any]) -> str:
    try:
        return orjson.dumps(rec, default=str).decode()
    except TypeError:
        # a value nested deeper than orjson writes (255 levels; repr would recurse too): keep the rest
        safe: dict[str, Any] = {}
        for k, v in rec.items():
            try:
                orjson.dumps(v, default=str)
                safe[k] = v
            except TypeError:
                safe[k] = "<value nested too deep>"
        return orjson.dumps(safe, default=str).decode()
