"""Plotly figures: the per-job lease timeline (the article's key picture) and the fleet overview.

Both are built as plain plotly figure dicts first (`timeline_spec`, `overview_spec`) so the HTML report can
serialise hundreds of them without paying plotly.py's per-property validation; the public functions wrap the
same dicts in `plotly.graph_objects.Figure` for notebooks.

Every string that came from a log (job ids, pods, execution ids, raw fields, messages) is HTML-escaped before
it goes into a figure: plotly renders a subset of HTML tags in labels and hover text, and a log line must show
as text, never as markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from leaselog.durations import format_duration
from leaselog.events import PSEUDO_EPOCH
from leaselog.findings import SEVERITY_RANK, Finding

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from leaselog.analysis import Analysis

__all__ = ["overview_figure", "overview_spec", "timeline_figure", "timeline_spec"]

# colours: lease = what the lock granted (light blue), execution = the work (dark blue),
# red = work done without a lease, grey = an open end (log stops: crash or cut log)
LEASE = "#9cc3f5"
LEASE_EDGE = "#3b78c4"
EXECUTION = "#23527c"
ZOMBIE = "#cf222e"
OPEN_END = "#8c959f"
SEVERITY_COLOUR = {"error": "#cf222e", "warning": "#bf8700", "info": "#0969da"}
RENEWAL_COLOUR = {
    "success": "#2da44e",
    "late": "#d4a72c",
    "rejected": "#cf222e",
    "timeout": "#fb8500",
    "error": "#8250df",
}

# event -> (label in the legend, marker symbol, colour)
_MARKERS: dict[str, tuple[str, str, str]] = {
    "job_triggered": ("triggered", "diamond-open", "#57606a"),
    "lock_acquired": ("lock acquired", "square", LEASE_EDGE),
    "lock_denied": ("lock denied", "square-x-open", "#57606a"),
    "job_started": ("started", "triangle-right", "#1a7f37"),
    "ownership_lost": ("ownership lost", "x", "#cf222e"),
    "job_stop_requested": ("stop requested", "hourglass", "#fb8500"),
    "job_stopped": ("stopped", "square-x", "#57606a"),
    "job_finished": ("finished", "diamond", "#1a7f37"),
    "lock_released": ("released", "triangle-left", LEASE_EDGE),
    "completion": ("completion", "star", "#1a7f37"),
    "job_progress": ("still running", "line-ns-open", "#57606a"),
}

MAX_FIELDS_CHARS = 1200  # raw fields shown in a hover; longer records are cut (file:line points to the rest)
MAX_LANES = 40  # executions drawn as lanes in one timeline
MAX_MARKERS = 2000  # event markers per timeline panel before routine ones are thinned
MAX_FINDING_ROWS = 12  # finding rows drawn above the lanes; more are still in the findings list


def esc(text: object) -> str:
    """Escape log text for plotly labels and hover text (plotly decodes the entities back to plain text)."""
    # quote=False: plotly decodes &lt; &gt; &amp; and numeric entities only (it would show `&quot;` as is),
    # and with `<` escaped no tag, hence no attribute, can form
    return html.escape("" if text is None else str(text), quote=False)


def _esc_expr(e: pl.Expr) -> pl.Expr:
    return (
        e.cast(pl.String)
        .str.replace_all("&", "&amp;", literal=True)
        .str.replace_all("<", "&lt;", literal=True)
        .str.replace_all(">", "&gt;", literal=True)
    )


@dataclass(frozen=True)
class _Axis:
    """How times become x values: dates for wall-clock jobs, seconds on the pseudo timeline otherwise."""

    wall: bool

    def x(self, t: datetime | None) -> str | float | None:
        if t is None:
            return None
        if self.wall:
            # naive UTC: plotly.js ignores zones anyway, and the axis title says UTC
            return t.strftime("%Y-%m-%d %H:%M:%S.%f")
        return round((t - PSEUDO_EPOCH).total_seconds(), 6)

    def expr(self, col: str) -> pl.Expr:
        if self.wall:
            return pl.col(col).dt.strftime("%Y-%m-%d %H:%M:%S.%6f")
        return (pl.col(col) - pl.lit(PSEUDO_EPOCH)).dt.total_microseconds() / 1e6

    def span(self, start: datetime, end: datetime) -> float:
        """The length of a bar in axis units (ms on a date axis, s on the numeric one)."""
        ms = (end - start).total_seconds() * 1000
        return ms if self.wall else ms / 1000

    def when(self, t: datetime | None) -> str:
        if t is None:
            return "?"
        if self.wall:
            return t.strftime("%H:%M:%S.") + f"{t.microsecond // 1000:03d}"
        return f"+{format_duration((t - PSEUDO_EPOCH).total_seconds() * 1000)}"

    def when_expr(self, col: str) -> pl.Expr:
        if self.wall:
            return pl.col(col).dt.strftime("%H:%M:%S%.3f")
        return pl.format(
            "+{}s", ((pl.col(col) - pl.lit(PSEUDO_EPOCH)).dt.total_milliseconds() / 1000).round(3)
        )


def _hover_layout() -> dict[str, Any]:
    return {"align": "left", "bgcolor": "white", "font": {"family": "ui-monospace, monospace", "size": 11}}


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
                "annotations": [_note("no executions of this job in the logs")],
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
            f"  <span style='font-size:11px;color:#57606a'>(showing {MAX_LANES} of {total:,} executions:"
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
        _panel_spec(g, events, [findings[i] for i in assigned[p]], renewals) for p, g in enumerate(groups)
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
        if len(panels) > 1:
            annotations.append(
                {
                    "xref": f"{xa} domain",
                    "yref": f"{ya} domain",
                    "x": 0,
                    "y": 1,
                    "xanchor": "left",
                    "yanchor": "bottom",
                    "yshift": 14,
                    "showarrow": False,
                    "text": "<b>wall clock (UTC)</b>"
                    if pl_["xaxis"]["type"] == "date"
                    else "<b>no wall clock</b>: elapsedMs / line order (not comparable with the panel above)",
                    "font": {"size": 11, "color": "#57606a" if pl_["xaxis"]["type"] == "date" else "#bf8700"},
                }
            )
        elif pl_["xaxis"]["type"] != "date":
            wall_note = _clock_note({"order"})
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
    return out


def _panel_spec(
    executions: pl.DataFrame,
    events: pl.DataFrame,
    findings: Sequence[Finding],
    renewals: pl.DataFrame | None,
) -> dict[str, Any]:
    """Lanes of executions sharing one kind of clock, on axes named x/y (`_stack` renames them)."""
    ex = executions
    clocks = set(ex["clock"].to_list())
    axis = _Axis(wall=clocks == {"wall"})
    lanes = {eid: i for i, eid in enumerate(ex["execution_id"].to_list())}

    # the x extent: everything known about the job, open ends drawn a bit past it
    times = [
        t
        for col in ("start", "end", "acquired_at", "valid_until", "triggered_at", "last_seen")
        for t in ex[col].to_list()
        if t is not None
    ]
    times += [t for f in findings for t in (f.start, f.end) if t is not None]
    t_min, t_max = min(times), max(times)
    pad = (t_max - t_min) * 0.04 if t_max > t_min else None
    open_tail_end = (t_max + pad) if pad is not None else t_max
    # room on the right for the labels written after the last bars ("lease released 10:16:40.010")
    right_edge = (t_max + (t_max - t_min) * 0.2) if pad is not None else t_max

    data: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    lease_bars: dict[str, list[Any]] = {"y": [], "base": [], "x": [], "text": []}
    exec_bars: dict[str, list[Any]] = {"y": [], "base": [], "x": [], "text": [], "color": []}
    zombie_bars: dict[str, list[Any]] = {"y": [], "base": [], "x": [], "text": []}
    open_bars: dict[str, list[Any]] = {"y": [], "base": [], "x": [], "text": []}
    labels: list[str] = []

    for r in ex.iter_rows(named=True):
        y = lanes[r["execution_id"]]
        who = f"{esc(r['pod'])} · {esc(r['execution_id'])}"
        labels.append(who if len(who) < 60 else who[:57] + "…")
        # the file of the same line: an execution's lines can span files (rotation, stdout and stderr)
        if r["acquired_line"] is not None:
            where = f"{esc(r['acquired_file'])}:{r['acquired_line']}"
        elif r["started_line"] is not None:
            where = f"{esc(r['started_file'])}:{r['started_line']}"
        else:
            where = f"{esc(r['file'])}:"
        start, end = r["start"], r["end"]
        lease_from, lease_to = r["acquired_at"], r["valid_until"]
        if lease_from is not None and lease_to is not None:
            how = {"released": "released", "expired": "expired"}.get(r["lease_end"] or "", "ends")
            lease_bars["y"].append(y - 0.3)
            lease_bars["base"].append(axis.x(lease_from))
            lease_bars["x"].append(axis.span(lease_from, lease_to))
            lease_bars["text"].append(
                f"<b>lease</b> of {who}<br>acquired {axis.when(lease_from)} (TTL {format_duration(r['ttl_ms'])}),"
                f" {how} {axis.when(lease_to)}<br>{where}"
            )
            # the moment the lock stopped protecting this execution, readable without hovering
            annotations.append(
                {
                    "x": axis.x(lease_to),
                    "y": y - 0.3,
                    "xref": "x",
                    "yref": "y",
                    "xanchor": "left",
                    "text": f"◀ lease {how} {axis.when(lease_to)}",
                    "showarrow": False,
                    "font": {"size": 11, "color": LEASE_EDGE},
                }
            )
            if pad is not None and lease_from - t_min > (t_max - t_min) * 0.2:
                # a later acquisition (the takeover) is labelled where it happens
                annotations.append(
                    {
                        "x": axis.x(lease_from),
                        "y": y - 0.3,
                        "xref": "x",
                        "yref": "y",
                        "xanchor": "right",
                        "text": f"acquired {axis.when(lease_from)} ▶",
                        "showarrow": False,
                        "font": {"size": 11, "color": LEASE_EDGE},
                    }
                )
        elif lease_from is not None:
            annotations.append(
                {
                    "x": axis.x(lease_from),
                    "y": y - 0.3,
                    "xref": "x",
                    "yref": "y",
                    "xanchor": "left",
                    "text": "lease length unknown (no leaseMs, no --lease-ttl)",
                    "showarrow": False,
                    "font": {"size": 11, "color": LEASE_EDGE},
                }
            )
        if start is None or end is None:
            continue
        covered_until = end
        if lease_to is not None and lease_to < end:
            covered_until = max(lease_to, start)
        kind = r["end_kind"]
        exec_text = (
            f"<b>execution</b> {who}<br>{axis.when(start)} → {axis.when(end)}"
            f" ({format_duration(r['runtime_ms'])}), {esc(kind)}<br>{where}"
        )
        exec_bars["y"].append(y + 0.08)
        exec_bars["base"].append(axis.x(start))
        exec_bars["x"].append(axis.span(start, covered_until))
        exec_bars["text"].append(exec_text)
        exec_bars["color"].append(EXECUTION)
        if covered_until < end:
            zombie_ms = (end - covered_until).total_seconds() * 1000
            zombie_bars["y"].append(y + 0.08)
            zombie_bars["base"].append(axis.x(covered_until))
            zombie_bars["x"].append(axis.span(covered_until, end))
            zombie_bars["text"].append(
                f"<b>running without a lease</b> {who}<br>{axis.when(covered_until)} → {axis.when(end)}"
                f" ({format_duration(zombie_ms)})"
            )
            annotations.append(
                {
                    "x": axis.x(covered_until),
                    "y": y + 0.4,
                    "xref": "x",
                    "yref": "y",
                    "xanchor": "left",
                    "text": f"<b>still running without lease: {format_duration(zombie_ms)}</b>",
                    "showarrow": False,
                    "font": {"size": 11, "color": ZOMBIE},
                }
            )
        if kind == "open":
            open_bars["y"].append(y + 0.08)
            open_bars["base"].append(axis.x(end))
            open_bars["x"].append(axis.span(end, open_tail_end) if open_tail_end > end else 0)
            open_bars["text"].append(
                f"<b>open end</b> {who}<br>log ends at {axis.when(end)} with no finish, stop or release:"
                " a crash, or a log cut short"
            )
            annotations.append(
                {
                    "x": axis.x(end),
                    "y": y + 0.08,
                    "xref": "x",
                    "yref": "y",
                    "xanchor": "left",
                    "text": f" ✕ log ends {axis.when(end)}: no finish (crash?)",
                    "showarrow": False,
                    "font": {"size": 11, "color": "#24292f"},
                }
            )
        else:
            annotations.append(
                {
                    "x": axis.x(end),
                    "y": y + 0.08,
                    "xref": "x",
                    "yref": "y",
                    "xanchor": "left",
                    "text": f" {esc(kind)} {axis.when(end)}",
                    "showarrow": False,
                    "font": {"size": 10, "color": "#57606a"},
                }
            )

    data.append(
        _bars(
            "lease (lock held)",
            "lease",
            lease_bars,
            0.2,
            {"color": LEASE, "line": {"color": LEASE_EDGE, "width": 1}},
        )
    )
    data.append(_bars("execution (with lease)", "execution", exec_bars, 0.3, {"color": exec_bars["color"]}))
    if zombie_bars["y"]:
        zombie_marker = {
            "color": ZOMBIE,
            "pattern": {"shape": "/", "fgcolor": "white", "solidity": 0.3, "fillmode": "overlay"},
        }
        data.append(_bars("execution without lease", "zombie", zombie_bars, 0.3, zombie_marker))
    if open_bars["y"]:
        open_marker = {
            "color": "rgba(140,149,159,0.25)",
            "line": {"color": OPEN_END, "width": 1},
            "pattern": {"shape": ".", "fgcolor": OPEN_END, "fillmode": "overlay"},
        }
        data.append(_bars("open end (log stops)", "open", open_bars, 0.3, open_marker))

    notes: list[str] = []
    data.extend(_event_traces(events, lanes, axis, renewals, notes))
    annotations.extend(
        {
            "xref": "paper",
            "yref": "paper",
            "x": 1,
            "y": 0,
            "xanchor": "right",
            "yanchor": "bottom",
            "showarrow": False,
            "text": f"<i>{note}</i>",
            "font": {"size": 10, "color": "#57606a"},
        }
        for note in notes
    )

    # overlap shading, from the findings themselves so it agrees with the findings list
    finding_rows = [f for f in findings if f.start is not None][:MAX_FINDING_ROWS]
    for f in findings:
        if f.kind == "overlapping_executions" and f.start is not None and f.end is not None:
            shapes.append(
                {
                    "type": "rect",
                    "xref": "x",
                    "yref": "paper",
                    "x0": axis.x(f.start),
                    "x1": axis.x(f.end),
                    "y0": 0,
                    "y1": 1,
                    "fillcolor": "rgba(207,34,46,0.13)",
                    "line": {"width": 0},
                    "layer": "below",
                    "name": "overlap",
                }
            )
            label = "overlap " + ("≈" if f.certainty == "uncertain" else "")
            label += format_duration(f.duration_ms) + (" (uncertain)" if f.certainty == "uncertain" else "")
            annotations.append(
                {
                    "x": axis.x(f.start + (f.end - f.start) / 2),
                    "y": 1.0,
                    "xref": "x",
                    "yref": "paper",
                    "yanchor": "bottom",
                    "text": f"<b>{label}</b>",
                    "showarrow": False,
                    "font": {"size": 12, "color": ZOMBIE},
                    "bgcolor": "rgba(255,255,255,0.85)",
                }
            )
    data.extend(_finding_traces(finding_rows, axis))
    annotations.extend(_finding_labels(finding_rows, axis, t_min, right_edge))

    n = len(lanes)
    rows = len(finding_rows)
    tickvals: list[float] = list(range(n))
    ticktext = list(labels)
    if rows:
        tickvals.append(-1 - 0.3 * (rows - 1) / 2)
        dated = sum(1 for f in findings if f.start is not None)
        ticktext.append("<i>findings</i>" + (f"<br><i>(first {rows} of {dated})</i>" if dated > rows else ""))
    layout: dict[str, Any] = {
        "barmode": "overlay",
        "height": 150 + 80 * n + 22 * rows,
        "xaxis": _xaxis(axis, t_min, right_edge, pad),
        "yaxis": {
            "tickvals": tickvals,
            "ticktext": ticktext,
            "autorange": False,
            "range": [n - 0.4, -1.45 - 0.3 * max(rows - 1, 0) if rows else -0.6],
            "automargin": True,
            "showgrid": False,
            "zeroline": False,
            "fixedrange": True,
        },
        "shapes": shapes,
        "annotations": annotations,
        "hoverlabel": _hover_layout(),
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.12, "yanchor": "top", "x": 0, "font": {"size": 10}},
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "meta": {
            "lanes": [ex["pod"].to_list(), ex["execution_id"].to_list()],
            "findings": [
                [axis.x(f.start), axis.x(f.end or f.start)] if f.start is not None else None for f in findings
            ],
        },
    }
    # lane separators: thin lines so each pod/execution reads as its own row
    for i in range(n - 1):
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "yref": "y",
                "x0": 0,
                "x1": 1,
                "y0": i + 0.5,
                "y1": i + 0.5,
                "line": {"color": "#d0d7de", "width": 1},
                "layer": "below",
            }
        )
    if rows:
        shapes.append(
            {
                "type": "line",
                "xref": "paper",
                "yref": "y",
                "x0": 0,
                "x1": 1,
                "y0": -0.5,
                "y1": -0.5,
                "line": {"color": "#8c959f", "width": 1},
                "layer": "below",
            }
        )
    return {"data": data, "layout": layout}


def _bars(name: str, role: str, bars: dict[str, Any], width: float, marker: dict[str, Any]) -> dict[str, Any]:
    """One horizontal bar trace of a timeline's lanes (leases, executions, zombie parts, open ends)."""
    return {
        "type": "bar",
        "orientation": "h",
        "hoverinfo": "text",
        "textposition": "none",
        "name": name,
        "legendgroup": role,
        "y": bars["y"],
        "base": bars["base"],
        "x": bars["x"],
        "hovertext": bars["text"],
        "width": width,
        "marker": marker,
        "meta": {"role": role},
    }


