"""The JSON document (`analyze --json`, `leaselog.document(a)`): the machine output contract of
docs/PRODUCT.md, stable names, version 1. It reads the analysis' frames; the findings come from the one
findings frame (`leaselog.findings.json_dicts`)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson
import polars as pl

from leaselog.findings import gc_paused, iso, json_dicts

if TYPE_CHECKING:
    from leaselog.analysis import Analysis
    from leaselog.reading.report import InputReport

JSON_VERSION = 1
JSON_BATCH = 2000  # findings serialised at a time by write_json


def document(a: Analysis) -> dict[str, Any]:
    """The whole JSON document as Python values (what `write_json` writes)."""
    return _document(a, json_dicts(a.findings))


def _document(a: Analysis, findings: list[dict[str, Any]]) -> dict[str, Any]:
    """`document(a)` around the findings' JSON dicts."""
    # (counted from the frames, or kept by a cluster run whose frames stay on the workers)
    c = a.counts()
    lo, hi, n_wall, n = c.wall_start, c.wall_end, c.wall_events, c.events
    totals = a.line_totals()
    resolutions = _coarse_files(a)
    return {
        "version": JSON_VERSION,
        "lines": totals,
        "inputs": [_input_dict(a, r, resolutions) for r in a.input_reports],
        "jobs": c.jobs,
        "executions": c.executions,
        "timeRange": {
            "start": iso(lo) if n_wall else None,
            "end": iso(hi) if n_wall else None,
            "wallClock": bool(n and n_wall == n),
        },
        "settings": a.settings.model_dump(mode="json"),
        "malformed": [{"file": f, "line": n, "reason": why} for f, n, why in a.malformed.iter_rows()],
        # every malformed line is counted in `lines`/`inputs`; only so many are located per file and
        # reason (MAX_LOCATED): `malformedLocated` of them are listed above
        "malformedLocated": a.malformed.height,
        "malformedTruncated": a.malformed.height < totals["malformed"],
        "notes": list(a.problems),
        "findings": findings,
    }


def _input_dict(a: Analysis, r: InputReport, resolutions: dict[str, float]) -> dict[str, Any]:
    d = r.as_dict()
    zone = a.local_time_files.get(r.path)
    if zone is not None:
        d["localTimeZone"] = zone  # the file has timestamps without a zone, read in this one
    resolution = resolutions.get(r.path)
    if resolution is not None:
        d["timeResolutionMs"] = resolution  # its times are written coarser than 1 ms (whole seconds: 1000)
    return d


def _coarse_files(a: Analysis) -> dict[str, float]:
    """file -> its time resolution (ms), for the files written coarser than 1 ms (the events'
    `ts_resolution_ms`, leaselog.time_resolution)."""
    column = "ts_resolution_ms"
    if column not in a.events.columns or not a.events.height:
        return {}
    coarse = a.events.lazy().filter(pl.col(column) > 1.0).group_by("file").agg(pl.col(column).max()).collect()
    return {str(f): float(v) for f, v in coarse.iter_rows()}


def write_json(a: Analysis, path: str | Path | IO[bytes]) -> None:
    """`document(a)` as indented JSON into a file (or a binary stream), a batch of findings at a time.

    The same bytes as `orjson.dumps(document(a), option=OPT_INDENT_2)`; but the whole document at once
    held every finding's dict and the whole text (~0.15 GB at 68 000 findings) at the end of the run,
    when memory peaks.
    """
    indent = orjson.OPT_INDENT_2
    head = orjson.dumps(_document(a, []), option=indent)
    empty_tail = b"[]\n}"  # `"findings": []` is the document's last member
    assert head.endswith(b'"findings": ' + empty_tail)
    with contextlib.nullcontext(path) if not isinstance(path, str | Path) else open(path, "wb") as out:
        if not a.findings.height:
            out.write(head)
            return
        out.write(head[: -len(empty_tail)] + b"[\n")
        for i in range(0, a.findings.height, JSON_BATCH):
            with gc_paused():
                batch = json_dicts(a.findings.slice(i, JSON_BATCH))
                text = orjson.dumps(batch, option=indent)
            # `[\n  {...},\n  {...}\n]` -> the items, two spaces deeper, as the document has them
            items = b"  " + text[2:-2].replace(b"\n", b"\n  ")
            out.write(items if i == 0 else b",\n" + items)
        out.write(b"\n  ]\n}")
