"""The result of an analysis (`Analysis`): its frames, findings and line accounting. The stages that make
one (read -> events -> executions/leases -> checks -> findings) are in `leaselog.pipeline`.

It imports no output: JSON, Parquet, HTML and figures are built from an `Analysis` in leaselog.render and
leaselog.store."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import polars as pl

from leaselog.config import Settings
from leaselog.findings import Finding, records
from leaselog.fleet import Totals
from leaselog.reading.reader import InputReport
from leaselog.schema import schema as documented_schema


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
    # the document's counts when the frames are not all here (a cluster run: `leaselog.spark`); None: the
    # frames are the whole input and the counts are theirs (`counts()`)
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

    def counts(self) -> Totals:
        """Events (wall-clock ones and their range), jobs and executions: `totals` when the frames are not
        all here, else counted from them."""
        if self.totals is not None:
            return self.totals
        ex = self.executions
        jobs = int(ex["job_id"].n_unique()) if ex.height else 0
        return Totals.of_events(self.events).with_jobs(jobs, ex.height)

    def job_ids(self) -> list[str]:
        """Every jobId seen, sorted."""
        return sorted(self.executions["job_id"].unique().drop_nulls().to_list())
