"""The report's first screen: the incident summary (one row per job, most severe first: overlap, the zombie
and how long it ran without a lease, the trigger path of the second attempt, what to change), and the
fleet-level advice (LL701 lease settings), which is always shown in full."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
import polars as pl

from leaselog.durations import format_duration
from leaselog.findings import SEVERITY_RANK
from leaselog.render.html_parts import badge, e, job_link, when

__all__ = ["SUMMARY_ROWS", "advice", "summary_rows", "summary_table"]

SUMMARY_ROWS = 8  # jobs in the summary table; the findings list below has them all


def _details(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    d = orjson.loads(text)
    return d if isinstance(d, dict) else {}


def _change(suggested: dict[str, Any]) -> str:
    """LL701's suggestion in a few words: `lease 15.0s · renew every 5.0s · max runtime 19m`."""
    parts = []
    for key, what in (
        ("leaseMs", "lease"),
        ("renewalIntervalMs", "renew every"),
        ("maxRuntimeMs", "max runtime"),
    ):
        if isinstance(suggested.get(key), int | float):
            parts.append(f"{what} {format_duration(suggested[key])}")
    return " · ".join(parts)


def summary_rows(findings: pl.DataFrame, executions: pl.DataFrame, jobs: list[str]) -> list[dict[str, Any]]:
    """What the summary says of each of `jobs` (few: the first rows of the ranking)."""
    fs = findings.filter(pl.col("job_id").is_in(jobs))
    per_job = (
        executions.filter(pl.col("job_id").is_in(jobs))
        .group_by("job_id")
        .agg(pl.col("job_type").drop_nulls().first(), (pl.col("clock") == "wall").all().alias("wall"))
    )
    types = dict(per_job.select("job_id", "job_type").iter_rows())
    wall = dict(per_job.select("job_id", "wall").iter_rows())
    advice_by_type: dict[str, str] = {}
    for text in findings.filter(pl.col("kind") == "lease_settings")["details"].to_list():
        d = _details(text)
        if isinstance(d.get("jobType"), str) and isinstance(d.get("suggested"), dict):
            advice_by_type.setdefault(d["jobType"], _change(d["suggested"]))
    by_job = fs.partition_by("job_id", as_dict=True)
    rows = []
    for job in jobs:
        g = by_job.get((job,))
        if g is None:
            continue
        sev = min(g["severity"].to_list(), key=lambda s: SEVERITY_RANK.get(s, 9))
        ov = g.filter(pl.col("kind") == "overlapping_executions")
        zombies = g.filter(pl.col("kind") == "lease_outlived").sort(
            "duration_ms", descending=True, nulls_last=True
        )
        zombie = None
        if zombies.height:
            z = zombies.row(0, named=True)
            zombie = (
                (z["pods"] or ["?"])[0],
                (z["execution_ids"] or ["?"])[0],
                z["duration_ms"],
                zombies.height,
            )
        triggers = []
        for r in g.filter(pl.col("kind") == "second_attempt").iter_rows(named=True):
            d = _details(r["details"])
            gap = d.get("sincePreviousLeaseExpiryMs")
            who = (r["execution_ids"] or ["?"])[-1]
            path = f"{who}: trigger {r['trigger'] or 'unknown'}"
            if isinstance(gap, int | float):
                path += f", acquired {format_duration(abs(gap))} {'after' if gap >= 0 else 'before'} the lease ended"
            triggers.append(path)
        starts = [t for t in g["start"].to_list() if t is not None]
        rows.append(
            {
                "job": job,
                "severity": sev,
                "codes": sorted(set(g["code"].to_list())),
                "overlap_ms": float(ov["duration_ms"].sum()) if ov.height else None,
                "pairs": ov.height,
                "zombie": zombie,
                "triggers": triggers,
                "change": advice_by_type.get(types.get(job) or "", ""),
                "start": min(starts) if starts else None,
                "wall": wall.get(job, True),
            }
        )
    return rows


def summary_table(rows: list[dict[str, Any]], total_jobs: int, job_index: dict[str, int]) -> str:
    if not rows:
        return '<p class="ok" id="summary-none">No job has findings.</p>'
    body = []
    for r in rows:
        z = r["zombie"]
        zombie = (
            f"{e(z[0])} · <code>{e(z[1])}</code> ran <b>{e(format_duration(z[2]))}</b> without a lease"
            + (f" (+{z[3] - 1} more)" if z[3] > 1 else "")
            if z
            else "—"
        )
        overlap = (
            f"<b>{e(format_duration(r['overlap_ms']))}</b>"
            + (f" ({r['pairs']} pairs)" if r["pairs"] > 1 else "")
            if r["overlap_ms"] is not None
            else "—"
        )
        start: datetime | None = r["start"]
        body.append(
            f'<tr class="sev-{e(r["severity"])}" data-job="{e(r["job"])}"><td>{badge(r["severity"])}</td>'
            f"<td>{job_link(r['job'], job_index)}<div class=dim>{e(', '.join(r['codes']))}</div></td>"
            f"<td class=n>{overlap}</td><td>{zombie}</td>"
            f"<td>{'<br>'.join(e(t) for t in r['triggers']) or '—'}</td>"
            f"<td>{e(r['change']) or '—'}</td>"
            f"<td class=t>{e(when(start, r['wall'])) if start else '—'}</td></tr>"
        )
    more = ""
    if total_jobs > len(rows):
        more = (
            f'<p class="note">{total_jobs - len(rows):,} more job(s) with findings: all are in the findings list'
            " below (search by job id), each with its timeline.</p>"
        )
    return (
        '<div class="wide-table"><table id="summary-table"><thead><tr><th>severity</th><th>job</th><th>overlap</th>'
        "<th>zombie (ran without a lease)</th><th>why the second attempt ran</th><th>what to change</th>"
        f"<th>first finding (UTC)</th></tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}"
    )


def advice(findings: pl.DataFrame) -> str:
    """Every fleet-level finding (no job: LL701's lease settings), in full: never capped, never filtered."""
    fleet = findings.filter(pl.col("job_id").is_null())
    if fleet.height == 0:
        return ""
    items = "".join(
        f'<li class="sev-{e(sev)}">{badge(sev)} <code>{e(code)}</code> <b>{e(kind)}</b>'
        f'<p class="msg">{e(msg)}</p></li>'
        for code, kind, sev, msg in fleet.select("code", "kind", "severity", "message").iter_rows()
    )
    return f'<div id="advice"><h3>What to change</h3><ul class="advice">{items}</ul></div>'
