"""Advice from the lock library itself, added to findings about jobs whose lease lines a library's dialect
read (leaselog.reading.dialects): where the library's own behaviour is the cause, and what it cannot
measure (and so what to log).

An advice is keyed by the dialect's rule labels (`raw_event` `<dialect>/<rule>`) seen among the job's
events and the finding's kind; each is a sentence appended to the finding's message.
"""

from __future__ import annotations

import polars as pl

from leaselog.reading.dialects import labelled

__all__ = ["library_advice"]

_SHEDLOCK_LONG = (
    " ShedLock: the run took longer than lockAtMostFor (the lease its `Locked '..', lock will be held at most "
    "until` line gives): raise lockAtMostFor above the longest run, or extend the lock while the task runs "
    "(KeepAliveLockProvider, or LockExtender.extendActiveLock). ShedLock's Redis provider deletes the key by "
    "name when the task ends (no owner check before 6.7, nor in later versions unless safeUpdate is on), so "
    "this run's unlock can delete the next holder's lock."
)
_SHEDLOCK_UNMEASURED = (
    " ShedLock logs no renewal of its locks (KeepAliveLockProvider's are at TRACE): to measure them, set "
    "logging.level.net.javacrumbs.shedlock.support=TRACE."
)
_REDISSON = (
    " Redisson's watchdog could not extend the lock: the lease lapses at most lockWatchdogTimeout (30 s by "
    "default) after its last good renewal, and another client can take it then."
)
_REDISSON_OLD = (
    " This is the old wording (`Can't update lock .. expiration`, Redisson before 3.44.0): in those versions "
    "the watchdog stops after this one failure and never extends the lock again; upgrade to 3.44.0 or later "
    "(renewal is retried), or keep the task shorter than lockWatchdogTimeout."
)
_REGISTRY = (
    " Spring Integration RedisLockRegistry found its key expired at unlock (`Lock was released in the store "
    "due to expiration`): the task ran longer than the registry's expireAfter (60 s by default). Without a "
    "renewal scheduler (setRenewalTaskScheduler, 6.4+) nothing renews the lock: set one, or raise "
    "expireAfter above the longest run. Its acquired line's lockedAt is stale: leaselog takes the line's time."
)
_QUARTZ = (
    " Quartz: another instance of the cluster took this run's instance for failed (no check-in for "
    "clusterCheckinInterval + 7.5 s: a GC pause, a frozen VM or container) and, the job requesting recovery, "
    "ran it again; Quartz never stops the first run. Make the job idempotent (or fence its writes), keep "
    "requestsRecovery off where a second run does harm, and keep pauses well under clusterCheckinInterval "
    "+ 7.5 s."
)

_RQ = (
    " RQ: the worker running the job stopped heartbeating (frozen, cut off) past the job's StartedJobRegistry "
    "entry, and a registry cleanup took the job as abandoned and put it back in the queue (its Retry); "
    "nothing stops the first work-horse, which ran on. Keep such a job idempotent (its effect written with "
    "a key of the job's), or take a lock of its own inside it; RQ's heartbeat keeps the entry, not the work."
)
_RQ_UNMEASURED = (
    " RQ logs its heartbeats only at DEBUG (the worker's `sent heartbeat` line): the registry lease lapsed "
    "somewhere between the start plus its length (job_monitoring_interval + 60 s) and the next start."
)

# (rule label prefix, advice) for findings about a lease whose renewals went unlogged (their details'
# `renewalsUnlogged`: LL101, LL102)
_UNLOGGED_ADVICE = (
    (
        "k8s-leader-election/",
        " client-go logs a successful renewal only at -v=5: run the component with -v=5 to measure when the "
        "lease lapsed.",
    ),
    ("rq/started", _RQ_UNMEASURED),
)

