"""A file that is one JSON document (or a run of them), read as records, each located by its line.

`gcloud logging read --format=json` writes one JSON array, the AWS CLI one pretty-printed object with an
`events` array, `journalctl -o json-pretty` and `jq .` a run of pretty-printed objects, `curl` against
Loki's or Elasticsearch's API one object on one line. Read line by line, such a file is fragments of
JSON: here it is read as what it is, and every record inside becomes one line of evidence, numbered
with the line of the file its record starts on.

What a record is, by where it sits (`RECORD_PATHS`):

- the elements of a top-level array (gcloud LogEntries, a `jq -s` of app records);
- `events[]` (CloudWatch `filter-log-events` / `get-log-events`), `hits.hits[]` (Elasticsearch and
  OpenSearch `_search` responses and scroll pages), `data[]` (Datadog Logs API v2), `results[]`
  (CloudWatch Logs Insights `get-query-results` rows, Splunk `output_mode=json` results);
- Loki's `data.result[].values[]` (`[ns, line]`), each made the `{"labels", "line", "timestamp"}`
  record `logcli --output=jsonl` writes, with its stream's labels;
- any other top-level object: the object itself (a pretty-printed app record, a journald entry).

An envelope path is taken only when its first record looks like one (a `data` array whose first element
has no `attributes` is an app record's own field, and the object is read whole). The scan streams: only
the record being read, and the top-level value until its first record, are held. A record that is not
valid JSON is handed on as it is (the reader counts it malformed at its line) and its neighbours are read
as before; a document cut short or broken between records ends there, the rest handed on as one broken
record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Protocol

import orjson

from leaselog.reading.streams import read_some

__all__ = ["RECORD_PATHS", "Document", "document", "is_document"]

CHUNK = 1 << 20
MAX_REST = 1 << 16
ELEMENT = ("[]",)
LOKI_STREAM = ("data", "result", "[]", "stream")
LOKI_VALUE = ("data", "result", "[]", "values", "[]")
INSIGHTS = ("results", "[]")
# record path -> what its first record must hold for the path to be an envelope (None: always)
RECORD_PATHS: dict[tuple[str, ...], tuple[bytes, ...] | None] = {
    ELEMENT: None,
    ("events", "[]"): (b'"message"',),
    ("hits", "hits", "[]"): (b'"_source"', b'"fields"'),
    ("data", "[]"): (b'"attributes"',),
    INSIGHTS: (b'"field"', b'"_raw"'),
    LOKI_STREAM: None,
    LOKI_VALUE: None,
}
_LOKI_RESULT = ("data", "result", "[]")

_FIRST_KEY = re.compile(rb'\{\s*"([^"]+)"\s*:\s*[\[{]')
_ENVELOPE_KEYS = {b"events", b"hits", b"data", b"results", b"took", b"status", b"_scroll_id"}
_WS = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(rb'[^\s,:\[\]{}"]+')
# inside a record: everything up to the next bracket, strings skipped whole
_SKIP = re.compile(rb'(?:[^"{}\[\]]+|"(?:[^"\\]|\\.)*")*', re.DOTALL)
_OPEN = {ord("{"): ord("}"), ord("["): ord("]")}


class Report(Protocol):
    document: int | None  # a document's lines in the file (its records are what the report counts)


def document(head: list[bytes], fh: IO[bytes], cap: int, report: Report | None = None) -> Document | None:
    """The document a file is, when it is one: `head` its first lines (already read from `fh`, each at
    most `cap + 1` bytes: a longer first line is read again from the start, where the file can be).
    `report.document` is set to the document's lines once its records are read."""
    if not is_document(head):
        return None
    if any(len(h) > cap for h in head) and fh.seekable():
        fh.seek(0)
        return Document(fh, b"", report)
    return Document(fh, b"".join(h + b"\n" for h in head), report)


