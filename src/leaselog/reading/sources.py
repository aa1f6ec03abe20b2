"""Turn what the user named (files, folders, globs, `-`) into the list of inputs to read.

A folder is read for its log files, rotated ones included: `*.log`, `*.jsonl`, ... and their rotations
`*.log.1`, `*.log.2.gz`, `*.log.2026-11-02.gz`, kubelet's `0.log.20261102-101500.gz`, plus files with no
extension that hold text. Anything else in a folder is listed as skipped, with why (the Inputs table
shows it). A file named directly is always read, whatever its name; so is a FIFO, `/dev/stdin` or a
process substitution (`<(zcat f.gz)`). The same file reached twice (by two paths, a hard link, a
symlink in a folder) is read once: it is told by device and inode.

A URL (`s3://bucket/prefix/`, `gs://...`, `abfs://...`, `https://...`) names objects in a store, listed
and read through fsspec (`leaselog.reading.remote`): a prefix like a folder, a glob on the store.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from leaselog.reading.remote import expand_url, head, is_url

LOG_SUFFIXES = (".jsonl", ".json", ".log", ".ndjson", ".txt", ".logfmt")
# a rotation's suffix after the log suffix: `.1`, `.2026-11-02`, `.20261102-101500`, `.2026-11-02_1`
_ROTATION = re.compile(r"\.(?:\d{1,4}|\d{4}-?\d\d-?\d\d(?:[-_T.]?\d+)*)$")
TEXT_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Source:
    """One input: a path on disk, or stdin (`path == "-"`). `skipped`: why a folder's file is not read;
    `same_as`: the input naming the same file, read there."""

    path: str
    skipped: str | None = None
    same_as: str | None = None

    @property
    def is_stdin(self) -> bool:
        return self.path == "-"

    @property
    def is_remote(self) -> bool:
        """An object in a store or on a web server (a URL), read through fsspec."""
        return is_url(self.path)


class InputError(ValueError):
    """Nothing readable was named (exit code 2)."""


def _log_name(name: str) -> bool:
    name = name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for _ in range(3):  # `worker.log.2026-11-02.1`: a date and a counter
        if name.endswith(LOG_SUFFIXES):
            return True
        name = _ROTATION.sub("", name)
    return name.endswith(LOG_SUFFIXES)


def _is_text(p: Path | str) -> bool:
    """A file (or an object, by URL) whose start is text (UTF-8 with no NUL), or empty."""
    if isinstance(p, str):
        start = head(p, TEXT_SNIFF_BYTES)
        if not start:
            return True  # empty or unreadable: named, then reported as the reader finds it
    else:
        try:
            with open(p, "rb") as fh:
                start = fh.read(TEXT_SNIFF_BYTES)
        except OSError:
            return False
    return _text(start)


def _text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start >= len(head) - 4  # a character cut by the sniff's end
    return True


def skip_reason(p: Path | str) -> str | None:
    """Why a file found in a folder (or an object under a prefix, by URL) is not a log to read, or None
    when it is one."""
    name = p.rsplit("/", 1)[-1] if isinstance(p, str) else p.name
    if name.startswith("."):
        return "hidden file"
    if _log_name(name):
        return None
    if "." not in name.lstrip("."):
        return None if _is_text(p) else "no extension and not text"
    return f"not a log file name ({', '.join(LOG_SUFFIXES)}, their rotations, or .gz of them)"


def _folder(p: Path) -> list[Source]:
    found = []
    # symlinks after the files: a file reached both ways is reported under its own name
    for f in sorted(p.rglob("*"), key=lambda f: (f.is_symlink(), str(f))):
        if any(part.startswith(".") for part in f.relative_to(p).parts[:-1]):
            continue  # inside a hidden folder (.git): not listed at all
        if f.is_file():
            found.append(Source(str(f), skipped=skip_reason(f)))
    return found


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None  # a FIFO or a device is read as it comes, never taken for another input
    return st.st_dev, st.st_ino


def expand_sources(paths: list[str]) -> tuple[list[Source], list[str]]:
    """Expand paths into sources, in a stable order; also return a problem message per unusable path.

    Skipped files (in a folder, not logs) and repeats of a file already named come back as sources with
    `skipped` / `same_as` set: the reader reports them without reading them."""
    sources: list[Source] = []
    problems: list[str] = []
    seen: set[str] = set()
    files: dict[tuple[int, int], str] = {}

    def add(src: Source) -> None:
        if src.path in seen:
            return
        seen.add(src.path)
        if src.skipped is None and not src.is_stdin:
            ident = _identity(src.path)
            if ident is not None:
                if ident in files:
                    src = Source(src.path, same_as=files[ident])
                else:
                    files[ident] = src.path
        sources.append(src)

    for raw in paths:
        if raw == "-":
            add(Source("-"))
            continue
        if is_url(raw):
            objects, problem = expand_url(raw)
            if problem is not None:
                problems.append(problem)
            named = [Source(url, skipped=None if direct else skip_reason(url)) for url, direct in objects]
            if objects and not any(s.skipped is None for s in named):
                problems.append(
                    f"{raw}: no log files ({', '.join(LOG_SUFFIXES)}, their rotations, or .gz of them)"
                )
            for s in named:
                add(s)
            continue
        p = Path(raw)
        if p.is_dir():
            found = _folder(p)
            if not any(s.skipped is None for s in found):
                problems.append(
                    f"{raw}: folder has no log files ({', '.join(LOG_SUFFIXES)}, their rotations, or .gz of them)"
                )
            for s in found:
                add(s)
        elif p.exists():  # a file, a FIFO, /dev/null, a process substitution's /dev/fd/N
            add(Source(str(p)))
        elif glob.has_magic(raw):
            matched = sorted(glob.glob(os.path.expanduser(raw), recursive=True))
            named = [Source(m) for m in matched if not Path(m).is_dir()]
            for d in (m for m in matched if Path(m).is_dir()):
                named.extend(_folder(Path(d)))
            if not any(s.skipped is None for s in named):
                problems.append(f"{raw}: pattern matched no files")
            for s in named:
                add(s)
        else:
            problems.append(f"{raw}: no such file or folder")
    return sources, problems
