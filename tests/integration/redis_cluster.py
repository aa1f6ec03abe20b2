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

    python tests/integration/redis_cluster.py sample_logs/dialects/redis-cluster   # the sample, from a real run
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
from redis.backoff import NoBackoff
from redis.retry import Retry

from leaselog.reproduce.failover import add_replication_user

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
        self.folder.mkdir(parents=True, exist_ok=True)
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
            # no failover the harness did not make (a node slow to answer on a loaded machine): the replica
            # may fail over on its own only from `kill_primary` on (a manual failover it always may)
            "--cluster-replica-no-failover", "yes",
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
        add_replication_user(client, REPL_USER, self.password)

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
        replica, primary = self.id(3), self.id(0)

        def knows(c: redis.Redis) -> bool:
            for line in str(c.execute_command("CLUSTER", "NODES")).splitlines():
                me, _addr, flags, of, *_ = line.split()
                if me == replica:
                    return "slave" in flags.split(",") and of == primary
            return False

        return all(c.cluster("INFO")["cluster_state"] == "ok" and knows(c) for c in self.clients)

    def _synced(self) -> bool:
        role = self.clients[3].execute_command("ROLE")
        return role[0] == "slave" and role[3] == "connected"

    def role(self, i: int) -> str:
        return str(self.clients[i].execute_command("ROLE")[0])

    # -- the incident --------------------------------------------------------------------------------
    def tag_on(self, i: int, stem: str) -> str:
        """A hash tag named after `stem` whose slot node `i` serves (`stem`, else `stem-N` for the first N
        that lands there): keys `{tag}:...` live on node `i`."""
        c = self.clients[i]
        mine = self._slots(i)
        for n in range(10_000):
            tag = f"{stem}-{n}" if n else stem
            slot = int(c.execute_command("CLUSTER", "KEYSLOT", f"{{{tag}}}"))
            if any(lo <= slot <= hi for lo, hi in mine):
                return tag
        raise AssertionError(f"no hash tag for node-{i + 1}")

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
        """SIGKILLs node-1, its replica free to fail over from now on."""
        self.clients[3].config_set("cluster-replica-no-failover", "no")
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


class Pod:
    """A worker's lines in leaselog's vocabulary (JSON, one a line), each written once the Redis call it tells
    of has returned; its lock client talks to the primary the cluster names for the lock's slot."""

    def __init__(self, name: str, out: Path, cluster: RedisCluster, job: str, tag: str) -> None:
        self.name, self.cluster, self.job = name, cluster, job
        self.lock, self.fence = f"{{{tag}}}:lock", f"{{{tag}}}:fence"
        self.file = (out / f"{name}.jsonl").open("w", encoding="utf-8")
        self.started = time.monotonic()
        self.owner = str(uuid.uuid4())
        self.port = cluster.ports[0]
        self.client = self._connect(self.port)
        self.client.ping()
        self.log(None, thread="main", message=f"worker {name} up")

    @staticmethod
    def _connect(port: int) -> redis.Redis:
        # no retries: a call to a dead primary fails at once, as the worker's lock client reports it
        return redis.Redis(
            port=port,
            socket_timeout=2.0,
            socket_connect_timeout=1.0,
            decode_responses=True,
            retry=Retry(NoBackoff(), 0),
        )

    def log(self, event: str | None, level: str = "INFO", **fields: Any) -> None:
        now = datetime.now(UTC)
        line: dict[str, Any] = {
            "ts": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": level,
        }
        if event is not None:
            line |= {"jobId": self.job, "executionId": f"cluster-{self.name[-1]}", "pod": self.name}
            line |= {"thread": fields.pop("thread", "worker-1"), "event": event}
            line["elapsedMs"] = round((time.monotonic() - self.started) * 1000)
        else:
            line |= {"pod": self.name}
        self.file.write(json.dumps(line | fields, separators=(",", ":")) + "\n")
        self.file.flush()

    def call(self, *args: Any) -> tuple[Any, float]:
        """The command on the primary this pod knows, and its latency in ms (a ConnectionError raised)."""
        t = time.monotonic()
        got = self.client.execute_command(*args)
        return got, round((time.monotonic() - t) * 1000, 1)

    def reconnect(self, thread: str) -> None:
        """Asks a live node which primary serves the lock's slot now (the cluster's own answer, polled until
        it names another primary than the dead one), connects there and says so."""
        key = self.lock
        seeds = self.cluster.clients[1:3]

        def owner() -> int | None:
            for seed in seeds:
                slot = int(seed.execute_command("CLUSTER", "KEYSLOT", key))
                for lo, hi, primary, *_ in seed.execute_command("CLUSTER", "SLOTS"):
                    if lo <= slot <= hi and int(primary[1]) != self.port:
                        return int(primary[1])
            return None

        port = wait_for("the cluster names the lock's new primary", owner, self.cluster.logs)
        before = self.port
        self.client.close()
        self.client, self.port = self._connect(port), port
        role = self.client.execute_command("ROLE")[0]
        self.log(
            "lock_reconnected",
            "WARN",
            thread=thread,
            primary=f"127.0.0.1:{port}",
            previousPrimary=f"127.0.0.1:{before}",
            message=f"report lock: connection to 127.0.0.1:{before} lost (ConnectionError); slot moved, "
            f"reconnected to 127.0.0.1:{port} (role {role})",
        )

    def acquire(self, thread: str, lease_ms: int) -> bool:
        ok, _ = self.call("SET", self.lock, self.owner, "NX", "PX", str(lease_ms))
        if not ok:
            return False
        token, _ = self.call("INCR", self.fence)
        self.log(
            "lock_acquired", thread=thread, leaseMs=lease_ms, fencingToken=int(token), owner=self.owner,
            message="acquired report lock",
        )  # fmt: skip
        self.log("job_started", thread=thread, message="report started")
        return True

    def renew(self, lease_ms: int) -> str:
        """One owner-checked renewal: `success`, `rejected` (the key is someone else's or gone) or `error`."""
        script = (
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
            "else return 0 end"
        )
        try:
            got, ms = self.call("EVAL", script, "1", self.lock, self.owner, str(lease_ms))
        except (redis.ConnectionError, redis.TimeoutError) as e:
            self.log(
                "lease_renewal", "WARN", thread="lease-renewal-1", renewalOutcome="error",
                message=f"lease renewal error: {type(e).__name__}",
            )  # fmt: skip
            return "error"
        outcome = "success" if got == 1 else "rejected"
        self.log(
            "lease_renewal", thread="lease-renewal-1", renewalOutcome=outcome, latencyMs=ms,
            message=f"lease renewal {outcome}",
        )  # fmt: skip
        return outcome

    def release(self, thread: str) -> None:
        script = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
        got, _ = self.call("EVAL", script, "1", self.lock, self.owner)
        self.log("lock_released", thread=thread, released=got == 1, message=f"release_deleted_{got}")

    def close(self) -> None:
        self.client.close()
        self.file.close()