def is_document(head: list[bytes]) -> bool:
    """Whether a file whose first lines are `head` is one JSON document rather than JSON lines: its first
    line opens an array or an object it does not close, or is a whole envelope of records on one line."""
    lines = [h.lstrip(b"\xef\xbb\xbf").strip() for h in head]
    lines = [s for s in lines if s]
    if not lines:
        return False
    first = lines[0]
    if first[:1] == b"[":
        rest = first[1:].lstrip()
        return not rest or rest[:1] in b'{["]' or _is_json(first)
    if first[:1] != b"{":
        return False
    if first == b"{":
        return True
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        # an object left open on its line (pretty-printed: the next line is one of its keys), or a
        # response on one line with a broken record in it (it starts with an envelope's key)
        m = _FIRST_KEY.match(first)
        if m is not None and m.group(1) in _ENVELOPE_KEYS:
            return True
        return len(lines) > 1 and lines[1][:1] == b'"' and not _is_json(lines[1])
    return isinstance(obj, dict) and is_envelope(obj)


def is_envelope(obj: dict[str, object]) -> bool:
    """A response object that holds records (an object on one line that is a whole document)."""
    data, hits = obj.get("data"), obj.get("hits")
    return (
        isinstance(obj.get("events"), list)
        or (isinstance(hits, dict) and isinstance(hits.get("hits"), list))
        or (isinstance(data, dict) and isinstance(data.get("result"), list))
        or (isinstance(data, list) and any(isinstance(d, dict) and "attributes" in d for d in data[:1]))
        or (isinstance(obj.get("results"), list) and "status" in obj)
    )


