"""One panel of a job's timeline: a lane per execution sharing one kind of clock, the lease as a thin bar
above the execution's thick bar (red hatched where it ran without a lease), overlaps shaded, the trigger of a
second attempt drawn as an arrow, findings in rows above the lanes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from leaselog.durations import format_duration
from leaselog.findings import Finding
from leaselog.render.markers import event_traces, finding_labels, finding_traces, finding_y
from leaselog.render.plotting import (
    DIM,
    EXECUTION,
    LEASE,
    LEASE_EDGE,
    OPEN_END,
    SEVERITY_COLOUR,
    ZOMBIE,
    Axis,
    esc,
    hover_layout,
    label,
)

__all__ = ["MAX_FINDING_ROWS", "panel_spec"]

MAX_FINDING_ROWS = 12  # finding rows drawn above the lanes; more are still in the findings list
MIN_BAND = 0.006  # the narrowest overlap band drawn, as a share of the x range (a 7 ms overlap stays visible)
SPREAD = 0.006  # markers closer than this share of the x range are spread over the lane


class _Bars:
    """The columns of one horizontal bar trace, filled a lane at a time."""

    def __init__(self) -> None:
        self.y: list[float] = []
        self.base: list[Any] = []
        self.x: list[float] = []
        self.text: list[str] = []

    def add(self, y: float, base: Any, length: float, text: str) -> None:
        self.y.append(y)
        self.base.append(base)
        self.x.append(length)
        self.text.append(text)

    def trace(self, name: str, role: str, width: float, marker: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "bar",
            "orientation": "h",
            "hoverinfo": "text",
            "textposition": "none",
            "name": name,
            "legendgroup": role,
            "y": self.y,
            "base": self.base,
            "x": self.x,
            "hovertext": self.text,
            "width": width,
            "marker": marker,
            "meta": {"role": role},
        }


def _extent(ex: pl.DataFrame, findings: Sequence[Finding]) -> tuple[datetime, datetime]:
    times = [
        t
        for col in ("start", "end", "acquired_at", "valid_until", "triggered_at", "last_seen")
        for t in ex[col].to_list()
        if t is not None
    ]
    times += [t for f in findings for t in (f.start, f.end) if t is not None]
    return min(times), max(times)


def _where(r: dict[str, Any]) -> str:
    """file:line of the execution's acquire (or start): an execution's lines can span files."""
    if r["acquired_line"] is not None:
        return f"{esc(r['acquired_file'])}:{r['acquired_line']}"
    if r["started_line"] is not None:
        return f"{esc(r['started_file'])}:{r['started_line']}"
    return f"{esc(r['file'])}:"


def panel_spec(
    executions: pl.DataFrame,
    events: pl.DataFrame,
    findings: Sequence[Finding],
    renewals: pl.DataFrame | None,
) -> dict[str, Any]:
    """Lanes of executions sharing one kind of clock, on axes named x/y (the timeline renames them)."""
    ex = executions
    t_min, t_max = _extent(ex, findings)
    axis = Axis(wall=set(ex["clock"].to_list()) == {"wall"}, dated=t_min.date() != t_max.date())
    lanes = {eid: i for i, eid in enumerate(ex["execution_id"].to_list())}
    width = t_max - t_min
    pad = width * 0.04 if t_max > t_min else None
    open_tail_end = (t_max + pad) if pad is not None else t_max
    # room on the right for the labels written after the last bars ("lease released 10:16:40.010")
    right_edge = (t_max + width * 0.2) if pad is not None else t_max

    leases, execs, zombies, opens = _Bars(), _Bars(), _Bars(), _Bars()
    # why a second attempt could acquire: an arrow, and words before its "acquired" label
    says: dict[str, str] = {}
    annotations: list[dict[str, Any]] = _trigger_paths(ex, findings, lanes, axis, says)
    labels: list[str] = []
    for r in ex.iter_rows(named=True):
        y = lanes[r["execution_id"]]
        who = f"{esc(r['pod'])} · {esc(r['execution_id'])}"
        labels.append(who if len(who) < 60 else who[:57] + "…")
        where = _where(r)
        start, end = r["start"], r["end"]
        lease_from, lease_to = r["acquired_at"], r["valid_until"]
        if lease_from is not None and lease_to is not None:
            how = {"released": "released", "expired": "expired"}.get(r["lease_end"] or "", "ends")
            leases.add(
                y - 0.3,
                axis.x(lease_from),
                axis.span(lease_from, lease_to),
                f"<b>lease</b> of {who}<br>acquired {axis.when(lease_from)} (TTL {format_duration(r['ttl_ms'])}),"
                f" {how} {axis.when(lease_to)}<br>{where}",
            )
            # the moment the lock stopped protecting this execution, readable without hovering
            annotations.append(
                label(axis.x(lease_to), y - 0.3, f"◀ lease {how} {axis.when(lease_to)}", colour=LEASE_EDGE)
            )
            said = says.get(r["execution_id"], "")
            if pad is not None and (lease_from - t_min > width * 0.2 or said):
                # a later acquisition (the takeover) is labelled where it happens
                annotations.append(
                    label(
                        axis.x(lease_from),
                        y - 0.3,
                        f"{said}acquired {axis.when(lease_from)} ▶",
                        colour=LEASE_EDGE,
                        xanchor="right",
                    )
                )
        elif lease_from is not None:
            annotations.append(
                label(
                    axis.x(lease_from),
                    y - 0.3,
                    "lease length unknown (no leaseMs, no --lease-ttl)",
                    colour=LEASE_EDGE,
                )
            )
        if start is None or end is None:
            continue
        covered_until = end
        if lease_to is not None and lease_to < end:
            covered_until = max(lease_to, start)
        kind = r["end_kind"]
        execs.add(
            y + 0.08,
            axis.x(start),
            axis.span(start, covered_until),
            f"<b>execution</b> {who}<br>{axis.when(start)} → {axis.when(end)}"
            f" ({format_duration(r['runtime_ms'])}), {esc(kind)}<br>{where}",
        )
        if covered_until < end:
            zombie_ms = (end - covered_until).total_seconds() * 1000
            zombies.add(
                y + 0.08,
                axis.x(covered_until),
                axis.span(covered_until, end),
                f"<b>running without a lease</b> {who}<br>{axis.when(covered_until)} → {axis.when(end)}"
                f" ({format_duration(zombie_ms)})",
            )
            annotations.append(
                label(
                    axis.x(covered_until),
                    y + 0.4,
                    f"<b>still running without lease: {format_duration(zombie_ms)}</b>",
                    colour=ZOMBIE,
                )
            )
        if kind == "open":
            opens.add(
                y + 0.08,
                axis.x(end),
                axis.span(end, open_tail_end),
                f"<b>open end</b> {who}<br>log ends at {axis.when(end)} with no finish, stop or release:"
                " a crash, or a log cut short",
            )
            text = f" ✕ log ends {axis.when(end)}: no finish (crash?)"
            annotations.append(label(axis.x(end), y + 0.08, text, colour="#24292f"))
        else:
            annotations.append(label(axis.x(end), y + 0.08, f" {esc(kind)} {axis.when(end)}", size=10))

    data = [
        leases.trace(
            "lease (lock held)", "lease", 0.2, {"color": LEASE, "line": {"color": LEASE_EDGE, "width": 1}}
        ),
        execs.trace("execution (with lease)", "execution", 0.3, {"color": EXECUTION}),
    ]
    if zombies.y:
        hatch = {"shape": "/", "fgcolor": "white", "solidity": 0.3, "fillmode": "overlay"}
        data.append(
            zombies.trace("execution without lease", "zombie", 0.3, {"color": ZOMBIE, "pattern": hatch})
        )
    if opens.y:
        open_marker = {
            "color": "rgba(140,149,159,0.25)",
            "line": {"color": OPEN_END, "width": 1},
            "pattern": {"shape": ".", "fgcolor": OPEN_END, "fillmode": "overlay"},
        }
        data.append(opens.trace("open end (log stops)", "open", 0.3, open_marker))

    notes: list[str] = []
    spread_us = int(width.total_seconds() * 1e6 * SPREAD)
    data.extend(event_traces(events, lanes, axis, renewals, notes, spread_us))
    annotations.extend(
        label(1, 0, f"<i>{n}</i>", xref="paper", yref="paper", xanchor="right", yanchor="bottom", size=10)
        for n in notes
    )
    shapes = _overlaps(findings, axis, width, annotations)

    finding_rows = [f for f in findings if f.start is not None][:MAX_FINDING_ROWS]
    data.extend(finding_traces(finding_rows, axis))
    annotations.extend(finding_labels(finding_rows, axis, t_min, right_edge))
    n, rows = len(lanes), len(finding_rows)
    tickvals: list[float] = list(range(n))
    ticktext = list(labels)
    if rows:
        tickvals.append(finding_y(0) - 0.3 * (rows - 1) / 2)
        dated = sum(1 for f in findings if f.start is not None)
        ticktext.append("<i>findings</i>" + (f"<br><i>(first {rows} of {dated})</i>" if dated > rows else ""))
    # lane separators: thin lines so each pod/execution reads as its own row
    seps = [(i + 0.5, "#d0d7de") for i in range(n - 1)] + ([(-0.5, OPEN_END)] if rows else [])
    shapes += [
        {
            "type": "line",
            "xref": "paper",
            "yref": "y",
            "x0": 0,
            "x1": 1,
            "y0": at,
            "y1": at,
            "line": {"color": colour, "width": 1},
            "layer": "below",
        }
        for at, colour in seps
    ]
    layout: dict[str, Any] = {
        "barmode": "overlay",
        "height": 150 + 80 * n + 22 * rows,
        "xaxis": _xaxis(axis, t_min, right_edge, pad),
        "yaxis": {
            "tickvals": tickvals,
            "ticktext": ticktext,
            "autorange": False,
            "range": [n - 0.4, finding_y(max(rows - 1, 0)) - 0.45 if rows else -0.6],
            "automargin": True,
            "showgrid": False,
            "zeroline": False,
            "fixedrange": True,
        },
        "shapes": shapes,
        "annotations": annotations,
        "hoverlabel": hover_layout(),
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.22, "yanchor": "top", "x": 0, "font": {"size": 10}},
        "plot_bgcolor": "white",
        "paper_bgcolor": "white",
        "meta": {
            "lanes": [ex["pod"].to_list(), ex["execution_id"].to_list()],
            "findings": [
                [axis.x(f.start), axis.x(f.end or f.start)] if f.start is not None else None for f in findings
            ],
        },
    }
    return {"data": data, "layout": layout}


def _overlaps(
    findings: Sequence[Finding], axis: Axis, width: timedelta, annotations: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The overlap shading, from the findings themselves so it agrees with the findings list; a band too
    narrow to see at this scale is widened around its middle to a few pixels (its label keeps the size)."""
    shapes: list[dict[str, Any]] = []
    for f in findings:
        if f.kind != "overlapping_executions" or f.start is None or f.end is None:
            continue
        lo, hi = f.start, f.end
        mid = lo + (hi - lo) / 2
        if hi - lo < width * MIN_BAND:
            lo, hi = mid - width * (MIN_BAND / 2), mid + width * (MIN_BAND / 2)
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": axis.x(lo),
                "x1": axis.x(hi),
                "y0": 0,
                "y1": 1,
                "fillcolor": "rgba(207,34,46,0.13)",
                "line": {"width": 0},
                "layer": "below",
                "name": "overlap",
            }
        )
        text = "overlap " + ("≈" if f.certainty == "uncertain" else "")
        text += format_duration(f.duration_ms) + (" (uncertain)" if f.certainty == "uncertain" else "")
        annotations.append(
            label(
                axis.x(mid),
                1.0,
                f"<b>{text}</b>",
                colour=ZOMBIE,
                size=12,
                xanchor="center",
                yref="paper",
                yanchor="bottom",
                bgcolor="rgba(255,255,255,0.85)",
            )
        )
    return shapes


