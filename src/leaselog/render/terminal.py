"""The terminal summary: inputs, then findings grouped by job, most severe first."""

from __future__ import annotations

import heapq
from collections import Counter
from itertools import compress
from operator import attrgetter

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from leaselog.analysis import Analysis
from leaselog.durations import format_duration
from leaselog.findings import SEVERITY_RANK, Finding, gc_paused
from leaselog.reading.report import MAX_LOCATED
from leaselog.render.safe import printable

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
MAX_MALFORMED_SHOWN = 10


def render(a: Analysis, console: Console, *, max_jobs: int | None = 50) -> None:
    _inputs(a, console)
    _malformed(a, console)
    for p in a.problems:
        console.print(Text(f"note: {printable(p)}", style="yellow"))
    # the collector off while tens of thousands of findings are gone through: a collection walks them all
    with gc_paused():
        _findings(a, console, max_jobs)


def _inputs(a: Analysis, console: Console) -> None:
    t = Table(title="Inputs", title_justify="left", show_edge=False, pad_edge=False)
    for col, just in (
        ("file", "left"),
        ("format", "left"),
        ("lines", "right"),
        ("used", "right"),
        ("ignored", "right"),
        ("malformed", "right"),
        ("pod from", "left"),
    ):
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    zones = a.local_time_files
    if zones:  # which files have times without a zone, and the zone they were read in
        t.add_column("local times", justify="left")
    for r in a.input_reports:
        bad = Text(str(r.malformed), style="red" if r.malformed else "")
        row: list[Text | str] = [
            Text(printable(r.path)),
            r.format,
            str(r.lines),
            str(r.used),
            str(r.ignored),
            bad,
            Text(printable(r.pod_source or "")),
        ]
        t.add_row(*row, *([Text(zones.get(r.path, ""))] if zones else []))
    tot = a.line_totals()
    if len(a.input_reports) > 1:
        t.add_row(
            "total",
            "",
            str(tot["total"]),
            str(tot["used"]),
            str(tot["ignored"]),
            str(tot["malformed"]),
            "",
            *([""] if zones else []),
            style="bold",
        )
    console.print(t)
    c = a.counts()  # (a cluster run keeps its frames on the workers: its counts come with it)
    console.print(f"{c.jobs} jobs, {c.executions} executions, {c.events} lease events")
    for r in a.input_reports:
        if r.error:
            console.print(Text(f"{printable(r.path)}: {printable(r.error)}", style="red"))
        for note in r.notes():  # skipped, read once under another path, duplicate lines dropped
            console.print(Text(f"{printable(r.path)}: {printable(note)}", style="yellow"))
        if r.unmapped_events:
            names = ", ".join(f"{printable(k)} ({v})" for k, v in r.unmapped_events.most_common(5))
            console.print(
                Text(
                    f"{printable(r.path)}: event names leaselog does not know (map them in leaselog.toml): "
                    f"{names}",
                    style="yellow",
                )
            )
    if c.wall_events < c.events:
        console.print(
            Text(
                "Some inputs have no wall-clock timestamps: cross-pod order comes from line order "
                "and durations from elapsedMs; cross-pod figures are estimates.",
                style="yellow",
            )
        )


def _malformed(a: Analysis, console: Console) -> None:
    if a.malformed.height == 0:
        return
    total = a.line_totals()["malformed"]
    console.print(Text(f"{total} malformed line(s):", style="red"))
    for f, line, why in a.malformed.head(MAX_MALFORMED_SHOWN).iter_rows():
        console.print(Text(f"  {printable(f)}:{line}: {printable(why)}"), highlight=False)
    if total > MAX_MALFORMED_SHOWN:
        located = a.malformed.height
        where = (
            "all of them in --json output"
            if located >= total
            else f"--json lists {located} of them, at most {MAX_LOCATED} of a file and reason; all are counted"
        )
        console.print(Text(f"  … and {total - MAX_MALFORMED_SHOWN} more ({where})"), highlight=False)


def _findings(a: Analysis, console: Console, max_jobs: int | None) -> None:
    fs = a.finding_list
    console.print()
    if not fs:
        console.print(Text("No findings.", style="green bold"))
        return
    # tens of thousands of findings: their severities and jobs gathered by C loops (map)
    severities = list(map(attrgetter("severity"), fs))
    jobs = [printable(job) if job else "(fleet)" for job in map(attrgetter("job_id"), fs)]
    counts = Counter(severities)
    # each job's most severe finding orders the jobs
    rank: dict[str, int] = {}
    for severity, job in zip(severities, jobs, strict=True):
        r = SEVERITY_RANK[severity]
        if r < rank.get(job, len(SEVERITY_RANK)):
            rank[job] = r
    summary = ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts[s])
    console.print(Text(f"{len(fs)} findings ({summary})", style="bold"))
    order = [(r, job) for job, r in rank.items()]
    if max_jobs is None or max_jobs < 0:
        ranked = sorted(order)[:max_jobs]
    else:
        ranked = heapq.nsmallest(max_jobs, order)  # the first few of tens of thousands, without sorting all
    shown = [job for _, job in ranked]
    by_job: dict[str, list[Finding]] = {job: [] for job in shown}
    for f, job in compress(zip(fs, jobs, strict=True), map(by_job.__contains__, jobs)):
        by_job[job].append(f)
    # printed as one group: the same lines as a print per line, without rich's cost per print
    lines: list[RenderableType] = []
    for job in shown:
        lines += [Text(""), Text(job, style="bold underline")]
        for f in by_job[job]:
            head = Text()
            head.append(f"  {f.severity.upper():7}", style=_STYLE[f.severity])
            head.append(f" {f.code} {f.kind}", style="bold")
            if f.duration_ms is not None:
                head.append(f"  {format_duration(f.duration_ms)}")
            if f.trigger:
                head.append(f"  trigger={printable(f.trigger)}")
            if f.certainty == "uncertain":
                head.append("  (uncertain)", style="magenta")
            lines += [head, Padding(Text(printable(f.message, lines=True)), (0, 0, 0, 6), expand=False)]
            if f.evidence:
                where = printable(", ".join(f"{e.file}:{e.line}" for e in f.evidence[:6]))
                more = f" (+{len(f.evidence) - 6})" if len(f.evidence) > 6 else ""
                lines.append(
                    Padding(Text(f"evidence: {where}{more}", style="dim"), (0, 0, 0, 6), expand=False)
                )
    if lines:
        console.print(Group(*lines), highlight=False)
    if len(shown) < len(rank):
        console.print(
            f"\n… {len(rank) - len(shown)} more jobs with findings (all of them in --json / --html)"
        )