def play_incident(out: Path, lease_ms: int = 10_000) -> dict[str, float]:
    """The sample's incident for real: pod A takes the lock on node-1 after the replica was cut off, node-1
    is killed and A's next renewal fails, the cluster promotes node-4 (without A's key), pod B (a retry)
    takes the key there (with A's fencing token again), A reconnects and its renewal is rejected, A stops
    and B finishes. The pauses between steps are the scenario's pace, not waits for Redis (those poll).
    The nodes' logs and the pods' lines are written to `out`; returns the harness's moments (epoch seconds:
    `killed`, `promoted`)."""
    out.mkdir(parents=True, exist_ok=True)
    cluster = RedisCluster().start()
    moments: dict[str, float] = {}
    job = "report-0000921"
    tag = cluster.tag_on(0, job)
    a = b = None
    try:
        a, b = Pod("pod-a", out, cluster, job, tag), Pod("pod-b", out, cluster, job, tag)
        cluster.cut()
        a.log(
            "job_triggered", thread="consumer-1", trigger="stream", message=f"received report request {job}"
        )
        if not a.acquire("consumer-1", lease_ms):
            raise AssertionError("pod A did not get the lock")
        time.sleep(0.3)
        moments["killed"] = time.time()
        cluster.kill_primary()
        time.sleep(0.5)
        a.renew(lease_ms)  # on the dead primary: an error
        cluster.wait_promoted()
        moments["promoted"] = time.time()
        b.log("job_triggered", thread="retry-1", trigger="retry", attempt=2, message=f"retrying {job}")
        try:
            b.acquire("retry-1", lease_ms)
        except (redis.ConnectionError, redis.TimeoutError):
            b.reconnect("retry-1")
            if not b.acquire("retry-1", lease_ms):
                raise AssertionError("pod B did not get the lock on the promoted replica") from None
        time.sleep(0.3)
        a.reconnect("lease-renewal-1")
        if a.renew(lease_ms) == "rejected":
            a.log("ownership_lost", "WARN", thread="lease-renewal-1", reason="renewal_rejected",
                  message="lease belongs to someone else now")  # fmt: skip
            a.log("job_stop_requested", "WARN", thread="lease-renewal-1", reason="ownership_uncertain",
                  cause="renewal_rejected", message="stop requested: renewal_rejected")  # fmt: skip
            time.sleep(0.2)
            a.log("job_stopped", thread="consumer-1", reason="ownership_uncertain", message="report stopped")
        a.release("consumer-1")
        time.sleep(0.7)
        b.renew(lease_ms)
        time.sleep(0.5)
        b.log("job_finished", thread="retry-1", status="ok", message="report finished")
        b.release("retry-1")
    finally:
        for pod in (a, b):
            if pod is not None:
                pod.close()
        cluster.close()
        for p in cluster.folder.glob("*.log"):
            shutil.copyfile(p, out / p.name)
        shutil.rmtree(cluster.folder, ignore_errors=True)
    return moments


# the sample keeps the pods' lines, a surviving primary's log (the FAIL message, its vote) and the promoted
# replica's: file in the run -> its name in the sample
SAMPLE_FILES = {
    "pod-a.jsonl": "pod-a.jsonl",
    "pod-b.jsonl": "pod-b.jsonl",
    "node-2.log": "redis-node-2.log",
    "node-4.log": "redis-node-4.log",
}


def write_sample(out: Path) -> dict[str, float]:
    """sample_logs/dialects/redis-cluster/ from a fresh real run: `play_incident`, then SAMPLE_FILES."""
    with tempfile.TemporaryDirectory(prefix="leaselog-cluster-sample-") as tmp:
        moments = play_incident(Path(tmp))
        out.mkdir(parents=True, exist_ok=True)
        for name, kept in SAMPLE_FILES.items():
            shutil.copyfile(Path(tmp) / name, out / kept)
    return moments


if __name__ == "__main__":
    print(write_sample(Path(sys.argv[1])))
