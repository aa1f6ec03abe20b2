"""A lab run's flat rows re-logged as the JVM lock libraries print them, for the differential check: the
library's lines, read by its dialect (leaselog.reading.dialects), must give the same findings as the same
facts in leaselog's own vocabulary.

A library logs less than the lab's workers. For each library, `render_<library>(rows)` gives the lines the
library (and Spring's scheduler) would print in Spring Boot 3.5's default console layout, and
`facts_<library>(rows)` the flat rows reduced to exactly what those lines say (no execution id, the
scheduler's thread, only the events the library logs): the two must read the same.

- ShedLock: acquisitions (`Locked '..', lock will be held at most until T`, T = time + leaseMs), denials,
  KeepAlive's renewals (`Lock .. extended for PT..S`, `Can't extend lock ..`), and `Task finished, lock
  '..' released` (ShedLock does not say whether its unlock deleted the key: released is true).
- Redisson: the application's own lines without its renewals, plus the watchdog's `Can't update lock ..
  expiration` (old wording) for each renewal that did not succeed; the watchdog's successes are silent.
- RedisLockRegistry: `Acquired lock; RedisLock [..]`, `Released lock; RedisLock [..]`, and for a release
  that found the key gone, Spring's `Unexpected error occurred in scheduled task` with the expiry trace.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from leaselog.reproduce.rows import Row, iso, row_time
from leaselog.reproduce.shapes import SPRING_BANNER

__all__ = ["LIBRARIES", "facts", "render"]

THREAD = "scheduling-1"
KEEPALIVE_THREAD = "pool-2-thread-1"  # the ScheduledExecutorService a KeepAliveLockProvider is given
_EXPIRED = (
    "Lock was released in the store due to expiration. The integrity of data protected by this lock may "
    "have been compromised."
)


def _line(row: Row, level: str, logger: str, message: str, thread: str = THREAD) -> str:
    return f"{iso(row_time(row))} {level:>5} 1 --- [report-worker] [{thread:>15}] {logger:<40.40} : {message}"


def _lease_end(row: Row) -> str:
    return iso(row_time(row) + timedelta(milliseconds=int(row.get("leaseMs") or 0)))


def _shedlock(row: Row) -> list[str]:
    job, event = row.get("jobId"), row.get("event")
    if job is None:
        return []
    ex = "n.j.s.core.DefaultLockingTaskExecutor"
    keep = "n.j.s.support.KeepAliveLockProvider"
    if event == "lock_acquired":
        return [_line(row, "DEBUG", ex, f"Locked '{job}', lock will be held at most until {_lease_end(row)}")]
    if event == "lock_denied":
        return [_line(row, "DEBUG", ex, f"Not executing '{job}'. It's locked.")]
    if event == "lease_renewal":
        if (row.get("renewalOutcome") or "success") == "success":
            secs = int(row.get("leaseMs") or 0) / 1000
            return [_line(row, "TRACE", keep, f"Lock {job} extended for PT{secs:g}S", KEEPALIVE_THREAD)]
        return [_line(row, "WARN", keep, f"Can't extend lock {job}", KEEPALIVE_THREAD)]
    if event == "lock_released":
        return [_line(row, "DEBUG", ex, f"Task finished, lock '{job}' released")]
    return []


def _shedlock_fact(row: Row) -> Row | None:
    event = row.get("event")
    if "jobId" not in row or event not in ("lock_acquired", "lock_denied", "lease_renewal", "lock_released"):
        return None
    out: Row = {"ts": row["ts"], "pod": row["pod"], "jobId": row["jobId"], "event": event, "thread": THREAD}
    if event == "lock_acquired":
        out["leaseMs"] = row.get("leaseMs")
    if event == "lease_renewal":
        ok = (row.get("renewalOutcome") or "success") == "success"
        out["renewalOutcome"] = "success" if ok else "rejected"
        out["thread"] = KEEPALIVE_THREAD
        if ok:
            out["leaseMs"] = row.get("leaseMs")
    if event == "lock_released":
        # ShedLock's unlock deletes the key by name: no owner check (its dialect reads it so)
        out["released"] = True
        out["releaseOutcome"] = "unchecked"
    return out


def _redisson(row: Row) -> list[str]:
    event = row.get("event")
    if event == "lease_renewal":
        if (row.get("renewalOutcome") or "success") == "success":
            return []
        return [
            _line(
                row,
                "ERROR",
                "org.redisson.RedissonBaseLock",
                f"Can't update lock {row['jobId']} expiration",
                "redisson-timer-4-1",
            ),
            "org.redisson.client.RedisResponseTimeoutException: Redis server response timeout (3000 ms)",
            "\tat org.redisson.command.RedisExecutor.lambda$scheduleResponseTimeout$9(RedisExecutor.java:443)",
        ]
    if "jobId" not in row:
        return []
    pairs = " ".join(
        f"{k}={v}" for k, v in row.items() if k not in ("ts", "pod", "level", "logger", "message")
    )
    return [_line(row, "INFO", "c.e.report.ReportJob", f"{row.get('message', '')} {pairs}".strip())]


def _redisson_fact(row: Row) -> Row | None:
    if "jobId" not in row:
        return None
    if row.get("event") == "lease_renewal":
        if (row.get("renewalOutcome") or "success") == "success":
            return None
        return {
            "ts": row["ts"],
            "pod": row["pod"],
            "jobId": row["jobId"],
            "executionId": row.get("executionId"),
            "event": "lease_renewal",
            "renewalOutcome": "error",
        }
    return {k: v for k, v in row.items() if k not in ("level", "logger", "message")}


def _registry(row: Row) -> list[str]:
    job, event = row.get("jobId"), row.get("event")
    logger = "o.s.i.redis.util.RedisLockRegistry"
    lock = f"RedisLock [lockKey=lab:{job},lockedAt=2026-11-29@00:00:00.000, clientId=7d2e0c4a]"
    if event == "lock_acquired":
        return [_line(row, "DEBUG", logger, f"Acquired lock; {lock}")]
    if event == "lock_released" and row.get("released") is not False:
        return [_line(row, "DEBUG", logger, f"Released lock; {lock}")]
    if event == "lock_released":
        return [
            _line(
                row,
                "ERROR",
                "o.s.s.s.TaskUtils$LoggingErrorHandler",
                "Unexpected error occurred in scheduled task",
            ),
            f"java.util.ConcurrentModificationException: {_EXPIRED}",
            "\tat org.springframework.integration.redis.util.RedisLockRegistry$RedisLock.removeLockKey"
            "(RedisLockRegistry.java:581)",
        ]
    return []


def _registry_fact(row: Row) -> Row | None:
    event = row.get("event")
    if "jobId" not in row or event not in ("lock_acquired", "lock_released"):
        return None
    out: Row = {"ts": row["ts"], "pod": row["pod"], "jobId": row["jobId"], "event": event, "thread": THREAD}
    if event == "lock_released":
        out["released"] = row.get("released") is not False
    return out


LIBRARIES: dict[str, tuple[Callable[[Row], list[str]], Callable[[Row], Row | None]]] = {
    "shedlock": (_shedlock, _shedlock_fact),
    "redisson": (_redisson, _redisson_fact),
    "spring-redis-lock-registry": (_registry, _registry_fact),
}


def _with_lease(rows: list[Row]) -> list[Row]:
    """The rows with each renewal given its execution's lease length (the lab logs it at acquisition;
    KeepAlive's line says it on every extension)."""
    lease: dict[Any, Any] = {}
    out = []
    for r in rows:
        key = (r.get("jobId"), r.get("executionId"))
        if r.get("event") == "lock_acquired":
            lease[key] = r.get("leaseMs")
        elif r.get("event") == "lease_renewal" and r.get("leaseMs") is None and lease.get(key):
            r = {**r, "leaseMs": lease[key]}
        out.append(r)
    return out


def render(library: str, rows: list[Row]) -> list[str]:
    """One pod's rows as `library` (and Spring Boot's console) prints them, banner first."""
    encode = LIBRARIES[library][0]
    return [*SPRING_BANNER, *(x for r in _with_lease(rows) for x in encode(r))]


def facts(library: str, rows: list[Row]) -> list[dict[str, Any]]:
    """The same pod's rows reduced to what `library`'s lines say, as flat rows. ShedLock's acquisitions
    and denials are each a scheduler tick as well (its dialect reads them so)."""
    reduce = LIBRARIES[library][1]
    out: list[dict[str, Any]] = []
    for r in _with_lease(rows):
        f = reduce(r)
        if f is None:
            continue
        if library == "shedlock" and f["event"] in ("lock_acquired", "lock_denied"):
            out.append(
                {
                    **{k: f[k] for k in ("ts", "pod", "jobId", "thread")},
                    "event": "job_triggered",
                    "trigger": "scheduler",
                }
            )
        out.append(f)
    return out
