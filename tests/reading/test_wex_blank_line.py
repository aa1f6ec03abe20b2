"""Spring Boot's `%wEx` prints one blank line between a record and its stack trace: the trace still
belongs to the record (RedisLockRegistry's expiry at unlock is only recognised through it)."""

from __future__ import annotations

from pathlib import Path

from test_formats import read

_HEAD = "1 --- [report-service] [   scheduling-1] "
_ACQ = (
    "2026-11-29T10:00:00.017Z DEBUG " + _HEAD + "o.s.i.redis.util.RedisLockRegistry       : Acquired lock; "
    "RedisLock [lockKey=reports:nightly-export,lockedAt=1970-01-01@00:00:00.000, clientId=4c1b9d0e]"
)
_ERR = (
    "2026-11-29T10:01:22.409Z ERROR " + _HEAD + "o.s.s.s.TaskUtils$LoggingErrorHandler    : "
    "Unexpected error occurred in scheduled task"
)
_TRACE = [
    "java.util.ConcurrentModificationException: Lock was released in the store due to expiration. "
    "The integrity of data protected by this lock may have been compromised.",
    "\tat org.springframework.integration.redis.util.RedisLockRegistry$RedisLock.unlock"
    "(RedisLockRegistry.java:631) ~[spring-integration-redis-6.4.1.jar:6.4.1]",
]


def test_wex_blank_line_keeps_the_trace_with_its_record(tmp_path: Path) -> None:
    a = read(tmp_path, "pod-a.log", [_ACQ, _ERR, "", *_TRACE, ""])
    assert a.events["event"].to_list() == ["lock_acquired", "lock_released"]
    assert a.events["released"].to_list()[-1] is False


def test_trace_without_blank_line_reads_as_before(tmp_path: Path) -> None:
    a = read(tmp_path, "pod-a.log", [_ACQ, _ERR, *_TRACE])
    assert a.events["event"].to_list() == ["lock_acquired", "lock_released"]


def test_blank_line_between_two_records_reads_both(tmp_path: Path) -> None:
    a = read(tmp_path, "pod-a.log", [_ACQ, "", _ERR])
    # the error names no expiry (no trace): only the acquisition is a lease event
    assert a.events["event"].to_list() == ["lock_acquired"]
