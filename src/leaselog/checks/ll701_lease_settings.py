"""Lease settings against what the logs measured, per job type, with trial values to test next.

Anti-pattern: choosing a TTL by feel. A lease shorter than the job's runtime lets a second worker in
while the first keeps running (the article's ten-minute report); a renewal interval that looks
comfortable in normal operation fails when the process pauses or Redis answers slowly; and without a
maximum runtime, renewal keeps a stuck job's lease alive forever.

Best practice: measure job runtime, renewal latency, worker pauses and stopping delay first, then
choose: a renewal interval, a lease that leaves room for a renewal after the longest pause and the
slowest response before expiry, and a max-runtime that bounds the job even if renewals keep
succeeding. The suggestions here are trial values to test, not recommended production defaults.

Rule (why `sample_logs/clean/` stays quiet): one finding per job type (job id minus its trailing
numeric/hex id, `report-42` -> `report`) and configured TTL, only when there is something to say:
an execution outlived its lease, a renewal failed or came late, the renewal margin is thin (longest
gap between renewal attempts + p99 renewal latency > 2/3 of the TTL), or a job type without renewals
has a runtime above 80% of its TTL.

Arithmetic: interval R = `--renewal-interval`, else the median observed spacing, else 5s (the article's
trial value); lease = max(2 x (R + longest pause beyond R + p99 renewal latency), 3 x R, R + pause +
latency + longest observed stop), so a renewal still gets a second chance before expiry after the worst
pause seen and a worker that loses ownership can stop inside its lease; max-runtime = 1.5 x p99 runtime.
All rounded up to values people configure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import polars as pl

from leaselog.checks.contract import DETECTED, EVIDENCE, Check, CheckContext, Partial
from leaselog.checks.frames import at_file, ev
from leaselog.checks.phrasing import nice_ceil_ms
from leaselog.config import Settings
from leaselog.durations import format_duration
from leaselog.facts.stops import stop_delays
from leaselog.facts.zombies import zombies
from leaselog.findings import Severity
from leaselog.reconstruct import EXEC_KEYS
from leaselog.unlogged_renewals import UNLOGGED

CODE = "LL701"
KIND = "lease_settings"
SEVERITY: Severity = "warning"

THIN_MARGIN = 2 / 3
NO_RENEWAL_NEAR_TTL = 0.8
DEFAULT_INTERVAL_MS = 5_000.0
MAX_IDS = 20
_KEYS = ["job_type", "ttl_ms"]


def _q(col: str, q: float) -> pl.Expr:
    """Nearest-rank percentile (the ceil(q*n)-th smallest value): always an observed value."""
    c = pl.col(col).drop_nulls().sort()
    return c.get((c.len() * q).ceil().cast(pl.Int64).clip(lower_bound=1) - 1, null_on_oob=True)


def partial(ctx: CheckContext) -> Partial:
    """What these jobs contribute to the lease statistics: a slim row per execution that held a lease
    (`runs`), per renewal of one (`renewals`) and per confirmed stop (`stops`), each with its input
    position (`first_seq` / `seq`) so parts merge into the order one run over everything has."""
    # only executions that held a lease say anything about lease settings
    # outlived: the same measure as lease_outlived (LL102)
    zombie_keys = zombies(ctx).select(*EXEC_KEYS, pl.lit(True).alias("outlived"))
    # (lazy: each use below reads only its own columns; filtering the wide executions frame first copied
    # every one of its columns)
    ex = (
        ctx.executions.lazy()
        .filter(pl.col("ttl_ms").is_not_null() & pl.col("acquired_at").is_not_null())
        .join(zombie_keys.lazy(), on=EXEC_KEYS, how="left", maintain_order="left")
        .with_columns(
            pl.col("outlived").fill_null(False),
            # a runtime is never negative in a figure (a finish logged before its start: lines out of order)
            pl.col("runtime_ms").clip(lower_bound=0),
        )
    )
    runs = ex.select(
        *_KEYS,
        "first_seq",
        "execution_id",
        "execution_from",
        "pod",
        "runtime_ms",
        "outlived",
        # (each line with the file of the same event: an execution's lines can span files)
        at_file("started", "acquired").alias("start_file"),
        pl.coalesce("started_line", "acquired_line").alias("start_line"),
        at_file("ended", "last").alias("end_file"),
        pl.coalesce("ended_line", "last_line").alias("end_line"),
        "acquired_file",
        "acquired_line",
    ).collect()
    renewals = (
        ctx.renewals.join(
            ex.select(*EXEC_KEYS, *_KEYS, "lease_end", "execution_from").collect(), on=EXEC_KEYS, how="inner"
        )
        .select(
            *_KEYS,
            "seq",
            "execution_id",
            "execution_from",
            "latency_ms",
            # the spacing of renewals the library does not log (only their failures) is no spacing
            pl.when(pl.col("lease_end") != UNLOGGED).then(pl.col("gap_ms")).alias("gap_ms"),
            "renewal_outcome",
            "late",
            "file",
            "line",
        )
        .sort("seq")
    )
    stops = (
        stop_delays(ctx)
        # (every confirmed stop of a job type and TTL that held a lease counts, as in one run; a null TTL
        # joins no group)
        .filter(pl.col("confirmed") & pl.col("ttl_ms").is_not_null())
        .select(*_KEYS, "stop_delay_ms")
    )
    return {"runs": runs, "renewals": renewals, "stops": stops}


def merge(partials: Sequence[Partial], settings: Settings) -> pl.DataFrame:
    """One row per (job type, TTL) that has something to say, with its figures: from the parts of every
    split of the jobs (`partial`), exactly what one run over all of them gives."""
    s = lease_stats(partials, settings)
    if s.height == 0:
        return pl.DataFrame(schema=DETECTED)
    s = s.filter(pl.col("speak"))
    out: list[dict[str, object]] = [_figures(r, settings) for r in s.iter_rows(named=True)]
    return s.with_columns(
        pl.Series("execution_ids", [o["ids"] for o in out], dtype=pl.List(pl.String)),
        pl.col("pods").list.drop_nulls(),
        pl.Series("evidence", [o["evidence"] for o in out], dtype=EVIDENCE),
        pl.Series("details", [o["details"] for o in out], dtype=pl.String),
        pl.Series("lease", [o["lease"] for o in out], dtype=pl.Float64),
        pl.Series("max_rt", [o["max_rt"] for o in out], dtype=pl.Float64),
        pl.lit(None, dtype=pl.String).alias("job_id"),
    )


def _concat(partials: Sequence[Partial], name: str, order: str | None = None) -> pl.DataFrame:
    """The parts' `name` frames as one, sorted by `order` (a frame already in that order, as one part's
    is, is not copied to sort it)."""
    frame = pl.concat([p[name] for p in partials], how="vertical_relaxed")
    if order is None or frame[order].is_sorted():
        return frame
    return frame.sort(order)


def lease_stats(partials: Sequence[Partial], settings: Settings) -> pl.DataFrame:
    """One row per (job type, TTL): runtime, renewal and stop figures, and whether to speak up."""
    keys = _KEYS
    ex = _concat(partials, "runs", "first_seq")
    if ex.height == 0:
        return pl.DataFrame()
    runs = ex.group_by(keys).agg(
        pl.len().alias("runs"),
        _q("runtime_ms", 0.5).alias("p50"),
        _q("runtime_ms", 0.9).alias("p90"),
        _q("runtime_ms", 0.99).alias("p99"),
        pl.col("runtime_ms").max().alias("max_runtime"),
        pl.col("outlived").sum().alias("outlived"),
        pl.col("execution_id").filter(pl.col("outlived")).head(MAX_IDS).alias("outlived_ids"),
        pl.col("execution_from").filter(pl.col("outlived")).head(MAX_IDS).alias("outlived_from"),
        pl.col("pod").unique(maintain_order=True).alias("pods"),
        pl.col("start_file").sort_by("runtime_ms").last().alias("longest_file"),
        pl.col("start_line").sort_by("runtime_ms").last().alias("longest_start_line"),
        pl.col("end_file").sort_by("runtime_ms").last().alias("longest_last_file"),
        pl.col("end_line").sort_by("runtime_ms").last().alias("longest_end_line"),
        pl.col("acquired_file").filter(pl.col("outlived")).first().alias("outlived_file"),
        pl.col("acquired_line").filter(pl.col("outlived")).first().alias("outlived_line"),
    )
    rn = _concat(partials, "renewals", "seq")
    ren = rn.group_by(keys).agg(
        pl.len().alias("renewal_count"),
        _q("latency_ms", 0.5).alias("lat_p50"),
        _q("latency_ms", 0.99).alias("lat_p99"),
        pl.col("latency_ms").max().alias("lat_max"),
        pl.col("gap_ms").median().alias("gap_median"),
        pl.col("gap_ms").max().alias("gap_max"),
        ((pl.col("renewal_outcome") != "success") | pl.col("late")).sum().alias("renewal_failures"),
        pl.col("file").sort_by("gap_ms").last().alias("gap_file"),
        pl.col("line").sort_by("gap_ms").last().alias("gap_line"),
        pl.struct("execution_id", "execution_from")
        .filter((pl.col("renewal_outcome") != "success") | pl.col("late"))
        .unique(maintain_order=True)
        .head(MAX_IDS)
        .alias("failed"),
    )
    sd = (
        _concat(partials, "stops")
        .group_by(keys)
        .agg(pl.col("stop_delay_ms").max().alias("stop_max"), pl.len().alias("stops"))
    )
    s = runs.join(ren, on=keys, how="left").join(sd, on=keys, how="left")
    configured = settings.renewal_interval_ms
    s = s.with_columns(
        pl.coalesce(
            pl.lit(configured, dtype=pl.Float64), pl.col("gap_median"), pl.lit(DEFAULT_INTERVAL_MS)
        ).alias("interval"),
        pl.col("renewal_count").fill_null(0),
        pl.col("renewal_failures").fill_null(0),
    ).with_columns(
        (pl.col("gap_max") - pl.col("interval")).clip(lower_bound=0).fill_null(0.0).alias("pause"),
        pl.col("lat_p99").fill_null(0.0).alias("lat"),
        ((pl.col("gap_max") + pl.col("lat_p99").fill_null(0.0)) > THIN_MARGIN * pl.col("ttl_ms"))
        .fill_null(False)
        .alias("thin"),
        ((pl.col("renewal_count") == 0) & (pl.col("max_runtime") > NO_RENEWAL_NEAR_TTL * pl.col("ttl_ms")))
        .fill_null(False)
        .alias("near_ttl"),
    )
    return s.with_columns(
        (
            (pl.col("outlived") > 0) | (pl.col("renewal_failures") > 0) | pl.col("thin") | pl.col("near_ttl")
        ).alias("speak")
    ).sort("job_type", "ttl_ms")


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.0f}%" if d else "?"


def _terms(r: dict[str, Any]) -> list[tuple[float, str]]:
    """The lease suggestion's terms: (value, how it is computed)."""
    fd = format_duration
    interval = r["interval"]
    need = interval + r["pause"] + r["lat"]
    stop = r["stop_max"] or 0.0
    terms = [
        (
            2 * need,
            f"2 x (interval {fd(interval)} + longest pause {fd(r['pause'])} + p99 renewal latency "
            f"{fd(r['lat'])}) = {fd(2 * need)}",
        ),
        (3 * interval, f"3 x interval = {fd(3 * interval)}"),
    ]
    if stop:
        # after a failed renewal the worker still needs its stop time, inside the lease it has left
        terms.append(
            (need + stop, f"interval + pause + latency + longest stop {fd(stop)} = {fd(need + stop)}")
        )
    return terms


