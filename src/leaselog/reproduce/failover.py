"""The lab's failover (the lock's own Redis as a primary with one replica, and the fault that loses a
lease) and its clock steps; `with_lab_faults` draws either into a plan.

A failover run keeps its lock (the lock key and the fencing counter) on a pair of throwaway
`redis-server`s of its own: a primary, and a replica started with `--replicaof` that authenticates to the
primary as a replication user of its own. The stream, the markers and the result store stay on the run's
main server (they are other systems: the queue and the resource the job writes to).

One Sentinel (`redis-server <conf> --sentinel`, quorum 1) monitors the pair; it is started once the replica
is in sync and is known to it (it learns replicas from the primary's INFO, which no longer lists a replica
once it is cut off). It is patient until the fault (`down-after-milliseconds` a minute: a primary slow to
answer a PING on a loaded machine is no failover the run did not draw) and quick from it on
(`SENTINEL SET ... down-after-milliseconds` DOWN_AFTER_MS right before the kill).

The fault, as the measured incident had it:
1. **cut**: before pod A acquires (the run's request is published only after the cut), the replica is cut
   off the primary: the replication user is disabled (`ACL SETUSER ... off`) and its connection killed
   (`CLIENT KILL USER`). The replica's link is down and every reconnection is refused (WRONGPASS), as a
   replica behind a network partition; the primary goes on accepting writes (no `min-replicas-to-write`),
   so A's `SET NX` and its fencing `INCR` never reach the replica. Pausing the replica instead (SIGSTOP,
   `DEBUG SLEEP`) would not lose the write: the primary's bytes wait in the replica's socket buffer and are
   applied when it resumes.
2. **kill**: at the drawn moment the primary is SIGKILLed (nothing it had is saved anywhere).
3. **promote**: Sentinel finds the primary down (`+sdown`, `+odown` with quorum 1), elects itself, and
   promotes the replica (`SLAVEOF NO ONE`; `+promoted-slave`, `+switch-master`). It does so only for a
   replica whose link has been down no longer than `down-after-milliseconds` x 10 plus the time the
   primary has been down (sentinel.c `sentinelSelectSlave`, Redis 7.0.15): publishing the request after
   the cut keeps the link's down time to A's acquisition and the kill. The harness asks Sentinel
   (`SENTINEL GET-MASTER-ADDR-BY-NAME`) until it names the replica, and publishes that address where the
   workers look for the primary: a worker whose lease command finds the old primary gone asks for the
   current one, reconnects, and logs `lock_reconnected`. The promoted replica has neither A's key nor A's
   fencing increment: the next acquirer gets the key, and A's token again. The promotion's moment is
   Sentinel's, not drawn: the drawn gap is what the kill waits for at least, and the moments after it
   (pod B's trigger) keep their distance to the promotion.

Sentinel's log and the promoted replica's (`redis-sentinel.log`, `redis-replica.log`, as Redis writes
them: local time without a zone, the processes run with TZ=UTC) are copied into the run's folder beside
the pods' logs.
"""

from __future__ import annotations

import dataclasses
import os
import random
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import redis

from leaselog.reproduce.plan import Plan
from leaselog.reproduce.pod import mono_ms
from leaselog.reproduce.server import ReproduceError, free_port, server_args

START_TIMEOUT_S = 10.0
PROMOTION_TIMEOUT_S = 20.0
REPL_USER = "leaselog-lab-replication"
MASTER_NAME = "leaselog-lock"  # the name Sentinel monitors the pair under
DOWN_AFTER_MS = 500  # at least; more where the replica's link has been down long (`down_after_ms`)
# until the fault, Sentinel waits this long for a PONG: a primary slow to answer on a loaded machine is no
# failover before the one the run draws (`SENTINEL SET ... down-after-milliseconds` at the kill)
PATIENT_DOWN_AFTER_MS = 60_000
FAILOVER_TIMEOUT_MS = 5000
# Sentinel's timers (`SENTINEL DEBUG`, sentinel.c 7.0.15): INFO every 500 ms while the primary is up (10 s by
# default: a replica whose last INFO is older than 5 s when the primary is down is never promoted); no TILT
# for a timer late by less than 10 s (a loaded machine's pause is no clock jump), and a TILT entered anyway
# (at start-up, before these apply) left after 200 ms instead of 30 s
SENTINEL_DEBUG = ("info-period", "500", "tilt-trigger", "10000", "tilt-period", "200")
# the logs copied into the run's folder: the file in the pair's folder -> its name there
REDIS_LOGS = {"sentinel.log": "redis-sentinel.log", "replica.log": "redis-replica.log"}
UTC_ENV = {**os.environ, "TZ": "UTC"}
FAILOVER_SHARE = 0.3  # of the runs with one execution per pod
CLOCK_STEP_SHARE = 0.2  # of the other runs
UNIT_MS = 100
LATER_PATHS = ("duplicate_publish", "scheduler", "retry", "poll")


