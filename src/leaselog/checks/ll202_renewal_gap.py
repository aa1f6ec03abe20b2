"""Renewals stopped or spaced out beyond the renewal interval: a process pause or a saturated executor.

Anti-pattern: a renewal interval that looks comfortable during normal operation fails when the process
is paused (GC, a frozen VM or container) or its executor is saturated. The gap shows in the log as a
long silence between two renewal attempts (a pause: nothing at all was logged), or as work lines with
no renewal between them (the renewal task starved or stopped while the job kept going).

Best practice: run renewal on its own scheduler, independent of the work loop; size the interval so a
renewal still fits before expiry after the longest pause and the slowest Redis response you have
measured; and check the local lease deadline before each unit of work, since a paused worker may
resume after another worker has started.

Rule: the interval is `--renewal-interval` when given, else the median spacing of the execution's own
on-schedule renewals: spacings between two consecutive attempts that both succeeded in time (the first
measured from the acquire): their median when there are three or more, the longer one when there are
only two. Retries after a failure follow a retry policy, not
the schedule, and never set the interval; nor do other executions or jobs (a pod's schedule is its own,
and a finding must not depend on which other jobs the logs hold). With fewer spacings nothing is
inferred and no gap is reported: in doubt, say nothing. A spacing longer than 1.5 x the interval is a
gap; so is a silence of renewals after the last successful one while the execution keeps doing work.
"""

from __future__ import annotations

import orjson
import polars as pl

from leaselog.checks.contract import DETECTED, Check, CheckContext
from leaselog.checks.frames import events_where
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Severity
from leaselog.reconstruct import EXEC_KEYS, WORK_EVENTS
from leaselog.timebase import ms_expr

CODE = "LL202"
KIND = "renewal_gap"
SEVERITY: Severity = "warning"

GAP_FACTOR = 1.5
MIN_SPACINGS = 3


def spacings(ctx: CheckContext) -> pl.DataFrame:
    """The renewals, each with the input position of the attempt before it (`start_seq`: the renewal or
    acquire that opened its spacing) and whether that attempt was on schedule (`prev_ok`: an acquire, or
    a renewal that succeeded in time)."""
    acquires = events_where(ctx, pl.col("event") == "lock_acquired", [*EXEC_KEYS, "seq"]).with_columns(
        pl.lit(True).alias("ok")
    )
    r = ctx.renewals.with_columns(
        ((pl.col("renewal_outcome") == "success") & ~pl.col("late")).fill_null(False).alias("ok")
    )
    # sorted by execution and position, "the attempt before, in the same execution" is the previous row
    # when that row is of the same execution (cheaper than `.over` with one group per execution)
    same = pl.all_horizontal(*(pl.col(k) == pl.col(k).shift(1) for k in EXEC_KEYS)).fill_null(False)
    order = (
        pl.concat([acquires, r.select(*EXEC_KEYS, "seq", "ok")], how="vertical_relaxed")
        .sort([*EXEC_KEYS, "seq"])
        .with_columns(
            pl.when(same).then(pl.col("seq").shift(1)).alias("start_seq"),
            (same & pl.col("ok").shift(1)).fill_null(False).alias("prev_ok"),
        )
        .select("seq", "start_seq", "prev_ok")
    )
    return r.join(order, on="seq", how="left")


def intervals(ctx: CheckContext, r: pl.DataFrame | None = None) -> pl.DataFrame:
    """The renewal interval each execution is held to: configured, or inferred (see the module doc).

    `r`: `spacings(ctx)` when the caller has it. Executions without an interval are left out.
    """
    if r is None:
        r = spacings(ctx)
    configured = ctx.settings.renewal_interval_ms
    if configured is not None:
        return (
            r.select(EXEC_KEYS)
            .unique(maintain_order=True)
            .with_columns(
                pl.lit(float(configured), dtype=pl.Float64).alias("interval_ms"),
                pl.lit("configured").alias("interval_source"),
            )
            .filter(pl.col("interval_ms") > 0)
        )
    on_schedule = r.filter(pl.col("ok") & pl.col("prev_ok") & (pl.col("gap_ms") > 0))
    return (
        on_schedule.group_by(EXEC_KEYS, maintain_order=True)
        .agg(
            pl.col("gap_ms").median().alias("median"),
            pl.col("gap_ms").max().alias("longest"),
            pl.len().alias("n"),
        )
        # three spacings give a median one odd spacing cannot move; with two, the longer one (the cautious
        # choice: a longer interval reports fewer gaps); with one, nothing
        .filter(pl.col("n") >= MIN_SPACINGS - 1)
        .select(
            *EXEC_KEYS,
            pl.when(pl.col("n") >= MIN_SPACINGS)
            .then(pl.col("median"))
            .otherwise(pl.col("longest"))
            .alias("interval_ms"),
            pl.lit("inferred").alias("interval_source"),
        )
    )


