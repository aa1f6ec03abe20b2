"""The marks on a timeline's lanes: one marker trace per event kind (hover: raw fields and file:line), and
each finding as a span in the rows above the lanes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

import polars as pl

from leaselog.durations import format_duration
from leaselog.findings import Finding
from leaselog.render.plotting import (
    DIM,
    LEASE_EDGE,
    RENEWAL_COLOUR,
    SEVERITY_COLOUR,
    ZOMBIE,
    Axis,
    esc,
    esc_expr,
    label,
    wrap,
)

__all__ = [
    "DETAIL_COLUMNS",
    "MARKERS",
    "MAX_FIELDS_CHARS",
    "MAX_MARKERS",
    "MAX_SPREAD",
    "SPREAD_STEP",
    "event_traces",
    "finding_labels",
    "finding_traces",
    "finding_y",
    "with_late",
]

MAX_FIELDS_CHARS = 1200  # raw fields shown in a hover; longer records are cut (file:line points to the rest)
MAX_MARKERS = 2000  # event markers per timeline panel before routine ones are thinned
SPREAD_STEP = 0.14  # lane units between markers of the same moment
MAX_SPREAD = 0.3

# event -> (label in the legend, marker symbol, colour)
MARKERS: dict[str, tuple[str, str, str]] = {
    "job_triggered": ("triggered", "diamond-open", DIM),
    "lock_acquired": ("lock acquired", "square", LEASE_EDGE),
    "lock_denied": ("lock denied", "square-x-open", DIM),
    "job_started": ("started", "triangle-right", "#1a7f37"),
    "ownership_lost": ("ownership lost", "x", "#cf222e"),
    "job_stop_requested": ("stop requested", "hourglass", "#fb8500"),
    "job_stopped": ("stopped", "square-x", DIM),
    "job_finished": ("finished", "diamond", "#1a7f37"),
    "lock_released": ("released", "triangle-left", LEASE_EDGE),
    "completion": ("completion", "star", "#1a7f37"),
    "job_progress": ("still running", "line-ns-open", DIM),
    "lock_reconnected": ("reconnected (Redis)", "circle-x-open", "#fb8500"),
}


def event_traces(
    events: pl.DataFrame,
    lanes: dict[str, int],
    axis: Axis,
    renewals: pl.DataFrame | None,
    notes: list[str],
    spread_us: int = 0,
) -> list[dict[str, Any]]:
    """One marker trace per event kind (renewals: per outcome), hover with the raw fields and file:line.

    Markers of one lane closer than `spread_us` (a few pixels at the figure's scale: triggered, acquired and
    started logged in the same millisecond) are spread up and down the lane instead of stacking into one
    glyph; routine markers (successful renewals, progress) stay on the line.

    Past MAX_MARKERS, routine markers (in-time successful renewals, progress lines) are thinned evenly and
    a note says so; every other event is kept, so failures and state changes never drop out of the picture.
    """
    if events.height == 0:
        return []
    ev = with_late(events.filter(pl.col("execution_id").is_in(list(lanes))), renewals)
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
    ev = (
        ev.with_columns(
            pl.col("execution_id").replace_strict(lanes, return_dtype=pl.Float64).alias("_lane"),
            pl.lit(max(spread_us, 1), dtype=pl.Int64).alias("_spread"),
            pl.lit(spread_us > 0).alias("_spreading"),
        )
        .sort("t", "seq")
        .with_columns(_columns(axis))
        .select("_key", "x", "y", "hover", "released", "outcome")
    )
    # a job's few dozen markers grouped in Python: cheaper than a frame operation per marker kind
    parts: dict[str, _Marks] = {}
    for key, x, y, hover, released, outcome in ev.iter_rows():
        m = parts.setdefault(key, _Marks())
        m.x.append(x)
        m.y.append(y)
        m.hover.append(hover)
        m.released.append(released)
        m.outcome.append(outcome)
    out: list[dict[str, Any]] = []
    for event, (legend, symbol, colour) in MARKERS.items():
        sub = parts.get(event)
        if sub is None:
            continue
        colours: Any = colour
        if event == "lock_released":
            colours = [ZOMBIE if r is False else colour for r in sub.released]
        elif event == "completion":
            swap = {"duplicate": "#d4a72c", "rejected": ZOMBIE}
            colours = [swap.get(o or "", colour) for o in sub.outcome]
        out.append(sub.trace(legend, symbol, colours, size=9 if event != "job_progress" else 12))
    for variant, colour in RENEWAL_COLOUR.items():
        sub = parts.get(f"renewal:{variant}")
        if sub is not None:
            name = "renewal: late success" if variant == "late" else f"renewal: {variant}"
            out.append(sub.trace(name, "circle", colour, size=8))
    other = parts.get("renewal:")
    if other is not None:
        out.append(other.trace("renewal: other", "circle-open", DIM, size=8))
    return out


def with_late(events: pl.DataFrame, renewals: pl.DataFrame | None) -> pl.DataFrame:
    """`events` with the `late` flag of each renewal (a success past its deadline is drawn as late)."""
    if renewals is not None and renewals.height and "late" in renewals.columns:
        joined = events.join(renewals.select("seq", "late"), on="seq", how="left")
        return joined.drop("late_right", strict=False)
    return events.with_columns(pl.lit(False).alias("late"))


class _Marks:
    """The markers of one trace, gathered a row at a time."""

    def __init__(self) -> None:
        self.x: list[Any] = []
        self.y: list[float] = []
        self.hover: list[str] = []
        self.released: list[bool | None] = []
        self.outcome: list[str | None] = []

    def trace(self, name: str, symbol: str, colour: Any, size: int) -> dict[str, Any]:
        return {
            "type": "scatter",
            "mode": "markers",
            "name": name,
            "x": self.x,
            "y": self.y,
            "hovertext": self.hover,
            "hoverinfo": "text",
            "marker": {
                "symbol": symbol,
                "color": colour,
                "size": size,
                "line": {"color": "white", "width": 1},
            },
            "meta": {"role": "event"},
        }


DETAIL_COLUMNS = (
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


@cache
def _columns(axis: Axis) -> list[pl.Expr]:
    """x, y, the trace a marker goes in (`_key`) and its hover text, as expressions built once per kind of
    axis (building polars expressions costs more than running them on a job's few dozen events)."""
    detail = pl.concat_str(
        [
            pl.when(pl.col(c).is_not_null()).then(pl.format(f"{c}=" + "{}", esc_expr(pl.col(c))))
            for c in DETAIL_COLUMNS
        ],
        separator=" ",
        ignore_nulls=True,
    )
    fields = esc_expr(pl.col("fields").str.slice(0, MAX_FIELDS_CHARS)).str.replace_all(
        ',"',
        ',<br>  "',
        literal=True,  # one raw field per hover line (cosmetic: commas inside values stay)
    )
    routine = ((pl.col("event") == "lease_renewal") & (pl.col("renewal_outcome") == "success")) | (
        pl.col("event") == "job_progress"
    )
    group = [pl.col("execution_id"), pl.col("t").dt.epoch("us") // pl.col("_spread"), routine]
    offset = ((pl.int_range(pl.len()).over(group) - (pl.len().over(group) - 1) / 2) * SPREAD_STEP).clip(
        -MAX_SPREAD, MAX_SPREAD
    )
    variant = (
        pl.when(pl.col("late").fill_null(False)).then(pl.lit("late")).otherwise(pl.col("renewal_outcome"))
    )
    known = variant.is_in(list(RENEWAL_COLOUR)).fill_null(False)
    return [
        (pl.col("_lane") + 0.08 + pl.when(routine | ~pl.col("_spreading")).then(0.0).otherwise(offset)).alias(
            "y"
        ),
        axis.expr("t").alias("x"),
        pl.when(pl.col("event") == "lease_renewal")
        .then(pl.format("renewal:{}", pl.when(known).then(variant).otherwise(pl.lit(""))))
        .otherwise(pl.col("event"))
        .alias("_key"),
        pl.format(
            "<b>{}</b> {}<br>{} · {} · {}<br>{}:{}<br>{}",
            esc_expr(pl.col("raw_event").fill_null(pl.col("event"))),
            detail.fill_null(""),
            axis.when_expr("t"),
            esc_expr(pl.col("pod").fill_null("?")),
            esc_expr(pl.col("execution_id")),
            esc_expr(pl.col("file").fill_null("?")),
            pl.col("line").cast(pl.String).fill_null("?"),
            fields.fill_null(""),
        ).alias("hover"),
    ]


def finding_y(k: int) -> float:
    """The y of the k-th finding row above the lanes."""
    return -1 - 0.3 * k


def finding_traces(findings: Sequence[Finding], axis: Axis) -> list[dict[str, Any]]:
    """Each finding as a span above the lanes, generic over kinds so new checks show without changes."""
    by_sev: dict[str, dict[str, list[Any]]] = {}
    for k, f in enumerate(findings):
        assert f.start is not None
        end = f.end or f.start
        y = finding_y(k)
        d = by_sev.setdefault(f.severity, {"x": [], "y": [], "hover": []})
        hover = (
            f"<b>{esc(f.code)} {esc(f.kind)}</b> ({esc(f.severity)}, {esc(f.certainty)})<br>"
            f"{axis.when(f.start)} → {axis.when(end)}<br>{wrap(esc(f.message))}"
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
            "line": {"color": SEVERITY_COLOUR.get(sev, DIM), "width": 4},
            "marker": {
                "symbol": "line-ns",
                "size": 10,
                "line": {"width": 2, "color": SEVERITY_COLOUR.get(sev, DIM)},
            },
            "meta": {"role": "finding"},
        }
        for sev, d in by_sev.items()
    ]


def finding_labels(
    findings: Sequence[Finding], axis: Axis, t_min: datetime, t_max: datetime
) -> list[dict[str, Any]]:
    """`LL101 overlapping_executions 2m31.5s` next to each finding's span: right of it, or left near the edge."""
    out = []
    cut = t_min + (t_max - t_min) * 0.7
    for k, f in enumerate(findings):
        assert f.start is not None
        end = f.end or f.start
        size = f" {format_duration(f.duration_ms)}" if f.duration_ms is not None else ""
        right = end <= cut
        text = f"{esc(f.code)} {esc(f.kind)}{size}" + (" (uncertain)" if f.certainty == "uncertain" else "")
        out.append(
            label(
                axis.x(end if right else f.start),
                finding_y(k),
                text,
                colour=SEVERITY_COLOUR.get(f.severity, DIM),
                size=10,
                xanchor="left" if right else "right",
                xshift=6 if right else -6,
            )
        )
    return out
