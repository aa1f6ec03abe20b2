"""Following inputs as `tail -F` does: appended whole lines, rotation, truncation, new files, gz, stdin.

A `Follower` owns one `Tail` per input. `poll()` returns the whole lines each input gained since the last
call, as `Chunk`s (bytes ending with a newline, and the file line number of their first line); a last
line without its newline yet is held back until the newline comes (or the input ends). A file whose inode
changes was rotated: the rest of the old file is read through the handle still open on it, then the new
file is read from its start as a new *generation* (its lines are numbered from 1 again). A file that
shrinks was truncated (copytruncate): a new generation from its start, unless what it is written with is
what was read before (truncate and rewrite): while the new start matches the old one's first bytes the
file is waited for, and once it holds as many bytes as were read and they hash alike it goes on where it
was, nothing read twice. A `.gz` file is read once, when
it decompresses completely (a gzip still being written is waited for). `-` is standard input, read by a
thread (pipes and FIFOs give no inotify events).

What wakes the loop: watchfiles (inotify) on the folders that hold the inputs, when it can watch them;
the loop also polls every `poll_s` anyway (stdin, FIFOs, file systems without inotify).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from leaselog.reading.sources import LOG_SUFFIXES

READ_MAX = 8 * 1024 * 1024  # bytes taken from one input per poll: one loud file cannot starve the rest
HEAD_BYTES = 4096  # a truncated file's first bytes kept to tell a rewrite of it from new content
STDIN = "-"
DISCOVER_S = 0.25
STDIN_BUFFER = 4 * 1024 * 1024  # bytes of standard input read ahead of the loop at most


def is_log_name(name: str) -> bool:
    """The names `leaselog analyze` reads in a folder (the same suffixes, and .gz of them)."""
    low = name.lower().removesuffix(".gz")
    return low.endswith(LOG_SUFFIXES)


@dataclass
class Chunk:
    """Whole lines of one input: `data` ends with a newline (or is the input's unterminated last line at
    its end); `first_line` is the file line number of its first line."""

    tail: Tail
    data: bytes
    first_line: int
    generation: int  # the tail's generation these lines belong to (it moves on at a rotation)
    restart: bool = False  # the first chunk of a new generation (rotation, truncation)


@dataclass(frozen=True)
class Rewind:
    """A truncated file's generation as it stood: restored when the file is written again with the same bytes."""

    generation: int
    lines: int
    offset: int
    head: bytes
    digest: bytes


@dataclass
class Tail:
    """One followed input."""

    path: str  # as named (or found in a named folder); `-` for stdin
    index: int  # the order in which inputs were found
    generation: int = 0  # 1 + rotations/truncations seen
    lines: int = 0  # whole lines handed out in this generation
    offset: int = 0  # bytes of the current file consumed (whole lines only)
    inode: int | None = None
    pending: bytes = b""  # a last line without its newline yet (stdin only: files are re-read from offset)
    done: bool = False  # gz read, or stdin at EOF
    gz_size: int = -1  # size of a .gz at the last look: read once it decompresses
    fh: BinaryIO | None = field(default=None, repr=False)
    # what this generation consumed (a file's): its first bytes and a hash of them all
    head: bytes = b""
    digest: hashlib.blake2b = field(default_factory=hashlib.blake2b, repr=False)
    # truncated in place: the generation before, until the new content shows whether it is the same
    before: Rewind | None = field(default=None, repr=False)

    @property
    def display(self) -> str:
        return "<stdin>" if self.path == STDIN else self.path


