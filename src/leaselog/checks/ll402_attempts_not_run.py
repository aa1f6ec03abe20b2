"""Attempts at a job that never ran: turned away by the lock, or triggered with no outcome.

Anti-pattern: reading every `job_triggered` as an execution. A scheduler catch-up, a retry or a duplicate
delivery that finds the lock held logs its trigger and a `lock_denied`, and does nothing: the lock did
its job, and the attempt has no execution interval (it cannot overlap, outlive a lease or crash). An
attempt that logs `job_triggered` and nothing after it (no acquire, no denial) is a different case: it
crashed before it reached the lock, or its log was cut short; it never ran either.

Best practice: keep the lock in front of every trigger path, and log the denial (`lock_denied`) so the
turned-away attempts can be told from crashes; when triggers are turned away often, look at why the
same job is triggered again while it runs (scheduler catch-up, eager retries, duplicate publishes).

One `info` finding per job, summarising its attempts that never ran (never one per attempt).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.phrasing import when
from leaselog.findings import Evidence, Finding, Severity
from leaselog.reconstruct import NEVER_RAN

CODE = "LL402"
KIND = "attempts_not_run"
SEVERITY: Severity = "info"

MAX_NAMED = 10  # attempts and holders named in a message (the finding lists every execution id)
MAX_EVIDENCE = (
    20  # lines cited (a poller turned away every second for an hour is one finding, not 3 600 lines)
)


def not_run(executions: pl.DataFrame) -> pl.DataFrame:
    """One row per attempt that never ran, with its moment and the execution holding the lock then."""
    x = (
        executions.filter(pl.col("end_kind").is_in(NEVER_RAN))
        .select(
            "job_id",
            "timeline",
            "execution_id",
            "pod",
            "clock",
            "end_kind",
            "trigger",
            "first_seq",
            pl.coalesce("denied_at", "triggered_at", "first_seen").alias("at"),
            pl.coalesce("triggered_at", "first_seen").alias("from"),
            pl.coalesce("denied_line", "triggered_line", "first_line").alias("at_line"),
            pl.when(pl.col("denied_line").is_not_null())
            .then(pl.col("denied_file"))
            .when(pl.col("triggered_line").is_not_null())
            .then(pl.col("triggered_file"))
            .otherwise(pl.col("first_file"))
            .alias("at_file"),
        )
        .with_row_index("_row")
    )
    if x.height == 0:
        return x.with_columns(pl.lit(None, dtype=pl.String).alias("holder"))
    holders = executions.filter(pl.col("acquired_at").is_not_null()).select(
        "job_id",
        "timeline",
        pl.col("execution_id").alias("holder"),
        pl.col("acquired_at").alias("h_from"),
        pl.coalesce("valid_until", "end").alias("h_to"),
    )
    held = (
        x.select("_row", "job_id", "timeline", "at")
        .join(holders, on=["job_id", "timeline"], how="inner")
        .filter(
            (pl.col("h_from") <= pl.col("at")) & (pl.col("h_to").is_null() | (pl.col("at") <= pl.col("h_to")))
        )
        .sort("_row", "h_from")
        .group_by("_row", maintain_order=True)
        .agg(pl.col("holder").last())
    )
    # attempts at the same moment are listed by id: their order in the input depends on how the logs were
    # shipped (one file per pod, or merged), and the finding must not
    return x.join(held, on="_row", how="left").drop("_row").sort("job_id", "timeline", "at", "execution_id")


def _names(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_NAMED])
    return shown + (f" and {len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else "")


def check(ctx: CheckContext) -> list[Finding]:
    x = not_run(ctx.executions)
    if x.height == 0:
        return []
    groups = x.group_by("job_id", "timeline", maintain_order=True).agg(
        pl.col("execution_id"),
        pl.col("pod"),
        pl.col("end_kind"),
        pl.col("trigger"),
        pl.col("holder"),
        pl.col("at_file"),
        pl.col("at_line"),
        pl.col("clock").first(),
        pl.col("from").min().alias("start"),
        pl.col("at").max().alias("end"),
    )
    out: list[Finding] = []
    for g in groups.iter_rows(named=True):
        ck = g["clock"]
        kinds: list[str] = g["end_kind"]
        ids: list[str] = g["execution_id"]
        denied = [e for e, k in zip(ids, kinds, strict=True) if k == "denied"]
        quiet = [e for e, k in zip(ids, kinds, strict=True) if k == "no_outcome"]
        triggers = Counter(t or "unlogged" for t, k in zip(g["trigger"], kinds, strict=True) if k == "denied")
        holders = list(
            dict.fromkeys(h for h, k in zip(g["holder"], kinds, strict=True) if h and k == "denied")
        )
        parts: list[str] = []
        if denied:
            by = ", ".join(f"{t} x{n}" if n > 1 else t for t, n in sorted(triggers.items()))
            held = f" while {_names(holders)} held it" if holders else ""
            parts.append(
                f"{len(denied)} {'was' if len(denied) == 1 else 'were'} turned away by the lock{held} "
                f"({_names(denied)}; trigger: {by}): the lock doing its job, not an execution"
            )
        if quiet:
            parts.append(
                f"{len(quiet)} logged job_triggered and nothing after it ({_names(quiet)}): no acquire and no "
                "denial, so it crashed before reaching the lock or its log was cut short; it never ran"
            )
        n = len(ids)
        span = (
            f"at {when(g['start'], ck)}"
            if g["start"] == g["end"]
            else f"between {when(g['start'], ck)} and {when(g['end'], ck)}"
        )
        message = (
            f"{n} attempt{'s' if n > 1 else ''} at {g['job_id']} never ran ({span}): {'; '.join(parts)}. "
            "Attempts that never ran have no execution interval: they overlap nothing and outlive no lease."
        )
        notes = {"denied": "turned away by the lock", "no_outcome": "triggered, no outcome"}
        out.append(
            Finding.of(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=g["job_id"],
                execution_ids=tuple(ids),
                pods=tuple(dict.fromkeys(p for p in g["pod"] if p is not None)),
                start=g["start"],
                end=g["end"],
                message=message,
                evidence=Evidence.known(
                    *(
                        (f, ln, f"{e} {notes[k]}")
                        for f, ln, e, k in list(zip(g["at_file"], g["at_line"], ids, kinds, strict=True))[
                            :MAX_EVIDENCE
                        ]
                    )
                ),
                details={
                    "denied": len(denied),
                    "noOutcome": len(quiet),
                    "triggers": dict(sorted(triggers.items())),
                    "heldBy": holders,
                },
            )
        )
    return out
