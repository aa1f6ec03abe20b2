"""An execution's log just ends (no finish, stop or release): a crash, and how long takeover took.

Anti-pattern: a worker crashed (or was killed, or its log was cut) while holding the lease. Nothing
released the key, so the next worker could take over only once the TTL ran out: a long lease makes
overlaps rarer and crash recovery slower. The article asks for the takeover target to be agreed and met.

Best practice: decide how long another worker may wait to take over after a crash (`--takeover-slo`),
and size the lease (with renewal) so that takeover fits: takeover latency from the last line seen is
roughly the remaining lease plus the time until the next attempt is triggered.

Measured: `durationMs` is the takeover latency from the crashed execution's lease expiry to the next
acquisition; the latency from its last line goes in `details.fromLastLineMs` and is the one compared
with the target. An open execution with no takeover is reported only when the logs go on past its
lease expiry (otherwise the log window simply ended mid-job).
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.certainty import certainty_for, handover_skew_note, skew_details
from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import ev, ms_expr
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL601"
KIND = "crash_takeover"
SEVERITY = "warning"


def crashes(ctx: CheckContext) -> pl.DataFrame:
    ex = ctx.executions
    crashed = (
        ex.filter((pl.col("end_kind") == "open") & pl.col("acquired_at").is_not_null()).join(
            ctx.leases.select("job_id", "execution_id", "confirm_latency_ms"), on=["job_id", "execution_id"]
        )
    ).select(
        "confirm_latency_ms",
        "job_id",
        "timeline",
        "execution_id",
        "pod",
        "clock",
        "acquired_at",
        "valid_until",
        "last_seen",
        "last_file",
        "last_line",
        "file",
        "acquired_file",
        "acquired_line",
    )
    takers = ex.filter(pl.col("acquired_at").is_not_null()).select(
        "job_id",
        "timeline",
        pl.col("execution_id").alias("taker"),
        pl.col("pod").alias("taker_pod"),
        pl.col("clock").alias("taker_clock"),
        pl.col("acquired_at").alias("taker_at"),
        pl.col("acquired_file").alias("taker_file"),
        pl.col("acquired_line").alias("taker_line"),
    )
    j = (
        crashed.join(takers, on=["job_id", "timeline"], how="left")
        .filter(
            pl.col("taker").is_null()
            | ((pl.col("taker") != pl.col("execution_id")) & (pl.col("taker_at") > pl.col("acquired_at")))
        )
        .sort("taker_at", nulls_last=True)
        .group_by("job_id", "timeline", "execution_id", maintain_order=True)
        .first()
    )
    # a crashed execution with no join partner lost its (null) taker row in the filter: add it back
    missing = crashed.join(
        j.select("job_id", "timeline", "execution_id"), on=["job_id", "timeline", "execution_id"], how="anti"
    )
    j = pl.concat([j, missing], how="diagonal_relaxed")
    if j.height == 0:
        return j.with_columns(
            pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("log_end"),
            pl.lit(None, dtype=pl.Float64).alias("takeover_ms"),
            pl.lit(None, dtype=pl.Float64).alias("from_last_line_ms"),
        )
    # the end of each timeline: the last moment per (clock, file) first, so the millions of events are
    # grouped by two plain columns rather than by an expression
    log_end = (
        ctx.events.lazy()
        .group_by("clock", "file")
        .agg(pl.col("t").max())
        .group_by(
            pl.when(pl.col("clock") == "wall")
            .then(pl.lit("wall"))
            .otherwise(pl.col("file"))
            .alias("timeline")
        )
        .agg(pl.col("t").max().alias("log_end"))
        .collect()
    )
    return (
        j.join(log_end, on="timeline", how="left")
        .with_columns(
            ms_expr("valid_until", "taker_at").alias("takeover_ms"),
            ms_expr("last_seen", "taker_at").alias("from_last_line_ms"),
        )
        .filter(pl.col("taker").is_not_null() | (pl.col("log_end") > pl.col("valid_until")))
        .sort("job_id", "last_seen")
    )


def check(ctx: CheckContext) -> list[Finding]:
    slo = ctx.settings.takeover_slo_ms
    out: list[Finding] = []
    for r in crashes(ctx).iter_rows(named=True):
        ck = r["clock"]
        head = (
            f"{r['execution_id']} ({r['pod']})'s log of {r['job_id']} ends at {when(r['last_seen'], ck)} with no "
            f"finish, stop or release: it crashed (or its log was cut) holding a lease valid until "
            f"{when(r['valid_until'], ck)}."
        )
        evidence = [
            *ev(r["acquired_file"], r["acquired_line"], "lease acquired"),
            *ev(r["last_file"], r["last_line"], "last line seen"),
        ]
        skew_bound, figure = None, None
        if r["taker"] is None:
            severity = SEVERITY
            certainty, caveat = "certain", ""
            message = (
                f"{head} No other execution acquired the key in these logs, which go on until "
                f"{when(r['log_end'], ck)}: the job was not taken over."
            )
            ids: tuple[str, ...] = (r["execution_id"],)
            pods: tuple[str, ...] = (r["pod"],)
        else:
            within = r["from_last_line_ms"] <= slo
            severity = "info" if within else SEVERITY
            certainty, caveat = certainty_for(
                abs(r["takeover_ms"]) if r["takeover_ms"] is not None else None,
                [r["pod"], r["taker_pod"]],
                [ck, r["taker_clock"]],
                ctx.settings,
            )
            skew_bound, skew_note = (None, "")
            if ck == "wall" and r["taker_clock"] == "wall":
                skew_bound, skew_note = handover_skew_note(
                    r["pod"], r["taker_pod"], r["takeover_ms"], r["confirm_latency_ms"]
                )
            takeover, since_last = r["takeover_ms"], r["from_last_line_ms"]
            figure = takeover if takeover is not None and takeover >= 0 else None
            # no negative figure: a taker that acquired before the lease expired (or before the last line)
            # is named as such
            if takeover is None:
                after_expiry = "with no known lease expiry"
            elif takeover >= 0:
                after_expiry = f"{format_duration(takeover)} after the lease expired"
            elif certainty == "uncertain":
                # the clocks cannot order the acquire and the expiry: as far as the logs tell, the key was
                # taken over when the lease ran out
                after_expiry = (
                    f"as the lease expired (logged {format_duration(-takeover)} before it, which the pods' "
                    "clocks cannot tell apart)"
                )
                figure = 0.0
            else:
                after_expiry = (
                    f"{format_duration(-takeover)} before the lease expired (two leases at once: see "
                    "concurrent_leases)"
                )
            if since_last >= 0:
                after_last = f"{format_duration(since_last)} after the last line seen"
            else:
                after_last = (
                    f"{format_duration(-since_last)} before the last line seen (it was still logging)"
                )
            message = (
                f"{head} {r['taker']} ({r['taker_pod']}) took over at {when(r['taker_at'], r['taker_clock'])}: "
                f"{after_expiry}, {after_last}, "
                f"{'within' if within else 'over'} the {format_duration(slo)} takeover target.{skew_note}{caveat}"
            )
            ids = (r["execution_id"], r["taker"])
            pods = tuple(dict.fromkeys([r["pod"], r["taker_pod"]]))
            evidence += ev(r["taker_file"], r["taker_line"], "takeover: next acquisition")
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=severity,
                certainty=certainty,
                job_id=r["job_id"],
                execution_ids=ids,
                pods=pods,
                start=r["last_seen"],
                end=r["taker_at"] if r["taker"] is not None else r["valid_until"],
                duration_ms=figure,
                message=message,
                evidence=tuple(evidence),
                details={
                    "fromLastLineMs": (
                        r["from_last_line_ms"]
                        if r["from_last_line_ms"] is None or r["from_last_line_ms"] >= 0
                        else None
                    ),
                    "takeoverSloMs": slo,
                    "withinTarget": None if r["taker"] is None else r["from_last_line_ms"] <= slo,
                    **skew_details(skew_bound),
                    "leaseExpiredAt": None if r["valid_until"] is None else r["valid_until"].isoformat(),
                },
            )
        )
    return out
