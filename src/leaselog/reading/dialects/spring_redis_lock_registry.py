"""Spring Integration `RedisLockRegistry`: its DEBUG acquire/release lines, and expiry reported at unlock.

Messages, from the library's source (github.com/spring-projects/spring-integration,
`spring-integration-redis/src/main/java/org/springframework/integration/redis/util/RedisLockRegistry.java`),
logger `org.springframework.integration.redis.util.RedisLockRegistry`:

- DEBUG `Acquired lock; RedisLock [lockKey=<registryKey>:<name>,lockedAt=yyyy-MM-dd@HH:mm:ss.SSS,
  clientId=...]` (6.4.0, 6.5.0, 7.x). It is logged *before* `lockedAt` is set, so its `lockedAt` is the
  previous acquisition's (or the lock object's creation): never trusted, the line's own time is taken.
- DEBUG `Released lock; RedisLock [...]` (5.1.0 through 6.5.x; 7.x no longer logs it).
- At unlock of a lock whose key had expired, an exception: `IllegalStateException` (5.5, 6.0-6.3) or
  `ConcurrentModificationException` (6.4+) `Lock was released in the store due to expiration. The
  integrity of data protected by this lock may have been compromised.` In a `@Scheduled` task it reaches
  Spring's `TaskUtils$LoggingErrorHandler` (spring-framework
  `spring-context/.../scheduling/support/TaskUtils.java`, 5.x/6.x), ERROR `Unexpected error occurred in
  scheduled task` with the trace under it; that message names no lock: the job is the one last acquired
  on the same pod and thread.

What it maps: acquired -> lock_acquired (no lease length: the registry's `expireAfter`, 60 s by default,
is never logged: pass it as --lease-ttl); released -> lock_released; the expiry exception -> a release
that found the key gone (released false). The lock name (the key without `<registryKey>:`) is the job.

What it cannot measure: renewals (only with `setRenewalTaskScheduler`, 6.4+, and never logged), the lease
length. Without a renewal scheduler a task longer than `expireAfter` loses its lock silently.
"""

from __future__ import annotations

from leaselog.reading.dialects import Dialect, Rule, Sample

_KEY = r"RedisLock \[lockKey=(?:[^:,\]]*:)?(?P<job_id>[^,\]]+),lockedAt="
_EXPIRED = "Lock was released in the store due to expiration"
_CONSOLE = "2026-11-29T10:00:00.101Z DEBUG 1 --- [report-service] [   scheduling-1] "
_LOGGER = "o.s.i.redis.util.RedisLockRegistry       : "

_ACQUIRED = (
    _CONSOLE + _LOGGER + "Acquired lock; RedisLock [lockKey=reports:report,"
    "lockedAt=2026-11-29@09:59:00.017, clientId=4c1b9d0e-2f51-4c2a-9a0b-6c2f1d7a5e11]"
)

