"""The engine behind the CLI and the notebook API: read -> events -> executions/leases -> checks -> findings.

It imports no output: JSON, Parquet, HTML and figures are built from an `Analysis` in leaselog.render and
leaselog.store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

from leaselog.checks import CheckContext, run_checks
from leaselog.config import FRIENDLY_OPTIONS, Settings
from leaselog.events import FieldMapper, build_events, compact
from leaselog.findings import Finding, finalize, records
from leaselog.reading.reader import InputReport, ProgressFn, Reader
from leaselog.reading.report import account_rejected
from leaselog.reading.sources import InputError, expand_sources
from leaselog.reconstruct import reconstruct
from leaselog.schema import schema as documented_schema

MALFORMED_SCHEMA = dict(documented_schema("malformed"))


@dataclass(repr=False)
class Analysis:
    """The result of one analysis. Frames are polars DataFrames; schemas in `leaselog.schema`.

    `events`, `executions`, `leases`, `renewals`, `findings` (one row per finding, in output order),
    `inputs`, `malformed`; `finding_list` gives the findings as `Finding` records. Data only: the outputs
    are functions of the output layer, at the package's top level: `leaselog.document(a)` (the JSON
    contract) and `write_json(a, path)`, `write_parquet(a, dir)` (read back by `leaselog.load(dir)`),
    `timeline(a, job_id)`, `overview(a)`, `write_html(a, path)`.
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

    def job_ids(self) -> list[str]:
        """Every jobId seen, sorted."""
        return sorted(self.executions["job_id"].unique().drop_nulls().to_list())


Duration = str | float | int


def analyze(
    paths: str | Path | Sequence[str | Path],
    *,
    config: str | Path | None = None,
    lease_ttl: Duration | None = None,
    max_skew: Duration | None = None,
    stop_slo: Duration | None = None,
    takeover_slo: Duration | None = None,
    renewal_interval: Duration | None = None,
    clock_offsets: Mapping[str, Duration] | None = None,
    settings: Settings | None = None,
    progress: ProgressFn | None = None,
    keep_fields: bool = True,
    **options: Any,
) -> Analysis:
    """Analyze log files, folders, globs (or `-` for stdin): the same engine as `leaselog analyze`.

    Durations are milliseconds or strings like `"10m"`, `"30s"`, `"250ms"`:
    `lease_ttl` (TTL when the log has no leaseMs), `max_skew` (clock-skew bound between pods), `stop_slo`,
    `takeover_slo`, `renewal_interval`; `clock_offsets` maps a pod to an offset subtracted from its
    timestamps (`{"pod-b": "-120ms"}`). Any other Settings field is accepted by name (`format="ecs"`,
    `fields=...`, and the `*_ms` spellings). They apply on top of `config` (a leaselog.toml) and `settings`.
    `keep_fields=False` leaves `events.fields` (each event's whole record as JSON, which the HTML report
    shows on hover) null: the events frame is then about half the size.
    Raises InputError when nothing at all could be read, TypeError for an unknown keyword.
    """
    from leaselog.config import load_config_file

    friendly: dict[str, Any] = {
        "lease_ttl": lease_ttl,
        "max_skew": max_skew,
        "stop_slo": stop_slo,
        "takeover_slo": takeover_slo,
        "renewal_interval": renewal_interval,
        "clock_offsets": None if clock_offsets is None else _signed_offsets(clock_offsets),
    }
    unknown = sorted(set(options) - set(Settings.model_fields))
    if unknown:
        known = sorted([*FRIENDLY_OPTIONS, *Settings.model_fields])
        raise TypeError(f"analyze() got unknown keyword(s) {unknown}; known: {', '.join(known)}")
    for name, value in friendly.items():
        if value is None:
            continue
        field_name = FRIENDLY_OPTIONS[name]
        if options.get(field_name) is not None:
            raise TypeError(f"analyze() got both {name}= and {field_name}=; give one")
        options[field_name] = value

    base: dict[str, Any] = settings.model_dump() if settings else {}
    if config is not None:
        base.update(load_config_file(config))
    base.update({k: v for k, v in options.items() if v is not None})
    s = Settings(**base)

    if isinstance(paths, str | Path):
        paths = [paths]
    sources, problems = expand_sources([str(p) for p in paths])
    if not any(src.skipped is None for src in sources):  # nothing to read (same_as: read elsewhere)
        raise InputError("; ".join(problems) or "no input named")
    mapper = FieldMapper(s)
    read = Reader(mapper, forced_format=s.format, progress=progress, keep_fields=keep_fields).read(sources)
    inputs, malformed_rows, raw = read.inputs, list(read.malformed), read.raw
    # an input error only when nothing at all was read: a gzip cut short still gave the lines before the cut
    if all(r.error and r.used + r.ignored == 0 for r in inputs):
        raise InputError("; ".join(f"{r.path}: {r.error}" for r in inputs))
    # the raw string columns are as large as the typed events made from them: hold only one of the two
    del read
    built = build_events(raw, None, s)
    del raw
    if built.rejected.height:
        account_rejected(built.rejected, built.events, inputs, malformed_rows)
    problems = [*problems, *built.notes]
    malformed = pl.DataFrame(malformed_rows, schema=MALFORMED_SCHEMA, orient="row").sort("file", "line")
    events = compact(built.events)
    built_local = built.local_time_files
    del built
    executions, leases, renewals = reconstruct(events, s)
    ctx = CheckContext(events=events, executions=executions, leases=leases, renewals=renewals, settings=s)
    findings = finalize(run_checks(ctx))
    return Analysis(
        events=events,
        executions=executions,
        leases=leases,
        renewals=renewals,
        findings=findings,
        input_reports=inputs,
        malformed=malformed,
        settings=s,
        problems=problems,
        local_time_files=dict(built_local),
    )


def _signed_offsets(offsets: Mapping[str, Duration]) -> dict[str, float]:
    """Per-pod clock offsets: numbers are ms, strings may be signed durations (`"-120ms"`)."""
    from leaselog.durations import parse_signed_duration_ms

    return {
        pod: float(v) if isinstance(v, int | float) else parse_signed_duration_ms(v)
        for pod, v in offsets.items()
    }
