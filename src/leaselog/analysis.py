"""The result of an analysis (`Analysis`): its frames, the JSON document, Parquet, figures. The stages that
make one are in `leaselog.pipeline`."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import polars as pl

from leaselog.config import Settings
from leaselog.findings import Finding, gc_paused, iso, json_dicts, records
from leaselog.fleet import Totals
from leaselog.reading.reader import InputReport
from leaselog.schema import schema as documented_schema

if TYPE_CHECKING:
    import plotly.graph_objects as go

JSON_VERSION = 1
JSON_BATCH = 2000  # findings serialised at a time by write_json


@dataclass(repr=False)
class Analysis:
    """The result of one analysis. Frames are polars DataFrames; schemas in `leaselog.schema`.

    `events`, `executions`, `leases`, `renewals`, `findings` (one row per finding, in output order),
    `inputs`, `malformed`; `finding_list` gives the findings as `Finding` records. `to_dict()` is the JSON contract,
    `write_parquet(dir)` keeps it for `leaselog.load(dir)`, `timeline(job_id)` and `overview()` draw it.
    """

    events: pl.DataFrame
    executions: pl.DataFrame
    leases: pl.DataFrame
    renewals: pl.DataFrame
    findings: pl.DataFrame
    input_reports: list[InputReport]
    malformed: pl.DataFrame
    settings: Settings
    problems: list[str] = field(default_factory=list)
    # file -> the zone its timestamps written without a zone were read in (`--timezone`, default UTC)
    local_time_files: dict[str, str] = field(default_factory=dict)
    # the document's counts when the frames are not all here (a cluster run: `leaselog.spark`); None: the
    # frames are the whole input and the counts are theirs
    totals: Totals | None = None

    def __repr__(self) -> str:
        # the default dataclass repr would print every frame; a notebook wants the gist
        counts = dict(self.findings["severity"].value_counts().iter_rows())
        by_sev = {s: counts.get(s, 0) for s in ("error", "warning", "info")}
        sev = ", ".join(f"{n} {s}" for s, n in by_sev.items() if n) or "none"
        jobs = self.executions["job_id"].n_unique() if self.executions.height else 0
        return (
            f"<Analysis: {len(self.input_reports)} inputs, {self.events.height} events, {jobs} jobs, "
            f"{self.executions.height} executions, {self.findings.height} findings ({sev})>"
        )

    @cached_property
    def finding_list(self) -> list[Finding]:
        """The findings as `Finding` records (pydantic models), in output order."""
        return records(self.findings)

    @property
    def inputs(self) -> pl.DataFrame:
        """One row per input file and what happened to its lines (unmapped event names: `input_reports`)."""
        cols = documented_schema("inputs")
        rows = [{k: r.as_dict().get(k) for k in cols} for r in self.input_reports]
        return pl.DataFrame(rows, schema=cols)

    def line_totals(self) -> dict[str, int]:
        r = self.input_reports
        return {
            "total": sum(x.lines for x in r),
            "used": sum(x.used for x in r),
            "ignored": sum(x.ignored for x in r),
            "malformed": sum(x.malformed for x in r),
        }

    def to_dict(self) -> dict[str, Any]:
        """The machine output contract (PRODUCT.md): stable names, version 1."""
        return self._document(json_dicts(self.findings))

    def _document(self, findings: list[dict[str, Any]]) -> dict[str, Any]:
        """`to_dict()` around the findings' JSON dicts."""
        tot = self.totals or Totals.of_events(self.events).with_jobs(
            int(self.executions["job_id"].n_unique()) if self.executions.height else 0, self.executions.height
        )
        lo, hi, n_wall, n = tot.wall_start, tot.wall_end, tot.wall_events, tot.events
        return {
            "version": JSON_VERSION,
            "lines": self.line_totals(),
            "inputs": [self._input_dict(r) for r in self.input_reports],
            "jobs": tot.jobs,
            "executions": tot.executions,
            "timeRange": {
                "start": iso(lo) if n_wall else None,
                "end": iso(hi) if n_wall else None,
                "wallClock": bool(n and n_wall == n),
            },
            "settings": self.settings.model_dump(mode="json"),
            "malformed": [{"file": f, "line": n, "reason": why} for f, n, why in self.malformed.iter_rows()],
            # every malformed line is counted in `lines`/`inputs`; only so many are located per file and
            # reason (MAX_LOCATED): `malformedLocated` of them are listed above
            "malformedLocated": self.malformed.height,
            "malformedTruncated": self.malformed.height < self.line_totals()["malformed"],
            "notes": list(self.problems),
            "findings": findings,
        }

    def _input_dict(self, r: InputReport) -> dict[str, Any]:
        d = r.as_dict()
        zone = self.local_time_files.get(r.path)
        if zone is not None:
            d["localTimeZone"] = zone  # the file has timestamps without a zone, read in this one
        return d

    def write_json(self, path: str | Path | IO[bytes]) -> None:
        """`to_dict()` as indented JSON, written a batch of findings at a time.

        The same bytes as `orjson.dumps(self.to_dict(), option=OPT_INDENT_2)`; but the whole document at
        once held every finding's dict and the whole text (~0.15 GB at 68 000 findings) at the end of
        the run, when memory peaks.
        """
        import orjson

        indent = orjson.OPT_INDENT_2
        head = orjson.dumps(self._document([]), option=indent)
        empty_tail = b"[]\n}"  # `"findings": []` is the document's last member
        assert head.endswith(b'"findings": ' + empty_tail)
        with contextlib.nullcontext(path) if not isinstance(path, str | Path) else open(path, "wb") as out:
            if not self.findings.height:
                out.write(head)
                return
            out.write(head[: -len(empty_tail)] + b"[\n")
            for i in range(0, self.findings.height, JSON_BATCH):
                with gc_paused():
                    batch = json_dicts(self.findings.slice(i, JSON_BATCH))
                    text = orjson.dumps(batch, option=indent)
                # `[\n  {...},\n  {...}\n]` -> the items, two spaces deeper, as the document has them
                items = b"  " + text[2:-2].replace(b"\n", b"\n  ")
                out.write(items if i == 0 else b",\n" + items)
            out.write(b"\n  ]\n}")

    def write_parquet(self, directory: str | Path) -> Path:
        """Write every frame as Parquet into `directory`, plus what `leaselog.load` needs to rebuild this."""
        from leaselog.store import write_parquet

        return write_parquet(self, directory)

    def job_ids(self) -> list[str]:
        """Every jobId seen, sorted."""
        return sorted(self.executions["job_id"].unique().drop_nulls().to_list())

    def timeline(self, job_id: str) -> go.Figure:
        """One job's timeline (plotly Figure): a lane per execution, lease vs execution bars, findings."""
        if self.executions.filter(pl.col("job_id") == job_id).height == 0:
            import difflib

            known = self.job_ids()
            close = difflib.get_close_matches(job_id, known, n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            raise KeyError(f"no job {job_id!r} in this analysis; {hint}({len(known)} jobs: see .job_ids())")
        # imported here: plotly is only paid for by those who draw
        from leaselog.render.figures import timeline_figure

        return timeline_figure(self, job_id)

    def overview(self) -> go.Figure:
        """Every job at a glance (plotly Figure)."""
        from leaselog.render.figures import overview_figure

        return overview_figure(self)
