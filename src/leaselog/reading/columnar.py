"""The reader's columnar path: blocks cut at line ends, split into lines by polars, and the candidate
lines decoded in bulk and mapped onto canonical columns (`FieldMapper.extract`, vectorised).

See `reader` for how the two paths share the work.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

import polars as pl

from leaselog.reading.dialects import NEEDLES as DIALECT_NEEDLES
from leaselog.reading.fields import FieldMapper
from leaselog.reading.formats import CONTINUATION_RE
from leaselog.reading.report import RAW_SCHEMA, Stream
from leaselog.reading.streams import disk_position, read_some
from leaselog.vocabulary import normalise_event_name

# columnar block: big enough to amortise polars calls, small enough that reading stays flat in memory
BLOCK_BYTES = 16 * 1024 * 1024


@dataclass
class Cut:
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


def cut_blocks(fh: IO[bytes], head: bytes, cap: int, block_bytes: int = BLOCK_BYTES) -> Iterator[Cut]:
    """A stream's bytes in blocks of about BLOCK_BYTES cut after a newline, `head` first. A line longer
    than a block and than `cap` is cut to `cap + 1` bytes and the rest of it skipped (memory stays
    bounded; the reader counts it malformed)."""
    rest = head  # the bytes read but not handed out yet (a line's start, or the head)
    while True:
        if len(rest) > cap + 1 and rest.find(b"\n") < 0:
            rest, failure = _skip_rest_of_line(fh, rest[: cap + 1], block_bytes)
            if failure is not None:
                yield Cut(b"", rest, rest.rfind(b"\n") + 1, None, failure)
                return
        chunk, failure = read_some(fh, block_bytes)
        if failure is not None:  # a truncated gzip: the whole lines read so far, then the error
            data = rest + chunk
            yield Cut(b"", data, data.rfind(b"\n") + 1, None, failure)
            return
        if not chunk:
            if rest:  # the last line has no newline
                yield Cut(b"", rest, len(rest), disk_position(fh))
            return
        cut = chunk.rfind(b"\n")
        if cut < 0:
            data = rest + chunk
            cut = data.rfind(b"\n")  # only the head can hold one
            if cut < 0:  # one line longer than a block: keep reading
                rest = data
                continue
            yield Cut(b"", data, cut + 1, disk_position(fh))
            rest = data[cut + 1 :]
            continue
        yield Cut(rest, chunk, cut + 1, disk_position(fh))
        rest = chunk[cut + 1 :]


def _skip_rest_of_line(fh: IO[bytes], kept: bytes, block_bytes: int) -> tuple[bytes, BaseException | None]:
    """`kept` (an over-long line's start) then what follows the line's end in the stream."""
    while True:
        more, failure = read_some(fh, block_bytes)
        nl = more.find(b"\n")
        if nl >= 0:
            return kept + more[nl:], failure
        if not more or failure is not None:
            return kept, failure


def block_lines(block: bytes) -> pl.DataFrame | None:
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


def chunk_lines(cut: Cut) -> pl.DataFrame | None:
    """`block_lines` without joining the block: the chunk read is split as it is, its first row (the
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
class Split:
    """A block split into lines: how many, and the few that need a closer look."""

    lines: int
    # line (0-based in the block), l (the text), candidate, object, nul, simple (what the columnar path
    # decodes); the lines left out are valid objects unrelated to leases
    flagged: pl.DataFrame
    texts: pl.Series  # the lines the columnar path decodes (candidate, no NUL, simple)
    ndjson: bytes  # those lines joined by newlines, as bytes (what `read_ndjson` reads)
    fields: pl.Series | None  # those lines in buffers of their own, if `fields` is kept
    repeated: pl.Series  # per line of `texts`: a field name written twice (read line by line)
    names: list[str]  # the field names leaselog reads that these lines hold (`ColumnarDecoder.learn`)


class ColumnarDecoder:
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
        # ... and as a JSON string inside a string (`{"log":"{\\"jobId\\":..}"}`, a wrapper's line in a file
        # of another shape): such lines are candidates too, read one by one in their own shape
        escaped = [n.replace('"', '\\"') for n in self.needles]
        self._needles_regex = any_literal([*self.needles, *escaped])
        bare = [n.decode() for n in mapper.needles or ()] or [k.split(".", 1)[0] for k in job_keys]
        self._bare_regex = any_literal(bare)
        bare_prefix = _common_prefix(bare)
        self.bare_prefix: str | None = bare_prefix if len(bare_prefix) >= 3 else None
        self._quoted_keys = [f'"{k}"' for k in self.keys]
        # a lock library's message (leaselog.reading.dialects): such lines are read one by one
        self._dialect_regex = any_literal(list(DIALECT_NEEDLES)) if mapper.dialect_needles else None
        # field names seen so far: the decode schema grows when a block shows a new one (a narrow
        # schema decodes faster than all ~120 spellings)
        self.known: set[str] = set()

    def prefilter(self, line: pl.Expr) -> pl.Expr:
        """A cheap test every line holding a job-id name passes, written as a key or not (the bare names'
        literal common prefix, if any)."""
        if self.bare_prefix is not None:
            return line.str.contains(self.bare_prefix, literal=True)
        return self.bare(line)

    def bare(self, line: pl.Expr) -> pl.Expr:
        """A job-id name occurs, as a key or not (`"_jobId"` in GELF, `jobId=` in a message): the per-line
        path's own test (FieldMapper.needles). A line that has one but is no candidate is read one by one."""
        return line.str.contains(self._bare_regex)

    def dialect(self, line: pl.Expr) -> pl.Expr | None:
        """A lock library's needle occurs (None: no dialect is on). Such a line, when it is no candidate,
        is read one by one like a bare job-id name."""
        return None if self._dialect_regex is None else line.str.contains(self._dialect_regex)

    def candidate(self, line: pl.Expr) -> pl.Expr:
        """The exact test: one of the needles occurs. A regex of the needles as literals: the same test
        as `contains_any`, and faster."""
        return line.str.contains(self._needles_regex)

    def learn(self, names: list[str]) -> None:
        """Field names a block's lines show (`keys_in`): the decode schema grows to hold them. A name found
        where it is not a key (a value that spells one) only widens the schema: its column stays null."""
        self.known.update(names)

    def keys_in(self, texts: pl.Series) -> tuple[pl.Series, list[str]]:
        """Per line, whether it writes one of the field names leaselog reads twice; and every such name
        the lines hold. JSON leaves duplicate keys open; leaselog takes the last, as orjson (the per-line
        path) does, where polars' bulk decoding would take the first: such lines go line by line. One
        multi-needle search of the fixed alias list serves both (no line is decoded), so it runs in the
        read-ahead thread."""
        found = texts.str.extract_many(self._quoted_keys)
        repeated = (found.list.len() > found.list.n_unique()).fill_null(False)
        names = found.explode().drop_nulls().unique().to_list()
        return repeated, [q[1:-1] for q in names]

    def decode(
        self, candidates: pl.DataFrame, ndjson: bytes, st: Stream, fields: pl.Series | None
    ) -> tuple[pl.DataFrame, Counter[str], list[int]] | None:
        """(lease-event rows in RAW_SCHEMA plus `dup_hash`, `dup_record` and `pod_key` (the field the pod
        came from, "" for the file name), unmapped event names, the lines with no job id), or None if some
        line does not decode.

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
        no_job = rows.filter(~has_job)["line"]  # a job id's name, but no job id where a record has it
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

        pod_keys = [
            pl.when(pl.col(column_of[k]) != "").then(pl.lit(k)) for k in self.aliases["pod"] if k in column_of
        ]
        frame = rows.select(
            *(column(c, t).cast(t).alias(c) for c, t in RAW_SCHEMA.items()),
            pl.col("l").hash(seed=0).alias("dup_hash"),
            pl.lit(0, dtype=pl.Int64).alias("dup_record"),
            (pl.coalesce(pod_keys) if pod_keys else pl.lit(None, dtype=pl.String))
            .fill_null("")
            .alias("pod_key"),
        )
        return frame, names, no_job.to_list()


def owned_lines(ndjson: bytes, texts: pl.Series) -> pl.Series:
    """`texts` (lines of a block) in buffers of their own: polars string views would otherwise keep every
    block's whole text alive (memory would follow the input, not the events kept). Split again from
    `ndjson` (those lines joined), which was just parsed, rather than copied out of the block."""
    copy = pl.read_csv(ndjson, has_header=False, separator="\x1f", quote_char=None, schema={"l": pl.String})[
        "l"
    ]
    if copy.len() == texts.len() and copy.str.len_bytes().sum() == texts.str.len_bytes().sum():
        return copy  # the same lines (splitting only ever drops a CR, which would change the sum)
    return texts + ""


def any_literal(words: list[str]) -> str:
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
    """vocabulary.normalise_event_name as an expression."""
    return name.str.strip_chars().str.to_lowercase().str.replace_all(r"[\s.\-/:]+", "_")


def continues_event(kinds: pl.DataFrame, flagged: pl.DataFrame, first: int) -> bool:
    """Whether a continuation run (stack trace) follows a candidate line, or a line before the block.

    The per-line path attaches such text to the event's message, so such a block goes line by line.
    `flagged` holds every line with a job-id name (the lines it leaves out are plain objects without one).
    """
    cont = pl.concat(
        [
            kinds.filter(pl.col("kind") == "continuation")["line"],
            # candidates that are not plainly an object are few: the regex only runs on those
            flagged.filter(pl.col("candidate") & ~pl.col("object")).filter(
                pl.col("l").str.contains(CONTINUATION_RE)
            )["line"],
        ]
    ).sort()
    if cont.is_empty():
        return False
    starts = cont.filter(~(cont - 1).is_in(cont.implode()))
    anchors = starts - 1
    if ((anchors < first) & (anchors >= 1)).any():  # the line before the block (not before line 1)
        return True
    # an event line above the run: a line with a job-id name, as a key or not (a console line, GELF's
    # `_jobId`; not a banner line, which holds none)
    cand = flagged.filter(pl.col("candidate") | pl.col("bare"))["line"]
    return bool(anchors.is_in(cand.implode()).any())