def with_lab_faults(plan: Plan, rng: random.Random, without: tuple[str, ...] = ()) -> Plan:
    """`plan` as drawn, or with a failover of the lock's Redis, or with a clock step on one pod.

    A failover replaces the drawn fault and lengthens the lease to 3-5 s: the replica is cut off before A
    acquires, the primary is killed `fault_at_ms` after A started and the replica promoted `fault_ms`
    later; pod B is fired a moment after the promotion (by a trigger the harness fires: a redelivery would
    wait for A's entry to idle). A clock
    step: one pod's logging clock steps by 0.5-3 s, forward or backward, `clock_step_at_ms` after its
    first lease line (a moment drawn over its work).
    """
    failover, step = rng.random() < FAILOVER_SHARE, rng.random() < CLOCK_STEP_SHARE
    stepped = rng.choice(plan.pods)
    size = rng.choice((-1, 1)) * rng.randint(500, 3000)
    lease = plan.lease_ms
    a = plan.pods[0]
    work = max(a.units_list or (a.units,)) * UNIT_MS
    # the step comes after the pod's first lease line, mostly while it still logs (before its work is done)
    span = max(stepped.units_list or (stepped.units,)) * UNIT_MS + max(stepped.ticks_ms, default=0)
    step_at = rng.randint(50, max(100, int(span * 0.9)))
    kill_at = min(int(lease * rng.uniform(0.05, 0.4)), int(work * 0.8))
    gap = rng.randint(20, max(21, int(lease * 0.2)))
    b_at = kill_at + gap + rng.randint(10, max(11, int(lease * 0.25)))
    b_path = rng.choice(LATER_PATHS)
    if failover and plan.layout == "pods" and len(plan.pods) > 1 and "failover" not in without:
        b = plan.pods[1]
        path = b.path if b.path in LATER_PATHS else b_path
        pods = (a, dataclasses.replace(b, path=path, fire_ms=b_at, dies_after_trigger=False), *plan.pods[2:])
        # Sentinel names the new primary some 0.8-1.6 s after the kill: a lease of 3-5 s keeps A's lease
        # valid when B takes the key again on the promoted replica (two leases at once: the fault's point)
        lease = max(plan.lease_ms, rng.randint(3000, 5000))
        return dataclasses.replace(
            plan, fault="failover", fault_at_ms=kill_at, fault_ms=gap, pods=pods, lease_ms=lease
        )
    if step and "clock_step" not in without:
        return dataclasses.replace(
            plan, clock_step_role=stepped.role, clock_step_ms=size, clock_step_at_ms=step_at
        )
    return plan


def primary_key(prefix: str) -> str:
    """Where the workers of a failover run look up the lock's current primary (its URL)."""
    return f"{prefix}:lock-primary"


def _start(exe: str, port: int, folder: Path, name: str, extra: list[str]) -> subprocess.Popen[bytes]:
    # a replica's first full sync starts at once (Redis 7 waits 5 s for more replicas by default)
    args = server_args(exe, port, folder, f"{name}.log", "notice", "--repl-diskless-sync-delay", "0", *extra)
    return subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=UTC_ENV
    )


