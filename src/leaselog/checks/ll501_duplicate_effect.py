"""Two completions of one job were accepted: a duplicate committed effect.

Anti-pattern: a separate "already completed?" read followed by a write. Two executions that overlapped
(or ran one after the other) both committed their result, so the job's effect happened twice. This is
a correctness problem, not just load: overlapping computation with one accepted result costs CPU, two
accepted results cost correctness (duplicate reports, double charges, duplicate notifications).

Best practice: record the completion identity and apply its effect in one atomic, durable operation,
and define what a second completion receives (the existing result, a conflict, or another explicit
outcome). Remote effects (uploads, notifications) need their own outbox and idempotent receiver.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import completions, ev, ms_expr
from leaselog.checks.phrasing import when
from leaselog.findings import Finding

CODE = "LL501"
KIND = "duplicate_effect"
SEVERITY = "error"


def check(ctx: CheckContext) -> list[Finding]:
    acc = completions(ctx).filter(pl.col("outcome") == "accepted").sort("t", "seq")
    dup = acc.filter(pl.len().over("job_id", "timeline") > 1)
    if dup.height == 0:
        return []
    groups = dup.group_by("job_id", "timeline", maintain_order=True).agg(
        pl.col("execution_id"),
        pl.col("pod"),
        pl.col("t"),
        pl.col("token"),
        pl.col("file"),
        pl.col("line"),
        pl.col("clock").first(),
        ms_expr(pl.col("t").first(), pl.col("t").last()).alias("span_ms"),
    )
    out: list[Finding] = []
    for g in groups.iter_rows(named=True):
        ck = g["clock"]
        parts = [
            f"{e} ({p}) at {when(t, ck)}{'' if tok is None else f' with token {tok}'}"
            for e, p, t, tok in zip(g["execution_id"], g["pod"], g["t"], g["token"], strict=True)
        ]
        message = (
            f"{g['job_id']} has {len(parts)} accepted completions: {'; '.join(parts)}. That is a duplicate "
            "committed effect, a correctness problem, not just load. Recording the completion identity and "
            "applying its effect must be one atomic, durable operation that gives a second completion a "
            "defined outcome."
        )
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=g["job_id"],
                execution_ids=tuple(dict.fromkeys(g["execution_id"])),
                pods=tuple(dict.fromkeys(g["pod"])),
                start=g["t"][0],
                end=g["t"][-1],
                duration_ms=g["span_ms"],
                message=message,
                evidence=tuple(
                    e
                    for f, ln in zip(g["file"], g["line"], strict=True)
                    for e in ev(f, ln, "completion accepted")
                ),
                details={"accepted": len(parts), "tokens": g["token"]},
            )
        )
    return out
