"""What every plotly figure of leaselog shares: colours, escaping, the time axis and its one time format,
and the annotation dict.

Every string that came from a log (job ids, pods, execution ids, raw fields, messages) is HTML-escaped before
it goes into a figure: plotly renders a subset of HTML tags in labels and hover text, and a log line must show
as text, never as markup.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from leaselog.timebase import PSEUDO_EPOCH

# colours: lease = what the lock granted (light blue), execution = the work (dark blue),
# red = work done without a lease, grey = an open end (log stops: crash or cut log)
LEASE = "#9cc3f5"
LEASE_EDGE = "#3b78c4"
EXECUTION = "#23527c"
ZOMBIE = "#cf222e"
OPEN_END = "#8c959f"
DIM = "#57606a"
# one colour per severity, used by the figures and the page alike (a colour means one thing everywhere)
SEVERITY_COLOUR = {"error": "#cf222e", "warning": "#bf8700", "info": "#0969da"}
RENEWAL_COLOUR = {
    "success": "#2da44e",
    "late": "#d4a72c",
    "rejected": "#cf222e",
    "timeout": "#fb8500",
    "error": "#8250df",
}


def esc(text: object) -> str:
    """Escape log text for plotly labels and hover text (plotly decodes the entities back to plain text)."""
    # quote=False: plotly decodes &lt; &gt; &amp; and numeric entities only (it would show `&quot;` as is),
    # and with `<` escaped no tag, hence no attribute, can form
    return html.escape("" if text is None else str(text), quote=False)


def esc_expr(e: pl.Expr) -> pl.Expr:
    """`esc` as a polars expression."""
    return (
        e.cast(pl.String)
        .str.replace_all("&", "&amp;", literal=True)
        .str.replace_all("<", "&lt;", literal=True)
        .str.replace_all(">", "&gt;", literal=True)
    )


def seconds_on_pseudo(t: datetime) -> float:
    """A moment of the log-order timeline as seconds since its start."""
    return (t - PSEUDO_EPOCH).total_seconds()


@dataclass(frozen=True)
class Axis:
    """How times become x values and text: dates for wall-clock jobs, seconds on the log-order timeline
    otherwise. `when` is THE time format of every figure and of the report: `10:10:00.400` (with the date
    in front, `2026-11-02 10:10:00.400`, when `dated`) on the wall clock, `+5.123s` on the log-order one;
    `when_expr` writes the same text in polars."""

    wall: bool
    dated: bool = False

    def x(self, t: datetime | None) -> str | float | None:
        if t is None:
            return None
        if self.wall:
            # naive UTC: plotly.js ignores zones anyway, and the axis title says UTC
            return t.strftime("%Y-%m-%d %H:%M:%S.%f")
        return round(seconds_on_pseudo(t), 6)

    def expr(self, col: str) -> pl.Expr:
        if self.wall:
            return pl.col(col).dt.strftime("%Y-%m-%d %H:%M:%S.%6f")
        return (pl.col(col) - pl.lit(PSEUDO_EPOCH)).dt.total_microseconds() / 1e6

    def span(self, start: datetime, end: datetime) -> float:
        """The length of a bar in axis units (ms on a date axis, s on the numeric one); never negative."""
        ms = max((end - start).total_seconds() * 1000, 0.0)
        return ms if self.wall else ms / 1000

    def when(self, t: datetime | None) -> str:
        if t is None:
            return "?"
        if self.wall:
            ms = f"{t.microsecond // 1000:03d}"
            return t.strftime("%Y-%m-%d %H:%M:%S." if self.dated else "%H:%M:%S.") + ms
        return f"+{max(seconds_on_pseudo(t), 0.0):.3f}s"

    def when_expr(self, col: str) -> pl.Expr:
        if self.wall:
            return pl.col(col).dt.strftime("%Y-%m-%d %H:%M:%S%.3f" if self.dated else "%H:%M:%S%.3f")
        ms = (pl.col(col) - pl.lit(PSEUDO_EPOCH)).dt.total_milliseconds().clip(0)
        # `+5.123s`: whole seconds and zero-padded milliseconds, exactly as `when` writes them
        return pl.format("+{}.{}s", ms // 1000, (ms % 1000).cast(pl.String).str.zfill(3))

    def title(self, day: datetime | None) -> str:
        """The x axis title: the clock, and the day when all of it is one day."""
        if not self.wall:
            return "seconds on the log-order timeline"
        return "UTC" if self.dated or day is None else f"UTC, {day:%Y-%m-%d}"


def label(
    x: Any,
    y: Any,
    text: str,
    *,
    colour: str = DIM,
    size: int = 11,
    xanchor: str = "left",
    xref: str = "x",
    yref: str = "y",
    **extra: Any,
) -> dict[str, Any]:
    """A text annotation without arrow at (x, y) (the one dict every label of the figures is)."""
    return {
        "x": x,
        "y": y,
        "xref": xref,
        "yref": yref,
        "xanchor": xanchor,
        "text": text,
        "showarrow": False,
        "font": {"size": size, "color": colour},
        **extra,
    }


def note(text: str) -> dict[str, Any]:
    """A note in the middle of an empty figure."""
    return label(0.5, 0.5, esc(text), xref="paper", yref="paper", xanchor="center", size=12)


def hover_layout() -> dict[str, Any]:
    return {"align": "left", "bgcolor": "white", "font": {"family": "ui-monospace, monospace", "size": 11}}


def wrap(text: str, width: int = 90) -> str:
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