_NO_TTL = (
    " {library} never logs its lease length, and no --lease-ttl was given: whether and for how long a run "
    "outlived its lease cannot be measured; pass --lease-ttl ({what})."
)
# dialects whose acquisitions carry no lease length: (label prefix, library, what to pass)
_TTL_UNLOGGED = (
    (
        "spring-redis-lock-registry/acquired",
        "RedisLockRegistry",
        "the registry's expireAfter, 60 s by default",
    ),
    ("rq/started", "RQ", "the worker's heartbeat TTL, job_monitoring_interval + 60 s: 90 s by default"),
    ("quartz/", "Quartz", "7.5 s: an instance is taken for failed no sooner than 7.5 s after a job's start"),
)
_BULLMQ_STALLED = (
    " BullMQ: the job stalled (its lock lapsed with no renewal: the lock manager renews on the worker's "
    "event loop every lockRenewTime, lockDuration / 2 by default) and another worker took it. A processor "
    "that blocks the event loop past lockDuration (CPU-bound work, synchronous I/O) cannot renew: move that "
    "work to a sandboxed processor or a worker thread, or raise lockDuration above the longest block; and stop "
    "a processor that takes the `signal` argument when its renewal fails: worker.on('lockRenewalFailed', "
    "ids => ids.forEach(id => worker.cancelJob(id)))."
)
# (rule label prefix, finding kinds, advice)
_ADVICE: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("shedlock/locked", ("lease_outlived", "overlapping_executions"), _SHEDLOCK_LONG),
    ("shedlock/locked", ("renewal_gap", "lease_outlived"), _SHEDLOCK_UNMEASURED),
    (
        "quartz/recover",
        ("overlapping_executions", "lease_outlived", "ownership_loss_unhandled", "second_attempt"),
        _QUARTZ,
    ),
    ("redisson/watchdog-failed", ("renewal_failed", "lease_outlived", "overlapping_executions"), _REDISSON),
    ("redisson/watchdog-failed-old", ("renewal_failed",), _REDISSON_OLD),
    ("bullmq/stalled", ("lease_outlived", "overlapping_executions"), _BULLMQ_STALLED),
    (
        "spring-redis-lock-registry/expired",
        ("stale_release", "release_failed", "lease_outlived", "overlapping_executions"),
        _REGISTRY,
    ),
    ("rq/started", ("overlapping_executions", "lease_outlived"), _RQ),
)


def library_advice(
    findings: pl.DataFrame, events: pl.DataFrame, lease_ttl_ms: float | None = None
) -> pl.DataFrame:
    """`findings` (FINDING_SCHEMA) with each finding about a job a lock library logged given that
    library's advice (`lease_ttl_ms`: the --lease-ttl setting, when given). A no-op (and cheap) when no
    dialect read any line."""
    if not findings.height or not events.height:
        return findings
    lines = events.filter(labelled(events, lambda raw: raw.str.contains("/", literal=True))).select(
        "job_id", pl.col("raw_event").cast(pl.String)
    )
    if not lines.height:
        return findings
    labels: dict[str | None, set[str]] = {}
    for job, names in lines.group_by("job_id").agg(pl.col("raw_event").unique()).iter_rows():
        labels[job] = set(names)
    prefixes = [p for p, _, _ in _ADVICE] + [p for p, _ in _UNLOGGED_ADVICE]
    if not any(any(lbl.startswith(p) for p in prefixes for lbl in s) for s in labels.values()):
        return findings
    message = findings["message"].to_list()
    flag = pl.col("details").str.json_path_match("$.renewalsUnlogged") == "true"
    unlogged = findings.select(flag.fill_null(False))["details"].to_list()
    for i, (job, kind) in enumerate(findings.select("job_id", "kind").iter_rows()):
        seen = labels.get(job)
        if not seen:
            continue
        for prefix, kinds, advice in _ADVICE:
            if kind in kinds and any(lbl.startswith(prefix) for lbl in seen) and advice not in message[i]:
                message[i] += advice
        if unlogged[i]:
            for prefix, advice in _UNLOGGED_ADVICE:
                if any(lbl.startswith(prefix) for lbl in seen) and advice not in message[i]:
                    message[i] += advice
        if lease_ttl_ms is None and kind in ("overlapping_executions", "stale_release", "release_failed"):
            for prefix, library, what in _TTL_UNLOGGED:
                if any(lbl.startswith(prefix) for lbl in seen):
                    message[i] += _NO_TTL.format(library=library, what=what)
    return findings.with_columns(pl.Series("message", message, dtype=pl.String))
