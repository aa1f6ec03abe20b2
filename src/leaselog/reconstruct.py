"""Executions, leases and renewals reconstructed from canonical events (vectorised, one row per thing).

- An **execution** is one attempt (`executionId`) at a job (`jobId`): trigger, acquire, start, renewals,
  ownership loss, stop request, stop, finish, release. Its interval runs from start (or acquire, or its
  first line) to finish/stop, else to its release, else to its last line; with no finish, stop or release
  it is *open*: the log just ends (a crash, or a log cut short).
- An attempt that never acquired the lock and shows no sign of running (no acquire, start, progress,
  renewal or completion) **never ran**: it has no execution interval (`start`, `end`, `runtime_ms` are
  null) and its `end_kind` says why: `denied` (the lock turned it away: the lock doing its job) or
  `no_outcome` (a `job_triggered` line and nothing after it: a crash before acquiring, or a log cut short).
- A **lease** is what one acquisition gave: valid from the acquire until the last confirmed renewal +
  TTL (a renewal confirms only if it succeeded before the lease it extends had expired), or until an
  owner-checked release that deleted it, whichever comes first. A renewal that timed out or errored
  neither confirms nor ends the lease: a later owner-checked success that still came in time proves the
  key was still this owner's and extends it.
"""

from __future__ import annotations

import polars as pl
import polars.selectors as cs

from leaselog.config import Settings
from leaselog.events import as_string
from leaselog.execution_runs import identity_names
from leaselog.schema import schema
from leaselog.unlogged_renewals import UNLOGGED, bound_expiry, library_leases, run_to_job_end

EXEC_KEYS = ["job_id", "execution_id"]
# the executions frame's columns, in their documented order (`leaselog.schema`): the frame is built in
# whatever order is simplest and put in this one at the end, so a new column must be documented to appear
EXECUTION_COLUMNS = list(schema("executions"))

