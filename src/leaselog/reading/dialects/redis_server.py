"""Redis itself: a failover of the lock's primary (by Sentinel, or by a Redis Cluster's own nodes), and a
replica's promotion, from their own logs.

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
- Redis Cluster (no Sentinel: the cluster's nodes find the primary failing and elect its replica),
  `src/cluster.c` (5.0.14, 6.0.20, 6.2.14, 7.0.15, 7.2.5) and `src/cluster_legacy.c` (7.4.1, unstable),
  one wording throughout, at WARNING to 7.0 and at NOTICE from 7.2. Read here, in the promoted
  replica's own log:
  - `Failover election won: I'm the new master.` (`clusterHandleSlaveFailover`): the replica has the
    votes of a majority of the primaries and, in the same call, turns itself into a primary and claims
    its primary's slots (`clusterFailoverReplaceYourMaster`): an automatic failover, and a manual one
    (`CLUSTER FAILOVER`, `... FORCE`), which also end in an election;
  - `Taking over the master (user request).` (`clusterCommand`, `CLUSTER FAILOVER TAKEOVER`): the replica
    promotes itself without an election, in the same call.
  Not read (they say a failover is under way, or follows one, not that a node became a primary at that
  moment): `FAIL message received from <node> about <node>` and `Marking node <node> as failing (quorum
  reached).` (a node, primary or replica, found down: no promotion follows for a replica, nor when no
  replica can be elected), `Start of election delayed for ...`, `Starting a failover election for epoch
  ...`, `Currently unable to failover: ...`, `Failover auth granted to <node> for epoch ...` (another
  primary's vote), `Manual failover user request accepted.` and `Forced failover user request
  accepted.` (a manual failover may time out: `Manual failover timed out.`), `configEpoch set to ... after
  successful failover` (right after the election is won, the same moment), `Configuration change detected.
  Reconfiguring myself as a replica of <node>` (the old primary learns it was replaced, later), `Setting
  secondary replication ID ...` (`src/replication.c`, any server that stops being a replica) and `Cluster
  state changed: ok|fail`.

What it maps: each line -> `lock_failover`, a fact of the whole fleet (no job, no execution): the lock's
Redis changed primary at that moment, and any lease held on the old one may be gone. `concurrent_leases`
cites it when it falls between the earlier acquisition and the end of the later lease. What it cannot
measure: whether the new primary had a given key (Sentinel promotes the replica with the largest
replication offset, a Cluster the replica that wins the election; what it missed is not logged), nor
which locks live on which monitored master or on which Cluster shard's slots (a `+switch-master` of any
master name, a promotion of any shard's replica is cited: a Cluster's lines name no slot and no address).
"""

from __future__ import annotations

from leaselog.reading.dialects import Dialect, Rule, Sample

_SENTINEL = "7812:X 01 Dec 2026 10:00:05.953 # "
_REPLICA = "7806:M 01 Dec 2026 10:00:05.298 * "
# a Cluster node's lines (the promoted replica logs its election as a replica: `S`), 7.0 at WARNING, 7.2 at NOTICE
_NODE = "1169:S 01 Dec 2026 19:49:12.258 # "
_NODE_72 = "1169:S 01 Dec 2026 19:49:12.258 * "
_ADDR = r"\S+ \d+"

DIALECT = Dialect(
    name="redis-server",
    library="Redis Sentinel, Redis Cluster and redis-server (their own log files)",
    sources=(
        "src/sentinel.c sentinelEvent, sentinelFailoverSwitchToPromotedSlave, sentinelRefreshInstanceInfo, "
        "sentinelFailoverDetectEnd (5.0.14, 6.0.20, 6.2.14, 7.0.15, 7.2.5: one wording)",
        "src/replication.c replicaofCommand: MASTER MODE enabled (user request; failover request from 6.2)",
        "src/cluster.c clusterHandleSlaveFailover, clusterCommand (5.0.14, 6.0.20, 6.2.14, 7.0.15, 7.2.5) and "
        "src/cluster_legacy.c (7.4.1, unstable): Failover election won, Taking over the master (one wording)",
        "src/server.c serverLogRaw: the line's header (the `redis` format)",
    ),
    needles=(
        "+switch-master ",
        "+promoted-slave ",
        "+failover-end ",
        "MASTER MODE enabled",
        "Failover election won: ",
        "Taking over the master ",
    ),
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
        Rule(
            "lock_failover",
            r"^Failover election won: I'm the new master\.$",
            name="cluster-election-won",
            versions="5.0+ (WARNING to 7.0, NOTICE from 7.2)",
        ),
        Rule(
            "lock_failover",
            r"^Taking over the master \(user request\)\.$",
            name="cluster-takeover",
            versions="5.0+ (WARNING to 7.0, NOTICE from 7.2)",
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
        # a Cluster's replica promoted: by its election (automatic, or CLUSTER FAILOVER [FORCE]), or by a takeover
        Sample(_NODE + "Failover election won: I'm the new master.", "lock_failover"),
        Sample(_NODE_72 + "Failover election won: I'm the new master.", "lock_failover"),
        Sample("1588:S 01 Dec 2026 19:50:40.635 # Taking over the master (user request).", "lock_failover"),
        # a Cluster failover under way, a vote, a node found down (a replica, or a primary no replica replaces)
        # and what follows a promotion: no node became a primary at that moment
        Sample(
            "1159:M 01 Dec 2026 19:49:11.601 * FAIL message received from e8a7d1b49f494fdd16365219247e36283b1ab980 "
            "about f348e9284c1737765cf169c3ab934ac00e3f2ac9",
            None,
        ),
        Sample(
            "1169:S 01 Dec 2026 19:49:11.601 * Marking node f348e9284c1737765cf169c3ab934ac00e3f2ac9 as failing "
            "(quorum reached).",
            None,
        ),
        Sample(_NODE + "Start of election delayed for 535 milliseconds (rank #0, offset 0).", None),
        Sample(_NODE + "Starting a failover election for epoch 4.", None),
        Sample(
            _NODE + "Currently unable to failover: Waiting for votes, but majority still not reached.", None
        ),
        Sample(
            "1159:M 01 Dec 2026 19:49:12.258 # Failover auth granted to e8a7d1b49f494fdd16365219247e36283b1ab980 "
            "for epoch 4",
            None,
        ),
        Sample("1306:S 01 Dec 2026 19:49:30.908 # Manual failover user request accepted.", None),
        Sample("1306:S 01 Dec 2026 19:49:35.976 # Manual failover timed out.", None),
        Sample(_NODE + "configEpoch set to 4 after successful failover", None),
        Sample(
            "1603:M 01 Dec 2026 19:50:40.639 # Configuration change detected. Reconfiguring myself as a replica "
            "of 35fa1694925e7906d387ea5dc17d49cafeddbfae",
            None,
        ),
        Sample("1169:M 01 Dec 2026 19:49:12.259 # Cluster state changed: ok", None),
    ),
    enable="on by default: Sentinel logs its events at WARNING, a server its promotion at NOTICE, a Cluster "
    "node its election at WARNING or NOTICE (the default `loglevel` is notice); keep `logfile` set, or collect "
    "the processes' stdout.",
    cannot_measure="whether the promoted replica had a given key or counter (what it missed is not logged), "
    "and which locks live on which monitored master or Cluster shard: no job is named",
)
