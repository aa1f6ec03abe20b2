"""Opening an input as a byte stream: files, gzip (cut short or not), stdin, FIFOs, and a cap on how
long one line may be.

A line longer than the cap (`Settings.max_line_bytes`, 16 MiB by default, settable in leaselog.toml) is
never held whole: it is cut to just over the cap (the reader counts it malformed, "line longer than ...")
and the rest of it skipped, so memory stays bounded by the cap however long the line is.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any, cast

from leaselog.reading.remote import open_url
from leaselog.reading.sources import Source

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


def open_binary(source: Source) -> IO[bytes]:
    """The source's bytes, gunzipped when they start with gzip's magic bytes (a FIFO or `<(cat f)`
    is read as it comes: its head is peeked, never sought)."""
    if source.is_stdin:
        return _maybe_gzip(sys.stdin.buffer)
    if source.is_remote:
        return open_url(source.path)
    fh = open(source.path, "rb")  # noqa: SIM115 - closed by the caller
    if not fh.seekable():  # a FIFO, a process substitution: no second look at the start
        return _maybe_gzip(fh)
    if fh.read(2) == b"\x1f\x8b":
        fh.close()
        return cast(IO[bytes], gzip.open(source.path, "rb"))
    fh.seek(0)
    return fh


def _maybe_gzip(stream: IO[bytes]) -> IO[bytes]:
    head = stream.peek(2)[:2] if isinstance(stream, io.BufferedReader) else b""
    if head == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=stream))
    return stream


def disk_position(fh: object) -> int | None:
    """How far into the file on disk a stream has read (a GzipFile's underlying file), if known."""
    raw: Any = getattr(fh, "fileobj", None) or fh
    try:
        return int(raw.tell())
    except (OSError, ValueError, AttributeError):
        return None


def read_some(fh: IO[bytes], size: int) -> tuple[bytes, BaseException | None]:
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
    if len(parts) == 1:
        return parts[0], None  # one piece (the usual read) is returned as is, not copied
    return b"".join(parts), None


def capped_lines(fh: IO[bytes], cap: int) -> Iterator[bytes]:
    """The stream's lines (line ending stripped), none held longer than `cap + 1` bytes: a longer
    line comes out cut to that length (the reader counts any line over `cap` malformed) and the rest of
    it is skipped, a bounded piece at a time."""
    limit = cap + 2
    while True:
        line = fh.readline(limit)
        if not line:
            return
        if len(line) == limit and not line.endswith(b"\n"):
            while True:  # skip the rest of the line
                more = fh.readline(limit)
                if not more or more.endswith(b"\n"):
                    break
            yield line[: cap + 1]
            continue
        yield line.rstrip(b"\r\n")
