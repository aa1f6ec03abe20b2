"""The fleet overview: every job at a glance, aggregated into time buckets (never one shape per execution)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from leaselog.render.plotting import EXECUTION, ZOMBIE, Axis, esc, note

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from leaselog.analysis import Analysis

__all__ = ["OVERVIEW_BUCKETS", "kind_colour", "overview_figure", "overview_spec"]

OVERVIEW_BUCKETS = 240


def overview_spec(
    executions: pl.DataFrame, findings: pl.DataFrame, buckets: int = OVERVIEW_BUCKETS
) -> dict[str, Any]:
    """Fleet overview, aggregated into time buckets (never one shape per execution, so it scales).

    Top: executions running per bucket, and how many of them overlapped another execution of their job.
    Bottom: findings starting per bucket, stacked by kind.
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
        "height": 420,
        "margin": {"l": 60, "r": 60, "t": 30, "b": 40},
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "hovermode": "x unified",
        "barmode": "stack",
        "legend": {"orientation": "h", "y": -0.12, "yanchor": "top", "font": {"size": 10}},
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
    rel_start = ((use["start"] - lo).dt.total_microseconds()).sort()
    rel_end = ((use["end"] - lo).dt.total_microseconds()).sort()
    # running in [e_k, e_k+1): started before the bucket ends, not ended before it starts
    started = rel_start.search_sorted(edges[1:], side="left")
    ended = rel_end.search_sorted(edges[:-1], side="left")
    running = (started.cast(pl.Int64) - ended.cast(pl.Int64)).to_list()
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
    if ov.height:
        o_start = ((ov["start"] - lo).dt.total_microseconds()).sort()
        o_end = ((ov["end"] - lo).dt.total_microseconds()).sort()
        o_running = (
            o_start.search_sorted(edges[1:], side="left").cast(pl.Int64)
            - o_end.search_sorted(edges[:-1], side="left").cast(pl.Int64)
        ).to_list()
        # on its own right-hand axis: a handful of overlaps next to a thousand running executions would
        # otherwise be a flat line at zero
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "overlapping execution pairs (right axis)",
                "x": xs,
                "y": o_running,
                "line": {"color": ZOMBIE, "width": 1.5, "shape": "hv"},
                "xaxis": "x",
                "yaxis": "y3",
            }
        )
    fs = findings.filter(pl.col("start").is_not_null())
    if fs.height:
        counted = (
            fs.with_columns(
                ((pl.col("start") - pl.lit(lo)).dt.total_microseconds() // step_us)
                .clip(0, buckets - 1)
                .alias("bucket")
            )
            .group_by("kind", "bucket")
            .agg(pl.len().alias("n"))
            .sort("kind", "bucket")
        )
        for (kind,), grp in counted.partition_by("kind", as_dict=True, maintain_order=True).items():
            data.append(
                {
                    "type": "bar",
                    "name": esc(kind),
                    "x": [xs[b] for b in grp["bucket"].to_list()],
                    "y": grp["n"].to_list(),
                    "width": bucket_width,
                    "xaxis": "x2",
                    "yaxis": "y2",
                    "marker": {"color": kind_colour(str(kind))},
                }
            )
    title_note = f"{use.height:,} executions" + (
        f" ({left_out:,} without wall clock not shown)" if left_out else ""
    )
    x_common: dict[str, Any] = {
        "showgrid": True,
        "gridcolor": "#eaeef2",
        "type": "date" if axis.wall else "linear",
    }
    layout = {
        **base_layout,
        "title": {"text": esc(title_note), "x": 0.01, "font": {"size": 12}},
        "xaxis": {**x_common, "anchor": "y", "matches": "x2", "showticklabels": False},
        "xaxis2": {
            **x_common,
            "anchor": "y2",
            "title": {"text": "UTC" if axis.wall else "seconds (log order)", "font": {"size": 10}},
        },
        "yaxis": {
            "domain": [0.42, 1.0],
            "title": {"text": "running", "font": {"size": 10}},
            "rangemode": "tozero",
        },
        "yaxis2": {
            "domain": [0.0, 0.34],
            "title": {"text": "findings", "font": {"size": 10}},
            "rangemode": "tozero",
        },
        "yaxis3": {
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
            "title": {"text": "overlapping", "font": {"size": 10, "color": ZOMBIE}},
            "tickfont": {"color": ZOMBIE},
        },
    }
    return {"data": data, "layout": layout}


# one fixed colour per kind of PRODUCT.md, so a colour means the same thing in every report
_KIND_COLOUR: dict[str, str] = {
    "overlapping_executions": "#cf222e",
    "lease_outlived": "#fb8500",
    "concurrent_leases": "#a40e26",
    "renewal_failed": "#8250df",
    "renewal_gap": "#c297ff",
    "ownership_loss_unhandled": "#953800",
    "stop_delayed": "#d4a72c",
    "stop_unconfirmed": "#bf8700",
    "stale_release": "#3b78c4",
    "release_failed": "#0550ae",
    "second_attempt": "#57606a",
    "duplicate_effect": "#e16f24",
    "stale_write_accepted": "#6639ba",
    "completion_rejected": "#1a7f37",
    "crash_takeover": "#24292f",
    "lease_settings": "#8c959f",
}
_FALLBACK_COLOURS = ["#116329", "#0969da", "#bc4c00", "#6e7781", "#cf5f9f", "#4d7c0f"]


def kind_colour(kind: str) -> str:
    return _KIND_COLOUR.get(kind) or _FALLBACK_COLOURS[sum(kind.encode()) % len(_FALLBACK_COLOURS)]


def overview_figure(analysis: Analysis) -> go.Figure:
    """Fleet overview: executions running over time, overlapping pairs, findings per time bucket by kind."""
    import plotly.graph_objects as go

    return go.Figure(overview_spec(analysis.executions, analysis.findings))
