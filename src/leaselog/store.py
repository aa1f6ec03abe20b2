"""Read back an analysis kept on disk (`leaselog.load`): every frame as Parquet, plus what it takes to
rebuild the whole `Analysis`. `leaselog.render.parquet.write_parquet` writes such a folder.

A big analysis is done once on the command line (`leaselog analyze logs/ --parquet out/`) and explored later
in a notebook (`leaselog.load("out/")`). The folder holds:

- `<frame>.parquet` for events, executions, leases, renewals, findings, inputs, malformed: readable by any
  Parquet tool (polars, duckdb, pandas); their columns are documented in `leaselog.schema` (the findings
  in full: evidence as file/line/note records, details as a JSON object);
- `leaselog.json`: the manifest: store version, settings, per-input reports, read problems, frame files.

The manifest is written last, so a folder whose writing was interrupted is not mistaken for a store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from leaselog.config import Settings
from leaselog.reading.reader import InputReport

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["DERIVED_FRAMES", "MANIFEST", "STORED_FRAMES", "STORE_VERSION", "StoreError", "load"]

STORE_VERSION = 2  # 2: the findings are findings.parquet in full (1 had a findings.json)
MANIFEST = "leaselog.json"
# frames read back from Parquet; `inputs` is rebuilt from the manifest (its full form)
STORED_FRAMES = ("events", "executions", "leases", "renewals", "findings", "malformed")
DERIVED_FRAMES = ("inputs",)


class StoreError(ValueError):
    """A folder that cannot be loaded as an analysis; the message says why and names the folder."""


def _report(d: dict[str, Any]) -> InputReport:
    return InputReport.from_dict(d)


def _read_json(path: Path, folder: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise StoreError(f"{folder}: {path.name} is missing; write the folder again") from None
    except orjson.JSONDecodeError as e:
        raise StoreError(f"{path}: not valid JSON: {e}") from e


def load(directory: str | Path) -> Analysis:
    """Read back what `write_parquet` (`leaselog.write_parquet`, `leaselog analyze --parquet DIR`) wrote."""
    from leaselog.analysis import Analysis

    folder = Path(directory)
    if not folder.is_dir():
        raise StoreError(f"{folder}: no such folder")
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise StoreError(
            f"{folder}: not a leaselog analysis folder (no {MANIFEST}); "
            "write one with `leaselog analyze LOGS --parquet DIR` or leaselog.write_parquet(analysis, DIR)"
        )
    manifest = _read_json(manifest_path, folder)
    if not isinstance(manifest, dict) or manifest.get("store") != "leaselog-analysis":
        raise StoreError(f"{manifest_path}: not a leaselog analysis manifest")
    version = manifest.get("storeVersion")
    if version != STORE_VERSION:
        raise StoreError(
            f"{manifest_path}: store version {version!r}, this leaselog reads version {STORE_VERSION}; "
            "run the analysis again with this version"
        )
    frames: dict[str, pl.DataFrame] = {}
    for name in STORED_FRAMES:
        file = folder / manifest["frames"][name]["file"]
        if not file.is_file():
            raise StoreError(f"{folder}: {file.name} is missing; write the folder again")
        frames[name] = pl.read_parquet(file)
    return Analysis(
        events=frames["events"],
        executions=frames["executions"],
        leases=frames["leases"],
        renewals=frames["renewals"],
        findings=frames["findings"],
        input_reports=[_report(d) for d in manifest["inputs"]],
        malformed=frames["malformed"],
        settings=Settings.model_validate(manifest["settings"]),
        problems=list(manifest.get("problems", [])),
        local_time_files=dict(manifest.get("localTimeFiles") or {}),
    )