def _clock_note(clocks: set[str]) -> str:
    if clocks == {"wall"}:
        return ""
    if "wall" in clocks:
        return (
            "  <span style='font-size:11px;color:#bf8700'>(mixes wall-clock and log-order timelines:"
            " the log-order part is placed at 2000-01-01)</span>"
        )
    return (
        "  <span style='font-size:11px;color:#bf8700'>(no wall clock: times from elapsedMs and line"
        " order, cross-pod positions are estimates)</span>"
    )


def _xaxis(axis: _Axis, t_min: datetime, t_max: datetime, pad: Any) -> dict[str, Any]:
    lo = t_min - pad if pad is not None else t_min
    d: dict[str, Any] = {
        "range": [axis.x(lo), axis.x(t_max)],
        "showgrid": True,
        "gridcolor": "#eaeef2",
        "zeroline": False,
        "automargin": True,
    }
    if axis.wall:
        d.update({"type": "date", "hoverformat": "%H:%M:%S.%L"})
    else:
        d.update(
            {"type": "linear", "title": {"text": "seconds on the log-order timeline", "font": {"size": 10}}}
        )
    return d


def _note(text: str) -> dict[str, Any]:
    return {"text": esc(text), "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5, "showarrow": False}


def _event_traces(
    events: pl.DataFrame,
    lanes: dict[str, int],
    axis: _Axis,
    renewals: pl.DataFrame | None,
    notes: list[str],
) -> list[dict[str, Any]]:
    """One marker trace per event kind (renewals: per outcome), hover with the raw fields and file:line.

    Past MAX_MARKERS, routine markers (in-time successful renewals, progress lines) are thinned evenly and
    a note says so; every other event is kept, so failures and state changes never drop out of the picture.
    """
    if events.height == 0:
        return []
    ev = events.filter(pl.col("execution_id").is_in(list(lanes)))
    if renewals is not None and renewals.height and "late" in renewals.columns:
        ev = ev.join(renewals.select("seq", "late"), on="seq", how="left")
    else:
        ev = ev.with_columns(pl.lit(False).alias("late"))
    if ev.height > MAX_MARKERS:
        routine = (
            (pl.col("event") == "lease_renewal")
            & (pl.col("renewal_outcome") == "success")
            & ~pl.col("late").fill_null(False)
        ) | (pl.col("event") == "job_progress")
        ev = ev.with_columns(routine.alias("_routine"))
        n_routine = int(ev["_routine"].sum())
        budget = max(MAX_MARKERS - (ev.height - n_routine), MAX_MARKERS // 10)
        step = -(-n_routine // budget)
        if step > 1:
            ev = (
                ev.with_columns(pl.int_range(pl.len()).over("_routine").alias("_i"))
                .filter(~pl.col("_routine") | (pl.col("_i") % step == 0))
                .drop("_i")
            )
            notes.append(
                f"{n_routine:,} routine markers (successful renewals, progress) thinned to every {step}th"
            )
        ev = ev.drop("_routine")
    detail = pl.concat_str(
        [
            pl.when(pl.col(c).is_not_null()).then(pl.format(f"{c}=" + "{}", _esc_expr(pl.col(c))))
            for c in (
                "renewal_outcome",
                "latency_ms",
                "lease_ms",
                "fencing_token",
                "reason",
                "status",
                "released",
                "release_outcome",
                "outcome",
                "trigger",
                "topic",
                "partition",
                "offset",
                "message_id",
                "delivery_count",
                "attempt",
            )
        ],
        separator=" ",
        ignore_nulls=True,
    )
    fields = _esc_expr(pl.col("fields").str.slice(0, MAX_FIELDS_CHARS)).str.replace_all(
        ',"',
        ',<br>  "',
        literal=True,  # one raw field per hover line (cosmetic: commas inside values stay)
    )
    ev = ev.with_columns(
        pl.col("execution_id").replace_strict(lanes, return_dtype=pl.Float64).add(0.08).alias("y"),
        axis.expr("t").alias("x"),
        pl.when((pl.col("event") == "lease_renewal") & pl.col("late").fill_null(False))
        .then(pl.lit("late"))
        .otherwise(pl.col("renewal_outcome"))
        .alias("variant"),
        pl.format(
            "<b>{}</b> {}<br>{} · {} · {}<br>{}:{}<br>{}",
            _esc_expr(pl.col("raw_event").fill_null(pl.col("event"))),
            detail.fill_null(""),
            axis.when_expr("t"),
            _esc_expr(pl.col("pod").fill_null("?")),
            _esc_expr(pl.col("execution_id")),
            _esc_expr(pl.col("file").fill_null("?")),
            pl.col("line").cast(pl.String).fill_null("?"),
            fields.fill_null(""),
        ).alias("hover"),
    )
    out: list[dict[str, Any]] = []
    for event, (label, symbol, colour) in _MARKERS.items():
        sub = ev.filter(pl.col("event") == event)
        if sub.height:
            colours: Any = colour
            if event == "lock_released":
                colours = sub.select(
                    pl.when(pl.col("released") == False).then(pl.lit(ZOMBIE)).otherwise(pl.lit(colour))  # noqa: E712
                )["literal"].to_list()
            elif event == "completion":
                colours = sub.select(
                    pl.col("outcome").replace_strict(
                        {"duplicate": "#d4a72c", "rejected": ZOMBIE}, default=colour, return_dtype=pl.String
                    )
                )["outcome"].to_list()
            out.append(_marker_trace(label, symbol, colours, sub, size=9 if event != "job_progress" else 12))
    renewal = ev.filter(pl.col("event") == "lease_renewal")
    for variant, colour in RENEWAL_COLOUR.items():
        sub = renewal.filter(pl.col("variant") == variant)
        if sub.height:
            name = "renewal: late success" if variant == "late" else f"renewal: {variant}"
            out.append(_marker_trace(name, "circle", colour, sub, size=8))
    other = renewal.filter(~pl.col("variant").is_in(list(RENEWAL_COLOUR)) | pl.col("variant").is_null())
    if other.height:
        out.append(_marker_trace("renewal: other", "circle-open", "#57606a", other, size=8))
    return out


def _marker_trace(name: str, symbol: str, colour: Any, sub: pl.DataFrame, size: int) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": sub["x"].to_list(),
        "y": sub["y"].to_list(),
        "hovertext": sub["hover"].to_list(),
        "hoverinfo": "text",
        "marker": {"symbol": symbol, "color": colour, "size": size, "line": {"color": "white", "width": 1}},
        "meta": {"role": "event"},
    }


def _finding_traces(findings: Sequence[Finding], axis: _Axis) -> list[dict[str, Any]]:
    """Each finding as a span above the lanes, generic over kinds so new checks show without changes."""
    by_sev: dict[str, dict[str, list[Any]]] = {}
    for k, f in enumerate(findings):
        assert f.start is not None
        end = f.end or f.start
        y = -1 - 0.3 * k
        d = by_sev.setdefault(f.severity, {"x": [], "y": [], "hover": []})
        hover = (
            f"<b>{esc(f.code)} {esc(f.kind)}</b> ({esc(f.severity)}, {esc(f.certainty)})<br>"
            f"{axis.when(f.start)} → {axis.when(end)}<br>{_wrap(esc(f.message))}"
        )
        d["x"] += [axis.x(f.start), axis.x(end), None]
        d["y"] += [y, y, None]
        d["hover"] += [hover, hover, ""]
    return [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": f"finding ({sev})",
            "x": d["x"],
            "y": d["y"],
            "hovertext": d["hover"],
            "hoverinfo": "text",
            "cliponaxis": False,
            "line": {"color": SEVERITY_COLOUR.get(sev, "#57606a"), "width": 4},
            "marker": {
                "symbol": "line-ns",
                "size": 10,
                "line": {"width": 2, "color": SEVERITY_COLOUR.get(sev, "#57606a")},
            },
            "meta": {"role": "finding"},
        }
        for sev, d in by_sev.items()
    ]


def _finding_labels(
    findings: Sequence[Finding], axis: _Axis, t_min: datetime, t_max: datetime
) -> list[dict[str, Any]]:
    """`LL101 overlapping_executions 2m31.5s` next to each finding's span: right of it, or left near the edge."""
    out = []
    cut = t_min + (t_max - t_min) * 0.7
    for k, f in enumerate(findings):
        assert f.start is not None
        end = f.end or f.start
        size = f" {format_duration(f.duration_ms)}" if f.duration_ms is not None else ""
        right = end <= cut
        out.append(
            {
                "x": axis.x(end if right else f.start),
                "y": -1 - 0.3 * k,
                "xref": "x",
                "yref": "y",
                "xanchor": "left" if right else "right",
                "xshift": 6 if right else -6,
                "showarrow": False,
                "text": f"{esc(f.code)} {esc(f.kind)}{size}"
                + (" (uncertain)" if f.certainty == "uncertain" else ""),
                "font": {"size": 10, "color": SEVERITY_COLOUR.get(f.severity, "#57606a")},
            }
        )
    return out


def _wrap(text: str, width: int = 90) -> str:
    """Break a long (already escaped) message into hover lines at spaces."""
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + len(word) + 1 > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    out.append(line)
    return "<br>".join(out)


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


# ---------------------------------------------------------------------------------------------- overview

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
    axis = _Axis(wall=True)
    if wall.height == 0:
        use = executions.filter(pl.col("start").is_not_null() & pl.col("end").is_not_null())
        axis = _Axis(wall=False)
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
            "layout": {**base_layout, "height": 160, "annotations": [_note("no executions to show")]},
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
                    "marker": {"color": _kind_colour(str(kind))},
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


def _kind_colour(kind: str) -> str:
    return _KIND_COLOUR.get(kind) or _FALLBACK_COLOURS[sum(kind.encode()) % len(_FALLBACK_COLOURS)]


def overview_figure(analysis: Analysis) -> go.Figure:
    """Fleet overview: executions running over time, overlapping pairs, findings per time bucket by kind."""
    import plotly.graph_objects as go

    return go.Figure(overview_spec(analysis.executions, analysis.findings))
