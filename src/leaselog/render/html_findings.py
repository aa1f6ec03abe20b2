"""The report's findings list: every finding (none dropped, so the filter counts are the rows listed), grouped
by job, most severe job first; filters by kind and severity and a job search that drive the list and the
timelines alike (report.js).

The list's rows travel in the report's table (`listed_findings` puts them in the order they are listed, with
what the page needs to write each one); findings.js writes them into the page a few thousand at a time,
so a fleet's tens of thousands of findings neither weigh on the file nor hold up the first screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from leaselog.findings import SEVERITY_RANK
from leaselog.render.html_parts import e

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["EVIDENCE_SHOWN", "findings_section", "listed_findings"]

EVIDENCE_SHOWN = 6


def findings_section(findings: pl.DataFrame) -> str:
    """The section: filters with their counts, and the list's place (filled by findings.js)."""
    out = ['<section id="findings"><h2>Findings</h2>']
    if findings.height == 0:
        out.append(
            '<p class="ok">No findings: no overlapping executions, outlived leases or other anomalies'
            " in these logs.</p></section>\n"
        )
        return "".join(out)
    kinds = findings.group_by("kind").len().sort("kind")
    sevs = dict(findings.group_by("severity").len().iter_rows())
    kind_opts = "".join(f'<option value="{e(k)}">{e(k)} ({n:,})</option>' for k, n in kinds.iter_rows())
    sev_opts = "".join(
        f'<option value="{s}">{s} ({sevs[s]:,})</option>' for s in ("error", "warning", "info") if sevs.get(s)
    )
    out.append(
        '<form class="filters" id="filters" role="search" onsubmit="return false">show '
        '<select id="kind-filter" aria-label="kind">'
        f'<option value="">all kinds</option>{kind_opts}</select> '
        f'<select id="sev-filter" aria-label="severity"><option value="">all severities</option>{sev_opts}'
        '</select> <input id="job-search" type="search" placeholder="job id contains…" aria-label="job search">'
        f' <span class="dim" id="filter-count">{findings.height:,} findings</span>'
        ' <span id="time-window"></span> <button type="button" id="filter-reset">reset</button></form>'
        f'<div class="findings-scroll" id="findings-list" data-evidence="{EVIDENCE_SHOWN}">'
        '<noscript><p class="warn">The list of findings is written by the page\'s JavaScript (inlined in this'
        " file; nothing is fetched). <code>leaselog analyze --json</code> writes the same findings.</p>"
        "</noscript></div></section>\n"
    )
    return "".join(out)


def _panels(a: Analysis, drawn: list[str]) -> pl.DataFrame:
    """Per finding row of a drawn job: whether its timeline draws it on the wall-clock panel (true) or the
    log-order one (false), as timeline.py places it: the first panel holding one of its executions, else the
    top one; null when the job has no lanes."""
    ex = a.executions.filter(pl.col("job_id").is_in(drawn) & pl.col("clock").is_not_null()).select(
        "job_id", "execution_id", (pl.col("clock") == "wall").alias("is_wall")
    )
    clocks = ex.group_by("job_id").agg(
        pl.col("is_wall").any().alias("has_wall"), (~pl.col("is_wall")).any().alias("has_other")
    )
    named = (
        a.findings.with_row_index("_row")
        .filter(pl.col("job_id").is_in(drawn))
        .select("_row", "job_id", pl.col("execution_ids").alias("execution_id"))
        .explode("execution_id")
        .join(ex, on=["job_id", "execution_id"], how="left")
        .group_by("_row", "job_id")
        .agg(
            (pl.col("is_wall") == True).any().alias("any_wall"),  # noqa: E712 (null is not wall)
            (pl.col("is_wall") == False).any().alias("any_other"),  # noqa: E712
        )
        .join(clocks, on="job_id", how="left")
    )
    has_wall, has_other = pl.col("has_wall").fill_null(False), pl.col("has_other").fill_null(False)
    panel = (
        pl.when(has_wall)
        .then(pl.col("any_wall") | ~pl.col("any_other"))
        .when(has_other)
        .then(pl.lit(False))
        .otherwise(pl.lit(None, dtype=pl.Boolean))
    )
    return named.select("_row", panel.alias("panel"))


def listed_findings(
    a: Analysis, jobs: list[str], worst: dict[str, int], job_index: dict[str, int]
) -> pl.DataFrame:
    """Every finding, in the order the list shows them: by job, most severe job first (`jobs`), the fleet-wide
    ones (no job) first among the jobs of their severity, each job's in the analysis' order. Columns: the
    finding's, `timeline` (its job's timeline index, or -1), `goto` (its timeline draws it) and `wall`
    (its moments are on the wall clock)."""
    fs = a.findings.with_row_index("_row")
    fleet = fs.filter(pl.col("job_id").is_null())
    position = {j: float(i) for i, j in enumerate(jobs)}
    if fleet.height:
        fleet_rank = min(SEVERITY_RANK[s] for s in fleet["severity"].to_list())
        at = next((i for i, j in enumerate(jobs) if worst[j] >= fleet_rank), len(jobs))
    else:
        at = len(jobs)
    drawn = [j for j in jobs if j in job_index]
    return (
        fs.join(_panels(a, drawn), on="_row", how="left")
        .with_columns(
            pl.col("job_id")
            .replace_strict(position, default=None, return_dtype=pl.Float64)
            .fill_null(at - 0.5)
            .alias("_position"),
            pl.col("job_id").replace_strict(job_index, default=-1, return_dtype=pl.Int64).alias("timeline"),
        )
        .sort("_position", "_row")
        .with_columns(
            ((pl.col("timeline") >= 0) & pl.col("panel").is_not_null() & pl.col("start").is_not_null()).alias(
                "goto"
            ),
            pl.col("panel").fill_null(True).alias("wall"),
        )
        .drop("_row", "_position", "panel")
    )
