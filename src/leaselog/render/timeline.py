"""The lease timeline of one job (the article's key picture) as a plotly figure dict, and as a Figure.

One panel per kind of clock (lanes.py draws each); this module stacks them on one page. The HTML report
draws the same figure in the browser from its data table (assets/timeline.js follows this module, lanes.py
and markers.py step for step; a test compares the two).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from leaselog.findings import SEVERITY_RANK, Finding
from leaselog.render.lanes import panel_spec
from leaselog.render.plotting import DIM, SEVERITY_COLOUR, esc, label, note

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from leaselog.analysis import Analysis

__all__ = ["MAX_LANES", "timeline_figure", "timeline_spec"]

MAX_LANES = 40  # executions drawn as lanes in one timeline


def timeline_spec(
    job_id: str,
    executions: pl.DataFrame,
    events: pl.DataFrame,
    findings: Sequence[Finding],
    renewals: pl.DataFrame | None = None,
    *,
    title: bool = True,
) -> dict[str, Any]:
    """The timeline of one job as a plotly figure dict (frames already filtered to the job).

    One panel per kind of clock: executions with wall-clock times share a UTC axis; executions placed by
    elapsedMs / line order (no wall clock) get their own panel below, since the two timelines cannot be
    compared. `title=False` leaves the job id out (the HTML report heads each figure itself).
    `layout.meta.findings[i]` is `[xref, x0, x1]` for `findings[i]` (or null), for linking to the moment.
    """
    ex = executions.sort("start", "first_seq", nulls_last=True)
    title_text = f"<b>{esc(job_id)}</b>" if title else ""
    if ex.height == 0:
        return {
            "data": [],
            "layout": {
                "title": {"text": title_text},
                "height": 160,
                "annotations": [note("no executions of this job in the logs")],
                "meta": {"jobId": job_id, "lanes": [[], []], "findings": [None] * len(findings)},
            },
        }
    if ex.height > MAX_LANES:
        # a job run thousands of times (a nightly schedule over a year) would need a lane each: keep the
        # executions the findings name, then the earliest others, and say how many are left out
        rank: dict[str, int] = {}
        for f in findings:
            for x in f.execution_ids:
                rank[x] = min(rank.get(x, 3), SEVERITY_RANK[f.severity])
        total = ex.height
        ex = (
            ex.with_columns(
                pl.col("execution_id").replace_strict(rank, default=3, return_dtype=pl.Int64).alias("_rank")
            )
            .sort("_rank", maintain_order=True)
            .head(MAX_LANES)
            .drop("_rank")
            .sort("start", "first_seq", nulls_last=True)
        )
        title_text += (
            f"  <span style='font-size:11px;color:{DIM}'>(showing {MAX_LANES} of {total:,} executions:"
            " those named in the most severe findings first)</span>"
        )
    groups = [
        g for g in (ex.filter(pl.col("clock") == "wall"), ex.filter(pl.col("clock") != "wall")) if g.height
    ]
    ids = [set(g["execution_id"].to_list()) for g in groups]
    assigned: list[list[int]] = [[] for _ in groups]
    for i, f in enumerate(findings):
        # a finding belongs with the executions it is about; failing that, the first panel
        at = next((p for p, known in enumerate(ids) if known & set(f.execution_ids)), 0)
        assigned[at].append(i)
    panels = [
        panel_spec(g, events, [findings[i] for i in assigned[p]], renewals) for p, g in enumerate(groups)
    ]
    return _stack(job_id, title_text, panels, assigned, len(findings))


def _stack(
    job_id: str, title_text: str, panels: list[dict[str, Any]], assigned: list[list[int]], n_findings: int
) -> dict[str, Any]:
    """Stack single-clock panels vertically, each on its own x/y axes pair."""
    gap = 90  # px between panels: room for the upper panel's tick labels and the lower one's labels
    plot_h = [p["layout"]["height"] - 150 for p in panels]
    area = sum(plot_h) + gap * (len(panels) - 1)
    data: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    meta_findings: list[Any] = [None] * n_findings
    layout: dict[str, Any] = {}
    top = float(area)
    seen: set[str] = set()
    wall_note = ""
    for p, panel in enumerate(panels):
        s = "" if p == 0 else str(p + 1)
        xa, ya = f"x{s}", f"y{s}"
        lo, hi = (top - plot_h[p]) / area, top / area
        top -= plot_h[p] + gap
        pl_ = panel["layout"]
        layout[f"xaxis{s}"] = {**pl_["xaxis"], "anchor": ya}
        layout[f"yaxis{s}"] = {**pl_["yaxis"], "anchor": xa, "domain": [max(lo, 0.0), min(hi, 1.0)]}
        for tr in panel["data"]:
            # one legend entry per name across panels
            tr = {**tr, "xaxis": xa, "yaxis": ya, "legendgroup": tr.get("legendgroup", tr["name"])}
            if tr["name"] in seen:
                tr["showlegend"] = False
            seen.add(tr["name"])
            data.append(tr)
        shapes += [_retarget(sh, xa, ya) for sh in pl_["shapes"]]
        annotations += [_retarget(an, xa, ya) for an in pl_["annotations"]]
        for i, ref in zip(assigned[p], pl_["meta"]["findings"], strict=True):
            meta_findings[i] = None if ref is None else [xa, *ref]
        date = pl_["xaxis"]["type"] == "date"
        if len(panels) > 1:
            text = (
                "<b>wall clock (UTC)</b>"
                if date
                else "<b>no wall clock</b>: elapsedMs / line order (not comparable with the panel above)"
            )
            annotations.append(
                label(
                    0,
                    1,
                    text,
                    xref=f"{xa} domain",
                    yref=f"{ya} domain",
                    yanchor="bottom",
                    yshift=14,
                    colour=DIM if date else SEVERITY_COLOUR["warning"],
                )
            )
        elif not date:
            wall_note = (
                f"  <span style='font-size:11px;color:{SEVERITY_COLOUR['warning']}'>(no wall clock: times from"
                " elapsedMs and line order, cross-pod positions are estimates)</span>"
            )
    lanes = [[v for panel in panels for v in panel["layout"]["meta"]["lanes"][k]] for k in (0, 1)]
    base = panels[0]["layout"]
    return {
        "data": data,
        "layout": {
            **{k: v for k, v in base.items() if k not in ("xaxis", "yaxis", "shapes", "annotations", "meta")},
            **layout,
            "title": {"text": title_text + wall_note, "x": 0.01, "xanchor": "left", "font": {"size": 14}},
            "height": 150 + area,
            "margin": {
                "l": 10,
                "r": 20,
                "t": 70 if title_text or wall_note or len(panels) > 1 else 36,
                "b": 40,
            },
            "shapes": shapes,
            "annotations": annotations,
            "meta": {"jobId": job_id, "lanes": lanes, "findings": meta_findings},
        },
    }


def _retarget(item: dict[str, Any], xa: str, ya: str) -> dict[str, Any]:
    """Point a panel's shape or annotation at its own axes (`paper` becomes that panel's domain)."""
    out = dict(item)
    out["xref"] = f"{xa} domain" if item.get("xref") == "paper" else xa
    out["yref"] = f"{ya} domain" if item.get("yref") == "paper" else ya
    if "axref" in item:  # an arrow drawn in data coordinates (a second attempt's trigger path)
        out["axref"], out["ayref"] = xa, ya
    return out


def _job_frames(a: Analysis, job_id: str) -> tuple[pl.DataFrame, pl.DataFrame, list[Finding]]:
    ex = a.executions.filter(pl.col("job_id") == job_id)
    ev = a.events.filter(pl.col("job_id") == job_id)
    return ex, ev, [f for f in a.finding_list if f.job_id == job_id]


def timeline_figure(analysis: Analysis, job_id: str) -> go.Figure:
    """The lease timeline of one job: one lane per execution, lease vs execution, markers, overlap shaded."""
    import plotly.graph_objects as go

    ex, ev, fs = _job_frames(analysis, job_id)
    rn = analysis.renewals.filter(pl.col("job_id") == job_id) if analysis.renewals.height else None
    return go.Figure(timeline_spec(job_id, ex, ev, fs, rn))
