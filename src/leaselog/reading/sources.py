"""Turn what the user named (files, folders, globs, `-`) into the list of inputs to read."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

LOG_SUFFIXES = (".jsonl", ".json", ".log", ".ndjson", ".txt", ".logfmt")


@dataclass(frozen=True)
class Source:
    """One input: a path on disk, or stdin (`path == "-"`)."""

    path: str

    @property
    def is_stdin(self) -> bool:
        return self.path == "-"


class InputError(ValueError):
    """Nothing readable was named (exit code 2)."""


def _is_log_file(p: Path) -> bool:
    name = p.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return name.endswith(LOG_SUFFIXES)


def expand_sources(paths: list[str]) -> tuple[list[Source], list[str]]:
    """Expand paths into sources, in a stable order; also return a problem message per unusable path."""
    sources: list[Source] = []
    problems: list[str] = []
    seen: set[str] = set()

    def add(p: str) -> None:
        if p not in seen:
            seen.add(p)
            sources.append(Source(p))

    for raw in paths:
        if raw == "-":
            add("-")
            continue
        p = Path(raw)
        if p.is_dir():
            found = sorted(str(f) for f in p.rglob("*") if f.is_file() and _is_log_file(f))
            if not found:
                problems.append(f"{raw}: folder has no log files ({', '.join(LOG_SUFFIXES)}, or .gz of them)")
            for f in found:
                add(f)
        elif p.is_file():
            add(str(p))
        elif glob.has_magic(raw):
            matched = sorted(glob.glob(os.path.expanduser(raw), recursive=True))
            files = [m for m in matched if Path(m).is_file()]
            dirs = [m for m in matched if Path(m).is_dir()]
            for d in dirs:
                files.extend(sorted(str(f) for f in Path(d).rglob("*") if f.is_file() and _is_log_file(f)))
            if not files:
                problems.append(f"{raw}: pattern matched no files")
            for f in files:
                add(f)
        else:
            problems.append(f"{raw}: no such file or folder")
    return sources, problems
