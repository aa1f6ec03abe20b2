"""ShedLock (`net.javacrumbs.shedlock`): the lock around Spring `@Scheduled` tasks, read from its own lines.

Messages, from the library's source (github.com/lukas-krecan/ShedLock), the same in every version from
4.0.0 through 7.x unless said otherwise:

- `shedlock-core/.../core/DefaultLockingTaskExecutor.java` (4.0.0, 4.44.0, 5.16.0, 6.0.0, 7.0.0), DEBUG:
  `Locked '{}', lock will be held at most until {}` (the name, then `lockAtMostUntil`, an `Instant`:
  ISO-8601 UTC), `Not executing '{}'. It's locked.`, `Task finished, lock '{}' released` and, while
  `lockAtLeastFor` still holds the lock, `Task finished, lock '{}' will be released at {}`;
  `Already locked '{}'` (4.20.0+, a nested call under a lock already held: no lease event).
- `shedlock-core/.../support/KeepAliveLockProvider.java` (4.44.0+): WARN `Can't extend lock {}`; TRACE
  `Lock {} extended for {}` (a `Duration`, `PT30S`).
- `providers/jdbc/.../AbstractJdbcStorageAccessor.java` and `JdbcTemplateStorageAccessor.java` (3.0.0
  through 7.x), DEBUG `Extending lock={} until={}`; `JdbcTemplateStorageAccessor` (5.x+) ERROR
  `Unlock failed after 10 attempts` (names no lock: the job is the one locked on that thread).

What it maps: `Locked` -> lock_acquired with the lease's absolute end (`lockAtMostUntil`, so leaseMs is
measured from the line's time); `Not executing` -> lock_denied (at every tick on every other pod: normal);
`Task finished` -> lock_released (either wording: `lockAtLeastFor` keeping the key after the task is
normal); `Can't extend` -> a rejected renewal; `Lock .. extended` / `Extending lock=` -> a renewal; `Unlock
failed after 10 attempts` -> a failed release. The task's run is the lock's: from `Locked` to `Task finished`.

What it cannot measure: ShedLock does not renew a lock unless KeepAliveLockProvider or LockExtender is used,
and logs the renewals only at TRACE (KeepAlive) or DEBUG (JDBC). Its Redis provider deletes the key by name
on unlock (`RedisLockProvider`: `template.delete(key)` through 6.9.0; 7.x with `safeUpdate` off), so a run
that outlived `lockAtMostFor` deletes the next holder's lock.
"""

from __future__ import annotations

from leaselog.reading.dialects import Dialect, Rule, Sample

_NAME = r"'(?P<job_id>.+?)'"
_CONSOLE = "2026-11-29T10:00:00.101Z DEBUG 1 --- [report-service] [   scheduling-1] "
_EXECUTOR = "n.j.s.core.DefaultLockingTaskExecutor    : "

