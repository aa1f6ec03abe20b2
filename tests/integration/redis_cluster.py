"""A real Redis Cluster on loopback for the tests and for the sample in sample_logs/dialects/redis-cluster/:
three primaries and one replica of the first (`cluster-enabled yes`, a short `cluster-node-timeout`), each
a throwaway `redis-server` with its own log file (run with TZ=UTC, as Redis writes its local time).

`RedisCluster.start()` creates the cluster with `redis-cli --cluster create` and `--cluster add-node
--cluster-slave`, then waits until every node reports the cluster `ok` and the replica is in sync. The
failover: `kill_primary()` SIGKILLs the replicated primary; the replica's own nodes find it down, mark it
failing, vote, and the replica wins the election and becomes a primary: `wait_promoted()` polls the
replica's `ROLE` until it says `master` (a generous deadline, never a fixed sleep).

`cut()` partitions the replica from its primary first (the replication user disabled, its link killed): a
write made on the primary after the cut never reaches the replica, as behind a network partition, so the
promoted replica lacks it (the lock's key: two leases at once).

    python tests/integration/redis_cluster.py OUT   # plays the sample's incident, writes OUT's logs
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

NODE_TIMEOUT_MS = 1500
DEADLINE_S = 60.0
REPL_USER = "leaselog-cluster-replication"
UTC_ENV = {**os.environ, "TZ": "UTC"}


def free_ports(n: int) -> list[int]:
    """`n` distinct TCP ports on 127.0.0.1 that nothing listens on right now (the OS picks them)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for(what: str, test: Any, logs: Any, deadline_s: float = DEADLINE_S) -> Any:
    """Poll `test()` until it gives something true (returned), or fail after `deadline_s` with the logs."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            got = test()
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            got = None
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {deadline_s} s{logs()}")
        time.sleep(0.05)


class RedisCluster:
    """Nodes `node-1` .. `node-3` (primaries) and `node-4` (the replica of `node-1`) in `folder`."""

    def __init__(self, folder: Path | None = None, exe: str = "redis-server") -> None:
        found = shutil.which(exe)
        if found is None:
            raise RuntimeError(f"`{exe}` is not on PATH")
        self.exe = found
        self.folder = folder or Path(tempfile.mkdtemp(prefix="leaselog-cluster-"))
        self.password = uuid.uuid4().hex
        ports = free_ports(8)
        self.ports, self.bus_ports = ports[:4], ports[4:]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.clients: list[redis.Redis] = []

    # -- the nodes -----------------------------------------------------------------------------------
    def log_path(self, i: int) -> Path:
        return self.folder / f"node-{i + 1}.log"

    def logs(self) -> str:
        return "".join(
            f"\n--- {p.name} ---\n{p.read_text(errors='replace')[-1500:]}"
            for p in sorted(self.folder.glob("*.log"))
        )

    def _start(self, i: int) -> None:
        work = self.folder / f"node-{i + 1}"
        work.mkdir(exist_ok=True)
        args = [
            self.exe,
            "--port", str(self.ports[i]),
            "--cluster-port", str(self.bus_ports[i]),
            "--bind", "127.0.0.1",
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            "--save", "",
            "--appendonly", "no",
            "--dir", str(work),
            "--loglevel", "notice",
            "--logfile", str(self.log_path(i)),
            "--repl-diskless-sync-delay", "0",
            "--masteruser", REPL_USER,
            "--masterauth", self.password,
        ]  # fmt: skip
        self.procs.append(
            subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=UTC_ENV,
            )
        )
        client = redis.Redis(
            port=self.ports[i], socket_timeout=5.0, socket_connect_timeout=2.0, decode_responses=True
        )
        self.clients.append(client)
        wait_for(f"node-{i + 1} answers", client.ping, self.logs)
        # the replication user the replica authenticates as (on every node: any may be its primary)
        client.acl_setuser(
            REPL_USER,
            enabled=True,
            passwords=[f"+{self.password}"],
            keys=["*"],
            channels=["*"],
            commands=["+@all"],
        )

    def _cli(self, *args: str) -> None:
        cli = shutil.which("redis-cli")
        if cli is None:
            raise RuntimeError("`redis-cli` is not on PATH")
        done = subprocess.run(
            [cli, *args], capture_output=True, text=True, timeout=120, env=UTC_ENV, check=False
        )
        if done.returncode != 0:
            raise AssertionError(f"redis-cli {' '.join(args)}: {done.stdout}{done.stderr}{self.logs()}")

    def start(self) -> RedisCluster:
        try:
            for i in range(4):
                self._start(i)
            addr = [f"127.0.0.1:{p}" for p in self.ports]
            self._cli("--cluster", "create", *addr[:3], "--cluster-yes")
            self._cli(
                "--cluster",
                "add-node",
                addr[3],
                addr[0],
                "--cluster-slave",
                "--cluster-master-id",
                self.id(0),
            )
            wait_for("the cluster is ok on every node", self._all_ok, self.logs)
            wait_for("the replica is in sync", self._synced, self.logs)
        except BaseException:
            self.close()
            raise
        return self

    def id(self, i: int) -> str:
        return str(self.clients[i].execute_command("CLUSTER", "MYID"))

    def _all_ok(self) -> bool:
        """Every node says the cluster is ok and knows node-4 as node-1's replica."""
        replica = f"{self.id(3)} 127.0.0.1:{self.ports[3]}@{self.bus_ports[3]}"
        of = f"slave {self.id(0)} "
        return all(
            c.cluster("INFO")["cluster_state"] == "ok"
            and any(
                x.startswith(replica) and of in x
                for x in str(c.execute_command("CLUSTER", "NODES")).splitlines()
            )
            for c in self.clients
        )

    def _synced(self) -> bool:
        role = self.clients[3].execute_command("ROLE")
        return role[0] == "slave" and role[3] == "connected"

    def role(self, i: int) -> str:
        return str(self.clients[i].execute_command("ROLE")[0])

    # -- the incident --------------------------------------------------------------------------------
    def key_on(self, i: int, stem: str) -> str:
        """A key named after `stem` whose slot node `i` serves (a hash tag chosen until it lands there)."""
        c = self.clients[i]
        for n in range(10_000):
            key = f"{stem}{{{n}}}" if n else stem
            slot = int(c.execute_command("CLUSTER", "KEYSLOT", key))
            if any(int(lo) <= slot <= int(hi) for lo, hi in self._slots(i)):
                return key
        raise AssertionError(f"no key for node-{i + 1}")

    def _slots(self, i: int) -> list[tuple[int, int]]:
        me = self.id(i)
        out = []
        for line in str(self.clients[i].execute_command("CLUSTER", "NODES")).splitlines():
            parts = line.split()
            if parts[0] == me:
                out += [
                    tuple(int(x) for x in s.split("-")) if "-" in s else (int(s), int(s)) for s in parts[8:]
                ]
        return out  # type: ignore[return-value]

    def cut(self) -> None:
        """The replica's link to its primary drops and cannot come back (its user is off on the primary)."""
        primary, replica = self.clients[0], self.clients[3]
        primary.acl_setuser(REPL_USER, enabled=False)
        primary.execute_command("CLIENT", "KILL", "USER", REPL_USER)

        def down() -> bool:
            if replica.execute_command("ROLE")[3] != "connected":
                return True
            primary.execute_command("CLIENT", "KILL", "USER", REPL_USER)
            return False

        wait_for("the replica's link is down", down, self.logs)

    def kill_primary(self) -> None:
        self.procs[0].kill()
        self.procs[0].wait(timeout=30)

    def wait_promoted(self) -> None:
        wait_for("the replica reports role master", lambda: self.role(3) == "master", self.logs)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
        for c in self.clients:
            c.close()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    cluster = RedisCluster().start()
    try:
        print(cluster.ports, cluster.role(3))
        cluster.cut()
        t0 = datetime.now(UTC)
        cluster.kill_primary()
        cluster.wait_promoted()
        print("promoted", t0, datetime.now(UTC))
    finally:
        cluster.close()
        for p in cluster.folder.glob("*.log"):
            shutil.copyfile(p, out / p.name)
        print(json.dumps(sorted(p.name for p in out.iterdir())))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
