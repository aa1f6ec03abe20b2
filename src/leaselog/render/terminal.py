"""The terminal summary: a table of the findings by job first (one line each), then each finding in full,
then the inputs. `brief` prints the table alone."""

from __future__ import annotations

import polars as pl
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from leaselog.analysis import Analysis
from leaselog.durations import format_duration
from leaselog.findings import SEVERITY_RANK, Finding, gc_paused, records
from leaselog.reading.report import MAX_LOCATED
from leaselog.render.safe import printable
from leaselog.unread import nothing_read, silent_files

_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
MAX_MALFORMED_SHOWN = 10


def render(a: Analysis, console: Console, *, max_jobs: int | None = 50, brief: bool = False) -> None:
    jobs, shown = _ranked_jobs(a, max_jobs)
    _headline(a, console, len(jobs))
    if a.findings.height:
        _table(a, console, shown, len(jobs))
    if brief:
        for p in a.problems:
            console.print(Text(f"note: {printable(p)}", style="yellow"))
        return
    # the collector off while tens of thousands of findings are gone through: a collection walks them all
    with gc_paused():
        _findings(a, console, shown, len(jobs))
    console.print()
    _inputs(a, console)
    _malformed(a, console)
    for p in a.problems:
        console.print(Text(f"note: {printable(p)}", style="yellow"))


def _ranked_jobs(a: Analysis, max_jobs: int | None) -> tuple[list[str | None], list[str | None]]:
    """Every job with findings (None: fleet-level findings), its most severe finding first, then by id;
    and the first `max_jobs` of them (all when None or negative)."""
    if a.findings.height == 0:
        return [], []
    # as the HTML report ranks them: the most overlap, then the longest finding, first among equals
    ranked = (
        a.findings.group_by("job_id")
        .agg(
            pl.col("severity").replace_strict(SEVERITY_RANK, default=len(SEVERITY_RANK)).min().alias("rank"),
            pl.col("duration_ms").filter(pl.col("kind") == "overlapping_executions").sum().alias("overlap"),
            pl.col("duration_ms").max().fill_null(0).alias("longest"),
        )
        .sort(
            ["rank", "overlap", "longest", pl.col("job_id").fill_null("(fleet)")],
            descending=[False, True, True, False],
        )
    )
    jobs: list[str | None] = ranked["job_id"].to_list()
    return jobs, jobs if max_jobs is None or max_jobs < 0 else jobs[:max_jobs]


def _headline(a: Analysis, console: Console, n_jobs: int) -> None:
    counts = dict(a.findings["severity"].value_counts().iter_rows()) if a.findings.height else {}
    sev = ", ".join(f"{counts[s]} {s}" for s in ("error", "warning", "info") if counts.get(s))
    tot = a.line_totals()
    jobs = a.executions["job_id"].n_unique() if a.executions.height else 0

    def n(count: int, what: str) -> str:
        return f"{count:,} {what}" + ("" if count == 1 else "s")

    if a.findings.height:
        fleet = a.findings["job_id"].null_count() > 0
        where = n(n_jobs - fleet, "job") + (" and fleet-wide" if fleet else "")
        console.print(
            Text(f"{a.findings.height:,} findings ({sev}) in {where}", style="bold"), highlight=False
        )
    elif (unread := nothing_read(a.input_reports)) is not None:
        console.print(Text(unread.headline, style="yellow bold"), highlight=False)
        for reason in unread.reasons:
            console.print(Text(f"  - {printable(reason)}", style="yellow"), highlight=False)
    else:
        console.print(Text("No findings.", style="green bold"), highlight=False)
    silent = silent_files(a.input_reports)
    if silent:
        names = ", ".join(printable(p) for p in silent[:5]) + (" ..." if len(silent) > 5 else "")
        console.print(
            Text(f"{n(len(silent), 'file')} gave no lease event while others did: {names}", style="yellow"),
            highlight=False,
        )
    console.print(
        Text(
            f"{n(len(a.input_reports), 'file')}, {n(tot['total'], 'line')} ({tot['used']:,} used,"
            f" {tot['malformed']:,} malformed) · {n(jobs, 'job')}, {n(a.executions.height, 'execution')}",
            style="dim",
        ),
        highlight=False,
    )


def _figure(kind: str, duration_ms: float | None, trigger: str | None, details: str | None) -> str:
    """The one number (or words) that says how bad a finding is, for the table."""
    if kind == "lease_settings" and details:
        import orjson

        suggested = orjson.loads(details).get("suggested") or {}
        parts = [
            f"{what} {format_duration(suggested[key])}"
            for key, what in (
                ("leaseMs", "lease"),
                ("renewalIntervalMs", "renew"),
                ("maxRuntimeMs", "max"),
            )
            if isinstance(suggested.get(key), int | float)
        ]
        return ", ".join(parts)
    out = format_duration(duration_ms) if duration_ms is not None else ""
    if trigger:
        out += f"{' ' if out else ''}trigger={printable(trigger)}"
    return out


