"""The files `leaselog analyze` writes (--json, --html, --parquet): checked before the analysis, written
each on its own.

Checked first, so nobody waits minutes to learn a path was wrong: a missing or unwritable folder, a folder
where a file goes (or a file where a folder goes), an output that is one of the inputs (it would overwrite
a log), two outputs on one path. Written before the terminal summary, one at a time: one that fails (a
full disk) is reported and the others are still written.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

STDOUT = "-"


class OutputError(ValueError):
    """An output that cannot be written; the message names the option, the path and why."""


@dataclass(frozen=True)
class Outputs:
    json: str | None = None  # a path, or "-" for standard output
    html: str | None = None
    parquet: str | None = None
    command: tuple[str, ...] = ()  # the command line, shown in the HTML report's provenance


def _why(e: OSError) -> str:
    return e.strerror or str(e)


def _probe_folder(folder: Path) -> str | None:
    """Why no file can be created in `folder`, or None. Really tries (a temporary file, removed at once):
    permission bits do not tell a read-only mount, nor anything for root."""
    try:
        fd, name = tempfile.mkstemp(prefix=".leaselog-", dir=folder)
    except OSError as e:
        return _why(e)
    os.close(fd)
    os.unlink(name)
    return None


def _check_file(option: str, path: Path) -> None:
    if path.is_dir():
        raise OutputError(f"{option} {path}: is a folder; name a file")
    if path.exists():
        try:
            with open(path, "ab"):  # opened for appending and closed: nothing written, nothing truncated
                pass
        except OSError as e:
            raise OutputError(f"{option} {path}: cannot write: {_why(e)}") from e
        return
    folder = path.parent
    if not folder.exists():
        raise OutputError(f"{option} {path}: folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(f"{option} {path}: {folder} is not a folder")
    why = _probe_folder(folder)
    if why is not None:
        raise OutputError(f"{option} {path}: cannot write in {folder}: {why}")


def _check_folder(option: str, path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise OutputError(f"{option} {path}: is a file, not a folder; name a folder (created if missing)")
    existing = path
    while not existing.exists():  # the folder is created with its parents: the nearest existing one counts
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{option} {path}: {existing} is not a folder")
    why = _probe_folder(existing)
    if why is not None:
        raise OutputError(f"{option} {path}: cannot write in {existing}: {why}")


def _identity(path: Path) -> tuple[int, int] | str:
    """A path's file identity: (device, inode) when it exists, else its absolute normalised name."""
    try:
        st = path.stat()
        return (st.st_dev, st.st_ino)
    except OSError:
        return os.path.normcase(os.path.abspath(path))


def check_outputs(
    *,
    json_out: str | Path | None,
    html: str | Path | None,
    parquet: str | Path | None,
    inputs: list[str],
) -> Outputs:
    """Check every output before the analysis; raise OutputError naming the first that cannot be written."""
    from leaselog.reading.sources import expand_sources
    from leaselog.store import DERIVED_FRAMES, MANIFEST, STORED_FRAMES

    out = Outputs(
        json=None if json_out is None else str(json_out),
        html=None if html is None else str(html),
        parquet=None if parquet is None else str(parquet),
    )
    files = [
        (opt, Path(p))
        for opt, p in (("--json", out.json), ("--html", out.html))
        if p is not None and p != STDOUT
    ]
    if out.html == STDOUT:
        raise OutputError("--html -: the report is a file; name one (standard output is for --json -)")
    for opt, path in files:
        _check_file(opt, path)
    if out.parquet is not None:
        _check_folder("--parquet", Path(out.parquet))
    # the paths every output writes, to be told apart from each other and from the inputs
    targets = list(files)
    if out.parquet is not None:
        folder = Path(out.parquet)
        names = [f"{n}.parquet" for n in (*STORED_FRAMES, *DERIVED_FRAMES)]
        targets += [("--parquet", folder / n) for n in (*names, MANIFEST)]
    seen: dict[tuple[int, int] | str, str] = {}
    for opt, target in targets:
        key = _identity(target)
        if key in seen and seen[key] != opt:
            raise OutputError(f"{seen[key]} and {opt} both write {target}: give each its own path")
        seen[key] = opt
    sources, _ = expand_sources(inputs)
    for s in sources:
        if s.is_stdin:
            continue
        key = _identity(Path(s.path))
        if key in seen:
            raise OutputError(f"{seen[key]} {s.path}: is one of the inputs; it would overwrite that log")
    return out


def write_outputs(a: Analysis, outputs: Outputs) -> tuple[list[str], list[str]]:
    """Write every output; (what was written, one error line per output that could not be)."""
    from leaselog.render.document import write_json
    from leaselog.render.parquet import write_parquet

    written: list[str] = []
    failures: list[str] = []
    if outputs.json == STDOUT:
        try:
            write_json(a, sys.stdout.buffer)
            sys.stdout.buffer.write(b"\n")
            sys.stdout.flush()
        except BrokenPipeError:
            pass  # the reader of standard output stopped reading (`| head`): nothing more to say
        except OSError as e:
            failures.append(f"--json -: cannot write to standard output: {_why(e)}")
    elif outputs.json is not None:
        _write(failures, written, "--json", outputs.json, lambda: write_json(a, outputs.json or ""))
    if outputs.parquet is not None:
        folder = outputs.parquet
        _write(failures, written, "--parquet", folder, lambda: write_parquet(a, folder), shown=f"{folder}/")
    if outputs.html is not None:
        from leaselog.render.html import write_report

        html = outputs.html
        _write(
            failures, written, "--html", html, lambda: write_report(a, html, command=outputs.command or None)
        )
    return written, failures


def _write(
    failures: list[str],
    written: list[str],
    option: str,
    path: str,
    write: Callable[[], object],
    shown: str | None = None,
) -> None:
    try:
        write()
    except OSError as e:
        failures.append(f"{option} {path}: cannot write: {_why(e)}")
        p = Path(path)
        if option != "--parquet" and p.is_file():
            p.unlink(missing_ok=True)  # half a JSON document or report is no output: none is left
        return
    written.append(shown or path)
