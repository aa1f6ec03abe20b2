"""Small pieces of the HTML report's markup that every section uses: escaping, badges, job links, times."""

from __future__ import annotations

import html
from datetime import datetime

from leaselog.render.plotting import Axis
from leaselog.render.safe import printable

__all__ = ["badge", "e", "job_link", "when"]

_DATED_WALL = Axis(wall=True, dated=True)
_LOG_ORDER = Axis(wall=False)


def e(text: object) -> str:
    """Text for HTML: markup escaped, and control characters shown as `\\x1b` escapes as in the terminal
    (a raw ESC is inert in a browser, but not in `cat report.html`)."""
    return html.escape("" if text is None else printable(text, lines=True), quote=True)


def badge(severity: str) -> str:
    """The severity as a word in a coloured badge (the word carries it in black and white)."""
    return f'<span class="badge sev-{e(severity)}">{e(severity)}</span>'


def job_link(job: str | None, job_index: dict[str, int]) -> str:
    if job is None:
        return "<i>fleet</i>"
    if job in job_index:
        return f'<a href="#job-{job_index[job]}" class="joblink" data-job="{job_index[job]}">{e(job)}</a>'
    return e(job)


def when(t: datetime | None, wall: bool = True) -> str:
    """A moment as the report writes it outside figures: with its date on the wall clock
    (`2026-11-02 10:10:00.402`), as `+5.123s` on the log-order timeline; the figures' own format."""
    return (_DATED_WALL if wall else _LOG_ORDER).when(t)
