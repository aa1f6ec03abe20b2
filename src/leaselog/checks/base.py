"""What every check receives, and the small helpers checks share to phrase and locate findings."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from leaselog.config import Settings
from leaselog.durations import format_duration
from leaselog.events import PSEUDO_EPOCH
from leaselog.findings import Certainty, Evidence


@dataclass(frozen=True)
class CheckContext:
    events: pl.DataFrame
    executions: pl.DataFrame
    leases: pl.DataFrame
    renewals: pl.DataFrame
    settings: Settings


def when(t: datetime | None, clock: str | None = "wall") -> str:
    """A moment as a responder reads it: `10:10:00.4` (wall clock) or `+5.1s` (no wall clock in the log)."""
    if t is None:
        return "?"
    if clock not in (None, "wall"):
        return f"+{format_duration((t - PSEUDO_EPOCH).total_seconds() * 1000)}"
    return t.strftime("%H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def ms_between(a: datetime | None, b: datetime | None) -> float | None:
    if a is None or b is None:
        return None
    return (b - a).total_seconds() * 1000


def ev(file: str | None, line: int | None, note: str | None = None) -> list[Evidence]:
    """Evidence for one line, or nothing when the line is unknown."""
    if file is None or line is None:
        return []
    return [Evidence(file=file, line=int(line), note=note)]


def cross_pod_certainty(
    size_ms: float | None, pods: list[str], clocks: list[str | None], settings: Settings
) -> tuple[Certainty, str]:
    """A comparison across pods is only as good as their clocks: certain, or uncertain with the reason."""
    if any(c not in (None, "wall") for c in clocks) and len(set(pods)) > 1:
        return "uncertain", (
            " The log has no wall-clock timestamps: the order comes from line order, the duration from "
            "one pod's elapsedMs, so this size is an estimate."
        )
    if len(set(pods)) > 1 and size_ms is not None and size_ms <= settings.max_skew_ms:
        return "uncertain", (
            f" This is within the clock-skew bound of {format_duration(settings.max_skew_ms)} between "
            "pods, so the logs cannot prove it."
        )
    return "certain", ""


def rows(df: pl.DataFrame) -> list[dict[str, Any]]:
    return df.to_dicts()
