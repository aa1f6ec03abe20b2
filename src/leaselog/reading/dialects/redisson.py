"""Redisson (`org.redisson`): its lock watchdog's failures, the only lease lines Redisson prints.

Messages, from the library's source (github.com/redisson/redisson), ERROR with the exception's trace:

- `Can't update lock {} expiration` (old wording): `RedissonLock.java` (3.10.0: string concatenation,
  same text) and `RedissonBaseLock.java` (3.17.0, 3.23.0, 3.40.0), logger `org.redisson.RedissonLock` /
  `org.redisson.RedissonBaseLock`. In these versions the watchdog removes the lock's renewal entry and
  returns: after one failed renewal the lock is never extended again.
- `Can't update locks {} expiration` (new wording, from 3.44.0): `renewal/RenewalTask.java`, logger
  `org.redisson.renewal.LockTask`; `{}` is the set of lock names (`[report-42, sync-7]`). The task is
  scheduled again: renewal is retried.

What it maps: either line -> a renewal of each named lock that errored. A watchdog renews every
`lockWatchdogTimeout / 3` (10 s of the default 30 s) and sets the key to live `lockWatchdogTimeout`, so the
lease lapses at most `lockWatchdogTimeout` after the last good renewal. Redisson logs no acquisition or
release: the application's own lines for the same job and pod give those (the failures join them), else
`--lease-ttl` (the lockWatchdogTimeout) says how long a lease lives.
"""

from __future__ import annotations

from leaselog.reading.dialects import Dialect, Rule, Sample

_CONSOLE = "2026-11-29T10:00:41.101Z ERROR 1 --- [report-service] [  redisson-timer-4-1] "

DIALECT = Dialect(
    name="redisson",
    library="Redisson (org.redisson) lock watchdog",
    sources=(
        "redisson/src/main/java/org/redisson/RedissonLock.java (3.10.0)",
        "redisson/src/main/java/org/redisson/RedissonBaseLock.java (3.17.0, 3.23.0, 3.40.0)",
        "redisson/src/main/java/org/redisson/renewal/RenewalTask.java (3.44.0, 3.5x)",
        "redisson/src/main/java/org/redisson/config/Config.java: lockWatchdogTimeout = 30 * 1000",
    ),
    needles=("Can't update lock",),
    rules=(
        Rule(
            "lease_renewal",
            r"^Can't update locks \[(?P<job_id>[^\]]*)\] expiration",
            {"renewal_outcome": "error", "reason": "watchdog"},
            name="watchdog-failed",
            versions="3.44.0+ (RenewalTask: retried)",
            job_list=True,
        ),
        Rule(
            "lease_renewal",
            r"^Can't update lock (?P<job_id>\S+) expiration",
            {"renewal_outcome": "error", "reason": "watchdog-stopped"},
            name="watchdog-failed-old",
            versions="before 3.44.0 (RedissonLock/RedissonBaseLock: the watchdog stops)",
        ),
    ),
    samples=(
        Sample(
            _CONSOLE + "o.redisson.renewal.LockTask              : Can't update locks [report-42] expiration",
            "lease_renewal",
            {"job_id": "report-42", "renewal_outcome": "error", "thread": "redisson-timer-4-1"},
        ),
        Sample(
            _CONSOLE + "org.redisson.RedissonBaseLock            : Can't update lock report-42 expiration",
            "lease_renewal",
            {"job_id": "report-42", "renewal_outcome": "error"},
        ),
        Sample(
            '{"@timestamp":"2026-11-29T10:00:41.101Z","log.level":"ERROR","process.thread.name":'
            '"redisson-timer-4-1","log.logger":"org.redisson.RedissonBaseLock","message":'
            '"Can\'t update lock report-42 expiration","error.type":'
            '"org.redisson.client.RedisTimeoutException","ecs.version":"8.11"}',
            "lease_renewal",
            {"job_id": "report-42"},
        ),
    ),
    loggers=("org.redisson.RedissonBaseLock", "org.redisson.renewal.LockTask"),
    advice="Redisson logs only failed watchdog renewals: log your own acquire and release (with the lock "
    "name) to measure the lease.",
    hints=("org.redisson", "o.redisson.", "Redisson"),
    enable="on by default (ERROR); keep org.redisson at WARN or lower",
    cannot_measure="acquisitions, successful renewals and releases (never logged): only the application's "
    "lines or --lease-ttl (lockWatchdogTimeout, 30 s by default) give the lease",
    silent_renewals=True,  # the watchdog logs only its failures
)