def _is_json(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


class _Broken(Exception):
    """The document's structure is broken here (between records): the rest is one broken record."""


class _Frame:
    __slots__ = ("close", "expect", "index", "key", "n", "path")

    def __init__(self, close: int, path: tuple[str, ...], index: int) -> None:
        self.close = close
        self.path = path  # the path of this container's own value
        self.index = index  # which element of Loki's `data.result` this is in (-1: none)
        self.key = ""  # an object's current key
        self.n = -1  # an array's current element
        # obj: "key" (or end), "colon", "value", "comma" (or end); arr: "value" (or end), "comma"
        self.expect = "key" if close == ord("}") else "value"


class Document:
    """The records of one JSON document as `(line, bytes)`: each record's bytes (a line of evidence for
    the reader) and the line of the file it starts on."""

    def __init__(self, fh: IO[bytes], start: bytes, report: Report | None = None) -> None:
        self.fh = fh
        self.report = report
        self.buf = start
        self.eof = False
        self.pos = 0  # scan position in buf
        self.line = 1  # the file's line at `pos`
        self.stack: list[_Frame] = []
        self.top: tuple[int, int] | None = None  # (pos, line) of the top-level value, while held
        self.top_records = 0  # records taken in the current top-level value
        self.off: set[tuple[str, ...]] = set()  # envelope paths found not to hold records here
        self.labels: dict[int, bytes] = {}  # Loki stream index -> its labels (JSON)
        self.pending: dict[int, list[tuple[int, bytes]]] = {}  # Loki values seen before their stream
        self.ahead: list[tuple[int, bytes]] = []
        self.it = self._all()

    # -- the buffer ---------------------------------------------------------------------------------

    def _more(self) -> bool:
        """Read on; False at the end of the input. Bytes before what is still needed are dropped."""
        if self.eof:
            return False
        keep = self.pos if self.top is None else min(self.pos, self.top[0])
        data, error = read_some(self.fh, CHUNK)
        if error is not None:
            raise error
        if not data:
            self.eof = True
            return False
        if keep:
            self.buf = self.buf[keep:]
            self.pos -= keep
            if self.top is not None:
                self.top = (self.top[0] - keep, self.top[1])
        self.buf += data
        return True

    def _to(self, pos: int) -> None:
        self.line += self.buf.count(b"\n", self.pos, pos)
        self.pos = pos

    def _skip_ws(self) -> bool:
        """Skip blanks; False at the end of the input."""
        while True:
            self._to(_WS.match(self.buf, self.pos).end())  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return True
            if not self._more():
                return False

    def _token(self, rx: re.Pattern[bytes]) -> bytes:
        """A string or scalar token at `pos` (read on until it is whole)."""
        while True:
            m = rx.match(self.buf, self.pos)
            if m is not None and (m.end() < len(self.buf) or self.eof):
                self._to(m.end())
                return m.group(0)
            if not self._more():
                if m is None:
                    raise _Broken("a string left open")
                self._to(m.end())
                return m.group(0)

    def _value_end(self) -> int | None:
        """Where the value at `pos` (a `{` or `[`) ends, reading on as needed; None when it never does,
        or when a closing bracket of the wrong kind ends it early (then: the position of that bracket)."""
        closers = [_OPEN[self.buf[self.pos]]]
        i = self.pos + 1
        while True:
            i = _SKIP.match(self.buf, i).end()  # type: ignore[union-attr]
            if i >= len(self.buf) or self.buf[i] == ord('"'):
                start = self.pos
                if not self._more():
                    return None
                i -= start - self.pos
                continue
            c = self.buf[i]
            if c in _OPEN:
                closers.append(_OPEN[c])
            elif c == closers[-1]:
                closers.pop()
                if not closers:
                    return i + 1
            else:  # `]` where `}` belongs (or the reverse): the record is broken and ends here
                return -i
            i += 1

    # -- the records --------------------------------------------------------------------------------

    def head(self, n: int) -> list[tuple[int, bytes]]:
        """The first `n` records (read ahead: `records` still gives them)."""
        while len(self.ahead) < n:
            got = next(self.it, None)
            if got is None:
                break
            self.ahead.append(got)
        return self.ahead

    def records(self) -> Iterator[tuple[int, bytes]]:
        yield from self.ahead
        self.ahead = []
        yield from self.it
        if self.report is not None:
            self.report.document = self.line - (self.buf[self.pos - 1 : self.pos] == b"\n")

    def _all(self) -> Iterator[tuple[int, bytes]]:
        try:
            yield from self._scan()
        except (_Broken, orjson.JSONDecodeError):
            # the rest is one broken record (its first MAX_REST bytes kept: what the reader says of it)
            # (from the top-level value's start when none of its records was taken yet)
            start, line = self.top if self.top is not None else (self.pos, self.line)
            rest = [self.buf[start:]]
            self.top, self.pos = None, len(self.buf)
            while self._more():
                if sum(map(len, rest)) < MAX_REST:
                    rest.append(self.buf[self.pos :])
                self.pos = len(self.buf)
            tail = b"".join(rest)[:MAX_REST].strip()
            if tail:
                yield line, tail

    def _scan(self) -> Iterator[tuple[int, bytes]]:
        while self._skip_ws():
            if not self.stack:
                self.top, self.top_records = (self.pos, self.line), 0
                yield from self._value(())
                if not self.stack:  # a top-level scalar
                    self.top = None
                continue
            f = self.stack[-1]
            c = self.buf[self.pos]
            if c == f.close and f.expect in ("key", "value", "comma"):
                self._to(self.pos + 1)
                self.stack.pop()
                yield from self._closed(f)
            elif c == ord(",") and f.expect == "comma":
                self._to(self.pos + 1)
                f.expect = "key" if f.close == ord("}") else "value"
            elif f.close == ord("}") and f.expect == "key" and c == ord('"'):
                f.key = str(orjson.loads(self._token(_STRING)))
                f.expect = "colon"
            elif c == ord(":") and f.expect == "colon":
                self._to(self.pos + 1)
                f.expect = "value"
            elif f.expect == "value":
                f.expect = "comma"
                if f.close == ord("}"):
                    yield from self._value((*f.path, f.key), f.index)
                else:
                    f.n += 1
                    yield from self._value((*f.path, "[]"), f.n if f.path == _LOKI_RESULT[:2] else f.index)
            else:
                raise _Broken(f"unexpected {chr(c)!r}")
        if self.stack:
            raise _Broken("the document is cut short")

    def _closed(self, f: _Frame) -> Iterator[tuple[int, bytes]]:
        if f.path == _LOKI_RESULT:  # a stream's end: values seen before its labels go out unlabelled
            for line, value in self.pending.pop(f.index, []):
                yield line, _loki_record(b"{}", value)
            self.labels.pop(f.index, None)
        if not self.stack and self.top is not None:
            start, line = self.top
            self.top = None
            if self.top_records == 0 and f.close == ord("}"):
                yield line, self.buf[start : self.pos]  # an object holding no records: it is one

    def _value(self, path: tuple[str, ...], index: int = -1) -> Iterator[tuple[int, bytes]]:
        """The value at `pos`, whose path is `path`: a record, a container to go into, or skipped."""
        c = self.buf[self.pos]
        record = path in RECORD_PATHS and path not in self.off
        if c not in _OPEN:
            token = self._token(_STRING if c == ord('"') else _SCALAR)
            if not token:
                raise _Broken(f"unexpected {chr(c)!r}")
            line = self.line - token.count(b"\n")
            if (record and path == ELEMENT) or not path:
                yield line, token  # an array element that is no object: a broken record
            return
        if not record:
            self.stack.append(_Frame(_OPEN[c], path, index))
            self._to(self.pos + 1)
            return
        line, start = self.line, self.pos
        end = self._value_end()
        if end is None:
            raise _Broken("the document is cut short")
        start = self.pos  # (the buffer may have moved)
        data = self.buf[start : abs(end)]
        need = RECORD_PATHS[path]
        if self.top_records == 0 and need is not None and not any(n in data for n in need):
            # not an envelope after all: read this top-level value again, this path as plain values
            self.off.add(path)
            assert self.top is not None
            self.stack.clear()
            self.pos, self.line = self.top
            self.top = None
            self.top, self.top_records = (self.pos, self.line), 0
            yield from self._value(())
            return
        self._to(abs(end))
        if end < 0:  # a wrong closing bracket ended it: the enclosing container goes on from there
            yield line, data
            return
        self.top_records += 1
        if self.top_records == 1:
            self.top = None
        yield from self._record(path, index, line, data)

    def _record(
        self, path: tuple[str, ...], index: int, line: int, data: bytes
    ) -> Iterator[tuple[int, bytes]]:
        if path == LOKI_STREAM:
            self.labels[index] = data
            for at, value in self.pending.pop(index, []):
                yield at, _loki_record(data, value)
        elif path == LOKI_VALUE:
            labels = self.labels.get(index)
            if labels is None:
                self.pending.setdefault(index, []).append((line, data))
            else:
                yield line, _loki_record(labels, data)
        elif path == INSIGHTS and data[:1] == b"[":
            yield line, _insights_record(data)
        else:
            yield line, data


def _loki_record(labels: bytes, value: bytes) -> bytes:
    """A Loki API value `[ns, line]` (plus structured metadata) as logcli's jsonl record; anything else
    as it is (a broken record)."""
    try:
        v = orjson.loads(value)
        lab = orjson.loads(labels)
    except orjson.JSONDecodeError:
        return value
    if not (isinstance(v, list) and len(v) >= 2 and isinstance(v[0], str) and isinstance(v[1], str)):
        return value
    return orjson.dumps({"labels": lab if isinstance(lab, dict) else {}, "line": v[1], "timestamp": v[0]})


def _insights_record(row: bytes) -> bytes:
    """A Logs Insights row `[{"field": "@timestamp", "value": ...}, ...]` as one object."""
    try:
        cells = orjson.loads(row)
    except orjson.JSONDecodeError:
        return row
    if not isinstance(cells, list) or not all(isinstance(c, dict) and "field" in c for c in cells):
        return row
    return orjson.dumps({str(c["field"]): c.get("value") for c in cells})