DIALECT = Dialect(
    name="shedlock",
    library="ShedLock (net.javacrumbs.shedlock)",
    sources=(
        "shedlock-core/src/main/java/net/javacrumbs/shedlock/core/DefaultLockingTaskExecutor.java "
        "(4.0.0, 4.20.0, 4.44.0, 5.16.0, 6.0.0, 7.0.0)",
        "shedlock-core/src/main/java/net/javacrumbs/shedlock/support/KeepAliveLockProvider.java (4.44.0-7.x)",
        "providers/jdbc/shedlock-provider-jdbc-internal/.../AbstractJdbcStorageAccessor.java (3.0.0-7.x)",
        "providers/jdbc/shedlock-provider-jdbc-template/.../JdbcTemplateStorageAccessor.java (5.16.0-7.x)",
    ),
    needles=(
        "Locked '",
        "Not executing '",
        "Task finished, lock '",
        "Can't extend lock ",
        " extended for P",
        "Extending lock=",
        "Unlock failed after ",
    ),
    rules=(
        Rule(
            "lock_acquired",
            r"^Locked " + _NAME + r", lock will be held at most until (?P<lease_until>\S+)",
            {"trigger": "scheduler"},
            name="locked",
            also=("job_triggered",),
            versions="4.0.0-7.x",
        ),
        Rule(
            "lock_denied",
            r"^Not executing " + _NAME + r"\. It's locked\.",
            {"trigger": "scheduler"},
            name="not-executing",
            also=("job_triggered",),
        ),
        Rule(
            "lock_released",
            r"^Task finished, lock " + _NAME + r" will be released at (?P<held_until>\S+)",
            {"released": "true", "reason": "lockAtLeastFor", "release_outcome": "unchecked"},
            name="finished-held",
        ),
        Rule(
            "lock_released",
            r"^Task finished, lock " + _NAME + r" released",
            {"released": "true", "release_outcome": "unchecked"},
            name="finished",
        ),
        Rule(
            "lease_renewal",
            r"^Can't extend lock (?P<job_id>.+?)\s*$",
            {"renewal_outcome": "rejected"},
            name="cant-extend",
            versions="4.44.0-7.x (KeepAliveLockProvider)",
        ),
        Rule(
            "lease_renewal",
            r"^Lock (?P<job_id>.+?) extended for (?P<lease_duration>P\S+)",
            {"renewal_outcome": "success"},
            name="extended",
            versions="4.44.0-7.x (KeepAliveLockProvider, TRACE)",
        ),
        Rule(
            "lease_renewal",
            r"^Extending lock=(?P<job_id>.+?) until=(?P<lease_until>\S+)",
            {"renewal_outcome": "success"},
            name="jdbc-extending",
            versions="3.0.0-7.x (JDBC providers)",
        ),
        Rule(
            "lock_released",
            r"^Unlock failed after \d+ attempts",
            {"released": "false", "release_outcome": "error"},
            name="jdbc-unlock-failed",
            job_from_thread=True,
            versions="5.16.0-7.x (JdbcTemplateStorageAccessor)",
        ),
    ),
    samples=(
        Sample(
            _CONSOLE
            + _EXECUTOR
            + "Locked 'report', lock will be held at most until 2026-11-29T10:05:00.101Z",
            "lock_acquired",
            {"job_id": "report", "lease_until": "2026-11-29T10:05:00.101Z", "thread": "scheduling-1"},
        ),
        Sample(
            _CONSOLE + _EXECUTOR + "Not executing 'report'. It's locked.",
            "lock_denied",
            {"job_id": "report"},
        ),
        Sample(
            _CONSOLE + _EXECUTOR + "Task finished, lock 'report' released",
            "lock_released",
            {"job_id": "report", "released": "true"},
        ),
        Sample(
            _CONSOLE
            + _EXECUTOR
            + "Task finished, lock 'report' will be released at 2026-11-29T10:00:30.101Z",
            "lock_released",
            {"job_id": "report", "released": "true"},
        ),
        Sample(
            _CONSOLE.replace("DEBUG", " WARN").replace("scheduling-1", "  shedlock-keepalive-1")
            + "n.j.s.support.KeepAliveLockProvider     : Can't extend lock report",
            "lease_renewal",
            {"job_id": "report", "renewal_outcome": "rejected"},
        ),
        Sample(
            _CONSOLE + "n.j.s.p.j.t.JdbcTemplateStorageAccessor : "
            "Extending lock=report until=2026-11-29T10:06:00.101Z",
            "lease_renewal",
            {"job_id": "report", "lease_until": "2026-11-29T10:06:00.101Z"},
        ),
        Sample(
            '{"@timestamp":"2026-11-29T10:00:00.101Z","log.level":"DEBUG","process.pid":1,'
            '"process.thread.name":"scheduling-1","service.name":"report-service",'
            '"log.logger":"net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor",'
            '"message":"Locked \'report\', lock will be held at most until 2026-11-29T10:05:00.101Z",'
            '"ecs.version":"8.11"}',
            "lock_acquired",
            {"job_id": "report", "thread": "scheduling-1"},
        ),
        Sample(
            _CONSOLE.replace("DEBUG", "TRACE").replace("scheduling-1", "  shedlock-keepalive-1")
            + "n.j.s.support.KeepAliveLockProvider     : Lock report extended for PT5M",
            "lease_renewal",
            {"job_id": "report", "lease_ms": "300000", "renewal_outcome": "success"},
        ),
        Sample(
            _CONSOLE.replace("DEBUG", "ERROR")
            + "n.j.s.p.j.t.JdbcTemplateStorageAccessor : Unlock failed after 10 attempts",
            "lock_released",
            {"job_id": "report", "released": "false", "release_outcome": "error"},
            before=(
                _CONSOLE
                + _EXECUTOR
                + "Locked 'report', lock will be held at most until 2026-11-29T10:05:00.101Z",
            ),
        ),
        Sample(_CONSOLE + _EXECUTOR + "Already locked 'report'", None),
    ),
    loggers=("net.javacrumbs.shedlock",),
    advice="ShedLock logs its locks only at DEBUG: set logging.level.net.javacrumbs.shedlock=DEBUG.",
    hints=(
        "net.javacrumbs.shedlock",
        "n.j.shedlock.",
        "n.j.s.core.",
        "SchedulerLock",
        "shedlock",
        "scheduling-",
    ),
    enable="logging.level.net.javacrumbs.shedlock=DEBUG (Spring Boot), or "
    '<logger name="net.javacrumbs.shedlock" level="DEBUG"/> in logback-spring.xml',
    cannot_measure="renewals (none without KeepAliveLockProvider or LockExtender; KeepAlive's are TRACE), "
    "the task's own start and end (the lock's are taken for them)",
)