DIALECT = Dialect(
    name="spring-redis-lock-registry",
    library="Spring Integration RedisLockRegistry (org.springframework.integration.redis.util)",
    sources=(
        "spring-integration-redis/src/main/java/org/springframework/integration/redis/util/"
        "RedisLockRegistry.java (5.1.0, 5.5.18, 6.0.0, 6.2.0, 6.4.0, 6.5.0, 7.0)",
        "spring-context/src/main/java/org/springframework/scheduling/support/TaskUtils.java "
        "(spring-framework 6.x: LoggingErrorHandler)",
    ),
    needles=(
        "Acquired lock; RedisLock",
        "Released lock; RedisLock",
        "Unexpected error occurred in scheduled",
        _EXPIRED,
    ),
    rules=(
        Rule("lock_acquired", r"^Acquired lock; " + _KEY, name="acquired", versions="6.4.0+"),
        Rule(
            "lock_released",
            r"^Released lock; " + _KEY,
            {"released": "true"},
            name="released",
            versions="5.1.0-6.5.x",
        ),
        Rule(
            "lock_released",
            r"^Unexpected error occurred in scheduled task",
            {"released": "false", "reason": "expired"},
            name="expired-at-unlock",
            confirm=_EXPIRED,
            job_from_thread=True,
        ),
        Rule(
            "lock_released",
            _EXPIRED,
            {"released": "false", "reason": "expired"},
            name="expired",
            job_from_thread=True,
        ),
    ),
    samples=(
        Sample(
            _ACQUIRED,
            "lock_acquired",
            {"job_id": "report", "thread": "scheduling-1"},
        ),
        Sample(
            _CONSOLE + _LOGGER + "Released lock; RedisLock [lockKey=reports:report,"
            "lockedAt=2026-11-29@10:00:00.101, clientId=4c1b9d0e-2f51-4c2a-9a0b-6c2f1d7a5e11]",
            "lock_released",
            {"job_id": "report", "released": "true"},
        ),
        Sample(
            _CONSOLE.replace("DEBUG", "ERROR").replace("10:00:00.101", "10:01:10.101")
            + "o.s.s.s.TaskUtils$LoggingErrorHandler    : Unexpected error occurred in scheduled task",
            "lock_released",
            {"job_id": "report", "released": "false", "thread": "scheduling-1"},
            before=(_ACQUIRED,),
            after=(
                "java.util.ConcurrentModificationException: Lock was released in the store due to expiration. "
                "The integrity of data protected by this lock may have been compromised.",
                "\tat org.springframework.integration.redis.util.RedisLockRegistry$RedisLock.removeLockKey"
                "(RedisLockRegistry.java:678) ~[spring-integration-redis-6.4.1.jar:6.4.1]",
                "\tat org.springframework.integration.redis.util.RedisLockRegistry$RedisLock.unlock"
                "(RedisLockRegistry.java:631) ~[spring-integration-redis-6.4.1.jar:6.4.1]",
            ),
        ),
        Sample(
            _CONSOLE.replace("DEBUG", "ERROR").replace("10:00:00.101", "10:01:10.101")
            + "o.s.s.s.TaskUtils$LoggingErrorHandler    : Unexpected error occurred in scheduled task",
            None,
            before=(_ACQUIRED,),
            after=(
                "java.lang.IllegalArgumentException: report template missing",
                "\tat com.example.report.ReportJob.run(ReportJob.java:42) ~[classes/:na]",
            ),
        ),
        Sample(
            '{"@timestamp":"2026-11-29T10:01:10.101Z","log.level":"ERROR","process.thread.name":"scheduling-1",'
            '"log.logger":"org.springframework.scheduling.support.TaskUtils$LoggingErrorHandler",'
            '"message":"Unexpected error occurred in scheduled task","error.type":'
            '"java.util.ConcurrentModificationException","error.message":"Lock was released in the store due '
            'to expiration. The integrity of data protected by this lock may have been compromised.",'
            '"ecs.version":"8.11"}',
            "lock_released",
            {"job_id": "report", "released": "false"},
            before=(_ACQUIRED,),
        ),
        Sample(
            _CONSOLE.replace("DEBUG", "ERROR").replace("10:00:00.101", "10:01:10.101")
            + "c.e.report.ReportJob                     : Lock was released in the store due to expiration. "
            "The integrity of data protected by this lock may have been compromised.",
            "lock_released",
            {"job_id": "report", "released": "false"},
            before=(_ACQUIRED,),
        ),
    ),
    loggers=("org.springframework.integration.redis.util.RedisLockRegistry",),
    advice="RedisLockRegistry logs acquire/release only at DEBUG and never its expireAfter: set "
    "logging.level.org.springframework.integration.redis.util.RedisLockRegistry=DEBUG and pass --lease-ttl.",
    hints=("RedisLockRegistry", "spring-integration-redis", "o.s.i.redis."),
    enable="logging.level.org.springframework.integration.redis.util.RedisLockRegistry=DEBUG",
    cannot_measure="the lease length (expireAfter, 60 s by default: pass --lease-ttl) and renewals "
    "(a renewal scheduler, 6.4+, logs none)",
)
