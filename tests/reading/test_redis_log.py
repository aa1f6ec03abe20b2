"""A Redis server's or Sentinel's own log (the `redis` format) and its failover lines (the `redis-server`
dialect): read as `lock_failover`, a fact of the whole fleet kept apart from the events; every other line
of the file ignored; malformed lines counted and located, their neighbours read as before."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

import leaselog
from leaselog.config import Settings
from leaselog.pipeline import read_source, sources_of
from leaselog.reading.formats import detect_format, line_format

SENTINEL = [
    "8312:X 01 Dec 2026 16:46:02.655 # oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo",
    "8312:X 01 Dec 2026 16:46:02.656 # +monitor master leaselog-lock 127.0.0.1 50509 quorum 1",
    "8312:X 01 Dec 2026 16:46:02.657 * +slave slave 127.0.0.1:44031 127.0.0.1 44031 @ leaselog-lock 127.0.0.1 50509",
    "8312:X 01 Dec 2026 16:46:03.351 # +sdown master leaselog-lock 127.0.0.1 50509",
    "8312:X 01 Dec 2026 16:46:03.351 # +odown master leaselog-lock 127.0.0.1 50509 #quorum 1/1",
    "8312:X 01 Dec 2026 16:46:03.352 # +try-failover master leaselog-lock 127.0.0.1 50509",
    "8312:X 01 Dec 2026 16:46:04.049 # +promoted-slave slave 127.0.0.1:44031 127.0.0.1 44031 @ leaselog-lock "
    "127.0.0.1 50509",
    "8312:X 01 Dec 2026 16:46:04.049 # +failover-end master leaselog-lock 127.0.0.1 50509",
    "8312:X 01 Dec 2026 16:46:04.049 # +switch-master leaselog-lock 127.0.0.1 50509 127.0.0.1 44031",
    "8312:X 01 Dec 2026 16:46:04.870 # -failover-abort-no-good-slave master leaselog-lock 127.0.0.1 44031",
    "8312:signal-handler (1796143570) Received SIGTERM scheduling shutdown...",
]
# one acquisition of a job on a pod, so the input has events besides the fleet's facts
APP = '{"ts":"2026-12-01T16:46:02.900Z","jobId":"report","executionId":"a","pod":"pod-a","event":"lock_acquired","leaseMs":3000}'


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return p


def _failovers(paths: list[Path], **settings: object) -> pl.DataFrame:
    sources, _ = sources_of(paths)
    return read_source(sources, Settings(**settings)).failovers  # type: ignore[arg-type]


def test_a_sentinel_log_is_detected_and_every_line_read(tmp_path: Path) -> None:
    assert detect_format([x.encode() for x in SENTINEL]) == "redis"
    f = line_format(SENTINEL[1].encode())
    assert f is not None and f.name == "redis"
    rec = f.parse(SENTINEL[1].encode())[0]
    assert (rec["time"], rec["level"], rec["redis.role"], rec["redis.pid"]) == (
        "2026-12-01T16:46:02.656",
        "WARNING",
        "sentinel",
        "8312",
    )
    # a signal handler's line carries epoch seconds
    sig = f.parse(SENTINEL[-1].encode())[0]
    assert sig["time"] == "2026-12-01T16:46:10Z" and sig["redis.role"] == "signal-handler"
    a = leaselog.analyze(
        [_write(tmp_path, "redis-sentinel.log", SENTINEL), _write(tmp_path, "pod-a.jsonl", [APP])]
    )
    (report,) = [r for r in a.input_reports if r.path.endswith("redis-sentinel.log")]
    assert (report.format, report.lines, report.used, report.ignored, report.malformed) == (
        "redis",
        11,
        3,
        8,
        0,
    )
    # a failover is no lease event of a job: the events are the app's only, and no pod is made of the file
    assert report.events == 0 and a.events.height == 1 and set(a.events["pod"]) == {"pod-a"}
    assert any("redis-sentinel.log: timestamps without a zone" in p for p in a.problems)


def test_the_failover_lines_are_the_fleets_facts(tmp_path: Path) -> None:
    got = _failovers([_write(tmp_path, "redis-sentinel.log", SENTINEL)])
    assert got.select("rule", "master", "previous_primary", "primary", "line").rows() == [
        ("redis-server/promoted-slave", "leaselog-lock", "127.0.0.1:50509", "127.0.0.1:44031", 7),
        ("redis-server/failover-end", "leaselog-lock", "127.0.0.1:50509", None, 8),
        ("redis-server/switch-master", "leaselog-lock", "127.0.0.1:50509", "127.0.0.1:44031", 9),
    ]
    # Redis writes local time without a zone: read as UTC unless --timezone says otherwise
    assert got["t"][2] == datetime(2026, 12, 1, 16, 46, 4, 49000, tzinfo=UTC)
    berlin = _failovers([tmp_path / "redis-sentinel.log"], timezone="Europe/Berlin")
    assert berlin["t"][2] == datetime(2026, 12, 1, 15, 46, 4, 49000, tzinfo=UTC)


def test_a_promoted_servers_own_line(tmp_path: Path) -> None:
    lines = [
        "8306:S 01 Dec 2026 16:46:02.640 * Connecting to MASTER 127.0.0.1:50509",
        "8306:S 01 Dec 2026 16:46:02.941 # Unable to AUTH to MASTER: -WRONGPASS invalid username-password pair",
        "8306:M 01 Dec 2026 16:46:03.605 * MASTER MODE enabled (user request from 'id=5 addr=127.0.0.1:48754 "
        "laddr=127.0.0.1:44031 fd=7 name=sentinel-59137a1e-cmd cmd=exec user=default')",
    ]
    got = _failovers([_write(tmp_path, "redis-replica.log", lines)])
    assert got.select("rule", "previous_primary", "primary", "pod", "line").rows() == [
        ("redis-server/master-mode", None, None, "redis-replica", 3)
    ]


def test_no_failover_no_fact(tmp_path: Path) -> None:
    """A Sentinel that monitors, finds a primary down, tries and aborts a failover switched nothing; an
    empty file is nothing."""
    quiet = [x for x in SENTINEL if not any(w in x for w in ("+promoted", "+failover-end", "+switch"))]
    assert _failovers([_write(tmp_path, "redis-sentinel.log", quiet)]).is_empty()
    assert _failovers([_write(tmp_path, "empty.log", []), _write(tmp_path, "pod-a.jsonl", [APP])]).is_empty()
    # nor is an app's line that merely mentions the words
    app = APP.replace("lock_acquired", "job_progress").replace("}", ',"message":"+switch-master seen"}')
    assert _failovers([_write(tmp_path, "pod-b.jsonl", [APP, app])]).is_empty()


def test_malformed_lines_are_counted_and_located_and_neighbours_read_alike(tmp_path: Path) -> None:
    broken = [
        SENTINEL[1],
        "oops: a line of no shape",
        "8312:X 01 Foo 2026 16:46:04.049 # +switch-master leaselog-lock 127.0.0.1 1 127.0.0.1 2",  # no month
        "8312:X 31 Feb 2026 16:46:04.049 # +switch-master leaselog-lock 127.0.0.1 1 127.0.0.1 2",  # no day
        "8312:signal-handler (99999999999999999999) Received SIGTERM",  # no moment a clock holds
        SENTINEL[8],
    ]
    path = _write(tmp_path, "redis-sentinel.log", broken)
    a = leaselog.analyze([path, _write(tmp_path, "pod-a.jsonl", [APP])])
    (report,) = [r for r in a.input_reports if r.path == str(path)]
    assert (report.lines, report.used, report.malformed, report.events) == (6, 1, 4, 0)
    assert sorted(a.malformed.filter(pl.col("file") == str(path))["line"].to_list()) == [2, 3, 4, 5]
    # an indented raw line (the ASCII-art logo Redis prints on a terminal) is a continuation: ignored
    logo = _write(tmp_path, "logo.log", [SENTINEL[1], "                _._", SENTINEL[8]])
    (r,) = leaselog.analyze([logo, tmp_path / "pod-a.jsonl"]).input_reports[:1]
    assert (r.used, r.ignored, r.malformed) == (1, 2, 0)
    # the good failover line beside them is read as it is alone
    got = _failovers([path])
    assert got.select("rule", "line").rows() == [("redis-server/switch-master", 6)]


def test_inspect_says_the_dialect_read_the_failover_lines(tmp_path: Path) -> None:
    from leaselog.inspection import inspect_file

    ins = inspect_file(_write(tmp_path, "redis-sentinel.log", SENTINEL))
    assert ins.format == "redis" and ins.event_count == 0
    assert ins.dialect_lines == {"redis-server": [7, 8, 9]}


# a Redis Cluster failover, as its nodes logged it in a real run (Redis 7.0.15, tests/integration/
# redis_cluster.py): the replica's own log (node-4: finds its primary failing, waits its rank's delay, is
# elected, becomes a primary) and a surviving primary's (node-2: marks the primary failing, votes)
CLUSTER_REPLICA = [
    "3569:M 01 Dec 2026 19:53:09.108 * No cluster configuration found, I'm b2b3a1259eea74d5ace4f54eb758ad595ffef44a",
    "3569:S 01 Dec 2026 19:53:13.076 # Error condition on socket for SYNC: Connection refused",
    "3569:S 01 Dec 2026 19:53:13.950 * FAIL message received from 13c9b62ccb8488f8e5325e42160467bd95f4fb9c about "
    "841b648a5f6dfcb155b3c9331be9e48d97aa0eea",
    "3569:S 01 Dec 2026 19:53:13.950 # Cluster state changed: fail",
    "3569:S 01 Dec 2026 19:53:13.987 # Start of election delayed for 751 milliseconds (rank #0, offset 0).",
    "3569:S 01 Dec 2026 19:53:14.795 # Starting a failover election for epoch 4.",
    "3569:S 01 Dec 2026 19:53:14.797 # Failover election won: I'm the new master.",
    "3569:S 01 Dec 2026 19:53:14.797 # configEpoch set to 4 after successful failover",
    "3569:M 01 Dec 2026 19:53:14.797 # Setting secondary replication ID to 0071a6920ab5bf4dfdaea0edbdf7e86a55d5fa54, "
    "valid up to offset: 1. New replication ID is 6bd0745fc9f50",
    "3569:M 01 Dec 2026 19:53:14.799 # Cluster state changed: ok",
]
CLUSTER_PRIMARY = [
    "3559:M 01 Dec 2026 19:53:10.995 # Cluster state changed: ok",
    "3559:M 01 Dec 2026 19:53:13.950 * Marking node 841b648a5f6dfcb155b3c9331be9e48d97aa0eea as failing (quorum "
    "reached).",
    "3559:M 01 Dec 2026 19:53:13.950 # Cluster state changed: fail",
    "3559:M 01 Dec 2026 19:53:14.796 # Failover auth granted to b2b3a1259eea74d5ace4f54eb758ad595ffef44a for epoch 4",
    "3559:M 01 Dec 2026 19:53:14.838 # Cluster state changed: ok",
]


def test_a_cluster_replicas_election_is_the_fleets_fact(tmp_path: Path) -> None:
    """The promoted replica's `Failover election won` is the failover's moment; its FAIL message, the
    election's delay and start, and the lines that follow the promotion give nothing more."""
    got = _failovers([_write(tmp_path, "redis-node-4.log", CLUSTER_REPLICA)])
    assert got.select("rule", "pod", "line", "master", "previous_primary", "primary").rows() == [
        ("redis-server/cluster-election-won", "redis-node-4", 7, None, None, None)
    ]
    assert got["t"][0] == datetime(2026, 12, 1, 19, 53, 14, 797000, tzinfo=UTC)
    # Redis 7.2 and later log it at NOTICE, the same words
    notice = [x.replace(" # Failover election", " * Failover election") for x in CLUSTER_REPLICA]
    assert _failovers([_write(tmp_path, "notice.log", notice)])["line"].to_list() == [7]


