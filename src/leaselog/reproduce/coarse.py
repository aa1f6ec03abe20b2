"""Whole-second renderings: some lab runs are rendered with their times truncated to the second.

Go's loggers write whole seconds by default: zerolog's JSON (`TimeFieldFormat = time.RFC3339`, zerolog
`globals.go`) and logrus's formatters (`defaultTimestampFormat = time.RFC3339`, logrus `formatter.go`),
`2026-11-02T10:00:05Z`. Go's `time.Format` with RFC 3339 writes no fraction: the time is truncated, not
rounded. A run drawn `coarse` (never one with a planned clock step: its steps and the resolution are
kept apart) is rendered in one of two shapes, its rows' `ts` truncated to the second: the flat JSON with
`elapsedMs` (a logger that adds the run's monotonic count) or logfmt without it.

Its scoring (score.py): an overlap or a zombie the truncated times cannot show (its two moments' whole
seconds put no time between them, as leaselog reads a finish and a start within one second: no overlap)
is optional, as one within the tolerance is on millisecond logs; a figure between coarse times is right where the finding's
`details.durationRangeMs` holds the truth's figure (give or take the run's tolerance: the clock offsets
and the log's own latency, as for millisecond logs); a certain finding must have a range that excludes
zero, an uncertain one is right where its range reaches down to the clock-skew bound; and a
`clock_step` or `clock_contradiction` of any level is false (no clock stepped: the resolution is no step).
"""

from __future__ import annotations

import dataclasses
import math
import random
from typing import Any

from leaselog.reproduce.identity import clock_offset
from leaselog.reproduce.plan import Plan
from leaselog.reproduce.rows import Pods, Row, iso, row_time

COARSE_SHARE = 0.15  # of the runs without a planned clock step
RESOLUTION_MS = 1000.0
# the shape a coarse run is rendered in -> whether its lines keep elapsedMs
COARSE_SHAPES: dict[str, bool] = {"flat": True, "logfmt": False}
# the kinds whose figures between coarse times carry their range (details.durationRangeMs)
RANGED_KINDS = ("overlapping_executions", "lease_outlived", "concurrent_leases")
CLOCK_KINDS = ("clock_step", "clock_contradiction")


def with_coarse(plan: Plan, rng: random.Random, without: tuple[str, ...] = ()) -> Plan:
    """`plan`, or the same run rendered in whole seconds (drawn by `rng`, apart from the run's other
    draws) in one of COARSE_SHAPES; never a run with a planned clock step, nor where `coarse` is in
    `without`."""
    if plan.clock_step_ms or "coarse" in without or rng.random() >= COARSE_SHARE:
        return plan
    return dataclasses.replace(plan, coarse=True, shape=rng.choice(tuple(COARSE_SHAPES)))


def is_coarse(truth: dict[str, Any]) -> bool:
    """Is the run rendered in whole seconds (its plan drew it)?"""
    return bool(truth["plan"].get("coarse"))


def whole_seconds(pods: Pods, elapsed: bool) -> dict[str, list[Row]]:
    """The rows with `ts` truncated to the second (`2026-11-02T10:00:05Z`), without `elapsedMs` unless
    `elapsed`."""

    def one(r: Row) -> Row:
        out = {k: v for k, v in r.items() if elapsed or k != "elapsedMs"}
        if "ts" in r:
            out["ts"] = iso(row_time(r).replace(microsecond=0), 0)
        return out

    return {pod: [one(r) for r in rows] for pod, rows in pods.items()}


def rendering(pods: Pods, truth: dict[str, Any], shape: str) -> dict[str, list[Row]]:
    """The rows a run is rendered from in `shape`: as logged, or (a coarse run) in whole seconds,
    `elapsedMs` kept as COARSE_SHAPES says (kept in a shape it does not name)."""
    if not is_coarse(truth):
        return dict(pods)
    return whole_seconds(pods, COARSE_SHAPES.get(shape, True))


