"""The report's findings list: every finding (none dropped, so the filter counts are the rows listed), grouped
by job, most severe job first; filters by kind and severity and a job search that drive the list and the
timelines alike (report.js)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from leaselog.durations import format_duration
from leaselog.findings import SEVERITY_RANK, Finding
from leaselog.render.html_parts import badge, e, job_link, when
from leaselog.render.timeline_table import finding_panel

__all__ = ["EVIDENCE_SHOWN", "findings_section"]

EVIDENCE_SHOWN = 6


def findings_section(
    findings: Sequence[Finding],
    jobs: list[str],
    by_job: dict[str | None, list[Finding]],
    job_index: dict[str, int],
    clocks: dict[str, tuple[frozenset[str], frozenset[str]]],
    refs: list[list[Any]],
) -> str:
    """`refs` gets, per listed finding, `[timeline index, index among its job's findings]` (or `[-1]` when
    its timeline does not show it). `clocks` has each drawn job's executions on the wall clock and on the
    log-order timeline (the panels of its timeline)."""
    out = ['<section id="findings"><h2>Findings</h2>']
    if not findings:
        out.append(
            '<p class="ok">No findings: no overlapping executions, outlived leases or other anomalies'
            " in these logs.</p></section>\n"
        )
        return "".join(out)
    kinds = Counter(f.kind for f in findings)
    sevs = Counter(f.severity for f in findings)
    kind_opts = "".join(f'<option value="{e(k)}">{e(k)} ({n:,})</option>' for k, n in sorted(kinds.items()))
    sev_opts = "".join(
        f'<option value="{s}">{s} ({sevs[s]:,})</option>' for s in ("error", "warning", "info") if sevs[s]
    )
    out.append(
        '<form class="filters" id="filters" role="search" onsubmit="return false">show '
        '<select id="kind-filter" aria-label="kind">'
        f'<option value="">all kinds</option>{kind_opts}</select> '
        f'<select id="sev-filter" aria-label="severity"><option value="">all severities</option>{sev_opts}'
        '</select> <input id="job-search" type="search" placeholder="job id contains…" aria-label="job search">'
        f' <span class="dim" id="filter-count">{len(findings):,} findings</span>'
        ' <span id="time-window"></span> <button type="button" id="filter-reset">reset</button></form>'
        '<div class="findings-scroll" id="findings-list">'
    )
    # fleet-wide findings (no job) go first among jobs of their severity, not above every error
    order: list[str | None] = list(jobs)
    if by_job.get(None):
        fleet_rank = min(SEVERITY_RANK[f.severity] for f in by_job[None])
        at = next(
            (
                i
                for i, j in enumerate(jobs)
                if min(SEVERITY_RANK[f.severity] for f in by_job[j]) >= fleet_rank
            ),
            len(jobs),
        )
        order.insert(at, None)
    for job in order:
        fs = by_job[job]
        k = job_index.get(job) if job is not None else None
        out.append(
            f'<div class="jobgroup" data-job="{e(job or "")}"><h3>{job_link(job, job_index)}'
            f' <span class="dim jobcount" data-n="{len(fs)}">{len(fs)} finding(s)</span></h3><ol class="findings">'
        )
        for i, f in enumerate(fs):
            fid = len(refs)
            # the timeline draws a finding with a start in the panel of the executions it is about
            panel = finding_panel(f.execution_ids, clocks[job]) if k is not None and job is not None else None
            drawn = panel is not None and f.start is not None
            refs.append([k, i] if drawn else [-1])
            out.append(_item(f, fid, k if drawn else None, panel is not False))
        out.append("</ol></div>")
    out.append("</div></section>\n")
    return "\n".join(out)


def _item(f: Finding, fid: int, k: int | None, wall: bool) -> str:
    dur = f" <b>{e(format_duration(f.duration_ms))}</b>" if f.duration_ms is not None else ""
    unc = ' <span class="badge uncertain">uncertain</span>' if f.certainty == "uncertain" else ""
    trig = f" · trigger <code>{e(f.trigger)}</code>" if f.trigger else ""
    goto = (
        f' <a class="goto" href="#job-{k}" data-f="{fid}">show on timeline ↓</a>'
        if k is not None and f.start is not None
        else ""
    )
    span = ""
    if f.start is not None:
        span = f" · {e(when(f.start, wall))}" + (
            f" → {e(when(f.end, wall))}" if f.end and f.end != f.start else ""
        )
        span += " UTC" if wall else " (log order)"
    items = [
        f"<li><code>{e(x.file)}:{x.line}</code>{' ' + e(x.note) if x.note else ''}</li>" for x in f.evidence
    ]
    # the lines that prove it, in view; a long tail of them folded away
    ev = f'<ul class="ev mono">{"".join(items[:EVIDENCE_SHOWN])}</ul>'
    if len(items) > EVIDENCE_SHOWN:
        ev += (
            f'<details class="ev"><summary>{len(items) - EVIDENCE_SHOWN} more evidence line(s)</summary>'
            f'<ul class="ev mono">{"".join(items[EVIDENCE_SHOWN:])}</ul></details>'
        )
    execs = ", ".join(e(x) for x in f.execution_ids)
    pods = ", ".join(e(p) for p in f.pods)
    return (
        f'<li class="finding sev-{e(f.severity)}" id="f-{fid}" data-kind="{e(f.kind)}" data-sev="{e(f.severity)}"'
        f' data-job="{e(f.job_id or "")}" data-t="{f.start.timestamp() if f.start else ""}">'
        f'<div class="fhead">{badge(f.severity)} <code>{e(f.code)}</code>'
        f" <b>{e(f.kind)}</b>{dur}{unc}{goto}</div>"
        f'<p class="msg">{e(f.message)}</p>'
        f'<div class="meta">executions: {execs or "—"} · pods: {pods or "—"}{span}{trig}</div>'
        f"{ev}"
        "</li>"
    )