# Instance ids inside a job id: a UUID, or a separator-delimited segment of digits or of 6+ hex digits.
# Dropping them gives the job type: `report-42` -> `report`, `report-42-ecs` -> `report-ecs`,
# `sync_0f3a9c` -> `sync`, `report-2026-11-02` -> `report`.
_UUID = r"[-_.:/#]?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_ID_SEGMENT = r"[-_.:/#](?:[0-9]+|[0-9a-fA-F]{6,})([-_.:/#]|$)"

# Events that show an execution still doing its job (as opposed to cleaning up or reporting on its lease).
WORK_EVENTS = ("job_started", "job_progress", "job_finished", "completion")
# Events that show an attempt ran at all: without one of these (and without an acquire), an attempt that
# was denied the lock, or only triggered, never ran.
RAN_EVENTS = ("lock_acquired", "job_started", "job_progress", "lease_renewal", "completion")
# `end_kind` of attempts that never ran
NEVER_RAN = ("denied", "no_outcome")


def job_type(job_id: pl.Expr) -> pl.Expr:
    """The job type of a job id: the id without its numeric/hex instance ids."""
    stripped = job_id.str.replace_all(_UUID, "")
    # a match consumes the separator after it, so adjacent ids (`-2026-11-02`) need more than one pass
    for _ in range(3):
        stripped = stripped.str.replace_all(_ID_SEGMENT, "${1}")
    stripped = stripped.str.strip_chars("-_.:/#")
    return pl.when(stripped.str.len_chars() > 0).then(stripped).otherwise(job_id)


def _run_start(keys: list[str]) -> pl.Expr:
    """True on the first row of each run of equal keys, in a frame sorted by those keys.

    With a sort by (keys, seq), `shift`/`cum_sum` "within an execution" become plain column operations:
    polars' `.over(keys)` is slow with one group per execution (hundreds of thousands at fleet scale).
    """
    start = pl.lit(False)
    for k in keys:
        start = start | (pl.col(k) != pl.col(k).shift(1)).fill_null(True)
    return start


def _shift_within(col: str, start: pl.Expr) -> pl.Expr:
    """`pl.col(col).shift(1).over(keys)` for a frame sorted by (keys, order); `start` from `_run_start`."""
    return pl.when(~start).then(pl.col(col).shift(1))


def _cum_sum_within(x: pl.Expr, start: pl.Expr) -> pl.Expr:
    """`x.cum_sum().over(keys)` for a frame sorted by (keys, order); `start` from `_run_start`."""
    total = x.cum_sum()
    return total - pl.when(start).then(total - x).forward_fill()


def _first(event: str, col: str = "t") -> pl.Expr:
    return pl.col(col).filter(pl.col("event") == event).first()


def renewals(events: pl.DataFrame, leases: pl.DataFrame, anchors: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per renewal with outcome, latency and whether it came too late to count.

    `anchors` is `_anchors(events, leases)` when the caller has it already.
    """
    # select before filter: the events frame is wide (raw `fields`), only these columns are needed
    r = (
        events.select(
            *EXEC_KEYS,
            "pod",
            "t",
            "seq",
            "renewal_outcome",
            "latency_ms",
            "file",
            "line",
            "clock",
            "event",
            pl.col("late").alias("logged_late"),
        )
        .filter(pl.col("event") == "lease_renewal")
        .drop("event")
    )
    r = r.join(leases.select(*EXEC_KEYS, "ttl_ms"), on=EXEC_KEYS, how="left")
    # the deadline a renewal must beat: previous confirmed point + TTL (acquire for the first one)
    if anchors is None:
        anchors = _anchors(events, leases)
    r = (
        r.join_asof(
            anchors.select(*EXEC_KEYS, pl.col("t").alias("anchor_t"), "seq").sort("seq"),
            on="seq",
            by=EXEC_KEYS,
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        if r.height
        else r.with_columns(pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("anchor_t"))
    )
    r = (
        r.with_columns(
            (pl.col("anchor_t") + pl.duration(milliseconds=pl.col("ttl_ms"))).alias("deadline"),
        )
        .with_columns(
            # late by the lease's deadline, or by the worker's own (it logged it so)
            (
                (pl.col("renewal_outcome") == "success")
                & (
                    (pl.col("t") > pl.col("deadline")).fill_null(False)
                    | pl.col("logged_late").fill_null(False)
                )
            ).alias("late"),
        )
        .drop("anchor_t", "logged_late")
    )
    # spacing of renewal attempts (any outcome), the first measured from the acquire: what a renewal-gap
    # or pause finding measures. `prev_*` locate the line that opened the gap.
    acq = (
        events.select(*EXEC_KEYS, "t", "seq", "file", "line", "event")
        .filter(pl.col("event") == "lock_acquired")
        .select(*EXEC_KEYS, "t", "seq", "file", "line", pl.lit("lock_acquired").alias("kind"))
    )
    attempts = pl.concat(
        [acq, r.select(*EXEC_KEYS, "t", "seq", "file", "line", pl.lit("lease_renewal").alias("kind"))],
        how="vertical_relaxed",
    ).sort([*EXEC_KEYS, "seq"])
    start = _run_start(EXEC_KEYS)
    attempts = attempts.with_columns(
        _shift_within("t", start).alias("prev_t"),
        _shift_within("file", start).alias("prev_file"),
        _shift_within("line", start).alias("prev_line"),
        _shift_within("kind", start).alias("prev_kind"),
    ).filter(pl.col("kind") == "lease_renewal")
    return r.join(
        attempts.select("seq", "prev_t", "prev_file", "prev_line", "prev_kind"), on="seq", how="left"
    ).with_columns(
        ((pl.col("t") - pl.col("prev_t")).dt.total_microseconds() / 1000).alias("gap_ms"),
        ((pl.col("t") - pl.col("deadline")).dt.total_microseconds() / 1000).alias("late_by_ms"),
    )


def _anchors(events: pl.DataFrame, leases: pl.DataFrame) -> pl.DataFrame:
    """Points that (re)start a lease's TTL: the acquire and each renewal that succeeded while it held.

    Renewals that failed (timed out, errored, rejected) confirm nothing and are left out: they do not
    move the deadline. A success counts when the lease may still have held as Redis ran it: its request
    went out before the previous confirmed point + TTL (Redis ran it somewhere inside its latency), or a
    renewal that *timed out* went out before that deadline (Redis may have run it after the client gave
    up, and an owner-checked success after it proves that it did: the key was still this owner's). Such
    a success is still *late* for the worker, which could not know (`renewals`), but Redis extended the
    lease. A renewal that errored was refused and kept nothing alive. The chain is cut at the first
    success that could not have held: after it, the lease is gone and later "successes" cannot revive it.
    """
    ttl = leases.select(*EXEC_KEYS, "ttl_ms")
    is_acq = pl.col("event") == "lock_acquired"
    is_ok = is_acq | (pl.col("renewal_outcome") == "success")
    pts = (
        events.select(*EXEC_KEYS, "t", "seq", "event", "renewal_outcome", "file", "line", "latency_ms")
        .filter(
            is_acq
            | ((pl.col("event") == "lease_renewal") & pl.col("renewal_outcome").is_in(["success", "timeout"]))
        )
        .join(ttl, on=EXEC_KEYS, how="inner")
        .sort([*EXEC_KEYS, "seq"])
    )
    start = _run_start(EXEC_KEYS)
    pts = pts.with_columns(
        start.cum_sum().alias("_gid"),
        _cum_sum_within(is_acq.cast(pl.Int64), start).alias("n_acq"),
        (pl.col("t") - pl.duration(milliseconds=pl.col("latency_ms").fill_null(0.0))).alias("_sent"),
    ).filter(pl.col("n_acq") >= 1)

    def before(value: pl.Expr, where: pl.Expr, name: str) -> pl.Expr:
        """`value` at the latest earlier row of the same execution where `where` holds (or null)."""
        at, gid = pl.when(where).then(value).shift(1), pl.when(where).then(pl.col("_gid")).shift(1)
        return pl.when(gid.forward_fill() == pl.col("_gid")).then(at.forward_fill()).alias(name)

    # the previous success or acquire (up to the first break every one of them is confirmed), and the
    # latest timed-out renewal sent before its deadline
    pts = pts.with_columns(
        before(pl.col("t") + pl.duration(milliseconds=pl.col("ttl_ms")), is_ok, "_deadline"),
        before(pl.col("seq"), is_ok, "_conf_seq"),
    )
    pts = pts.with_columns(
        before(pl.col("seq"), ~is_ok & (pl.col("_sent") <= pl.col("_deadline")), "_pending")
    )
    ok = is_acq | (pl.col("_sent") <= pl.col("_deadline")) | (pl.col("_pending") > pl.col("_conf_seq"))
    # a break is a success that could not have held; everything from the first break on is dropped
    pts = pts.filter(is_ok).with_columns(
        _cum_sum_within((~ok.fill_null(False)).cast(pl.Int32), _run_start(EXEC_KEYS)).alias("breaks")
    )
    return (
        pts.filter(pl.col("breaks") == 0)
        .select(*EXEC_KEYS, "t", "seq", "event", "file", "line", "latency_ms")
        .sort("seq")
    )


def elapsed_bounds(events: pl.DataFrame) -> pl.DataFrame:
    """elapsedMs at each execution's start, acquire and end, for executions without a wall clock.

    Without a wall clock, durations *within* one pod come from its own monotonic clock, not from the
    pseudo timeline (which line order can stretch). One row per execution; nulls where not logged.
    """
    terminal = pl.col("event").is_in(["job_finished", "job_stopped"])
    return (
        events.filter(pl.col("clock") != "wall")
        .sort("seq")
        .group_by(EXEC_KEYS)
        .agg(
            pl.coalesce(
                _first("job_started", "elapsed_ms"),
                _first("lock_acquired", "elapsed_ms"),
                pl.col("elapsed_ms").drop_nulls().first(),
            ).alias("start_elapsed_ms"),
            _first("lock_acquired", "elapsed_ms").alias("acquired_elapsed_ms"),
            pl.coalesce(
                pl.col("elapsed_ms").filter(terminal).first(), pl.col("elapsed_ms").drop_nulls().last()
            ).alias("end_elapsed_ms"),
        )
    )


# Per execution, the first event of each of these kinds (and of what each column of it names).
_FIRST: dict[str, list[tuple[str, str]]] = {
    "job_triggered": [
        ("t", "triggered_at"),
        ("line", "triggered_line"),
        ("file", "triggered_file"),
        ("trigger", "trigger"),
        ("topic", "topic"),
        ("partition", "partition"),
        ("offset", "offset"),
        ("message_id", "message_id"),
        ("delivery_count", "delivery_count"),
        ("attempt", "attempt"),
    ],
    "lock_acquired": [
        ("t", "acquired_at"),
        ("seq", "acquired_seq"),
        ("lease_ms", "lease_ms"),
        ("fencing_token", "fencing_token"),
        ("line", "acquired_line"),
        ("file", "acquired_file"),
    ],
    "lock_denied": [("t", "denied_at"), ("line", "denied_line"), ("file", "denied_file")],
    "job_started": [("t", "started_at"), ("line", "started_line"), ("file", "started_file")],
    "terminal": [("t", "ended_at"), ("event", "end_event"), ("line", "ended_line"), ("file", "ended_file")],
    "ownership_lost": [
        ("t", "ownership_lost_at"),
        ("line", "ownership_lost_line"),
        ("file", "ownership_lost_file"),
        ("reason", "ownership_lost_reason"),
    ],
    "job_stop_requested": [
        ("t", "stop_requested_at"),
        ("line", "stop_requested_line"),
        ("file", "stop_requested_file"),
        ("reason", "stop_reason"),
    ],
    "job_stopped": [("t", "stopped_at"), ("line", "stopped_line"), ("file", "stopped_file")],
    "job_finished": [
        ("t", "finished_at"),
        ("line", "finished_line"),
        ("file", "finished_file"),
        ("status", "finish_status"),
    ],
    "lock_released": [
        ("t", "released_at"),
        ("line", "released_line"),
        ("file", "released_file"),
        ("released", "release_deleted"),
        ("release_outcome", "release_outcome"),
    ],
}
# ... and the last event that shows it still doing its job, and the first and last of all its lines
_LAST_WORK = [("t", "last_work_at"), ("line", "last_work_line"), ("file", "last_work_file")]
_FIRST_ROW = [
    ("pod", "pod"),
    ("thread", "thread"),
    ("identity", "identity"),
    ("clock", "clock"),
    ("file", "file"),
    ("line", "first_line"),
    ("file", "first_file"),
]
_LAST_ROW = [("line", "last_line"), ("file", "last_file")]


def _per_execution(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per execution (in order of first appearance) with what its events say.

    The aggregation only finds *which row* holds each execution's first acquire, first stop, ... (row
    numbers); the values are then gathered from those rows. Aggregating every value column through a
    filter instead held ~0.5 GB of intermediates at 230 000 executions, for the same result.
    """
    event = pl.col("event")
    renewal = event == "lease_renewal"
    kinds: dict[str, pl.Expr] = {name: event == name for name in _FIRST if name != "terminal"}
    kinds["terminal"] = event.is_in(["job_finished", "job_stopped"])
    row = pl.col("_row")
    rows = (
        ev.select(
            *EXEC_KEYS,
            "event",
            "renewal_outcome",
            "t",
            "seq",
            pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"),
        )
        .group_by(EXEC_KEYS, maintain_order=True)
        .agg(
            row.first().alias("_first_row"),
            row.last().alias("_last_row"),
            *(row.filter(is_kind).first().alias(f"_{name}_row") for name, is_kind in kinds.items()),
            row.filter(event.is_in(WORK_EVENTS)).last().alias("_last_work_row"),
            pl.col("t").min().alias("first_seen"),
            pl.col("t").max().alias("last_seen"),
            pl.col("seq").min().alias("first_seq"),
            pl.col("seq").max().alias("last_seq"),
            renewal.sum().cast(pl.Int64).alias("renewals"),
            (renewal & (pl.col("renewal_outcome") != "success"))
            .sum()
            .cast(pl.Int64)
            .alias("renewal_failures"),
            pl.len().alias("n_events"),
            event.is_in(RAN_EVENTS).sum().cast(pl.Int64).alias("_n_ran"),
            (event == "job_triggered").sum().cast(pl.Int64).alias("_n_triggered"),
        )
    )

    def gather(at: str, picks: list[tuple[str, str]]) -> dict[str, pl.Series]:
        # (the events' few-valued columns are Categorical; an execution's are strings)
        return {name: as_string(ev[col].gather(rows[at])).alias(name) for col, name in picks}

    cols: dict[str, pl.Series] = {k: rows[k] for k in EXEC_KEYS}
    cols |= gather("_first_row", _FIRST_ROW)
    cols |= gather("_last_row", _LAST_ROW)
    for name, picks in _FIRST.items():
        cols |= gather(f"_{name}_row", picks)
    cols |= gather("_last_work_row", _LAST_WORK)
    cols |= {k: rows[k] for k in ("first_seen", "last_seen", "first_seq", "last_seq")}
    cols |= {k: rows[k] for k in ("renewals", "renewal_failures", "n_events", "_n_ran", "_n_triggered")}
    return pl.DataFrame(cols)


def _attach(ex: pl.DataFrame, per_execution: pl.DataFrame) -> pl.DataFrame:
    """`ex.join(per_execution, on=EXEC_KEYS, how="left")`, keeping ex's rows and order, without copying ex.

    Only the keys take part in the join; the new columns are then set beside ex's (a join of the whole
    frame would copy its ~80 columns, each time).
    """
    matched = ex.select(EXEC_KEYS).join(per_execution, on=EXEC_KEYS, how="left", maintain_order="left")
    return ex.hstack(matched.drop(EXEC_KEYS))


def reconstruct(events: pl.DataFrame, settings: Settings) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Return (executions, leases, renewals)."""
    # build_events already orders by seq; re-sorting the wide frame costs more than everything else here
    ev = events if events["seq"].is_sorted() else events.sort("seq")
    default_ttl = settings.lease_ttl_ms
    ex = _per_execution(ev).with_columns(identity_names().alias("execution_from")).drop("identity")
    library = library_leases(ev)  # what lock libraries leave unlogged (None: no such library's line)
    # an attempt that never ran: denied the lock, or triggered and nothing after (see the module doc)
    never_ran = (pl.col("_n_ran") == 0) & (
        pl.col("denied_at").is_not_null() | (pl.col("_n_triggered") == pl.col("n_events"))
    )
    ex = (
        ex.with_columns(never_ran.alias("_never_ran"))
        .with_columns(
            job_type(pl.col("job_id")).alias("job_type"),
            # executions can only be compared in time on one timeline: the shared wall clock, or (logs
            # without one) the pseudo timeline of their own file
            pl.when(pl.col("clock") == "wall")
            .then(pl.lit("wall"))
            .otherwise(pl.col("file"))
            .alias("timeline"),
            pl.coalesce("lease_ms", pl.lit(default_ttl).cast(pl.Int64)).alias("ttl_ms"),
            pl.when(~pl.col("_never_ran"))
            .then(pl.coalesce("started_at", "acquired_at", "first_seen"))
            .alias("start"),
            pl.when(pl.col("_never_ran") & pl.col("denied_at").is_not_null())
            .then(pl.lit("denied"))
            .when(pl.col("_never_ran"))
            .then(pl.lit("no_outcome"))
            .when(pl.col("ended_at").is_not_null())
            .then(pl.col("end_event").str.replace("job_", ""))
            .when(pl.col("released_at").is_not_null())
            .then(pl.lit("released"))
            .otherwise(pl.lit("open"))
            .alias("end_kind"),
            # last line of the execution, wherever it stands: the moment it is last known to be alive
            pl.when(~pl.col("_never_ran")).then(pl.coalesce("ended_at", "last_seen")).alias("end"),
        )
        .pipe(run_to_job_end, ev, library)
        .pipe(_attach, elapsed_bounds(ev))
        .with_columns(
            pl.when(pl.col("_never_ran"))
            .then(None)
            .when(pl.col("start_elapsed_ms").is_not_null() & pl.col("end_elapsed_ms").is_not_null())
            .then(pl.col("end_elapsed_ms") - pl.col("start_elapsed_ms"))
            .otherwise((pl.col("end") - pl.col("start")).dt.total_microseconds().truediv(1000))
            .alias("runtime_ms"),
        )
        .drop("start_elapsed_ms", "acquired_elapsed_ms", "end_elapsed_ms")
    )

    # (select, then filter: filtering first would copy all ~80 columns of every execution)
    leases_base = ex.select(
        *EXEC_KEYS,
        "pod",
        "clock",
        "acquired_at",
        "ttl_ms",
        "fencing_token",
        "released_at",
        "release_deleted",
        "file",
        "acquired_line",
        "acquired_file",
    ).filter(pl.col("acquired_at").is_not_null())
    anchors = _anchors(ev, leases_base)
    last_anchor = (
        anchors.sort("seq")
        .group_by(EXEC_KEYS)
        .agg(
            pl.col("t").max().alias("last_confirmed_at"),
            (pl.col("event") == "lease_renewal").sum().alias("confirmed_renewals"),
            # where the lease's final expiry was set, and how long that call took: Redis started the TTL
            # somewhere inside that latency, so the logged expiry is late by up to this much
            pl.col("line").last().alias("last_confirmed_line"),
            pl.col("file").last().alias("last_confirmed_file"),
            pl.col("latency_ms").last().alias("confirm_latency_ms"),
        )
    )
    leases = (
        leases_base.join(last_anchor, on=EXEC_KEYS, how="left")
        .join(ex.select(*EXEC_KEYS, "release_outcome"), on=EXEC_KEYS, how="left")
        .with_columns(
            (pl.col("last_confirmed_at") + pl.duration(milliseconds=pl.col("ttl_ms"))).alias("expires_at"),
        )
        .pipe(bound_expiry, library)
        .with_columns(
            # released before the expiry (an unlogged lease that nobody took over has no known expiry: any
            # release of it came before)
            (
                (pl.col("released_at") <= pl.col("expires_at"))
                | (pl.col("unlogged") & pl.col("expires_at").is_null() & pl.col("released_at").is_not_null())
            ).alias("_in_time"),
        )
        .with_columns(
            # a release that timed out or errored may have deleted the key (Redis ran it, the reply was
            # lost): from then on the lease is no longer proven valid, and another owner's acquisition
            # is no evidence of two leases at once
            (
                pl.col("release_deleted").is_null()
                & pl.col("release_outcome").is_in(["timeout", "error"])
                & pl.col("_in_time")
            ).alias("_release_unknown"),
        )
        .with_columns(
            pl.when(
                (pl.col("release_deleted").fill_null(False) & pl.col("_in_time")) | pl.col("_release_unknown")
            )
            .then(pl.col("released_at"))
            .otherwise(pl.col("expires_at"))
            .alias("valid_until"),
            pl.when(pl.col("ttl_ms").is_null())
            .then(pl.lit("unknown_ttl"))
            .when(pl.col("release_deleted").fill_null(False) & pl.col("_in_time"))
            .then(pl.lit("released"))
            .when(pl.col("_release_unknown"))
            .then(pl.lit("release_unknown"))
            .when(pl.col("unlogged"))
            .then(pl.lit(UNLOGGED))
            .otherwise(pl.lit("expired"))
            .alias("end_reason"),
        )
        .drop("_release_unknown", "release_outcome", "_in_time", "unlogged")
    )
    ex = _attach(
        ex, leases.select(*EXEC_KEYS, "expires_at", "valid_until", "end_reason", "last_confirmed_at")
    )
    ex = ex.rename({"end_reason": "lease_end"})
    rn = renewals(ev, leases_base, anchors)
    ex = _attach(ex, _first_doubt(ev, rn, last_anchor))
    # (what the events' Categorical columns gave these frames is held as strings, as documented)
    strings = cs.categorical().cast(pl.String)
    return (
        ex.select(EXECUTION_COLUMNS).with_columns(strings),
        leases.with_columns(strings),
        rn.with_columns(strings),
    )


def _first_doubt(ev: pl.DataFrame, rn: pl.DataFrame, last_anchor: pl.DataFrame) -> pl.DataFrame:
    """Per execution, the first moment it had reason to doubt its ownership, and the line that says so.

    A doubt is a rejected renewal or an explicit `ownership_lost` (the key is someone else's), a success
    that came after the lease's deadline (a late success is a failure too: the article says it "cannot
    justify another full lease"), or a renewal that timed out or errored and was never followed by a
    confirmed one (a later in-time, owner-checked success proves the key was still its own).
    """
    keep = [*EXEC_KEYS, "t", "seq", "line", "file"]
    lost = (pl.col("event") == "ownership_lost") | (
        (pl.col("event") == "lease_renewal") & (pl.col("renewal_outcome") == "rejected")
    )
    failed = rn.filter(
        pl.col("renewal_outcome").is_not_null() & ~pl.col("renewal_outcome").is_in(["success", "rejected"])
    )
    unresolved = (
        failed.join(last_anchor.select(*EXEC_KEYS, "last_confirmed_at"), on=EXEC_KEYS, how="left")
        .filter(pl.col("last_confirmed_at").is_null() | (pl.col("t") > pl.col("last_confirmed_at")))
        .select(keep)
    )
    doubts = pl.concat(
        [ev.lazy().filter(lost).select(keep).collect(), unresolved, rn.filter(pl.col("late")).select(keep)],
        how="vertical_relaxed",
    )
    return (
        doubts.sort("t", "seq")
        .group_by(EXEC_KEYS, maintain_order=True)
        .first()
        .select(
            *EXEC_KEYS,
            pl.col("t").alias("ownership_uncertain_at"),
            pl.col("line").alias("ownership_uncertain_line"),
            pl.col("file").alias("ownership_uncertain_file"),
        )
    )
