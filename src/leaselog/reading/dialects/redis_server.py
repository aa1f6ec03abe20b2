"""Redis itself: a Sentinel's failover of the lock's primary, and a replica's promotion, from their own logs.

Messages, from Redis's source (github.com/redis/redis; the same wording in 5.0.14, 6.0.20, 6.2.14,
7.0.15, 7.2.5 and unstable), in the `redis` line format (`serverLogRaw`, `src/server.c`):

- `src/sentinel.c` `sentinelEvent` logs `<type> <message>`; for an instance (`%@`) the message is
  `<master|slave|sentinel> <name> <ip> <port>`, and for a replica ` @ <master name> <master ip> <master
  port>` follows. Read here, all at WARNING:
  - `+switch-master <master name> <old ip> <old port> <new ip> <new port>` (`sentinelFailoverSwitchToPromotedSlave`,
    and `sentinelProcessHelloMessage` when another Sentinel's newer configuration says so): Sentinel
    now names the new primary to its clients;
  - `+promoted-slave slave <ip>:<port> <ip> <port> @ <master name> <old ip> <old port>`
    (`sentinelRefreshInstanceInfo`): the replica Sentinel chose reports itself a primary;
  - `+failover-end master <master name> <old ip> <old port>` (`sentinelFailoverDetectEnd`).
- `src/replication.c` `replicaofCommand`: `MASTER MODE enabled (user request from '<client>')` (NOTICE;
  `REPLICAOF NO ONE`, which is how Sentinel promotes), and `MASTER MODE enabled (failover request from
  '<client>')` (6.2+, the `FAILOVER` command), in the promoted server's own log.

What it maps: each line -> `lock_failover`, a fact of the whole fleet (no job, no execution): the lock's
Redis changed primary at that moment, and any lease held on the old one may be gone. `concurrent_leases`
cites it when it falls between the earlier acquisition and the end of the later lease. What it cannot
measure: whether the new primary had a given key (Sentinel promotes the replica with the largest
replication offset; what it missed is not logged), nor which locks live on which monitored master (a
`+switch-master` of any master name is cited).
"""

from __future__ import annotations

import polars as pl

from leaselog.reading.dialects import Dialect, Rule, Sample

_SENTINEL = "7812:X 01 Dec 2026 10:00:05.953 # "
_REPLICA = "7806:M 01 Dec 2026 10:00:05.298 * "
_ADDR = r"\S+ \d+"

DIALECT = Dialect(
    name="redis-server",
    library="Redis Sentinel and redis-server (their own log files)",
    sources=(
        "src/sentinel.c sentinelEvent, sentinelFailoverSwitchToPromotedSlave, sentinelRefreshInstanceInfo, "
        "sentinelFailoverDetectEnd (5.0.14, 6.0.20, 6.2.14, 7.0.15, 7.2.5: one wording)",
        "src/replication.c replicaofCommand: MASTER MODE enabled (user request; failover request from 6.2)",
        "src/server.c serverLogRaw: the line's header (the `redis` format)",
    ),
    needles=("+switch-master ", "+promoted-slave ", "+failover-end ", "MASTER MODE enabled"),
    rules=(
        Rule(
            "lock_failover",
            r"^\+switch-master \S+ " + _ADDR + " " + _ADDR + r"$",
            name="switch-master",
            versions="5.0+",
        ),
        Rule(
            "lock_failover",
            r"^\+promoted-slave slave \S+ " + _ADDR + r" @ \S+ " + _ADDR + r"$",
            name="promoted-slave",
            versions="5.0+",
        ),
        Rule(
            "lock_failover",
            r"^\+failover-end master \S+ " + _ADDR + r"$",
            name="failover-end",
            versions="5.0+",
        ),
        Rule(
            "lock_failover",
            r"^MASTER MODE enabled \((?:user|failover) request from '",
            name="master-mode",
            versions="5.0+ (user request), 6.2+ (failover request)",
        ),
    ),
    samples=(
        Sample(_SENTINEL + "+switch-master leaselog-lock 127.0.0.1 36573 127.0.0.1 38329", "lock_failover"),
        Sample(
            _SENTINEL
            + "+promoted-slave slave 127.0.0.1:38329 127.0.0.1 38329 @ leaselog-lock 127.0.0.1 36573",
            "lock_failover",
        ),
        Sample(_SENTINEL + "+failover-end master leaselog-lock 127.0.0.1 36573", "lock_failover"),
        Sample(
            _REPLICA
            + "MASTER MODE enabled (user request from 'id=5 addr=127.0.0.1:48754 laddr=127.0.0.1:38329 "
            "fd=7 name=sentinel-59137a1e-cmd age=2 idle=0 flags=x db=0 sub=0 psub=0 ssub=0 multi=4 qbuf=188 "
            "qbuf-free=20286 argv-mem=4 multi-mem=169 rbs=2048 rbp=1024 obl=45 oll=0 omem=0 tot-mem=23589 "
            "events=r cmd=exec user=default redir=-1 resp=2')",
            "lock_failover",
        ),
        # a failover that is tried, or aborted, switches nothing
        Sample(_SENTINEL + "+try-failover master leaselog-lock 127.0.0.1 38329", None),
        Sample(_SENTINEL + "-failover-abort-no-good-slave master leaselog-lock 127.0.0.1 38329", None),
        Sample(_SENTINEL + "+odown master leaselog-lock 127.0.0.1 36573 #quorum 1/1", None),
    ),
    enable="on by default: Sentinel logs its events at WARNING, a server its promotion at NOTICE (the default "
    "`loglevel`); keep `logfile` set, or collect the processes' stdout.",
    cannot_measure="whether the promoted replica had a given key or counter (what it missed is not logged), "
    "and which locks live on which monitored master: no job is named",
)


# (master name, previous primary, new primary) in each message that names them: `ip port` pairs
_SWITCH = r"^\+switch-master (\S+) (\S+) (\d+) (\S+) (\d+)$"
_PROMOTED = r"^\+promoted-slave slave \S+ (\S+) (\d+) @ (\S+) (\S+) (\d+)$"
_END = r"^\+failover-end master (\S+) (\S+) (\d+)$"


def failover_addresses(message: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """The master's name, the previous primary and the new one (`ip:port`) a failover line names (null
    where it names none: a replica's `MASTER MODE enabled` is about the server that logs it)."""

    def addr(pattern: str, ip: int, port: int) -> pl.Expr:
        return pl.concat_str(
            message.str.extract(pattern, ip), pl.lit(":"), message.str.extract(pattern, port)
        )

    master = pl.coalesce(
        message.str.extract(_SWITCH, 1), message.str.extract(_PROMOTED, 3), message.str.extract(_END, 1)
    )
    previous = pl.coalesce(addr(_SWITCH, 2, 3), addr(_PROMOTED, 4, 5), addr(_END, 2, 3))
    primary = pl.coalesce(addr(_SWITCH, 4, 5), addr(_PROMOTED, 1, 2))
    return master, previous, primary
