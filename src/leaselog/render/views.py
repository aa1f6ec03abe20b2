"""The drawn outputs of an analysis, as the package exposes them (`leaselog.timeline(a, job)`,
`leaselog.overview(a)`, `leaselog.write_html(a, path)`). plotly and the report builder are imported when
one is called: only those who draw pay for them."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from leaselog.analysis import Analysis


def timeline(a: Analysis, job_id: str) -> go.Figure:
    """One job's timeline (plotly Figure): a lane per execution, lease vs execution bars, findings.
    KeyError (with the closest job ids) for a job the analysis does not have."""
    if a.executions.filter(pl.col("job_id") == job_id).height == 0:
        known = a.job_ids()
        close = difflib.get_close_matches(job_id, known, n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise KeyError(f"no job {job_id!r} in this analysis; {hint}({len(known)} jobs: see .job_ids())")
    from leaselog.render.figures import timeline_figure

    return timeline_figure(a, job_id)


def overview(a: Analysis) -> go.Figure:
    """Every job at a glance (plotly Figure)."""
    from leaselog.render.figures import overview_figure

    return overview_figure(a)


def write_html(a: Analysis, path: str | Path) -> Path:
    """Write the self-contained HTML report (the one of `analyze --html`) to `path`; returns the path."""
    from leaselog.render.html import write_report

    write_report(a, path)
    return Path(path)