class StdinPump:
    """Standard input read by a thread into a buffer the loop drains (a pipe has no inotify)."""

    def __init__(self, stream: BinaryIO | None = None, wake: threading.Event | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdin.buffer
        self.wake = wake
        self._lock = threading.Condition()
        self._buf = bytearray()
        self.eof = False
        self._thread = threading.Thread(target=self._run, name="leaselog-stdin", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        read1 = getattr(self.stream, "read1", self.stream.read)
        try:
            while True:
                piece = read1(65536)
                if not piece:
                    break
                with self._lock:
                    # read no further ahead than the loop takes: a writer faster than watch then waits
                    # (the pipe pushes back) rather than memory growing with the backlog
                    while len(self._buf) >= STDIN_BUFFER:
                        self._lock.wait(0.5)
                    self._buf += piece
                if self.wake is not None:
                    self.wake.set()
        except (OSError, ValueError):
            pass
        self.eof = True
        if self.wake is not None:
            self.wake.set()

    def take(self) -> tuple[bytes, bool]:
        """What came since the last call, and whether standard input has ended (read after the bytes)."""
        eof = self.eof
        with self._lock:
            data = bytes(self._buf)
            self._buf.clear()
            self._lock.notify_all()
        return data, eof


class Follower:
    """Finds the inputs named (files, folders, globs, `-`) and hands out what they gain."""

    def __init__(
        self, paths: list[str], stdin: BinaryIO | None = None, discover_s: float = DISCOVER_S
    ) -> None:
        self.named = paths
        self.discover_s = discover_s
        self.tails: dict[str, Tail] = {}
        self.wake = threading.Event()
        self.pump: StdinPump | None = None
        self.problems: list[str] = []
        if STDIN in paths:
            self.pump = StdinPump(stdin, self.wake)
        self.discover()
        self._discovered = time.monotonic()

    # -- finding inputs ----------------------------------------------------------------------------------

    def candidates(self) -> list[str]:
        """The files the named paths stand for now, in `leaselog analyze`'s order."""
        out: list[str] = []
        for raw in self.named:
            if raw == STDIN:
                out.append(STDIN)
                continue
            p = Path(raw)
            if p.is_dir():
                out.extend(sorted(str(f) for f in p.rglob("*") if f.is_file() and is_log_name(f.name)))
            elif glob.has_magic(raw):
                for m in sorted(glob.glob(os.path.expanduser(raw), recursive=True)):
                    if Path(m).is_dir():
                        out.extend(
                            sorted(str(f) for f in Path(m).rglob("*") if f.is_file() and is_log_name(f.name))
                        )
                    elif Path(m).is_file():
                        out.append(m)
            else:
                out.append(raw)  # a file named explicitly: followed even before it exists
        return list(dict.fromkeys(out))

    def discover(self) -> list[Tail]:
        """Start following inputs that appeared since the last look; return them."""
        new = []
        for path in self.candidates():
            if path not in self.tails:
                t = Tail(path, len(self.tails))
                self.tails[path] = t
                new.append(t)
        return new

    def watch_roots(self) -> list[str]:
        """Folders for watchfiles to watch: each named folder, the folder of each named file or glob."""
        roots: list[str] = []
        for raw in self.named:
            if raw == STDIN:
                continue
            p = Path(raw)
            if p.is_dir():
                roots.append(str(p))
            elif glob.has_magic(raw):
                base = Path(raw.split("*", 1)[0].split("?", 1)[0].split("[", 1)[0])
                roots.append(str(base if base.is_dir() else base.parent))
            else:
                roots.append(str(p.parent if str(p.parent) else Path(".")))
        return [r for r in dict.fromkeys(roots) if Path(r).is_dir()]

    # -- reading -----------------------------------------------------------------------------------------

    def poll(self) -> list[Chunk]:
        """Whole lines gained by every input since the last poll (new files are looked for every
        DISCOVER_S: listing a large folder at every tick of a busy stream would cost more than reading)."""
        now = time.monotonic()
        if now - self._discovered >= self.discover_s:
            self._discovered = now
            self.discover()
        out: list[Chunk] = []
        for t in list(self.tails.values()):
            if t.path == STDIN:
                out.extend(self._poll_stdin(t))
            elif not t.done:
                out.extend(self._poll_file(t))
        return out

    @property
    def stdin_open(self) -> bool:
        return self.pump is not None and not (
            self.pump.eof and STDIN in self.tails and self.tails[STDIN].done
        )

    def _poll_stdin(self, t: Tail) -> list[Chunk]:
        if self.pump is None or t.done:
            return []
        data, eof = self.pump.take()
        data = t.pending + data
        cut = data.rfind(b"\n") + 1
        if eof:
            cut = len(data)  # the last line, even without its newline
            t.done = True
        t.pending = data[cut:]
        return self._lines(t, data[:cut])

    def _lines(self, t: Tail, data: bytes, restart: bool = False) -> list[Chunk]:
        if not data:
            return []
        chunk = Chunk(t, data, t.lines + 1, t.generation, restart)
        t.lines += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        t.offset += len(data)
        return [chunk]

    def _poll_file(self, t: Tail) -> list[Chunk]:
        try:
            st = os.stat(t.path)
        except OSError:
            return self._drain_old(t)  # deleted or moved away: what the open handle still has
        if t.path.lower().endswith(".gz"):
            return self._poll_gz(t, st.st_size)
        out: list[Chunk] = []
        if t.inode is not None and st.st_ino != t.inode:  # rotated: finish the old file, then the new one
            out.extend(self._drain_old(t, final=True))
            self._restart(t)
        elif t.fh is not None and st.st_size < t.offset:  # truncated in place
            t.before = Rewind(t.generation, t.lines, t.offset, t.head, t.digest.digest())
            self._restart(t)
        if t.fh is None:
            try:
                t.fh = open(t.path, "rb")  # noqa: SIM115 - kept open to read a rotated file to its end
            except OSError:
                return out
            t.inode = os.fstat(t.fh.fileno()).st_ino
            t.offset = 0
        if t.before is not None and not self._rewritten(t, st.st_size):
            return out  # the same bytes so far: wait until the file shows whether it is a rewrite
        out.extend(self._read(t, restart=t.lines == 0 and t.generation > 0))
        return out

    def _rewritten(self, t: Tail, size: int) -> bool:
        """Whether the truncated file `t` can be read on: True once it is known to be new content (a new
        generation from its start) or the old content written again (restored, read on from where it
        was); False while its bytes so far are the old ones' first bytes."""
        b = t.before
        assert b is not None and t.fh is not None
        t.fh.seek(0)
        start = t.fh.read(min(len(b.head), size))
        if start != b.head[: len(start)]:
            t.before = None  # new content
            return True
        if size < b.offset:
            return False
        t.fh.seek(0)
        h, left = hashlib.blake2b(), b.offset
        while left > 0:
            piece = t.fh.read(min(left, READ_MAX))
            if not piece:
                break
            h.update(piece)
            left -= len(piece)
        t.before = None
        if left == 0 and h.digest() == b.digest:
            t.generation, t.lines, t.offset, t.head, t.digest = b.generation, b.lines, b.offset, b.head, h
        return True

    def _restart(self, t: Tail) -> None:
        if t.fh is not None:
            t.fh.close()
        t.fh = None
        t.inode = None
        t.generation += 1
        t.lines = 0
        t.offset = 0
        t.head, t.digest = b"", hashlib.blake2b()

    def _drain_old(self, t: Tail, final: bool = False) -> list[Chunk]:
        if t.fh is None:
            return []
        return self._read(t, to_end=final)

    def _read(self, t: Tail, to_end: bool = False, restart: bool = False) -> list[Chunk]:
        assert t.fh is not None
        t.fh.seek(t.offset)
        data = t.fh.read(READ_MAX)
        cut = len(data) if to_end else data.rfind(b"\n") + 1
        if len(t.head) < HEAD_BYTES:
            t.head += data[: min(cut, HEAD_BYTES - len(t.head))]
        t.digest.update(data[:cut])
        return self._lines(t, data[:cut], restart)

    def _poll_gz(self, t: Tail, size: int) -> list[Chunk]:
        """A .gz is read whole, once it decompresses completely and its size held still for one poll."""
        if size != t.gz_size:
            t.gz_size = size
            return []
        try:
            with open(t.path, "rb") as fh:
                data = gzip.decompress(fh.read())
        except (OSError, EOFError, zlib.error):
            return []  # still being written (or corrupt: `leaselog analyze` says which)
        t.done = True
        return self._lines(t, data)

    def flush_partial(self) -> list[Chunk]:
        """At exit: each file's last line that never got its newline."""
        out: list[Chunk] = []
        for t in self.tails.values():
            if t.path != STDIN and t.fh is not None and not t.done:
                out.extend(self._read(t, to_end=True))
            elif t.path == STDIN and t.pending:
                data, t.pending = t.pending, b""
                out.extend(self._lines(t, data))
        return out

    def close(self) -> None:
        for t in self.tails.values():
            if t.fh is not None:
                t.fh.close()
                t.fh = None