def _figures(r: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """A speaking row's suggestion, execution ids, evidence and details."""
    lease = nice_ceil_ms(max(t for t, _ in _terms(r)))
    max_rt = nice_ceil_ms(1.5 * (r["p99"] or 0.0))
    named = [
        *zip(r["outlived_ids"] or [], r["outlived_from"] or [], strict=True),
        *((f["execution_id"], f["execution_from"]) for f in r["failed"] or []),
    ]
    how = dict(reversed(named))  # (the first one named wins)
    ids = list(dict.fromkeys(i for i, _ in named))[:MAX_IDS]
    evidence = [
        *ev(r["longest_file"], r["longest_start_line"], "longest run starts"),
        *ev(r["longest_last_file"], r["longest_end_line"], "longest run ends"),
        *ev(r["outlived_file"], r["outlived_line"], "a run that outlived its lease"),
        *(ev(r["gap_file"], r["gap_line"], "longest renewal gap ends") if r["renewal_count"] else []),
    ]
    details = {
        "jobType": r["job_type"],
        "ttlMs": r["ttl_ms"],
        "runs": r["runs"],
        "runtimeMs": {"p50": r["p50"], "p90": r["p90"], "p99": r["p99"], "max": r["max_runtime"]},
        "outlived": r["outlived"],
        "outlivedShare": r["outlived"] / r["runs"] if r["runs"] else None,
        "renewalLatencyMs": {"p50": r["lat_p50"], "p99": r["lat_p99"], "max": r["lat_max"]},
        "longestRenewalGapMs": r["gap_max"],
        "longestPauseMs": r["pause"],
        "longestStopMs": r["stop_max"],
        "suggested": {"renewalIntervalMs": r["interval"], "leaseMs": lease, "maxRuntimeMs": max_rt},
    }
    # how each execution named was identified, where one was not by its own id (as every finding says)
    if any(how[i] != "id" for i in ids):
        details["executionFrom"] = [how[i] for i in ids]
    return {
        "ids": ids,
        "evidence": [{"file": e.file, "line": e.line, "note": e.note} for e in dict.fromkeys(evidence)],
        "details": orjson.dumps(details).decode(),
        "lease": lease,
        "max_rt": max_rt,
    }


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    fd = format_duration
    out: list[str] = []
    for r in rows.iter_rows(named=True):
        ttl = r["ttl_ms"]
        reasons = []
        if r["outlived"]:
            reasons.append(
                f"{r['outlived']} of {r['runs']} runs ({_pct(r['outlived'], r['runs'])}) outlived the lease"
            )
        if r["renewal_failures"]:
            reasons.append(f"{r['renewal_failures']} renewal(s) failed or came late")
        if r["thin"]:
            reasons.append(
                f"the longest renewal gap {fd(r['gap_max'])} plus p99 latency {fd(r['lat'])} uses more than "
                f"2/3 of the {fd(ttl)} TTL"
            )
        if r["near_ttl"] and not r["outlived"]:
            reasons.append(
                f"with no renewals, the longest run {fd(r['max_runtime'])} is within 20% of the TTL"
            )
        figures = (
            f"runtime p50 {fd(r['p50'])}, p90 {fd(r['p90'])}, p99 {fd(r['p99'])}, max {fd(r['max_runtime'])} "
            f"against a {fd(ttl)} TTL; {r['outlived']} of {r['runs']} ({_pct(r['outlived'], r['runs'])}) outlived "
            "the lease"
        )
        if r["renewal_count"]:
            figures += (
                f"; renewal latency p50 {fd(r['lat_p50'])}, p99 {fd(r['lat_p99'])}, max {fd(r['lat_max'])}; "
                f"renewal spacing median {fd(r['gap_median'])}, longest {fd(r['gap_max'])} "
                f"(a pause of {fd(r['pause'])} beyond the interval)"
            )
        else:
            figures += "; no renewals logged (renewal latency and pauses unmeasured)"
        figures += (
            f"; longest confirmed stop {fd(r['stop_max'])}"
            if r["stop_max"] is not None
            else "; no stops observed"
        )
        interval = r["interval"]
        src = (
            "configured"
            if ctx.settings.renewal_interval_ms is not None
            else "observed median"
            if r["gap_median"] is not None
            else "the article's trial value"
        )
        max_rt_raw = 1.5 * (r["p99"] or 0.0)
        suggestion = (
            f"Trial values to test, not production defaults: renewal interval {fd(interval)} ({src}); lease = "
            f"max({'; '.join(txt for _, txt in _terms(r))}) -> {fd(r['lease'])}, so a renewal fits before expiry "
            "even after the worst pause and slowest response seen, and a worker that loses ownership can stop "
            f"inside its lease; max-runtime = 1.5 x p99 runtime {fd(r['p99'])} = {fd(max_rt_raw)} -> "
            f"{fd(r['max_rt'])}, which bounds the job even if renewals keep succeeding."
        )
        out.append(f"{r['job_type']} jobs ({'; '.join(reasons)}): {figures}. {suggestion}")
    return pl.Series("message", out, dtype=pl.String)


def detect(ctx: CheckContext) -> pl.DataFrame:
    """`merge` of this analysis's own `partial`: the rows when the context holds the whole input."""
    return merge([partial(ctx)], ctx.settings)


CHECK = Check(CODE, KIND, SEVERITY, detect, explain, scope="fleet", partial=partial, merge=merge)