def figure_range(f: dict[str, Any]) -> tuple[float, float] | None:
    """The finding's `details.durationRangeMs` ([least, most]), or None."""
    r = (f.get("details") or {}).get("durationRangeMs")
    if not isinstance(r, list | tuple) or len(r) != 2 or None in r:
        return None
    return float(r[0]), float(r[1])


def range_excludes_zero(f: dict[str, Any]) -> bool:
    """Does the finding's range prove a positive figure? Its least above zero, or exactly zero where the
    figure less the resolution is zero (the times are truncated: the true figure lies strictly inside)."""
    r = figure_range(f)
    if r is None:
        return False
    res = (f.get("details") or {}).get("timeResolutionMs")
    fig = f.get("durationMs")
    unclipped = fig - res if fig is not None and res is not None else r[0]
    return r[0] > 0 or unclipped >= 0


def range_miss(f: dict[str, Any], figure: float, least: float | None, tol: float) -> str | None:
    """Why a matched ranged finding's figure on a coarse rendering is wrong (None: right): no range, or a
    range that misses the truth's figures [least, figure] by more than `tol`."""
    r = figure_range(f)
    if r is None:
        return "a figure between whole-second times without its range (details.durationRangeMs)"
    lo, hi = r
    low = figure if least is None else least
    if hi + tol < low or lo - tol > figure:
        return f"the truth's {figure:.0f} ms is outside the range [{lo:.0f}, {hi:.0f}] ms (± {tol:.0f} ms)"
    return None


def certainty_miss(f: dict[str, Any], bound: float) -> str | None:
    """Why a ranged finding's certainty is not what its range allows (None: it is): certain with a range
    that reaches 0, uncertain with a range whose least is beyond the clock-skew bound."""
    r = figure_range(f)
    if r is None:
        return None
    lo, hi = r
    if f.get("certainty") == "certain" and not range_excludes_zero(f):
        return f"certain, yet its range [{lo:.0f}, {hi:.0f}] ms reaches 0"
    if f.get("certainty") == "uncertain" and lo > bound + 1.0:
        return f"uncertain, yet its range's least ({lo:.0f} ms) is beyond max-skew + offsets ({bound:.0f} ms)"
    return None


def tolerated_uncertain(f: dict[str, Any], bound: float) -> bool:
    """An unmatched uncertain overlap or zombie whose range reaches below the skew bound: what the
    truncated times prove of it is no more than clock skew (below error severity only)."""
    r = figure_range(f)
    return (
        f["kind"] in RANGED_KINDS
        and f.get("certainty") == "uncertain"
        and f.get("severity") != "error"
        and r is not None
        and r[0] <= bound
    )


def shown_ms(truth: dict[str, Any], span: tuple[float, float] | None, figure: float | None) -> float | None:
    """What whole-second times show of a figure measured between the true moments `span` (the figure
    is the time between them less a constant, a lease's length for a zombie): the same between the two
    moments' logged times truncated to the second. None where a moment is no logged line (a kill)."""
    if span is None or figure is None:
        return None
    lo, hi = span
    logged: dict[float, float] = {}
    for pod, ms in truth["moments"].items():
        for m in ms:
            mono = float(m["monoMs"])
            for end in (lo, hi):
                if "wallMs" in m and abs(mono - end) < 0.01:  # (a span end computed back from a lease)
                    t = float(m["wallMs"]) + clock_offset(truth, pod, mono)
                    logged[end] = math.floor(t / RESOLUTION_MS) * RESOLUTION_MS
    if lo not in logged or hi not in logged:
        return None
    return logged[hi] - logged[lo] - (hi - lo - figure)


def hidden(truth: dict[str, Any], kind: str, span: tuple[float, float] | None, figure: float | None) -> bool:
    """Is this overlap or zombie one the whole-second times cannot show (they put 0 ms or less of it)?"""
    shown = shown_ms(truth, span, figure)
    return kind in RANGED_KINDS and shown is not None and shown <= 0