def _trigger_paths(
    ex: pl.DataFrame, findings: Sequence[Finding], lanes: dict[str, int], axis: Axis, says: dict[str, str]
) -> list[dict[str, Any]]:
    """Why a second attempt could acquire: an arrow from the earlier execution's lease end to the later
    one's acquire, labelled with the gap and the trigger (second_attempt findings)."""
    rows = {
        r["execution_id"]: r
        for r in ex.select("execution_id", "valid_until", "lease_end", "acquired_at").iter_rows(named=True)
    }
    out: list[dict[str, Any]] = []
    for f in findings:
        if f.kind != "second_attempt" or len(f.execution_ids) < 2:
            continue
        first, second = rows.get(f.execution_ids[0]), rows.get(f.execution_ids[-1])
        if first is None or second is None or first["valid_until"] is None or second["acquired_at"] is None:
            continue
        how = {"released": "released", "expired": "expired"}.get(first["lease_end"] or "", "ended")
        gap = (second["acquired_at"] - first["valid_until"]).total_seconds() * 1000
        after = f"{format_duration(abs(gap))} {'after' if gap >= 0 else 'before'}"
        says[f.execution_ids[-1]] = (
            f"2nd attempt ({after} lease {how}; trigger: <b>{esc(f.trigger or 'unknown')}</b>) · "
        )
        out.append(
            {
                "x": axis.x(second["acquired_at"]),
                "y": lanes[f.execution_ids[-1]] - 0.3,
                "ax": axis.x(first["valid_until"]),
                "ay": lanes[f.execution_ids[0]] - 0.3,
                "xref": "x",
                "yref": "y",
                "axref": "x",
                "ayref": "y",
                "showarrow": True,
                "arrowhead": 2,
                "arrowsize": 1.2,
                "arrowwidth": 1.5,
                "arrowcolor": SEVERITY_COLOUR["warning"],
                "standoff": 4,
                "text": "",
                "name": "trigger",
                "hovertext": esc(
                    f"second attempt {f.execution_ids[-1]} acquired {after} {f.execution_ids[0]}'s lease {how};"
                    f" trigger: {f.trigger or 'unknown'}"
                ),
            }
        )
    return out


def _xaxis(axis: Axis, t_min: datetime, t_max: datetime, pad: Any) -> dict[str, Any]:
    lo = t_min - pad if pad is not None else t_min
    d: dict[str, Any] = {
        "range": [axis.x(lo), axis.x(t_max)],
        "showgrid": True,
        "gridcolor": "#eaeef2",
        "zeroline": False,
        "automargin": True,
        "title": {"text": axis.title(t_min), "font": {"size": 10, "color": DIM}, "standoff": 4},
    }
    if axis.wall:
        d.update({"type": "date", "hoverformat": "%Y-%m-%d %H:%M:%S.%L"})
        if not axis.dated:
            d["tickformat"] = "%H:%M:%S"  # the day is in the title
    else:
        d["type"] = "linear"
    return d
