"""Parsing and formatting of human durations (`10m`, `30s`, `600000ms`, `2m31.5s`)."""

from __future__ import annotations

import math
import re

# no setting leaselog takes means anything beyond this: a bigger one is a typo (and would overflow)
MAX_DURATION_MS = 10 * 365 * 86_400_000.0
_UNITS_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration_ms(text: str | int | float) -> float:
    """Parse `10m`, `30s`, `600000ms`, `1h30m`, `250` (bare number = milliseconds) into milliseconds.

    Raises ValueError with the offending text when it is not a duration, or is beyond ten years.
    """
    return _in_range(_parse(text), text)


def _in_range(ms: float, text: object) -> float:
    if not math.isfinite(ms) or abs(ms) > MAX_DURATION_MS:
        raise ValueError(f"{text!r} is out of range (at most 10 years: 3650d)")
    return ms


def _parse(text: str | int | float) -> float:
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(f"duration must not be negative: {text}")
        return float(text)
    s = text.strip().lower().replace(" ", "")
    if not s:
        raise ValueError("empty duration")
    if re.fullmatch(r"\d+(?:\.\d+)?", s):
        return float(s)
    pos = 0
    total = 0.0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS_MS[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"not a duration: {text!r} (use e.g. 10m, 30s, 600000ms, 1h30m)")
    return total


def format_duration(ms: float | int | None) -> str:
    """Render milliseconds as a human duration: `850ms`, `4.2s`, `2m31.5s`, `1h02m`."""
    if ms is None or not math.isfinite(ms):
        return "?"
    neg = ms < 0
    ms = abs(float(ms))
    # a value that rounds up to the next unit is written in it: 999.7 ms is `1.0s`, 59 999 ms `1m`
    if ms < 1000 and f"{ms:.0f}" != "1000":
        out = f"{ms:.0f}ms"
    elif ms < 60_000 and f"{ms / 1000:.1f}" != "60.0":
        out = f"{max(ms, 1000) / 1000:.1f}s"
    elif ms < 60_000:
        out = "1m"
    elif ms < 3_600_000:
        minutes, rest = divmod(ms, 60_000)
        secs = f"{rest / 1000:.1f}"
        if secs == "60.0":  # 599 999 ms rounds up to the next whole minute: 10m, not 9m60s
            minutes, secs = minutes + 1, "0.0"
        secs = secs.removesuffix(".0")
        whole = f"{int(minutes)}m" if secs == "0" else f"{int(minutes)}m{secs}s"
        out = "1h00m" if minutes == 60 else whole
    else:
        hours, rest = divmod(ms, 3_600_000)
        out = f"{int(hours)}h{int(rest // 60_000):02d}m"
    return f"-{out}" if neg else out


def parse_signed_duration_ms(text: str | int | float) -> float:
    """Like parse_duration_ms but allows a leading sign (clock offsets: `-120ms`, `+1.5s`)."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _in_range(float(text), text)
    if not isinstance(text, str):
        raise ValueError(f"not a duration: {text!r}")
    s = text.strip()
    if s[:1] in "+-":
        value = parse_duration_ms(s[1:])
        return -value if s[0] == "-" else value
    return parse_duration_ms(s)
