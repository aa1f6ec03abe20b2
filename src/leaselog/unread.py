"""When an input gave no lease event at all, "no findings" would read as "no incident": say instead that
nothing was there to judge, why that is likely, and what to do about it. The CLI exits with its own code
(`UNREAD_EXIT`), so a CI gate never passes on an input it could not read.

The same for a single file that gave nothing while others did: it is named (`silent_files`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from leaselog.reading.dialects import BY_NAME
from leaselog.reading.report import InputReport

__all__ = ["UNREAD_EXIT", "Unread", "nothing_read", "silent_files"]

UNREAD_EXIT = 3  # `leaselog analyze`'s exit code when no input gave a lease event


@dataclass(frozen=True)
class Unread:
    headline: str  # "no lease events in 61 lines of 3 files: nothing to judge"
    reasons: tuple[str, ...]  # the likely reasons, each with what to do


def _n(count: int, what: str) -> str:
    return f"{count:,} {what}" + ("" if count == 1 else "s")


def nothing_read(reports: list[InputReport]) -> Unread | None:
    """None when some input gave a lease event; else the headline and the likely reasons."""
    if any(r.events for r in reports):
        return None
    lines = sum(r.lines for r in reports)
    headline = f"no lease events in {_n(lines, 'line')} of {_n(len(reports), 'file')}: nothing to judge"
    reasons: list[str] = []
    shapes: Counter[str] = Counter()
    for r in reports:
        if r.lines and r.format not in ("-", "?", "unknown"):
            shapes[r.format] += r.lines - sum(r.other_shapes.values())
        shapes.update(r.other_shapes)
    if shapes:
        seen = ", ".join(f"{name} ({_n(n, 'line')})" for name, n in shapes.most_common() if n > 0)
        reasons.append(f"the lines are well-formed ({seen}), but none is a lease event leaselog knows")
    elif lines:
        reasons.append("no line is in a log shape leaselog reads (see `leaselog formats`)")
    hinted = dict.fromkeys(h for r in reports for h in r.library_hints)
    for name in hinted:
        d = BY_NAME.get(name)
        if d is None:
            continue
        files = [r.path for r in reports if name in r.library_hints]
        reasons.append(
            f"{d.library} may be in use (its package or the work it guards shows in {', '.join(files[:3])}{' ...' if len(files) > 3 else ''}), but none of "
            f"its lock lines is there: they are hidden at this log level; turn them on with {d.enable}"
        )
    unmapped: Counter[str] = Counter()
    for r in reports:
        unmapped.update(r.unmapped_events)
    if unmapped:
        names = ", ".join(f"`{k}`" for k, _ in unmapped.most_common(5))
        reasons.append(f"event names leaselog does not know: {names}: map them in leaselog.toml ([events])")
    first = next((r.path for r in reports if r.lines and r.path != "<stdin>"), None)
    reasons.append(
        "if your lease lines use names of their own, map them in leaselog.toml"
        + (f"; `leaselog inspect {first}` shows what each line gave" if first else "")
    )
    return Unread(headline, tuple(reasons))


def silent_files(reports: list[InputReport]) -> list[str]:
    """Files with lines but no lease event, when other files gave some (none when no file did). A file
    whose lines gave a fact of another kind (a Redis server's failover, a process's start) was read."""
    if not any(r.events for r in reports):
        return []
    return [
        r.path for r in reports if r.lines and not r.events and not r.used and not r.skipped and not r.same_as
    ]