def down_after_ms(link_down_s: int) -> int:
    """Sentinel's `down-after-milliseconds` for a failover whose replica's link has been down `link_down_s`
    (whole seconds, as its INFO says) at the kill. Sentinel promotes no replica whose link has been down
    longer than ten times that plus the time the primary has been down (`sentinelSelectSlave`): the link
    will have been down `link_down_s` (+1, the rounding) + down-after + the time Sentinel takes to select
    (2 s allowed, a loaded machine's): at least DOWN_AFTER_MS, more on a machine so loaded that A took
    long to acquire after the cut."""
    return max(DOWN_AFTER_MS, -(-(link_down_s + 1 + 2) * 1000 // 9))


def _start_sentinel(exe: str, port: int, folder: Path, primary_port: int) -> subprocess.Popen[bytes]:
    """`redis-server sentinel.conf --sentinel` (Sentinel rewrites its config file: it must be writable)."""
    conf = folder / "sentinel.conf"
    conf.write_text(
        "\n".join(
            (
                f"port {port}",
                "bind 127.0.0.1",
                f"dir {folder}",
                f"logfile {folder / 'sentinel.log'}",
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {primary_port} 1",
                f"sentinel down-after-milliseconds {MASTER_NAME} {PATIENT_DOWN_AFTER_MS}",
                f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}",
                "",
            )
        ),
        encoding="utf-8",
    )
    return subprocess.Popen(
        [exe, str(conf), "--sentinel"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=UTC_ENV,
    )


def add_replication_user(client: Any, user: str, password: str) -> None:
    """The ACL user a replica authenticates to its primary as (`--masteruser`, `--masterauth`)."""
    client.acl_setuser(
        user, enabled=True, passwords=[f"+{password}"], keys=["*"], channels=["*"], commands=["+@all"]
    )


def _client(url: str) -> Any:
    return redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=2.0, decode_responses=True)


class LockPair:
    """A primary, its replica and a Sentinel for one run's lock; `close()` stops whatever is left of them."""

    def __init__(self, executable: str = "redis-server") -> None:
        exe = shutil.which(executable)
        if exe is None:
            raise ReproduceError(f"`{executable}` is not on PATH: a failover run needs two redis-servers")
        self.folder = Path(tempfile.mkdtemp(prefix="leaselog-failover-"))
        self.password = uuid.uuid4().hex
        self.procs: list[subprocess.Popen[bytes]] = []
        self.events: dict[str, float] = {}
        try:
            pport = free_port()
            self.primary_url = f"redis://127.0.0.1:{pport}/0"
            self.procs.append(_start(exe, pport, self.folder, "primary", []))
            self.primary = _client(self.primary_url)
            self._wait(self.primary)
            add_replication_user(self.primary, REPL_USER, self.password)
            rport = free_port()
            self.replica_url = f"redis://127.0.0.1:{rport}/0"
            replica_args = ["--replicaof", "127.0.0.1", str(pport), "--masteruser", REPL_USER]
            self.procs.append(
                _start(exe, rport, self.folder, "replica", [*replica_args, "--masterauth", self.password])
            )
            self.replica = _client(self.replica_url)
            self._wait(self.replica)
            self._wait_synced()
            self.primary_port, self.replica_port = pport, rport
            sport = free_port()
            self.procs.append(_start_sentinel(exe, sport, self.folder, pport))
            self.sentinel = _client(f"redis://127.0.0.1:{sport}/0")
            self._wait(self.sentinel)
            self.sentinel.execute_command("SENTINEL", "DEBUG", *SENTINEL_DEBUG)
            self._wait_known()
            self._wait_untilted()
        except BaseException:
            self.close()
            raise

    def _wait(self, client: Any) -> None:
        end = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < end:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.02)
        raise ReproduceError(f"a redis-server of the failover pair did not start{self.server_logs()}")

    def _wait_synced(self) -> None:
        """The replica is up to date: a probe written on the primary is on the replica."""
        probe = f"leaselog:lab:probe:{uuid.uuid4().hex[:8]}"
        self.primary.set(probe, "1")
        end = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < end:
            if self.replica.get(probe) == "1":
                self.primary.delete(probe)
                return
            time.sleep(0.02)
        raise ReproduceError(f"the replica never synchronised{self.server_logs()}")

    def _wait_known(self) -> None:
        """Sentinel lists the replica, up, with its INFO read (it learns replicas from the primary's INFO)."""
        end = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < end:
            for r in self.sentinel.execute_command("SENTINEL", "REPLICAS", MASTER_NAME) or []:
                info = r if isinstance(r, dict) else dict(zip(r[::2], r[1::2], strict=True))
                if info.get("port") == str(self.replica_port) and info.get("flags") == "slave":
                    return
            time.sleep(0.02)
        raise ReproduceError(f"Sentinel never listed the replica{self.server_logs()}")

    def _wait_untilted(self) -> None:
        """Sentinel is out of TILT mode (it acts on nothing in it)."""
        end = time.monotonic() + START_TIMEOUT_S
        while str(self.sentinel.info("sentinel").get("sentinel_tilt")) != "0":
            if time.monotonic() > end:
                raise ReproduceError(f"Sentinel stayed in TILT mode{self.server_logs()}")
            time.sleep(0.02)

    def sentinel_primary(self) -> int:
        """The port of the primary Sentinel names now."""
        _host, port = self.sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
        return int(port)

    def server_logs(self) -> str:
        tails = [
            f"\n--- {f.name} ---\n{f.read_text(errors='replace')[-800:]}"
            for f in sorted(self.folder.glob("*.log"))
        ]
        return "".join(tails)

    def cut(self) -> None:
        """Partition the replica from the primary: its link drops and cannot come back."""
        self.primary.acl_setuser(REPL_USER, enabled=False)
        killed = [self.primary.execute_command("CLIENT", "KILL", "USER", REPL_USER)]
        end = time.monotonic() + START_TIMEOUT_S
        again = time.monotonic() + 0.5
        while (info := self.replica.info("replication")).get("master_link_status") != "down":
            if info.get("role") != "slave":
                raise ReproduceError(f"the replica is no replica any more{self.server_logs()}")
            if time.monotonic() > end:
                raise ReproduceError(
                    f"the replica's link never went down (connections killed: {killed}; the replica's "
                    f"replication: {info}; the primary's: {self.primary.info('replication')})"
                    f"{self.server_logs()}"
                )
            if time.monotonic() > again:  # (a link that came back before the user was off: kill it again)
                killed.append(self.primary.execute_command("CLIENT", "KILL", "USER", REPL_USER))
                again = time.monotonic() + 0.5
            time.sleep(0.01)
        self.events["cutMono"] = round(mono_ms(), 3)

    def kill_primary(self, lock_key: str) -> None:
        # Sentinel has not failed over on its own: the fault is ours
        if self.sentinel_primary() != self.primary_port:
            raise ReproduceError(f"Sentinel failed over before the primary was killed{self.server_logs()}")
        # what the replica holds of the lock (nothing reaches it since the cut: what it will be promoted with)
        self.events["replicaHadKey"] = bool(self.replica.exists(lock_key))
        self._wait_untilted()
        # from now on Sentinel finds a primary that answers no PING for that long down
        down_after = down_after_ms(
            int(self.replica.info("replication").get("master_link_down_since_seconds", 0))
        )
        self.events["downAfterMs"] = down_after
        self.sentinel.execute_command(
            "SENTINEL", "SET", MASTER_NAME, "down-after-milliseconds", str(down_after)
        )
        self.procs[0].kill()
        self.procs[0].wait(timeout=10)
        self.events["primaryKilledMono"] = round(mono_ms(), 3)

    def promote(self, coord: Any, prefix: str) -> None:
        """Wait until Sentinel names the replica as the primary, then tell the workers (as a client that
        asks Sentinel would learn it)."""
        end = time.monotonic() + PROMOTION_TIMEOUT_S
        while self.sentinel_primary() != self.replica_port:
            if time.monotonic() > end:
                raise ReproduceError(f"Sentinel never promoted the replica{self.server_logs()}")
            time.sleep(0.01)
        self.events["promotedMono"] = round(mono_ms(), 3)
        coord.set(primary_key(prefix), self.replica_url, ex=600)

    def keep_logs(self, out: Path) -> None:
        """Sentinel's and the replica's logs into `out`, as Redis wrote them."""
        for name, kept in REDIS_LOGS.items():
            if (self.folder / name).exists():
                shutil.copyfile(self.folder / name, out / kept)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        for c in ("primary", "replica", "sentinel"):
            client = getattr(self, c, None)
            if client is not None:
                client.close()
        shutil.rmtree(self.folder, ignore_errors=True)
