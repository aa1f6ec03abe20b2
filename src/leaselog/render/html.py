"""The self-contained HTML report: header, fleet overview, findings list, one lease timeline per job.

One file, offline: plotly.js is inlined once, every figure is a JSON spec in one data block and is drawn
when it scrolls into view (hundreds of timelines stay cheap to open). A Content-Security-Policy forbids any
network request. Log text is untrusted: everything put into HTML is escaped, and the embedded JSON escapes
`<`, `>` and `&` so no log line can close the script element.
"""

from __future__ import annotations

import html
import os
from collections import Counter, defaultdict
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from leaselog.durations import format_duration
from leaselog.findings import SEVERITY_RANK, Finding, iso
from leaselog.render.figures import overview_spec, timeline_spec
from leaselog.render.plotting import Axis
from leaselog.render.safe import printable

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["MAX_FINDINGS_LISTED", "MAX_TIMELINES", "embed_json", "write_report"]

MAX_TIMELINES = 200  # detailed timelines drawn; other jobs with findings are listed, not drawn
MAX_FINDINGS_LISTED = 3000  # findings written into the page; all of them are in --json
MAX_MALFORMED_LISTED = 50
EVIDENCE_SHOWN = 6
TOP_JOBS = 15

# no network at all: scripts and styles only inline, images only data: (plotly's modebar icons are inline SVG)
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
    "font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)


def e(text: object) -> str:
    """Text for HTML: markup escaped, and control characters shown as `\\x1b` escapes as in the terminal
    (a raw ESC is inert in a browser, but not in `cat report.html`)."""
    return html.escape("" if text is None else printable(text, lines=True), quote=True)


def embed_json(payload: Any) -> str:
    """JSON safe inside a <script> element: `<`, `>`, `&` and line separators as \\u escapes."""
    raw = orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY)
    for ch, rep in (
        (b"<", b"\\u003c"),
        (b">", b"\\u003e"),
        (b"&", b"\\u0026"),
        ("\u2028".encode(), b"\\u2028"),
        ("\u2029".encode(), b"\\u2029"),
    ):
        raw = raw.replace(ch, rep)
    return raw.decode()


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    # it is inlined as is; were it ever to contain a closing tag, the page would break, so refuse loudly
    if "</script" in js.lower():
        raise RuntimeError("plotly.js bundle contains </script>; cannot inline it safely")
    return js


def _asset(name: str) -> str:
    """A stylesheet or script of the page (render/assets/), inlined."""
    return (files("leaselog.render") / "assets" / name).read_text(encoding="utf-8")


_POD_SEP = "\x1f"


def _findings_frame(findings: list[Finding]) -> pl.DataFrame:
    """The finding columns the report aggregates, built column-wise (Analysis.findings builds rows of
    dicts, which costs seconds at tens of thousands of findings)."""
    return pl.DataFrame(
        {
            "kind": [f.kind for f in findings],
            "code": [f.code for f in findings],
            "severity": [f.severity for f in findings],
            "certainty": [f.certainty for f in findings],
            "job_id": [f.job_id for f in findings],
            # joined, not a list column: building List(String) from Python lists is ~30x slower
            "pods": [_POD_SEP.join(f.pods) for f in findings],
            "start": [f.start for f in findings],
            "end": [f.end for f in findings],
            "duration_ms": [f.duration_ms for f in findings],
        },
        schema={
            "kind": pl.String(),
            "code": pl.String(),
            "severity": pl.String(),
            "certainty": pl.String(),
            "job_id": pl.String(),
            "pods": pl.String(),
            "start": pl.Datetime("us", "UTC"),
            "end": pl.Datetime("us", "UTC"),
            "duration_ms": pl.Float64(),
        },
    )


def _rank_jobs(findings: pl.DataFrame) -> list[str]:
    """Jobs with findings, most severe first, then most overlap / longest finding, then by id."""
    fs = findings.filter(pl.col("job_id").is_not_null())
    if fs.height == 0:
        return []
    ranked = (
        fs.with_columns(pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int64).alias("rank"))
        .group_by("job_id")
        .agg(
            pl.col("rank").min(),
            pl.col("duration_ms").filter(pl.col("kind") == "overlapping_executions").sum().alias("overlap"),
            pl.col("duration_ms").max().fill_null(0).alias("longest"),
        )
        .sort(["rank", "overlap", "longest", "job_id"], descending=[False, True, True, False])
    )
    return ranked["job_id"].to_list()