def _executions(ids: list[str], cap: int = 22, job: str | None = None) -> str:
    # an execution the logs did not name (`job@pod#n`) is shown without its job: the job has its column
    if job:
        ids = [i[len(job) :] if i.startswith(job + "@") else i for i in ids]
    text = printable(", ".join(ids))
    return text if len(text) <= cap or len(ids) < 2 else f"{printable(ids[0])} +{len(ids) - 1}"


def _table(a: Analysis, console: Console, shown: list[str | None], n_jobs: int) -> None:
    order = {job: i for i, job in enumerate(shown)}
    fs = (
        a.findings.with_columns(
            pl.col("job_id").replace_strict(order, default=None, return_dtype=pl.Int64).alias("_order")
            if None not in order
            else pl.when(pl.col("job_id").is_null())
            .then(order[None])
            .otherwise(pl.col("job_id").replace_strict(order, default=None, return_dtype=pl.Int64))
            .alias("_order")
        )
        .filter(pl.col("_order").is_not_null())
        .sort("_order", maintain_order=True)
    )
    picked = fs.select(
        "severity", "code", "kind", "job_id", "execution_ids", "duration_ms", "trigger", "details"
    )
    figures = [
        _figure(k, d, t, x)
        for k, d, t, x in picked.select("kind", "duration_ms", "trigger", "details").iter_rows()
    ]
    header = ("severity", "code", "kind", "job", "executions", "figure")
    # one line per finding, whatever the width: severity, code and kind whole, the figure up to 24
    # characters, job and executions share the rest (a longer value is cut; the details below have it whole)
    fixed = [
        8,
        5,
        min(max(4, *(len(k) for k in picked["kind"].to_list())), 22),
        0,
        0,
        min(max(6, *(len(f) for f in figures)), 24),
    ]
    jobs_text = [printable(j) if j is not None else "(fleet)" for j in picked["job_id"].to_list()]
    longest = max(len(printable(", ".join(x or []))) for x in picked["execution_ids"].to_list())
    fixed[3] = min(max(3, *(len(j) for j in jobs_text)), max(12, console.width // 5))
    room = max(console.width - sum(fixed[:4]) - 2 * 5, 22)  # for executions and the figure
    fixed[4] = max(min(longest, room - fixed[5]), 12)
    fixed[5] = max(room - fixed[4], 8)
    widths = fixed
    rows = [
        (sev.upper(), code, kind, job, _executions(execs or [], widths[4], job_id), fig)  # noqa: RUF100
        for (sev, code, kind, job_id, execs, *_), job, fig in zip(
            picked.iter_rows(), jobs_text, figures, strict=True
        )
    ]
    lines = [Text("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(), style="bold")]
    for r in rows:
        line = Text()
        for i, (value, w) in enumerate(zip(r, widths, strict=True)):
            cell = value if len(value) <= w else value[: w - 1] + "…"
            line.append(
                cell if i == 5 else cell.ljust(w) + "  ", style=_STYLE[r[0].lower()] if i == 0 else ""
            )
        lines.append(line)
    console.print(Group(*lines), highlight=False, no_wrap=True, overflow="ignore", crop=False)
    if len(shown) < n_jobs:
        rest = a.findings.height - fs.height
        console.print(
            f"… {rest} more findings in {n_jobs - len(shown)} more jobs (--max-jobs; all in --json / --html)",
            highlight=False,
        )


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


def _findings(a: Analysis, console: Console, shown: list[str | None], n_jobs: int) -> None:
    # records of the shown jobs' findings only: the records of tens of thousands of findings (what
    # `a.finding_list` would keep) weigh more than the findings frame
    named = pl.col("job_id").is_in([job for job in shown if job is not None])
    fs = records(a.findings.filter(named | pl.col("job_id").is_null() if None in shown else named))
    if not fs:
        return
    by_job: dict[str | None, list[Finding]] = {job: [] for job in shown}
    for f in fs:
        by_job[f.job_id].append(f)
    # printed as one group: the same lines as a print per line, without rich's cost per print
    lines: list[RenderableType] = []
    for job in shown:
        lines += [Text(""), Text(printable(job) if job is not None else "(fleet)", style="bold underline")]
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
    if len(shown) < n_jobs:
        console.print(f"\n… {n_jobs - len(shown)} more jobs with findings (all of them in --json / --html)")
