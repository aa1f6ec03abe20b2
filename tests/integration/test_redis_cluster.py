"""A real Redis Cluster (three primaries, one replica of the first: tests/integration/redis_cluster.py) fails
over, and leaselog reads the nodes' own log files: the promoted replica's line is the one `lock_failover`
fact, at a moment between the harness's kill (or command) and the poll that saw the replica's new role;
the other nodes' lines (FAIL messages, votes, state changes) give none.

The harness waits on the cluster's state (the replica's `ROLE`), with a generous deadline, never on a
time.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from redis_cluster import RedisCluster

from leaselog.config import Settings
from leaselog.pipeline import read_source, sources_of

pytestmark = pytest.mark.redis


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisCluster]:
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    c = RedisCluster(tmp_path / "cluster").start()
    try:
        yield c
    finally:
        c.close()


def _failovers(c: RedisCluster) -> pl.DataFrame:
    sources, _ = sources_of(sorted(c.folder.glob("node-*.log")))
    return read_source(sources, Settings()).failovers


def _line_of(path: Path, text: str) -> int:
    (n,) = [
        i for i, x in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if x.endswith(text)
    ]
    return n


def _ms(t: datetime) -> datetime:
    """`t` cut to the millisecond, as Redis writes its time."""
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


def test_a_killed_primarys_replica_is_elected_and_its_line_is_the_failover(cluster: RedisCluster) -> None:
    assert cluster.role(3) == "slave"
    killed = datetime.now(UTC)
    cluster.kill_primary()
    cluster.wait_promoted()
    seen = datetime.now(UTC)
    got = _failovers(cluster)
    replica_log = cluster.log_path(3)
    assert got.select("rule", "pod", "file", "line").rows() == [
        (
            "redis-server/cluster-election-won",
            "node-4",
            str(replica_log),
            _line_of(replica_log, " Failover election won: I'm the new master."),
        )
    ]
    (t,) = got["t"].to_list()
    assert _ms(killed) <= t <= seen, (killed, t, seen)
    # the surviving primaries logged the failure and voted: that is no promotion of theirs
    for i in (1, 2):
        text = cluster.log_path(i).read_text(encoding="utf-8")
        assert "Failover auth granted to " in text and "Cluster state changed: fail" in text


def test_a_takeover_is_the_failover(cluster: RedisCluster) -> None:
    """`CLUSTER FAILOVER TAKEOVER` on the replica: it promotes itself, with no election and no node down."""
    asked = datetime.now(UTC)
    assert cluster.clients[3].execute_command("CLUSTER", "FAILOVER", "TAKEOVER") in ("OK", True)
    cluster.wait_promoted()
    seen = datetime.now(UTC)
    got = _failovers(cluster)
    replica_log = cluster.log_path(3)
    assert got.select("rule", "pod", "line").rows() == [
        (
            "redis-server/cluster-takeover",
            "node-4",
            _line_of(replica_log, " Taking over the master (user request)."),
        )
    ]
    (t,) = got["t"].to_list()
    assert _ms(asked) <= t <= seen, (asked, t, seen)
