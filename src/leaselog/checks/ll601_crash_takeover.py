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
lease expiry (otherwise the log window simply ended mid-job). An execution whose last line came after its
lease had expired ran on as a zombie first (lease_outlived): the message says the crash lost no lease.
"""

from __future__ import annotations

import orjson
import polars as pl

from leaselog.checks.certainty import certainty_columns, handover_skew_columns, skew_details
from leaselog.checks.contract import DETECTED, Check, CheckContext, fleet_of
from leaselog.checks.offsets import behind_columns
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Severity
from leaselog.timebase import ms_expr

CODE = "LL601"
KIND = "crash_takeover"
SEVERITY: Severity = "warning"


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
    # (lazy: the filter copies only these columns of the wide executions frame, not all of them)
    takers = (
        ex.lazy()
        .filter(pl.col("acquired_at").is_not_null())
        .select(
            "job_id",
            "timeline",
            pl.col("execution_id").alias("taker"),
            pl.col("pod").alias("taker_pod"),
            pl.col("clock").alias("taker_clock"),
            pl.col("acquired_at").alias("taker_at"),
            pl.col("acquired_file").alias("taker_file"),
            pl.col("acquired_line").alias("taker_line"),
        )
        .collect()
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
    # where each timeline's logs end: a fact of the whole input (`leaselog.fleet`), not of these jobs
    log_end = fleet_of(ctx).timeline_ends()
    return (
        j.join(log_end, on="timeline", how="left")
        .with_columns(
            ms_expr("valid_until", "taker_at").alias("takeover_ms"),
            ms_expr("last_seen", "taker_at").alias("from_last_line_ms"),
        )
        .filter(pl.col("taker").is_not_null() | (pl.col("log_end") > pl.col("valid_until")))
        .sort("job_id", "last_seen")
    )


def detect(ctx: CheckContext) -> pl.DataFrame:
    """One row per crashed execution: taken over (with the takeover's figures) or not (the logs go on)."""
    slo = ctx.settings.takeover_slo_ms
    c = crashes(ctx)
    if c.height == 0:
        return pl.DataFrame(schema=DETECTED)
    taken = pl.col("taker").is_not_null()
    takeover, since_last = pl.col("takeover_ms"), pl.col("from_last_line_ms")
    c = c.with_columns(
        *certainty_columns(takeover.abs(), ("pod", "taker_pod"), ("clock", "taker_clock"), ctx.settings),
        *handover_skew_columns(
            c,
            "pod",
            "taker_pod",
            "takeover_ms",
            "confirm_latency_ms",
            taken & (pl.col("clock") == "wall") & (pl.col("taker_clock") == "wall"),
        ),
    )
    # the facts that order two pods' events (leaselog.checks.anchors) may prove the taker's clock runs behind
    # the crashed pod's by as much as the takeover is logged before the expiry (or within the skew bound)
    c = behind_columns(ctx, c, "pod", "taker_pod")
    covers = ((takeover < 0) & (-takeover - pl.col("behind_ms") <= ctx.settings.max_skew_ms)).fill_null(False)
    c = c.with_columns(
        # no certainty question without a takeover (one pod's own log)
        pl.when(taken & covers)
        .then(pl.lit("uncertain"))
        .when(taken)
        .then(pl.col("certainty"))
        .otherwise(pl.lit("certain"))
        .alias("certainty"),
        pl.when(taken).then(pl.col("caveat")).otherwise(pl.lit("")).alias("caveat"),
    )
    within = since_last <= slo
    # no negative figure: a taker that acquired before the lease expired is named as such (an uncertain
    # one: as far as the logs tell, the key was taken over when the lease ran out)
    figure = (
        pl.when(takeover >= 0)
        .then(takeover)
        .when(takeover.is_not_null() & (pl.col("certainty") == "uncertain"))
        .then(pl.lit(0.0))
    )
    evidence = pl.concat_list(
        _evidence("acquired_file", "acquired_line", "lease acquired"),
        _evidence("last_file", "last_line", "last line seen"),
        pl.when(taken).then(_evidence("taker_file", "taker_line", "takeover: next acquisition")),
    ).list.drop_nulls()
    rows = c.with_columns(
        pl.when(~taken | ~within).then(pl.lit(SEVERITY)).otherwise(pl.lit("info")).alias("severity"),
        pl.when(taken)
        .then(pl.concat_list("execution_id", "taker"))
        .otherwise(pl.concat_list("execution_id"))
        .alias("execution_ids"),
        pl.when(taken & (pl.col("pod") != pl.col("taker_pod")))
        .then(pl.concat_list("pod", "taker_pod"))
        .otherwise(pl.concat_list("pod"))
        .alias("pods"),
        pl.col("last_seen").alias("start"),
        pl.when(taken).then(pl.col("taker_at")).otherwise(pl.col("valid_until")).alias("end"),
        pl.when(taken).then(figure).alias("duration_ms"),
        evidence.alias("evidence"),
        pl.when(taken).then(within).alias("within"),
    )
    details = [
        orjson.dumps(
            {
                "fromLastLineMs": since if since is None or since >= 0 else None,
                "takeoverSloMs": slo,
                "withinTarget": within_target,
                **skew_details(bound),
                "leaseExpiredAt": None if valid_until is None else valid_until.isoformat(),
            }
        ).decode()
        for since, within_target, bound, valid_until in rows.select(
            "from_last_line_ms", "within", "skew_bound", "valid_until"
        ).iter_rows()
    ]
    return rows.with_columns(pl.Series("details", details, dtype=pl.String))


def _evidence(file: str, line: str, note: str) -> pl.Expr:
    """One evidence record, null when its line is unknown."""
    known = pl.col(file).is_not_null() & pl.col(line).is_not_null()
    return pl.when(known).then(pl.struct(file=pl.col(file), line=pl.col(line), note=pl.lit(note)))


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    slo = ctx.settings.takeover_slo_ms
    out: list[str] = []
    for r in rows.iter_rows(named=True):
        ck = r["clock"]
        ends = (
            f"{r['execution_id']} ({r['pod']})'s log of {r['job_id']} ends at {when(r['last_seen'], ck)} with no "
            "finish, stop or release: it crashed (or its log was cut)"
        )
        expired = r["valid_until"] is not None and r["last_seen"] > r["valid_until"]
        if expired:
            # it ran on as a zombie first (lease_outlived): the crash took no lease with it
            head = (
                f"{ends} after its lease had expired at {when(r['valid_until'], ck)}: it ran on without the "
                "lock (see lease_outlived), and the crash lost no lease, the key was free from that expiry."
            )
        else:
            head = f"{ends} holding a lease valid until {when(r['valid_until'], ck)}."
        if r["taker"] is None:
            out.append(
                f"{head} No other execution acquired the key in these logs, which go on until "
                f"{when(r['log_end'], ck)}: the job was not taken over."
            )
            continue
        takeover, since_last = r["takeover_ms"], r["from_last_line_ms"]
        if takeover is None:
            after_expiry = "with no known lease expiry"
        elif takeover >= 0:
            after_expiry = f"{format_duration(takeover)} after the lease expired"
        elif r["certainty"] == "uncertain":
            after_expiry = (
                f"as the lease expired (logged {format_duration(-takeover)} before it, which the pods' "
                "clocks cannot tell apart)"
            )
        else:
            after_expiry = (
                f"{format_duration(-takeover)} before the lease expired (two leases at once: see "
                "concurrent_leases)"
            )
        if since_last >= 0:
            after_last = f"{format_duration(since_last)} after the last line seen"
        else:
            after_last = f"{format_duration(-since_last)} before the last line seen (it was still logging)"
        behind = ""
        if r["behind_ms"] is not None and takeover is not None and takeover < 0:
            behind = (
                f" The logs prove {r['taker_pod']}'s clock runs at least {format_duration(r['behind_ms'])} behind "
                f"{r['pod']}'s (see clock_contradiction)."
            )
        out.append(
            f"{head} {r['taker']} ({r['taker_pod']}) took over at {when(r['taker_at'], r['taker_clock'])}: "
            f"{after_expiry}, {after_last}, "
            f"{'within' if r['within'] else 'over'} the {format_duration(slo)} takeover target."
            f"{r['skew_note']}{r['caveat']}{behind}"
        )
    return pl.Series("message", out, dtype=pl.String)


CHECK = Check(CODE, KIND, SEVERITY, detect, explain)