def _generated_at() -> datetime:
    """Now, or SOURCE_DATE_EPOCH (the reproducible-builds convention) when set: then a report of the same
    logs is the same bytes whatever minute it was built in."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch.isdigit():
        return datetime.fromtimestamp(int(epoch), UTC)
    return datetime.now(UTC)


def write_report(
    analysis: Analysis,
    path: str | Path,
    *,
    max_timelines: int = MAX_TIMELINES,
    max_findings: int = MAX_FINDINGS_LISTED,
) -> None:
    """Write the self-contained HTML report for `analysis` to `path`."""
    a = analysis
    findings = _findings_frame(a.finding_list)
    jobs = _rank_jobs(findings)
    shown = jobs[:max_timelines]
    job_index = {j: i for i, j in enumerate(shown)}

    by_job: dict[str | None, list[Finding]] = defaultdict(list)
    for f in a.finding_list:
        by_job[f.job_id].append(f)

    figures = _timeline_specs(a, shown, by_job)
    finding_refs: list[list[Any]] = []  # per listed finding: [job index or -1, x0, x1]

    parts: list[str] = []
    parts.append(_head())
    parts.append(_header(a, len(jobs), len(shown)))
    parts.append(_inputs(a))
    parts.append(_overview(a, findings, job_index))
    parts.append(_findings(a, jobs, by_job, job_index, figures, finding_refs, max_findings))
    parts.append(_timelines(shown, by_job, figures, len(jobs)))
    payload = {
        "overview": overview_spec(a.executions, findings),
        "figures": figures,
        "findings": finding_refs,
    }
    parts.append(f"<script>{_plotly_js()}</script>\n")
    parts.append(f'<script type="application/json" id="leaselog-data">{embed_json(payload)}</script>\n')
    parts.append(f"<script>{_asset('report.js')}</script>\n</body>\n</html>\n")
    Path(path).write_text("".join(parts), encoding="utf-8")


def _timeline_specs(
    a: Analysis, shown: list[str], by_job: dict[str | None, list[Finding]]
) -> list[dict[str, Any]]:
    if not shown:
        return []
    # filter once and split, instead of scanning the whole events frame per job
    sel = pl.col("job_id").is_in(shown)
    ev = a.events.filter(sel).partition_by("job_id", as_dict=True)
    ex = a.executions.filter(sel).partition_by("job_id", as_dict=True)
    rn = a.renewals.filter(sel).partition_by("job_id", as_dict=True) if a.renewals.height else {}
    empty_ev, empty_ex = a.events.clear(), a.executions.clear()
    specs: list[dict[str, Any]] = []
    for job in shown:
        x = ex.get((job,), empty_ex)
        specs.append(
            timeline_spec(job, x, ev.get((job,), empty_ev), by_job.get(job, []), rn.get((job,)), title=False)
        )
    return specs


def _head() -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n<title>leaselog report</title>\n'
        f"<style>{_asset('report.css')}</style>\n</head>\n<body>\n"
        '<noscript><p class="warn">The timelines need JavaScript (inlined in this file; nothing is'
        " fetched).</p></noscript>\n"
    )


def _header(a: Analysis, jobs_with_findings: int, shown: int) -> str:
    lines = a.line_totals()
    n_jobs = a.executions["job_id"].n_unique() if a.executions.height else 0
    wall = a.events.filter(pl.col("clock") == "wall")["t"]
    t_lo, t_hi = (wall.min(), wall.max()) if wall.len() else (None, None)
    counts = Counter(f.severity for f in a.finding_list)
    sev = (
        " ".join(
            f'<span class="badge sev-{s}">{counts[s]} {s}</span>'
            for s in ("error", "warning", "info")
            if counts[s]
        )
        or '<span class="badge ok">no findings</span>'
    )
    if isinstance(t_lo, datetime) and isinstance(t_hi, datetime):
        time_range = f"{e(iso(t_lo))} → {e(iso(t_hi))} UTC"
        if wall.len() < a.events.height:
            time_range += " (some inputs have no wall clock: placed by elapsedMs / line order)"
    elif a.events.height:
        time_range = "no wall-clock timestamps: times from elapsedMs and line order"
    else:
        time_range = "no lease events"
    generated = _generated_at().strftime("%Y-%m-%d %H:%M UTC")
    s = a.settings
    ttl = format_duration(s.lease_ttl_ms) if s.lease_ttl_ms is not None else "from leaseMs only"
    return (
        f'<header><h1>leaselog report</h1><p class="sub">generated {e(generated)} · default lease TTL {e(ttl)} ·'
        f" clock-skew tolerance {e(format_duration(s.max_skew_ms))}</p>\n"
        '<div class="cards">'
        f'<div class="card"><div class="big">{len(a.input_reports)}</div>files</div>'
        f'<div class="card"><div class="big">{lines["total"]:,}</div>lines ({lines["used"]:,} used,'
        f' {lines["ignored"]:,} ignored, <span class="{"bad" if lines["malformed"] else ""}">'
        f"{lines['malformed']:,} malformed</span>)</div>"
        f'<div class="card"><div class="big">{n_jobs:,}</div>jobs, {a.executions.height:,} executions</div>'
        f'<div class="card"><div class="big">{len(a.finding_list):,}</div>findings {sev}</div>'
        f'<div class="card wide">time range<br><b>{time_range}</b></div>'
        "</div>\n"
        f"{_kind_chips(a.finding_list)}"
        '<nav><a href="#inputs">Inputs</a> · <a href="#overview">Fleet overview</a> · '
        f'<a href="#findings">Findings</a> · <a href="#timelines">Timelines ({shown:,} of {jobs_with_findings:,})</a>'
        "</nav></header>\n"
    )


def _kind_chips(findings: list[Finding]) -> str:
    """Findings by kind, most severe kinds first; a click filters the findings list to that kind."""
    if not findings:
        return ""
    kinds = Counter(f.kind for f in findings)
    sev = {f.kind: f.severity for f in sorted(findings, key=lambda f: -SEVERITY_RANK[f.severity])}
    chips = " ".join(
        f'<a href="#findings" class="chip sev-{e(sev[k])}" data-kind="{e(k)}">{e(k)} <b>{n:,}</b></a>'
        for k, n in sorted(kinds.items(), key=lambda kv: (SEVERITY_RANK[sev[kv[0]]], -kv[1], kv[0]))
    )
    return f'<p class="chips">findings by kind: {chips}</p>\n'


def _inputs(a: Analysis) -> str:
    rows = []
    for r in a.input_reports:
        err = f'<div class="bad">{e(r.error)}</div>' if r.error else ""
        rows.append(
            f"<tr><td><code>{e(r.path)}</code>{err}</td><td>{e(r.format)}</td><td class=n>{r.lines:,}</td>"
            f"<td class=n>{r.used:,}</td><td class=n>{r.ignored:,}</td>"
            f'<td class="n{" bad" if r.malformed else ""}">{r.malformed:,}</td></tr>'
        )
    tot = a.line_totals()
    if len(a.input_reports) > 1:
        rows.append(
            f"<tr class=total><td>total</td><td></td><td class=n>{tot['total']:,}</td>"
            f"<td class=n>{tot['used']:,}</td><td class=n>{tot['ignored']:,}</td>"
            f"<td class=n>{tot['malformed']:,}</td></tr>"
        )
    out = [
        '<section id="inputs"><h2>Inputs</h2>',
        '<div class="scroll"><table><thead><tr><th>file</th><th>format</th><th>lines</th><th>used</th><th>ignored</th>'
        "<th>malformed</th></tr></thead><tbody>",
        *rows,
        "</tbody></table></div>",
    ]
    for p in a.problems:
        out.append(f'<p class="warn">{e(p)}</p>')
    if a.malformed.height:
        out.append(f"<details><summary>{a.malformed.height:,} malformed line(s)</summary><ul class=mono>")
        for f, line, why in a.malformed.head(MAX_MALFORMED_LISTED).iter_rows():
            out.append(f"<li>{e(f)}:{line}: {e(why)}</li>")
        if a.malformed.height > MAX_MALFORMED_LISTED:
            out.append(f"<li>… and {a.malformed.height - MAX_MALFORMED_LISTED:,} more (all in --json)</li>")
        out.append("</ul></details>")
    out.append("</section>\n")
    return "\n".join(out)


def _job_link(job: str | None, job_index: dict[str, int]) -> str:
    if job is None:
        return "<i>fleet</i>"
    if job in job_index:
        return f'<a href="#job-{job_index[job]}" class="joblink" data-job="{job_index[job]}">{e(job)}</a>'
    return e(job)


def _overview(a: Analysis, fs: pl.DataFrame, job_index: dict[str, int]) -> str:
    kinds = (
        fs.group_by("kind", "code", "severity")
        .agg(
            pl.len().alias("n"),
            pl.col("duration_ms").sum().alias("total_ms"),
            (pl.col("certainty") == "uncertain").sum().alias("uncertain"),
        )
        .with_columns(pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int64).alias("rank"))
        .sort("rank", "n", "code", descending=[False, True, False])  # code: ties in a stable order
    )
    kind_rows = (
        "".join(
            f'<tr><td><span class="badge sev-{e(sev)}">{e(sev)}</span></td><td><code>{e(code)}</code></td>'
            f"<td>{e(kind)}</td><td class=n>{n:,}</td><td class=n>{unc:,}</td>"
            f"<td class=n>{format_duration(total) if total else ''}</td></tr>"
            for kind, code, sev, n, total, unc, _ in kinds.iter_rows()
        )
        or '<tr><td colspan="6">no findings</td></tr>'
    )

    overlap = (
        fs.filter(pl.col("kind") == "overlapping_executions")
        .group_by("job_id")
        .agg(
            pl.col("duration_ms").sum().alias("overlap_ms"),
            pl.len().alias("pairs"),
            pl.col("pods"),
        )
        .sort("overlap_ms", "job_id", descending=[True, False])
        .head(TOP_JOBS)
    )
    overlap_rows = (
        "".join(
            f"<tr><td>{_job_link(j, job_index)}</td><td class=n>{format_duration(ms)}</td><td class=n>{n}</td>"
            f"<td>{e(', '.join(sorted({pod for x in p for pod in x.split(_POD_SEP) if pod})))}</td></tr>"
            for j, ms, n, p in overlap.iter_rows()
        )
        or '<tr><td colspan="4">no overlapping executions</td></tr>'
    )
    slow = (
        a.executions.select("job_id", "execution_id", "pod", "runtime_ms", "ttl_ms", "end_kind")
        .filter(pl.col("runtime_ms").is_not_null())
        .top_k(TOP_JOBS, by="runtime_ms")  # no full sort of every execution for fifteen rows
        .sort("runtime_ms", "job_id", descending=[True, False])
    )
    slow_rows = (
        "".join(
            f"<tr><td>{_job_link(j, job_index)}</td><td><code>{e(x)}</code></td><td>{e(p)}</td>"
            f"<td class=n>{format_duration(rt)}</td>"
            f'<td class="n{" bad" if ttl is not None and rt > ttl else ""}">'
            f"{format_duration(ttl) if ttl is not None else '?'}</td><td>{e(k)}</td></tr>"
            for j, x, p, rt, ttl, k in slow.iter_rows()
        )
        or '<tr><td colspan="6">no executions</td></tr>'
    )
    return (
        '<section id="overview"><h2>Fleet overview</h2>'
        '<div id="overview-plot" class="plot" data-fig="overview" style="min-height:420px"></div>\n'
        '<div class="grid"><div><h3>Findings by kind</h3><table><thead><tr><th>severity</th><th>code</th>'
        "<th>kind</th><th>count</th><th>uncertain</th><th>total duration</th></tr></thead>"
        f"<tbody>{kind_rows}</tbody></table></div>\n"
        "<div><h3>Most overlapping jobs</h3><table><thead><tr><th>job</th><th>overlap</th><th>pairs</th>"
        f"<th>pods</th></tr></thead><tbody>{overlap_rows}</tbody></table></div>\n"
        '<div class="span2"><h3>Slowest executions</h3><table><thead><tr><th>job</th><th>execution</th>'
        "<th>pod</th><th>runtime</th><th>lease TTL</th><th>end</th></tr></thead>"
        f"<tbody>{slow_rows}</tbody></table></div></div></section>\n"
    )


def _findings(
    a: Analysis,
    jobs: list[str],
    by_job: dict[str | None, list[Finding]],
    job_index: dict[str, int],
    figures: list[dict[str, Any]],
    refs: list[list[Any]],
    max_findings: int,
) -> str:
    out = ['<section id="findings"><h2>Findings</h2>']
    if not a.finding_list:
        out.append(
            '<p class="ok">No findings: no overlapping executions, outlived leases or other anomalies'
            " in these logs.</p></section>\n"
        )
        return "".join(out)
    kinds = Counter(f.kind for f in a.finding_list)
    sevs = Counter(f.severity for f in a.finding_list)
    kind_opts = "".join(f'<option value="{e(k)}">{e(k)} ({n:,})</option>' for k, n in sorted(kinds.items()))
    sev_opts = "".join(
        f'<option value="{s}">{s} ({sevs[s]:,})</option>' for s in ("error", "warning", "info") if sevs[s]
    )
    out.append(
        '<div class="filters">show <select id="kind-filter" aria-label="kind">'
        f'<option value="">all kinds</option>{kind_opts}</select> '
        f'<select id="sev-filter" aria-label="severity"><option value="">all severities</option>{sev_opts}'
        '</select> <span class="dim" id="filter-count"></span></div><div class="findings-scroll">'
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
    listed = 0
    for job in order:
        if listed >= max_findings:
            break
        fs = by_job[job]
        k = job_index.get(job) if job is not None else None
        out.append(
            f'<div class="jobgroup"><h3>{_job_link(job, job_index)}'
            f' <span class="dim">{len(fs)} finding(s)</span></h3><ol class="findings">'
        )
        for i, f in enumerate(fs):
            if listed >= max_findings:
                break
            fid = len(refs)
            # where the timeline drew this finding: [xref, x0, x1] from the figure's own meta
            drawn: list[Any] | None = figures[k]["layout"]["meta"]["findings"][i] if k is not None else None
            axis = None
            if k is not None and drawn is not None:
                xaxis = figures[k]["layout"]["xaxis" + drawn[0][1:]]
                axis = Axis(wall=xaxis.get("type") == "date")
                refs.append([k, drawn[1], drawn[2], drawn[0]])
            else:
                refs.append([-1])
            out.append(_finding_item(f, fid, k if drawn is not None else None, axis))
            listed += 1
        out.append("</ol></div>")
    out.append("</div>")
    total = len(a.finding_list)
    if listed < total:
        out.append(
            f'<p class="warn">Showing {listed:,} of {total:,} findings; all of them are in the'
            " <code>--json</code> output.</p>"
        )
    out.append("</section>\n")
    return "\n".join(out)


def _finding_item(f: Finding, fid: int, k: int | None, axis: Axis | None) -> str:
    dur = f" <b>{format_duration(f.duration_ms)}</b>" if f.duration_ms is not None else ""
    unc = ' <span class="badge uncertain">uncertain</span>' if f.certainty == "uncertain" else ""
    trig = f" · trigger <code>{e(f.trigger)}</code>" if f.trigger else ""
    goto = (
        f' <a class="goto" href="#job-{k}" data-f="{fid}">show on timeline ↓</a>'
        if k is not None and f.start is not None
        else ""
    )
    span = ""
    if f.start is not None:
        fmt = axis.when if axis is not None else iso
        span = f" · {e(fmt(f.start))}" + (f" → {e(fmt(f.end))}" if f.end and f.end != f.start else "")
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
        f'<li class="finding sev-{e(f.severity)}" id="f-{fid}" data-kind="{e(f.kind)}" data-sev="{e(f.severity)}">'
        f'<div class="fhead"><span class="badge sev-{e(f.severity)}">{e(f.severity)}</span> <code>{e(f.code)}</code>'
        f" <b>{e(f.kind)}</b>{dur}{unc}{goto}</div>"
        f'<p class="msg">{e(f.message)}</p>'
        f'<div class="meta">executions: {execs or "—"} · pods: {pods or "—"}{span}{trig}</div>'
        f"{ev}"
        "</li>"
    )


def _timelines(
    shown: list[str], by_job: dict[str | None, list[Finding]], figures: list[dict[str, Any]], total: int
) -> str:
    out = ['<section id="timelines"><h2>Timelines</h2>']
    if total == 0:
        out.append(
            "<p>No job has findings, so no timeline is drawn; the fleet overview above shows all"
            " executions.</p></section>\n"
        )
        return "".join(out)
    note = f"Showing {len(shown):,} of {total:,} jobs with findings"
    if len(shown) < total:
        note += " (most severe and most overlapping first; the rest are in the findings list and --json)"
    out.append(
        f'<p class="note" id="timeline-note">{note}. Lease = thin light bar, execution = thick dark'
        " bar, red hatched = running without a lease, red shading = overlapping executions. Times are UTC."
        " Hover any marker for the raw log fields and file:line.</p>"
    )
    for k, job in enumerate(shown):
        fs = by_job.get(job, [])
        codes = Counter(f.code for f in fs)
        summary = ", ".join(f"{c}×{n}" if n > 1 else c for c, n in sorted(codes.items()))
        h = int(figures[k]["layout"].get("height", 300))
        out.append(
            f'<article class="job" id="job-{k}"><h3>{e(job)} <span class="dim">{e(summary)}</span></h3>'
            f'<div class="plot timeline" id="plot-{k}" data-fig="{k}" style="min-height:{h}px"></div></article>'
        )
    out.append("</section>\n")
    return "\n".join(out)
