"""Write an analysis as a folder `leaselog.load` reads back (`leaselog analyze --parquet DIR`).

The folder's layout and version are the store's (`leaselog.store`): a Parquet file per frame and the
`leaselog.json` manifest, written last so an interrupted write is never mistaken for a store.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from leaselog.reading.reader import InputReport
from leaselog.store import DERIVED_FRAMES, MANIFEST, STORE_VERSION, STORED_FRAMES
from leaselog.version import VERSION

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["write_parquet"]


def _report_dict(r: InputReport) -> dict[str, Any]:
    # InputReport.as_dict keeps only the top 20 unmapped event names; a store keeps them all
    return {**r.as_dict(), "unmapped_events": dict(r.unmapped_events)}


def write_parquet(analysis: Analysis, directory: str | Path) -> Path:
    """Write `analysis` into `directory` (created if missing; a previous store there is replaced)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    # drop the old manifest first: until the new one exists, the folder is not a complete store
    manifest_path.unlink(missing_ok=True)
    frames: dict[str, dict[str, Any]] = {}
    for name in (*STORED_FRAMES, *DERIVED_FRAMES):
        df: pl.DataFrame = getattr(analysis, name)
        df.write_parquet(out / f"{name}.parquet")
        frames[name] = {"file": f"{name}.parquet", "rows": df.height}
    manifest = {
        "store": "leaselog-analysis",
        "storeVersion": STORE_VERSION,
        "leaselogVersion": VERSION,
        "frames": frames,
        "settings": analysis.settings.model_dump(mode="json"),
        "inputs": [_report_dict(r) for r in analysis.input_reports],
        "problems": list(analysis.problems),
        "localTimeFiles": dict(analysis.local_time_files),
    }
    manifest_path.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return out