def gaps(ctx: CheckContext) -> pl.DataFrame:
    """Rows: one per gap, with its bounds, size, interval and the number of lines logged inside it."""
    sp = spacings(ctx)
    iv = intervals(ctx, sp)
    if iv.height == 0:
        return pl.DataFrame()
    # index of every event within its execution, to count what was logged inside a gap
    idx = ctx.events.sort("seq").select(
        "seq",
        pl.int_range(pl.len()).over(EXEC_KEYS).alias("idx"),
        pl.col("event").is_in(WORK_EVENTS).cast(pl.Int64).cum_sum().over(EXEC_KEYS).alias("work_idx"),
    )
    r = sp.join(iv, on=EXEC_KEYS, how="inner")
    mid = r.filter(pl.col("gap_ms") > GAP_FACTOR * pl.col("interval_ms")).select(
        *_gap_bounds("between", ("prev_t", "prev_file", "prev_line"), ("t", "file", "line")),
        "seq",
        "start_seq",
        "renewal_outcome",
        "late",
        "deadline",
        "late_by_ms",
    )
    # lines logged inside a between-renewals gap: events of the execution between its two bounds. (The
    # bounds are found by input position, never by file:line: one line can hold several records, as an
    # OTLP export's batch does, and a join on the line repeated the gap once per record on it.)
    mid = (
        mid.join(idx.rename({"idx": "i_end", "work_idx": "w_end"}), on="seq", how="left")
        .join(
            idx.rename({"seq": "start_seq", "idx": "i_start", "work_idx": "w_start"}),
            on="start_seq",
            how="left",
        )
        .with_columns(
            (pl.col("i_end") - pl.col("i_start") - 1).alias("lines_inside"),
            (pl.col("w_end") - pl.col("w_start")).alias("work_inside"),
        )
        .drop("i_end", "i_start", "w_end", "w_start")
    )
    # the longest silence inside the gap (no line of the execution at all): a pause shows as one long
    # silence even when the worker logs a line or two on waking up, a starved renewer does not
    silence = (
        ctx.events.sort("seq")
        .select(
            *EXEC_KEYS, "seq", ms_expr(pl.col("t").shift(1).over(EXEC_KEYS), pl.col("t")).alias("quiet_ms")
        )
        .join(mid.select(*EXEC_KEYS, "start_seq", pl.col("seq").alias("end_seq")), on=EXEC_KEYS, how="inner")
        .filter((pl.col("seq") > pl.col("start_seq")) & (pl.col("seq") <= pl.col("end_seq")))
        .group_by(*EXEC_KEYS, "end_seq")
        .agg(pl.col("quiet_ms").max().alias("longest_silence_ms"))
    )
    mid = mid.join(silence, left_on=[*EXEC_KEYS, "seq"], right_on=[*EXEC_KEYS, "end_seq"], how="left").drop(
        "start_seq", "seq"
    )
    # renewals that stopped: the last attempt succeeded, and work went on well past the interval
    last = (
        r.sort("seq")
        .group_by(EXEC_KEYS)
        .agg(pl.all().last())
        .filter((pl.col("renewal_outcome") == "success") & ~pl.col("late"))
        .join(
            ctx.executions.select(*EXEC_KEYS, "last_work_at", "last_work_line", "last_work_file", "n_events"),
            on=EXEC_KEYS,
            how="inner",
            suffix="_x",
        )
        .with_columns(ms_expr("t", "last_work_at").alias("gap_ms"))
        .filter(pl.col("gap_ms") > GAP_FACTOR * pl.col("interval_ms"))
    )
    if last.height:
        w = (
            events_where(ctx, pl.col("event").is_in(WORK_EVENTS))
            .join(last.select(*EXEC_KEYS, pl.col("t").alias("t0")), on=EXEC_KEYS)
            .filter(pl.col("t") > pl.col("t0"))
            .group_by(EXEC_KEYS)
            .agg(pl.len().alias("work_inside"))
        )
        last = last.join(w, on=EXEC_KEYS, how="left")
    tail = last.select(
        *_gap_bounds("trailing", ("t", "file", "line"), ("last_work_at", "last_work_file", "last_work_line")),
        "renewal_outcome",
        "late",
        pl.lit(None, dtype=pl.Int64).alias("lines_inside"),
        pl.col("work_inside").cast(pl.Int64)
        if "work_inside" in last.columns
        else pl.lit(None, dtype=pl.Int64).alias("work_inside"),
    )
    return pl.concat([mid, tail], how="diagonal_relaxed").sort("job_id", "gap_start")


