"""The fleet overview: every job at a glance, aggregated into time buckets (never one shape per execution)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from leaselog.render.plotting import DIM, EXECUTION, ZOMBIE, Axis, esc, note
from leaselog.timebase import PSEUDO_EPOCH

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from leaselog.analysis import Analysis

__all__ = ["OVERVIEW_BUCKETS", "kind_colour", "overview_figure", "overview_spec"]

OVERVIEW_BUCKETS = 240


def _nice_step(raw: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... at least `raw`: whole, readable tick steps."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if step * m >= raw:
                return step * m
        step *= 10


def _count_axis(title: str, domain: list[float], peak: int, colour: str = DIM) -> dict[str, Any]:
    """A y axis of counts: whole numbers only (no 0.25 executions), from zero."""
    return {
        "domain": domain,
        "title": {"text": title, "font": {"size": 10, "color": colour}},
        "rangemode": "tozero",
        "tickformat": "d",
        "dtick": _nice_step(peak / 4),
        "tickfont": {"color": colour},
    }


def _running(rel_start: pl.Series, rel_end: pl.Series, edges: pl.Series) -> list[int]:
    """How many [start, end) intervals overlap each bucket [e_k, e_k+1)."""
    started = rel_start.sort().search_sorted(edges[1:], side="left").cast(pl.Int64)
    ended = rel_end.sort().search_sorted(edges[:-1], side="left").cast(pl.Int64)
    return (started - ended).to_list()


def overview_spec(
    executions: pl.DataFrame, findings: pl.DataFrame, buckets: int = OVERVIEW_BUCKETS
) -> dict[str, Any]:
    """Fleet overview, aggregated into time buckets (never one shape per execution, so it scales).

    Three panels on one time axis: executions running per bucket; overlapping execution pairs per bucket
    (their own panel: a handful next to a thousand running would be a flat line); findings starting per
    bucket, stacked by kind, each kind in its severity's colour family. `layout.meta` has the bucket width
    (seconds) for the report's click-to-filter.
    """
    wall = executions.filter(
        (pl.col("clock") == "wall") & pl.col("start").is_not_null() & pl.col("end").is_not_null()
    )
    left_out = executions.height - wall.height
    use = wall
    axis = Axis(wall=True)
    if wall.height == 0:
        use = executions.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
        axis = Axis(wall=False)
        left_out = 0
    base_layout: dict[str, Any] = {
        "height": 520,
        "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "hovermode": "x unified",
        "hoverlabel": {"namelength": -1},
        "barmode": "stack",
        "legend": {"orientation": "h", "y": -0.1, "yanchor": "top", "font": {"size": 10}},
    }
    if use.height == 0:
        return {
            "data": [],
            "layout": {**base_layout, "height": 160, "annotations": [note("no executions to show")]},
        }

    lo = use["start"].min()
    hi = use["end"].max()
    assert isinstance(lo, datetime) and isinstance(hi, datetime)
    span_us = max(int((hi - lo).total_seconds() * 1e6), 1)
    step_us = max(span_us // buckets + 1, 1)
    edges = pl.Series("edge", [i * step_us for i in range(buckets + 1)], dtype=pl.Int64)
    running = _running(
        (use["start"] - lo).dt.total_microseconds(), (use["end"] - lo).dt.total_microseconds(), edges
    )
    xs = [axis.x(lo + timedelta(microseconds=i * step_us + step_us / 2)) for i in range(buckets)]
    bucket_width = step_us / 1000 if axis.wall else step_us / 1e6

    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "executions running",
            "x": xs,
            "y": running,
            "line": {"color": EXECUTION, "width": 1.5, "shape": "hv"},
            "fill": "tozeroy",
            "fillcolor": "rgba(35,82,124,0.15)",
            "xaxis": "x",
            "yaxis": "y",
        }
    ]
    ov = findings.filter(
        (pl.col("kind") == "overlapping_executions")
        & pl.col("start").is_not_null()
        & pl.col("end").is_not_null()
    )
    pairs = [0] * buckets
    if ov.height:
        pairs = _running(
            (ov["start"] - lo).dt.total_microseconds(), (ov["end"] - lo).dt.total_microseconds(), edges
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "overlapping execution pairs",
                "x": xs,
                "y": pairs,
                "line": {"color": ZOMBIE, "width": 1.5, "shape": "hv"},
                "fill": "tozeroy",
                "fillcolor": "rgba(207,34,46,0.12)",
                "xaxis": "x2",
                "yaxis": "y2",
            }
        )
    fs = findings.filter(pl.col("start").is_not_null())
    peak_findings = 0
    if fs.height:
        counted = (
            fs.with_columns(
                ((pl.col("start") - pl.lit(lo)).dt.total_microseconds() // step_us)
                .clip(0, buckets - 1)
                .alias("bucket")
            )
            .group_by("kind", "severity", "bucket")
            .agg(pl.len().alias("n"))
            .sort("kind", "severity", "bucket")
        )
        peak_findings = max(counted.group_by("bucket").agg(pl.col("n").sum())["n"].to_list(), default=0)
        shade: dict[str, int] = {}
        for (kind, sev), grp in counted.partition_by(
            "kind", "severity", as_dict=True, maintain_order=True
        ).items():
            i = shade[str(sev)] = shade.get(str(sev), -1) + 1
            data.append(
                {
                    "type": "bar",
                    "name": f"{esc(kind)} ({esc(sev)})",
                    "x": [xs[b] for b in grp["bucket"].to_list()],
                    "y": grp["n"].to_list(),
                    "width": bucket_width,
                    "xaxis": "x3",
                    "yaxis": "y3",
                    "marker": {"color": kind_colour(str(sev), i)},
                }
            )
    title_note = f"{use.height:,} executions" + (
        f" ({left_out:,} without wall clock not shown)" if left_out else ""
    )
    x_common: dict[str, Any] = {
        "showgrid": True,
        "gridcolor": "#eaeef2",
        "type": "date" if axis.wall else "linear",
        "matches": "x3",
    }
    layout = {
        **base_layout,
        "title": {
            "text": esc(title_note) + " · click a bar to list its findings",
            "x": 0.01,
            "font": {"size": 12},
        },
        "xaxis": {**x_common, "anchor": "y", "showticklabels": False},
        "xaxis2": {**x_common, "anchor": "y2", "showticklabels": False},
        "xaxis3": {
            **{k: v for k, v in x_common.items() if k != "matches"},
            "anchor": "y3",
            "title": {"text": axis.title(None) if axis.wall else "seconds (log order)", "font": {"size": 10}},
        },
        "yaxis": _count_axis("running", [0.68, 1.0], max(running, default=0)),
        "yaxis2": _count_axis("overlapping pairs", [0.4, 0.6], max(pairs, default=0), ZOMBIE),
        "yaxis3": _count_axis("findings", [0.0, 0.32], peak_findings),
        "meta": {
            "bucketSeconds": step_us / 1e6,
            "wall": axis.wall,
            "origin": 0 if axis.wall else PSEUDO_EPOCH.timestamp(),  # log-order x is seconds since it
        },
    }
    return {"data": data, "layout": layout}


# a kind is drawn in its severity's colour family, so a colour means the same as in the rest of the report:
# reds for errors, ambers for warnings, blues for info, one shade per kind in order of name
_FAMILIES: dict[str, list[str]] = {
    "error": ["#cf222e", "#a40e26", "#ff8182", "#82071e", "#fa4549", "#ffaba8"],
    "warning": ["#bf8700", "#fb8500", "#d4a72c", "#9a6700", "#f2cc60", "#bc4c00"],
    "info": ["#0969da", "#54aeff", "#0550ae", "#80ccff", "#033d8b", "#218bff"],
}


def kind_colour(severity: str, i: int) -> str:
    family = _FAMILIES.get(severity, ["#8c959f", "#57606a", "#d0d7de"])
    return family[i % len(family)]


def overview_figure(analysis: Analysis) -> go.Figure:
    """Fleet overview: executions running over time, overlapping pairs, findings per time bucket by kind."""
    import plotly.graph_objects as go

    return go.Figure(overview_spec(analysis.executions, analysis.findings))
