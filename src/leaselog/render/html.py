"""The self-contained HTML report: the incident summary and the worst job's timeline first, then every
finding, a timeline for every job with an error finding, the fleet overview, and the inputs with provenance.

One file, offline: plotly.js (its basic bundle, vendored in assets/: the figures use bars and scatter traces
only) is inlined once, with one compressed columnar table of what the timelines show (timeline_table.py);
the page draws a job's timeline from it when it scrolls into view, or every shown one before printing. A
Content-Security-Policy forbids any network request. Log text is untrusted: everything put into HTML is
escaped, the embedded JSON escapes `<`, `>` and `&` so no log line can close the script element, and the
page escapes the table's text before plotly sees it.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from leaselog.durations import format_duration
from leaselog.findings import SEVERITY_RANK, iso
from leaselog.render.figures import overview_spec
from leaselog.render.html_findings import findings_section, listed_findings
from leaselog.render.html_parts import e
from leaselog.render.html_sections import (
    inputs_section,
    job_article,
    job_heads,
    overview_section,
    timelines_section,
)
from leaselog.render.html_summary import SUMMARY_ROWS, advice, summary_rows, summary_table
from leaselog.render.timeline_table import encode_table, figure_height, timeline_table
from leaselog.version import VERSION

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["HASH_LIMIT", "MAX_OTHER_TIMELINES", "PLOTLY_BUNDLE", "embed_json", "write_report"]

# every job with an error finding gets a timeline; of the jobs with only warnings or info, this many
MAX_OTHER_TIMELINES = 200
# inputs hashed for the provenance: the reader does not hash as it reads, so hashing reads a file a second
# time; above this size it is left out (and the report says so)
HASH_LIMIT = 256 * 1024 * 1024
PLOTLY_BUNDLE = "plotly-basic-4.1.1.min.js"

# no network at all: scripts and styles only inline, images only data: (plotly's modebar icons are inline SVG)
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
    "font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)


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


def _asset(name: str) -> str:
    """A stylesheet or script of the page (render/assets/), inlined."""
    text = (files("leaselog.render") / "assets" / name).read_text(encoding="utf-8")
    # inlined as is; were it ever to contain a closing tag, the page would break, so refuse loudly
    if "</script" in text.lower() or "</style" in text.lower():
        raise RuntimeError(f"{name} contains a closing tag; cannot inline it safely")
    return text


def rank_jobs(findings: pl.DataFrame) -> list[str]:
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


def file_facts(
    paths: Sequence[str], limit: int = HASH_LIMIT
) -> tuple[dict[str, tuple[int | None, str | None]], str]:
    """Size and SHA-256 of each input that is a regular file of at most `limit` bytes, and a note saying
    what was and was not hashed."""
    out: dict[str, tuple[int | None, str | None]] = {}
    too_big = 0
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out[p] = (None, None)
            continue
        if not os.path.isfile(p):
            out[p] = (None, None)
            continue
        if st.st_size > limit:
            out[p] = (st.st_size, None)
            too_big += 1
            continue
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        out[p] = (st.st_size, h.hexdigest())
    note = (
        "Sizes and SHA-256 of the files as they were when the report was written (hashing reads each file once"
        " more)."
    )
    if too_big:
        note += f" {too_big} file(s) over {limit // (1024 * 1024)} MB are not hashed, to keep that second read short."
    return out, note


def write_report(
    analysis: Analysis,
    path: str | Path,
    *,
    max_other_timelines: int = MAX_OTHER_TIMELINES,
    command: Sequence[str] | None = None,
) -> None:
    """Write the self-contained HTML report for `analysis` to `path`.

    Every finding is listed, and every job with an error finding has a timeline (drawn when scrolled to);
    of the jobs with only warnings or info, the `max_other_timelines` most severe do. `command` (the
    command line that made it) is shown in the header's provenance.
    """
    a = analysis
    findings = a.findings
    jobs = rank_jobs(findings)
    worst = dict(
        findings.filter(pl.col("job_id").is_not_null())
        .group_by("job_id")
        .agg(pl.col("severity").replace_strict(SEVERITY_RANK, return_dtype=pl.Int64).min())
        .iter_rows()
    )
    n_error = sum(1 for j in jobs if worst[j] == 0)
    drawn = jobs[: n_error + max(max_other_timelines, 0)]
    job_index = {j: i for i, j in enumerate(drawn)}

    listed = listed_findings(a, jobs, worst, job_index)
    data = {
        "overview": overview_spec(a.executions, findings),
        "table": encode_table(timeline_table(a, drawn, listed)),
        # the first screen's timeline on its own too: drawn before the whole table is unpacked
        "first": encode_table(timeline_table(a, drawn[:1], listed.filter(pl.col("timeline") == 0)))
        if drawn
        else None,
    }
    heights = figure_height(a, drawn)
    heads = job_heads(findings, drawn)

    facts, hash_note = file_facts([r.path for r in a.input_reports])
    parts = [
        _head(),
        _header(a, command),
        '<main id="main"><section id="summary"><h2>Incident summary</h2>',
        summary_table(summary_rows(findings, a.executions, jobs[:SUMMARY_ROWS]), len(jobs), job_index),
        job_article(0, drawn[0], heads[0], heights[0]) if drawn else "",
        advice(findings),
        "</section>\n",
        findings_section(findings),
        timelines_section(drawn, 1, heads, heights, _timeline_note(len(drawn), n_error, len(jobs))),
        overview_section(a, job_index),
        inputs_section(a, facts, hash_note),
        "</main>\n",
        f"<script>{_asset(PLOTLY_BUNDLE)}</script>\n",
        f'<script type="application/json" id="leaselog-data">{embed_json(data)}</script>\n',
        f"<script>{_asset('timeline.js')}\n{_asset('findings.js')}\n{_asset('report.js')}</script>\n"
        "</body>\n</html>\n",
    ]
    Path(path).write_text("".join(parts), encoding="utf-8")


def _timeline_note(drawn: int, n_error: int, total: int) -> str:
    if total == 0:
        return "No job has findings, so no timeline is drawn; the fleet overview shows every execution."
    others = total - n_error
    text = f"{drawn:,} timelines: every job with an error finding ({n_error:,})"
    if others:
        text += (
            f", and {drawn - n_error:,} of the {others:,} jobs with only warnings or info (most severe first)"
        )
        if drawn < total:
            text += "; the others' findings are in the list above"
    return (
        text
        + ". Lease = thin light bar, execution = thick dark bar, red hatched = running without a lease, red"
        " shading = overlapping executions, arrow = why a second attempt could acquire. Times are UTC. Hover a"
        " marker for the raw log fields and file:line; click it to keep them shown."
    )


def _head() -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<link rel="icon" href="data:,">\n<title>leaselog report</title>\n'
        f"<style>{_asset('report.css')}</style>\n</head>\n<body>\n"
        '<a class="skip" href="#findings">Skip to the findings</a>\n'
        '<noscript><p class="warn">The timelines need JavaScript (inlined in this file; nothing is'
        " fetched).</p></noscript>\n"
    )


def _header(a: Analysis, command: Sequence[str] | None) -> str:
    lines = a.line_totals()
    n_jobs = a.executions["job_id"].n_unique() if a.executions.height else 0
    wall = a.events.filter(pl.col("clock") == "wall")["t"]
    t_lo, t_hi = (wall.min(), wall.max()) if wall.len() else (None, None)
    counts = Counter(a.findings["severity"].to_list())
    sev = (
        " ".join(
            f'<span class="badge sev-{s}">{counts[s]:,} {s}</span>'
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
    s = a.settings
    ttl = format_duration(s.lease_ttl_ms) if s.lease_ttl_ms is not None else "from leaseMs only"
    bad = ' class="bad"' if lines["malformed"] else ""
    cmd = shlex.join(command) if command else "(written by write_report from Python)"
    options = orjson.dumps(s.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS).decode()
    return (
        '<header><div class="title"><h1>leaselog report</h1>'
        f'<span class="facts">{len(a.input_reports):,} file(s) · {lines["total"]:,} lines ({lines["used"]:,} used,'
        f" <span{bad}>{lines['malformed']:,} malformed</span>) · {n_jobs:,} jobs, {a.executions.height:,}"
        f' executions · {time_range}</span> <span class="sevs">{sev}</span></div>\n'
        '<details class="prov" id="provenance"><summary>'
        f"leaselog {e(VERSION)} · generated {e(_generated_at().strftime('%Y-%m-%d %H:%M UTC'))} ·"
        f" default lease TTL {e(ttl)} · clock-skew tolerance {e(format_duration(s.max_skew_ms))}</summary>"
        f'<dl><dt>command</dt><dd><code id="command">{e(cmd)}</code></dd>'
        f'<dt>settings</dt><dd><code class="wrap">{e(options)}</code></dd>'
        '<dt>inputs</dt><dd>sizes and SHA-256 in <a href="#inputs">Inputs</a></dd></dl></details>\n'
        '<nav aria-label="sections"><a href="#summary">Summary</a> · <a href="#findings">Findings</a> · '
        '<a href="#timelines">Timelines</a> · <a href="#overview">Fleet overview</a> · <a href="#inputs">Inputs</a>'
        "</nav></header>\n"
    )
