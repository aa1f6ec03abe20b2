"""The engine behind the CLI and the notebook API: read -> events -> executions/leases -> checks -> findings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from leaselog.checks import CheckContext, run_checks
from leaselog.config import Settings
from leaselog.events import FieldMapper, build_events
from leaselog.findings import Finding, findings_frame, iso, sort_findings
from leaselog.reading.reader import InputReport, ProgressFn, Reader
from leaselog.reading.sources import InputError, expand_sources
from leaselog.reconstruct import reconstruct

JSON_VERSION = 1

MALFORMED_SCHEMA = {"file": pl.String(), "line": pl.Int64(), "reason": pl.String()}


@dataclass
class Analysis:
    """The result of one analysis. Frames are polars DataFrames; schemas in `leaselog.schema`."""

    events: pl.DataFrame
    executions: pl.DataFrame
    leases: pl.DataFrame
    renewals: pl.DataFrame
    finding_list: list[Finding]
    input_reports: list[InputReport]
    malformed: pl.DataFrame
    settings: Settings
    problems: list[str] = field(default_factory=list)

    @property
    def findings(self) -> pl.DataFrame:
        return findings_frame(self.finding_list)

    @property
    def inputs(self) -> pl.DataFrame:
        return pl.DataFrame(
            [r.as_dict() for r in self.input_reports],
            schema={"path": pl.String, "format": pl.String, "lines": pl.Int64, "used": pl.Int64,
                    "ignored": pl.Int64, "malformed": pl.Int64, "events": pl.Int64,
                    "unmapped_events": pl.Object, "error": pl.String},
        ).drop("unmapped_events") if self.input_reports else pl.DataFrame(
            schema={"path": pl.String, "format": pl.String, "lines": pl.Int64, "used": pl.Int64,
                    "ignored": pl.Int64, "malformed": pl.Int64, "events": pl.Int64, "error": pl.String})

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
        t = self.events["t"]
        wall = self.events.filter(pl.col("clock") == "wall")["t"]
        return {
            "version": JSON_VERSION,
            "lines": self.line_totals(),
            "inputs": [r.as_dict() for r in self.input_reports],
            "jobs": int(self.executions["job_id"].n_unique()) if self.executions.height else 0,
            "executions": self.executions.height,
            "timeRange": {
                "start": iso(wall.min()) if wall.len() else None,  # type: ignore[arg-type]
                "end": iso(wall.max()) if wall.len() else None,  # type: ignore[arg-type]
                "wallClock": bool(t.len() and wall.len() == t.len()),
            },
            "settings": self.settings.model_dump(mode="json"),
            "malformed": [
                {"file": f, "line": n, "reason": why} for f, n, why in self.malformed.iter_rows()
            ],
            "findings": [f.to_json_dict() for f in self.finding_list],
        }

    def write_json(self, path: str | Path) -> None:
        import orjson

        Path(path).write_bytes(orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2))


def analyze(
    paths: str | Path | Sequence[str | Path],
    *,
    settings: Settings | None = None,
    config: str | Path | None = None,
    progress: ProgressFn | None = None,
    **options: Any,
) -> Analysis:
    """Analyze log files, folders, globs (or `-` for stdin).

    Keyword options are Settings fields (e.g. `lease_ttl_ms=600_000` or `lease_ttl_ms="10m"`), applied on top
    of `config` (a leaselog.toml) and `settings`. Raises InputError when nothing at all could be read.
    """
    from leaselog.config import load_config_file

    base: dict[str, Any] = settings.model_dump() if settings else {}
    if config is not None:
        base.update(load_config_file(config))
    base.update({k: v for k, v in options.items() if v is not None})
    s = Settings(**base)

    if isinstance(paths, str | Path):
        paths = [paths]
    sources, problems = expand_sources([str(p) for p in paths])
    if not sources:
        raise InputError("; ".join(problems) or "no input named")
    mapper = FieldMapper(s)
    read = Reader(mapper, forced_format=s.format, progress=progress).read(sources)
    if all(r.error for r in read.inputs):
        raise InputError("; ".join(f"{r.path}: {r.error}" for r in read.inputs))
    built = build_events(read.raw, read.event_names, s)
    malformed_rows = list(read.malformed)
    if built.rejected.height:
        by_path = {r.path: r for r in read.inputs}
        for f, line, reason in built.rejected.iter_rows():
            malformed_rows.append((f, line, reason))
            rep = by_path[f]
            rep.used -= 1  # counted as used by the reader; it cannot be placed on the timeline
            rep.malformed += 1
            rep.events -= 1
    malformed = pl.DataFrame(malformed_rows, schema=MALFORMED_SCHEMA, orient="row").sort("file", "line")
    events = built.events
    executions, leases, renewals = reconstruct(events, s)
    ctx = CheckContext(events=events, executions=executions, leases=leases, renewals=renewals, settings=s)
    findings = sort_findings(run_checks(ctx))
    return Analysis(
        events=events,
        executions=executions,
        leases=leases,
        renewals=renewals,
        finding_list=findings,
        input_reports=read.inputs,
        malformed=malformed,
        settings=s,
        problems=problems,
    )