def _gap_bounds(kind: str, start: tuple[str, str, str], end: tuple[str, str, str]) -> list[pl.Expr | str]:
    """A gap's columns: the execution, its renewal interval, and where the gap starts and ends (each bound
    given as the columns holding its time, file and line)."""
    return [
        *EXEC_KEYS,
        "pod",
        "clock",
        "interval_ms",
        "interval_source",
        pl.col(start[0]).alias("gap_start"),
        pl.col(end[0]).alias("gap_end"),
        "gap_ms",
        pl.col(start[1]).alias("start_file"),
        pl.col(start[2]).alias("start_line"),
        pl.col(end[1]).alias("end_file"),
        pl.col(end[2]).alias("end_line"),
        pl.lit(kind).alias("gap_kind"),
    ]


def detect(ctx: CheckContext) -> pl.DataFrame:
    """One row per gap (`gaps`), with the finding's columns."""
    g = gaps(ctx)
    if g.height == 0:
        return pl.DataFrame(schema=DETECTED)
    if "longest_silence_ms" not in g.columns:  # (no gap between two renewals, only trailing ones)
        g = g.with_columns(pl.lit(None, dtype=pl.Float64).alias("longest_silence_ms"))
    between = pl.col("gap_kind") == "between"
    evidence = pl.concat_list(
        _evidence("start_file", "start_line", pl.lit("last renewal (or acquire) before the gap")),
        _evidence(
            "end_file",
            "end_line",
            pl.when(between).then(pl.lit("next renewal attempt")).otherwise(pl.lit("still working")),
        ),
    ).list.drop_nulls()
    details = [
        orjson.dumps(
            {
                "intervalMs": interval,
                "intervalSource": source,
                "gapKind": kind,
                "linesInside": inside,
                "longestSilenceMs": silence,
            }
        ).decode()
        for interval, source, kind, inside, silence in g.select(
            "interval_ms", "interval_source", "gap_kind", "lines_inside", "longest_silence_ms"
        ).iter_rows()
    ]
    return g.with_columns(
        pl.concat_list("execution_id").alias("execution_ids"),
        pl.concat_list("pod").alias("pods"),
        pl.col("gap_start").alias("start"),
        pl.col("gap_end").alias("end"),
        pl.col("gap_ms").alias("duration_ms"),
        evidence.alias("evidence"),
        pl.Series("details", details, dtype=pl.String),
    )


def _evidence(file: str, line: str, note: pl.Expr) -> pl.Expr:
    """One evidence record, null when its line is unknown."""
    known = pl.col(file).is_not_null() & pl.col(line).is_not_null()
    return pl.when(known).then(pl.struct(file=pl.col(file), line=pl.col(line).cast(pl.Int64), note=note))


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    out: list[str] = []
    for r in rows.iter_rows(named=True):
        ck = r["clock"]
        who = f"{r['execution_id']} ({r['pod']})"
        iv = f"{format_duration(r['interval_ms'])} {r['interval_source']} renewal interval"
        size = format_duration(r["gap_ms"])
        if r["gap_kind"] == "between":
            if not r["lines_inside"]:
                cause = (
                    "nothing at all was logged in between: consistent with a process pause (GC, a frozen "
                    "VM or container)"
                )
            elif (r["longest_silence_ms"] or 0) > GAP_FACTOR * r["interval_ms"]:
                cause = (
                    f"it logged {r['lines_inside']} line(s) in between, but was completely silent for "
                    f"{format_duration(r['longest_silence_ms'])} of it: consistent with a process pause (GC, "
                    "a frozen VM or container)"
                )
            else:
                cause = (
                    f"it logged {r['lines_inside']} line(s) in between but did not renew: the renewal task "
                    "was starved (a saturated executor) or blocked"
                )
            message = (
                f"{who} went {size} without a renewal attempt on {r['job_id']} (from {when(r['gap_start'], ck)} "
                f"to {when(r['gap_end'], ck)}; {iv}): {cause}."
            )
            # too late only when it really came after the lease had run out (its deadline), whatever it said
            if (r["late_by_ms"] or 0) > 0:
                message += " The renewal that ended the gap came too late to keep the lease."
            elif r["renewal_outcome"] != "success":
                message += (
                    f" The renewal that ended the gap failed ({r['renewal_outcome']}) before the lease ran out"
                    f" at {when(r['deadline'], ck)} (see renewal_failed)."
                )
        else:
            message = (
                f"{who}'s renewals of {r['job_id']} stopped after {when(r['gap_start'], ck)} while it kept "
                f"working ({r['work_inside'] or 0} work line(s), the last at {when(r['gap_end'], ck)}): "
                f"{size} without renewal against a {iv}. The renewal task stopped or starved while the job "
                "went on."
            )
        out.append(message)
    return pl.Series("message", out, dtype=pl.String)


CHECK = Check(CODE, KIND, SEVERITY, detect, explain)
