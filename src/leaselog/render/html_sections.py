"""The report's later sections: the timelines, the fleet overview with its tables, and the inputs (folded
away, problem files flagged, with their sizes and SHA-256)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from leaselog.durations import format_duration
from leaselog.findings import SEVERITY_RANK
from leaselog.render.html_parts import badge, e, job_link

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["inputs_section", "job_article", "overview_section", "timelines_section"]

MAX_MALFORMED_LISTED = 50
TOP_JOBS = 15


def job_heads(findings: pl.DataFrame, drawn: list[str]) -> list[tuple[str, str]]:
    """Each drawn job's worst severity and its finding codes (`LL101, LL102×2`), for its timeline's heading."""
    if not drawn:
        return []
    per = (
        findings.filter(pl.col("job_id").is_in(drawn))
        .group_by("job_id", "code")
        .agg(
            pl.len(),
            pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int64).min().alias("rank"),
        )
        .sort("job_id", "code")
        .with_columns(
            pl.when(pl.col("len") > 1).then(pl.format("{}×{}", "code", "len")).otherwise("code").alias("c")
        )
        .group_by("job_id")
        .agg(pl.col("rank").min(), pl.col("c").str.join(", "))
    )
    names = {r: s for s, r in SEVERITY_RANK.items()}
    heads = {job: (names[rank], codes) for job, rank, codes in per.iter_rows()}
    return [heads.get(job, ("info", "")) for job in drawn]


def job_article(k: int, job: str, head: tuple[str, str], height: int) -> str:
    """One job's timeline, drawn by report.js when it comes near the viewport (or when printing); `height`
    holds its space until then. `head`: its worst severity and finding codes."""
    worst, summary = head
    return (
        f'<article class="job sev-{e(worst)}" id="job-{k}" data-job="{e(job)}">'
        f'<h3>{badge(worst)} {e(job)} <span class="dim">{e(summary)}</span></h3>'
        f'<div class="plot timeline" id="plot-{k}" data-fig="{k}" style="height:{height}px"'
        f' role="img" tabindex="0" aria-label="lease timeline of {e(job)}; arrow keys step through its events,'
        f' + and - zoom, 0 resets"></div></article>'
    )


def timelines_section(
    jobs: list[str], first: int, heads: list[tuple[str, str]], heights: list[int], note: str
) -> str:
    """The timelines from `first` on (the worst job's is on the first screen already)."""
    out = ['<section id="timelines"><h2>Timelines</h2>', f'<p class="note" id="timeline-note">{note}</p>']
    out += [job_article(k, jobs[k], heads[k], heights[k]) for k in range(first, len(jobs))]
    out.append("</section>\n")
    return "\n".join(out)


def overview_section(a: Analysis, job_index: dict[str, int]) -> str:
    fs = a.findings
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
            f"<tr><td>{badge(sev)}</td><td><code>{e(code)}</code></td>"
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
            pl.col("pods").explode().unique().sort().alias("pods"),
        )
        .sort("overlap_ms", "job_id", descending=[True, False])
        .head(TOP_JOBS)
    )
    overlap_rows = (
        "".join(
            f"<tr><td>{job_link(j, job_index)}</td><td class=n>{format_duration(ms)}</td><td class=n>{n}</td>"
            f"<td>{e(', '.join(p for p in pods if p))}</td></tr>"
            for j, ms, n, pods in overlap.iter_rows()
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
            f"<tr><td>{job_link(j, job_index)}</td><td><code>{e(x)}</code></td><td>{e(p)}</td>"
            f"<td class=n>{format_duration(rt)}</td>"
            f'<td class="n{" bad" if ttl is not None and rt > ttl else ""}">'
            f"{format_duration(ttl) if ttl is not None else '?'}</td><td>{e(k)}</td></tr>"
            for j, x, p, rt, ttl, k in slow.iter_rows()
        )
        or '<tr><td colspan="6">no executions</td></tr>'
    )
    return (
        '<section id="overview"><h2>Fleet overview</h2>'
        '<div id="overview-plot" class="plot" data-fig="overview" style="height:520px" role="img"'
        ' aria-label="executions running, overlapping pairs and findings over time"></div>\n'
        '<div class="grid"><div><h3>Findings by kind</h3><table><thead><tr><th>severity</th><th>code</th>'
        "<th>kind</th><th>count</th><th>uncertain</th><th>total duration</th></tr></thead>"
        f"<tbody>{kind_rows}</tbody></table></div>\n"
        "<div><h3>Most overlapping jobs</h3><table><thead><tr><th>job</th><th>overlap</th><th>pairs</th>"
        f"<th>pods</th></tr></thead><tbody>{overlap_rows}</tbody></table></div>\n"
        '<div class="span2"><h3>Slowest executions</h3><table><thead><tr><th>job</th><th>execution</th>'
        "<th>pod</th><th>runtime</th><th>lease TTL</th><th>end</th></tr></thead>"
        f"<tbody>{slow_rows}</tbody></table></div></div></section>\n"
    )


def inputs_section(a: Analysis, files: dict[str, tuple[int | None, str | None]], hash_note: str) -> str:
    """The inputs table, folded: its summary line counts the files with problems (malformed lines, nothing
    used, a read error), which are flagged in the table. `files`: path -> (size, SHA-256)."""
    rows = []
    problems = 0
    for r in a.input_reports:
        why = []
        if r.error:
            why.append(r.error)
        if r.malformed:
            why.append(f"{r.malformed:,} malformed line(s)")
        if not r.used and not r.skipped and not r.same_as:
            why.append("no line used")
        problems += bool(why)
        flag = f'<div class="bad">⚠ {e("; ".join(why))}</div>' if why else ""
        notes = "".join(f'<div class="dim">{e(n)}</div>' for n in r.notes())
        size, digest = files.get(r.path, (None, None))
        rows.append(
            f'<tr class="{"problem" if why else ""}"><td><code>{e(r.path)}</code>{flag}{notes}</td>'
            f"<td>{e(r.format)}</td><td class=n>{r.lines:,}</td><td class=n>{r.used:,}</td>"
            f'<td class=n>{r.ignored:,}</td><td class="n{" bad" if r.malformed else ""}">{r.malformed:,}</td>'
            f"<td class=n>{'' if size is None else f'{size:,}'}</td>"
            f'<td class="mono hash">{e(digest or "")}</td></tr>'
        )
    tot = a.line_totals()
    if len(a.input_reports) > 1:
        rows.append(
            f"<tr class=total><td>total</td><td></td><td class=n>{tot['total']:,}</td>"
            f"<td class=n>{tot['used']:,}</td><td class=n>{tot['ignored']:,}</td>"
            f"<td class=n>{tot['malformed']:,}</td><td></td><td></td></tr>"
        )
    flagged = f', <span class="bad">{problems} with problems</span>' if problems else ""
    out = [
        f'<details id="inputs"><summary><h2>Inputs: '
        f"{len(a.input_reports)} file(s), {tot['total']:,} lines ({tot['used']:,} used, {tot['malformed']:,}"
        f" malformed){flagged}</h2></summary>",
        '<div class="scroll"><table><thead><tr><th>file</th><th>format</th><th>lines</th><th>used</th>'
        "<th>ignored</th><th>malformed</th><th>bytes</th><th>SHA-256</th></tr></thead><tbody>",
        *rows,
        f'</tbody></table></div><p class="note">{e(hash_note)}</p>',
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
    out.append("</details>\n")
    return "\n".join(out)
