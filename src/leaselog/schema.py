"""Every frame an `Analysis` exposes, documented in one place: columns, dtypes, one-line meanings.

    import leaselog.schema as schema
    schema.describe("executions")      # a polars frame: frame, column, dtype, meaning
    schema.schema("leases")            # the polars Schema the frame has
    schema.empty("renewals")           # an empty frame with that schema

`tests/test_api.py` holds this documentation and the real frames together (same columns, same dtypes, for a
real analysis of `sample_logs/` and for an empty one): a column added to a frame must be documented here.

Times are `Datetime("us", "UTC")` on one shared timeline. When a log has no wall clock (`clock` is
`"elapsed"` or `"order"`), times are pseudo-times from 2000-01-01 built from `elapsedMs` or line order, and
durations across pods on them are estimates.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = ["FRAMES", "FRAME_DOCS", "Column", "describe", "empty", "mismatches", "schema"]

_T = pl.Datetime("us", "UTC")
_S = pl.String()
_I = pl.Int64()
_F = pl.Float64()
_B = pl.Boolean()
_U32 = pl.UInt32()
# the events' columns of few distinct values (names, kinds): 4-byte codes instead of a string per row
_C = pl.Categorical()


@dataclass(frozen=True)
class Column:
    """One documented column."""

    name: str
    dtype: pl.DataType
    meaning: str


def _cols(*specs: tuple[str, pl.DataType, str]) -> tuple[Column, ...]:
    return tuple(Column(n, d, m) for n, d, m in specs)


FRAME_DOCS: dict[str, str] = {
    "events": "One row per lease event read from the logs (a canonical event), in input order.",
    "executions": "One row per execution: one attempt (executionId) at a job (jobId), with its interval.",
    "leases": "One row per lease acquisition: the period during which that execution held the lock.",
    "renewals": "One row per lease renewal attempt, with its outcome and the deadline it had to beat.",
    "findings": "One row per finding, in output order (as records: Analysis.finding_list).",
    "inputs": "One row per input file: its format and what happened to its lines.",
    "malformed": "One row per located malformed line (up to 1000 per file and reason; the rest are counted).",
}

_EXEC_KEY = (
    ("job_id", _S, "the logical request (jobId): the lock key the executions compete for"),
    (
        "execution_id",
        _S,
        "one attempt at the job: its executionId; without one, `jobId@pod#n` (runs of the job on that pod "
        "in time order); an id reused after its execution ended: `id#n`",
    ),
)

FRAMES: dict[str, tuple[Column, ...]] = {
    "events": _cols(
        ("t", _T, "when it happened on the shared timeline (wall clock after offsets, else pseudo-time)"),
        ("clock", _C, "where `t` comes from: wall (timestamps), elapsed (elapsedMs), order (line order)"),
        (
            "seq",
            _I,
            "position in the input (file order, then time within a file, then line): the tie-breaker "
            "for equal times",
        ),
        ("pod", _S, "the worker that logged it"),
        ("thread", _S, "the thread or worker process that logged it (thread, threadName, processName, ...)"),
        (
            "container_id",
            _S,
            "the container instance that logged it (kubernetes.docker_id, container.id, container_id): a "
            "restarted container has a new one",
        ),
        *_EXEC_KEY,
        ("identity", pl.Int8(), "how its execution was identified: an index into execution_runs.IDENTITIES"),
        ("event", _C, "canonical event name (job_triggered, lock_acquired, lease_renewal, ...)"),
        ("raw_event", _C, "the event name as logged, before alias mapping"),
        ("elapsed_ms", _F, "elapsedMs: a local monotonic duration, never a shared timeline"),
        (
            "clock_step_ms",
            _F,
            "ms taken off the logged time: its execution's wall clock stepped before this line, by as much "
            "as its elapsedMs shows (null: none)",
        ),
        (
            "new_origin",
            _B,
            "true on the job's first line on the pod after a process's start-up line: its elapsedMs counts "
            "from the new process's start (null: not such a line)",
        ),
        (
            "ts_resolution_ms",
            _F,
            "how finely the line's file writes its timestamps, ms (1000: whole seconds; 1: milliseconds): its "
            "times are truncated to it (leaselog.time_resolution; null: no wall-clock time)",
        ),
        ("lease_ms", _I, "leaseMs: the TTL granted (lock_acquired)"),
        ("fencing_token", _I, "fencing token of the lease (lock_acquired) or of a write (completion)"),
        ("owner", _S, "the owner value stored in the lock"),
        ("renewal_outcome", _S, "lease_renewal outcome: success, rejected, timeout or error"),
        ("latency_ms", _F, "how long the renewal call took"),
        ("late", _B, "lease_renewal: the worker logged its success as late (after its own local deadline)"),
        ("reason", _S, "why ownership was lost or a stop was requested"),
        ("status", _C, "job_finished status as logged"),
        (
            "released",
            _B,
            "lock_released: whether the release deleted the key (the article's release_deleted_1/0)",
        ),
        ("release_outcome", _S, "lock_released outcome when the release itself failed (e.g. error)"),
        ("outcome", _S, "completion outcome: accepted, duplicate or rejected"),
        ("trigger", _C, "job_triggered: what started it (kafka, stream, scheduler, retry, poll, http, ...)"),
        ("topic", _C, "message topic or stream"),
        ("partition", _I, "message partition"),
        ("offset", _I, "message offset"),
        ("message_id", _S, "message id (or key / stream entry id)"),
        ("delivery_count", _I, "how many times the message was delivered"),
        (
            "idle_ms",
            _F,
            "job_triggered of a redelivery: the message had been idle at least this long when claimed",
        ),
        (
            "entry_kept",
            _B,
            "lease_renewal: since the execution's previous lease line it reset its message's idle time",
        ),
        ("attempt", _I, "retry attempt number"),
        ("message", _S, "the human log message"),
        ("file", _S, "input file of the line (evidence)"),
        ("line", _I, "line number in that file, from 1 (evidence)"),
        ("fields", _S, "the whole flattened log record as JSON (for fields leaselog does not model)"),
    ),
    "executions": _cols(
        *_EXEC_KEY,
        ("pod", _S, "the worker that ran it (its first line's pod)"),
        ("thread", _S, "the thread or worker process of its first line"),
        (
            "execution_from",
            _S,
            "how it was identified: id, id+pod, id+sequence, pod+thread+sequence, pod+sequence, or "
            "`pod+sequence (runs not told apart)` (`id+sequence (runs not told apart)`: an id two runs "
            "share) when the logs cannot tell its lines from another run's",
        ),
        ("clock", _S, "clock of its first event: wall, elapsed or order"),
        ("first_seen", _T, "time of its first line"),
        ("last_seen", _T, "time of its last line: the last moment it is known to be alive"),
        ("first_seq", _I, "input position of its first line"),
        ("last_seq", _I, "input position of its last line"),
        ("triggered_at", _T, "job_triggered time"),
        ("triggered_line", _I, "line of job_triggered (evidence)"),
        ("triggered_file", _S, "file of job_triggered (evidence)"),
        ("trigger", _S, "what triggered it (kafka, scheduler, retry, ...)"),
        ("topic", _S, "trigger message topic or stream"),
        ("partition", _I, "trigger message partition"),
        ("offset", _I, "trigger message offset"),
        ("message_id", _S, "trigger message id"),
        ("delivery_count", _I, "trigger message delivery count"),
        ("attempt", _I, "retry attempt number"),
        ("acquired_at", _T, "lock_acquired time (null: it never logged an acquisition)"),
        ("acquired_seq", _I, "input position of the lock_acquired line"),
        ("lease_ms", _I, "TTL logged at acquisition (leaseMs)"),
        ("fencing_token", _I, "fencing token of its lease"),
        ("denied_at", _T, "lock_denied time: it asked for the lock and did not get it"),
        ("denied_line", _I, "line of lock_denied (evidence)"),
        ("denied_file", _S, "file of that line (evidence)"),
        ("started_at", _T, "job_started time"),
        ("ended_at", _T, "first job_finished or job_stopped time"),
        ("end_event", _S, "which of the two ended it: job_finished or job_stopped"),
        ("ownership_lost_at", _T, "ownership_lost time: it learned its lease was gone"),
        ("ownership_lost_line", _I, "line of ownership_lost (evidence)"),
        ("ownership_lost_file", _S, "file of that line (evidence)"),
        ("ownership_lost_reason", _S, "reason logged with ownership_lost"),
        ("stop_requested_at", _T, "job_stop_requested time"),
        ("stop_requested_line", _I, "line of job_stop_requested (evidence)"),
        ("stop_requested_file", _S, "file of that line (evidence)"),
        ("stop_reason", _S, "reason logged with job_stop_requested (e.g. ownership_uncertain)"),
        ("stopped_at", _T, "job_stopped time: confirmed stop"),
        ("stopped_line", _I, "line of job_stopped (evidence)"),
        ("stopped_file", _S, "file of that line (evidence)"),
        ("finished_at", _T, "job_finished time"),
        ("finished_line", _I, "line of job_finished (evidence)"),
        ("finished_file", _S, "file of that line (evidence)"),
        ("finish_status", _S, "job_finished status"),
        ("released_at", _T, "lock_released time"),
        ("released_line", _I, "line of lock_released (evidence)"),
        ("released_file", _S, "file of that line (evidence)"),
        (
            "release_deleted",
            _B,
            "whether its release deleted the key (false: someone else's lease was there)",
        ),
        ("release_outcome", _S, "release outcome when the release failed"),
        ("last_work_at", _T, "last line showing it doing the job (started, progress, finished, completion)"),
        ("last_work_line", _I, "line of that last work event (evidence)"),
        ("last_work_file", _S, "file of that line (evidence)"),
        ("renewals", _I, "lease_renewal lines"),
        ("renewal_failures", _I, "renewals that did not succeed (rejected, timeout, error)"),
        (
            "file",
            _S,
            "file of its first line; its lines can span files (rotation, stdout/stderr): pair each "
            "`<x>_line` with its own `<x>_file`",
        ),
        ("first_line", _I, "line of its first event (evidence)"),
        ("first_file", _S, "file of that line (evidence; the same as `file`)"),
        ("acquired_line", _I, "line of lock_acquired (evidence)"),
        ("acquired_file", _S, "file of that line (evidence)"),
        ("started_line", _I, "line of job_started (evidence)"),
        ("started_file", _S, "file of that line (evidence)"),
        ("ended_line", _I, "line of job_finished/job_stopped (evidence)"),
        ("ended_file", _S, "file of that line (evidence)"),
        ("last_line", _I, "line of its last event (evidence)"),
        ("last_file", _S, "file of its last event (evidence)"),
        ("n_events", _U32, "lease events it logged"),
        (
            "job_type",
            _S,
            "job id without its trailing instance id (report-42 -> report): groups runs by kind",
        ),
        ("timeline", _S, "which executions it can be compared with in time: `wall`, or its own file"),
        ("ttl_ms", _I, "TTL used: leaseMs, else the lease_ttl setting (null: unknown)"),
        ("start", _T, "execution interval start: started_at, else acquired_at, else first_seen"),
        (
            "end_kind",
            _S,
            "how it ended: finished, stopped, released, or open (the log just ends: a crash?); for an attempt "
            "that never ran (no interval: start, end, runtime_ms null): denied (the lock turned it away) or "
            "no_outcome (triggered, nothing after)",
        ),
        ("end", _T, "execution interval end: ended_at, else last_seen"),
        ("runtime_ms", _F, "end - start"),
        (
            "expires_at",
            _T,
            "its lease's expiry: last confirmed renewal (or acquisition) + TTL; renewals_unlogged: the next "
            "holder's acquisition, the latest it can have been (null: nobody took the key after it)",
        ),
        ("valid_until", _T, "its lease's end: an owner-checked release before expiry, else expires_at"),
        (
            "lease_end",
            _S,
            "how its lease ended: released, release_unknown (timed out or errored), expired, renewals_unlogged "
            "(the lock library logs no successful renewal: expired by expires_at at the latest), unknown_ttl "
            "(null: no lease)",
        ),
        ("last_confirmed_at", _T, "its lease's acquisition or last renewal that succeeded in time"),
        (
            "ownership_uncertain_at",
            _T,
            "first reason to doubt its ownership: failed/late renewal or ownership_lost",
        ),
        ("ownership_uncertain_line", _I, "line of that first doubt (evidence)"),
        ("ownership_uncertain_file", _S, "file of that line (evidence)"),
    ),
    "leases": _cols(
        *_EXEC_KEY,
        ("pod", _S, "the worker holding it"),
        ("clock", _S, "clock of the execution: wall, elapsed or order"),
        ("acquired_at", _T, "lock_acquired time: the lease's start"),
        ("ttl_ms", _I, "TTL: leaseMs, else the lease_ttl setting (null: unknown)"),
        ("fencing_token", _I, "fencing token granted with it"),
        ("released_at", _T, "lock_released time"),
        ("release_deleted", _B, "whether the release deleted the key"),
        ("file", _S, "file of the execution's first line (use acquired_file with acquired_line)"),
        ("acquired_line", _I, "line of lock_acquired (evidence)"),
        ("acquired_file", _S, "file of that line (evidence)"),
        ("last_confirmed_at", _T, "the acquisition or the last renewal that succeeded before expiry"),
        ("confirmed_renewals", _U32, "renewals that extended it in time"),
        ("last_confirmed_line", _I, "line of that acquisition or renewal (evidence)"),
        ("last_confirmed_file", _S, "file of that line (evidence)"),
        ("confirm_latency_ms", _F, "latency of that call: Redis started the TTL somewhere inside it"),
        ("expires_at", _T, "last_confirmed_at + TTL (renewals_unlogged: the next holder's acquisition)"),
        ("valid_until", _T, "the lease's end: an owner-checked release before expiry, else expires_at"),
        (
            "end_reason",
            _S,
            "released, release_unknown (a release that timed out or errored), expired, renewals_unlogged, or "
            "unknown_ttl",
        ),
    ),
    "renewals": _cols(
        *_EXEC_KEY,
        ("pod", _S, "the worker renewing"),
        ("t", _T, "when the renewal result was logged"),
        ("seq", _I, "input position of the line"),
        ("renewal_outcome", _S, "success, rejected, timeout or error"),
        ("latency_ms", _F, "how long the renewal call took"),
        ("file", _S, "input file (evidence)"),
        ("line", _I, "line number (evidence)"),
        ("clock", _S, "wall, elapsed or order"),
        ("ttl_ms", _I, "the lease's TTL"),
        ("deadline", _T, "when the lease it extends expired: previous confirmed point + TTL"),
        (
            "late",
            _B,
            "a success logged after the deadline, or that the worker logged as late (after its own local "
            "deadline): the worker cannot count on it (Redis may still have extended the lease)",
        ),
        ("prev_t", _T, "the previous renewal attempt (or the acquisition) of this execution"),
        ("prev_file", _S, "file of that previous line (evidence)"),
        ("prev_line", _I, "line of that previous line (evidence)"),
        ("prev_kind", _S, "what the previous line was: lock_acquired or lease_renewal"),
        ("gap_ms", _F, "t - prev_t: the spacing of renewal attempts (a long gap: a pause)"),
        ("late_by_ms", _F, "t - deadline (positive: after the lease had expired)"),
    ),
    "findings": _cols(
        ("code", _S, "stable check code, e.g. LL101"),
        ("kind", _S, "finding kind, e.g. overlapping_executions (see docs/PRODUCT.md)"),
        ("severity", _S, "error, warning or info"),
        ("certainty", _S, "certain, or uncertain when clock skew or missing wall clocks cannot decide"),
        ("job_id", _S, "the job it is about"),
        ("execution_ids", pl.List(_S), "every execution it is about"),
        ("pods", pl.List(_S), "the pods of those executions"),
        ("start", _T, "start of the span it describes"),
        ("end", _T, "end of the span it describes"),
        ("duration_ms", _F, "overlap, zombie time, stop delay or takeover latency (per kind)"),
        (
            "trigger",
            _S,
            "second_attempt only: abandoned, redelivery, duplicate_publish, scheduler, retry, poll, unknown",
        ),
        ("message", _S, "plain explanation in the incident's terms"),
        (
            "evidence",
            pl.List(pl.Struct({"file": _S, "line": _I, "note": _S})),
            "the log lines that prove it: file, line (from 1) and what the line shows",
        ),
        ("details", _S, "kind-specific figures as a JSON object (null: none), as in the JSON output"),
    ),
    "inputs": _cols(
        ("path", _S, "the input as named (`-` for stdin)"),
        ("format", _S, "detected or forced format (flat, logfmt, ecs, ...)"),
        ("lines", _I, "lines read: used + ignored + malformed"),
        ("used", _I, "lines that became lease events"),
        ("ignored", _I, "valid lines unrelated to leases"),
        ("malformed", _I, "lines that could not be read"),
        ("events", _I, "lease events taken from it"),
        ("error", _S, "why it could not be read at all (null: it was read)"),
    ),
    "malformed": _cols(
        ("file", _S, "input file"),
        ("line", _I, "line number, from 1"),
        ("reason", _S, "why the line could not be used"),
    ),
}


def _frame(name: str) -> tuple[Column, ...]:
    try:
        return FRAMES[name]
    except KeyError:
        raise KeyError(f"no frame {name!r}; frames: {', '.join(FRAMES)}") from None


def schema(frame: str) -> pl.Schema:
    """The documented polars Schema of one frame."""
    return pl.Schema([(c.name, c.dtype) for c in _frame(frame)])


def empty(frame: str) -> pl.DataFrame:
    """An empty frame with the documented schema."""
    return pl.DataFrame(schema=schema(frame))


def describe(frame: str | None = None) -> pl.DataFrame:
    """The documentation as a frame (frame, column, dtype, meaning), for one frame or all of them."""
    names = [frame] if frame is not None else list(FRAMES)
    rows = [
        {"frame": n, "column": c.name, "dtype": str(c.dtype), "meaning": c.meaning}
        for n in names
        for c in _frame(n)
    ]
    return pl.DataFrame(rows, schema={"frame": _S, "column": _S, "dtype": _S, "meaning": _S})


def mismatches(frame: str, df: pl.DataFrame) -> list[str]:
    """How a real frame differs from its documentation (empty when they agree), phrased as what to fix."""
    documented = schema(frame)
    actual = df.schema
    out = [
        f"{frame}.{c} ({actual[c]}) is not documented in leaselog/schema.py"
        for c in actual
        if c not in documented
    ]
    out += [
        f"{frame}.{c} is documented but the frame has no such column" for c in documented if c not in actual
    ]
    out += [
        f"{frame}.{c}: documented {documented[c]}, frame has {actual[c]}"
        for c in documented
        if c in actual and actual[c] != documented[c]
    ]
    return out