def test_a_cluster_takeover_is_the_fleets_fact(tmp_path: Path) -> None:
    """`CLUSTER FAILOVER TAKEOVER`: the replica promotes itself without an election."""
    lines = [
        "1588:M 01 Dec 2026 19:50:40.631 # Configuration change detected. Reconfiguring myself as a replica of "
        "f3f886096fef5fdccb1cc76f90c319296776555a",
        "1588:S 01 Dec 2026 19:50:40.635 # Taking over the master (user request).",
        "1588:S 01 Dec 2026 19:50:40.635 # New configEpoch set to 5",
    ]
    got = _failovers([_write(tmp_path, "redis-node-1.log", lines)])
    assert got.select("rule", "pod", "line").rows() == [("redis-server/cluster-takeover", "redis-node-1", 2)]


def test_a_cluster_failover_under_way_or_about_another_node_is_no_fact(tmp_path: Path) -> None:
    """A surviving primary's log (a FAIL about another node, its vote), the replica's log up to its
    election's start, a manual failover that timed out, an empty log: no node became a primary."""
    quiet = [
        _write(tmp_path, "redis-node-2.log", CLUSTER_PRIMARY),
        _write(tmp_path, "redis-node-4.log", CLUSTER_REPLICA[:6]),
        _write(
            tmp_path,
            "redis-node-3.log",
            [
                "1306:S 01 Dec 2026 19:49:30.908 # Manual failover user request accepted.",
                "1306:S 01 Dec 2026 19:49:35.976 # Manual failover timed out.",
                "1306:S 01 Dec 2026 19:49:36.010 # Currently unable to failover: Waiting for votes, but majority "
                "still not reached.",
            ],
        ),
        _write(tmp_path, "empty.log", []),
    ]
    assert _failovers(quiet).is_empty()
    a = leaselog.analyze([*quiet, _write(tmp_path, "pod-a.jsonl", [APP])])
    assert a.line_totals()["malformed"] == 0
    assert {r.path.rsplit("/", 1)[-1]: r.used for r in a.input_reports if r.path.endswith(".log")} == {
        "redis-node-2.log": 0,
        "redis-node-3.log": 0,
        "redis-node-4.log": 0,
        "empty.log": 0,
    }
    # nor is an app's line that quotes the words inside its own message
    app = APP.replace("lock_acquired", "job_progress").replace(
        "}", ',"message":"saw: Failover election won: I\'m the new master."}'
    )
    assert _failovers([_write(tmp_path, "pod-b.jsonl", [APP, app])]).is_empty()


def test_cluster_lines_malformed_beside_are_located_and_the_election_read_alike(tmp_path: Path) -> None:
    broken = [
        CLUSTER_REPLICA[5],
        "3569:Q 01 Dec 2026 19:53:14.796 # Failover election won: I'm the new master.",  # no such role
        "3569:S 01 Dec 2026 19:53:14.797 # Failover election won: I'm the new master.",
    ]
    path = _write(tmp_path, "redis-node-4.log", broken)
    a = leaselog.analyze([path, _write(tmp_path, "pod-a.jsonl", [APP])])
    assert a.malformed.filter(pl.col("file") == str(path))["line"].to_list() == [2]
    assert _failovers([path]).select("rule", "line").rows() == [("redis-server/cluster-election-won", 3)]
