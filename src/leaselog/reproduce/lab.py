"""One randomized lab run: a plan drawn from a seeded RNG, played by real worker processes on a real Redis.

`draw(seed, index)` picks the run's parameters (lease, renewal, retry policy, pods and their trigger paths,
the fault and its moment, fencing, clock offsets, log shape); `play(plan, target, out)` runs it and writes
the pods' flat logs and `truth.json` (their CLOCK_MONOTONIC moments, the faults as the harness injected
them, the effects the result store accepted). Nothing here reads the logs leaselog analyzes.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import redis

from leaselog.reproduce.coarse import with_coarse
from leaselog.reproduce.failover import LockPair, primary_key, with_lab_faults
from leaselog.reproduce.handoffs import play_handoffs, with_handoffs
from leaselog.reproduce.layouts import with_layout
from leaselog.reproduce.plan import Plan, PodPlan
from leaselog.reproduce.pod import (
    GROUP,
    delete_run_keys,
    keys,
    marker,
    mono_ms,
    read_moments,
    signal_list,
    stop_pods,
)
from leaselog.reproduce.server import RedisTarget, ReproduceError
from leaselog.reproduce.shapes import SHAPES

FAULTS = ("none", "pause", "stall", "crash", "netcut", "slow")
FAULT_WEIGHTS = (3, 2, 2, 2, 2, 1)
PATHS = ("redelivery", "duplicate_publish", "scheduler", "retry", "poll")
# the worker's --trigger for each path of a later attempt
PATH_TRIGGER = {
    "first": "stream",
    "redelivery": "claim",
    "duplicate_publish": "stream",
    "scheduler": "scheduler",
    "retry": "retry",
    "poll": "poll",
}
UNIT_MS = 100
# Start a pod without importing `leaselog` itself (its __init__ loads polars and the analysis, half a second
# of CPU per pod): the worker needs only leaselog.reproduce.worker and .pod, imported as plain modules.
LAUNCH = """
import runpy, sys, types
for name, path in (("leaselog", {pkg!r}), ("leaselog.reproduce", {sub!r})):
    m = types.ModuleType(name)
    m.__path__ = [path]
    sys.modules[name] = m
runpy.run_module("leaselog.reproduce.worker", run_name="__main__", alter_sys=True)
"""
WAIT_S = 60.0
CLOSE = "closed"


def draw(seed: int, index: int, shapes: tuple[str, ...] | None = None, without: tuple[str, ...] = ()) -> Plan:
    """The parameters of run `index` of campaign `seed` (the same numbers on every machine); `without`
    (run kinds: `failover`, `clock_step`, `coarse`) never draws those: the run is what it is with none of them."""
    rng = random.Random(f"leaselog-lab:{seed}:{index}")
    lease = rng.choice((1000, 1000, 1200, 1500, 1500, 2000, 2500))
    renew = rng.random() < 0.8
    margin = max(50, lease // 10)
    renewal = int(lease * rng.choice((0.2, 0.25, 1 / 3, 0.4)))
    op_timeout = rng.choice((100, 150, 250, max(100, renewal // 2)))
    while renewal + op_timeout >= lease - margin:  # a renewal must be able to be on time
        op_timeout = max(25, op_timeout // 2)
    retry = rng.choice((0, rng.randint(200, 400), renewal))
    a_work = int(lease * (rng.uniform(1.0, 2.0) if renew else rng.uniform(0.5, 2.0)))
    fault = rng.choices(FAULTS, FAULT_WEIGHTS)[0]
    if renew:
        at = int(renewal * (rng.choice((0, 1, 2)) + rng.uniform(0.1, 0.9)))
    else:
        at = int(lease * rng.uniform(0.2, 0.8))
    at = min(at, int(a_work * 0.8))
    length = {
        "none": 0,
        "crash": 0,
        "pause": int(lease * rng.uniform(0.3, 1.6)),
        "stall": int(lease * rng.uniform(0.3, 1.5)),
        "netcut": int(lease * rng.uniform(0.3, 1.6)),
        "slow": int(lease * rng.uniform(1.2, 2.0)),
    }[fault]
    pods = [
        PodPlan("A", "first", 0, "wait-silent", max(1, a_work // UNIT_MS), _offset(rng)),
    ]
    for i in range(rng.randint(1, 4)):
        path = rng.choice(PATHS)
        fire = None if path == "redelivery" else int(rng.uniform(0, a_work + lease))
        pods.append(
            PodPlan(
                "BCDE"[i],
                path,
                fire,
                rng.choices(("exit", "wait", "wait-silent"), (6, 2, 2))[0],
                max(1, int(lease * rng.uniform(0.3, 0.9)) // UNIT_MS),
                _offset(rng),
                rng.random() < 0.08,
            )
        )
    names = shapes or tuple(SHAPES)
    plan = Plan(
        seed=seed,
        index=index,
        lease_ms=lease,
        renew=renew,
        renewal_ms=renewal,
        margin_ms=margin,
        op_timeout_ms=op_timeout,
        renew_retry_ms=retry,
        completion=rng.choice(("fenced", "idempotent", "plain", "none")),
        ignore_stop=rng.random() < 0.15,
        fault=fault,
        fault_at_ms=at,
        fault_ms=length,
        shape=rng.choice(names),
        pods=tuple(pods),
    )
    # drawn apart, so that the runs that keep one execution per pod draw what they always drew
    plan = with_layout(plan, random.Random(f"leaselog-lab-layout:{seed}:{index}"))
    plan = with_lab_faults(plan, random.Random(f"leaselog-lab-faults:{seed}:{index}"), without)
    plan = with_coarse(plan, random.Random(f"leaselog-lab-coarse:{seed}:{index}"), without)
    return with_handoffs(plan, random.Random(f"leaselog-lab-handoffs:{seed}:{index}"))


def _offset(rng: random.Random) -> int:
    if rng.random() < 0.5:
        return 0
    return rng.choice((-1, 1)) * rng.choice((5, 20, 50, 100))


# -- playing a plan ------------------------------------------------------------------------------


class LabRun:
    """Processes, Redis keys and the fault timeline of one lab run."""

    def __init__(self, plan: Plan, target: RedisTarget, out: Path, scratch: Path) -> None:
        self.plan, self.target, self.out, self.scratch = plan, target, out, scratch
        self.run_id = uuid.uuid4().hex[:8]
        self.prefix = f"leaselog:lab:{self.run_id}"
        self.job_id = f"report-{plan.seed % 1000:03d}{plan.index:04d}"
        self.k = keys(self.prefix, self.job_id)
        self.client: Any = redis.Redis.from_url(target.url, socket_timeout=WAIT_S, decode_responses=True)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.faults: list[dict[str, Any]] = []
        self.fired: list[dict[str, Any]] = []
        self.lost: dict[str, int] = {}  # attempts of a killed pod that will never be done
        self.acl_user = f"leaselog-lab-{self.run_id}-a"
        self.acl_password = uuid.uuid4().hex
        self.pair: LockPair | None = None  # the lock's own primary and replica (a failover run)

    def planned_step(self, p: PodPlan) -> dict[str, Any] | None:
        """The step `p`'s host clock takes (`fromMono`, `stepMs`), once its first lease line planned it."""
        f = self.scratch / f"{p.pod}.clock.json"
        return json.loads(f.read_text(encoding="utf-8")) if f.exists() else None

    def stepped(self, p: PodPlan) -> int:
        """The step `p`'s host clock has taken by now (a pod restarted after a crash keeps it; one
        restarted before it comes still takes it at the moment planned: it is the host's clock)."""
        step = self.planned_step(p)
        return int(step["stepMs"]) if step is not None and step["fromMono"] <= mono_ms() else 0

    def clocks(self) -> dict[str, list[dict[str, Any]]]:
        """Each pod's logging clock as a function of true time: its offset from `fromMono` on (None: from
        the start); a stepped pod wrote when its clock stepped (a pod that logged no lease line never did)."""
        out: dict[str, list[dict[str, Any]]] = {}
        for p in self.plan.pods:
            out[p.pod] = [{"fromMono": None, "offsetMs": p.clock_offset_ms}]
            f = self.scratch / f"{p.pod}.clock.json"
            if f.exists():
                step = json.loads(f.read_text(encoding="utf-8"))
                out[p.pod].append(
                    {"fromMono": step["fromMono"], "offsetMs": p.clock_offset_ms + step["stepMs"]}
                )
        return out

    def spawn(
        self,
        p: PodPlan,
        runs_before: int = 0,
        *,
        plan: Plan | None = None,
        job_id: str | None = None,
        truth: Path | None = None,
        after: tuple[str, ...] = (),
    ) -> None:
        """Start pod `p`'s worker process (`plan`, `job_id`, `truth`: another job's run on this pod than
        the run's own; `after`: more worker options, which win over those given before them)."""
        plan = plan or self.plan
        here = Path(__file__).resolve().parent
        launch = LAUNCH.format(pkg=str(here.parent), sub=str(here))
        # (judged once: the step may come while the arguments are put together)
        planned, taken = self.planned_step(p), self.stepped(p)
        args = [
            sys.executable,
            "-c",
            launch,
            "--redis",
            self.target.url,
            "--prefix",
            self.prefix,
            "--job-id",
            job_id or self.job_id,
            "--execution-id",
            p.execution_id,
            "--pod",
            p.pod,
            "--role",
            p.role,
            "--log",
            str(self.out / f"{p.pod}.jsonl"),
            "--truth",
            str(truth or self.scratch / f"{p.pod}.truth.jsonl"),
            "--trigger",
            p.threads[0] if p.threads else PATH_TRIGGER[p.path],
            "--path",
            p.path,
            "--id-style",
            plan.id_style,
            "--claim-idle-ms",
            str(plan.lease_ms),
            "--close-marker",
            CLOSE,
            "--on-denied",
            p.on_denied,
            "--lease-ms",
            str(plan.lease_ms),
            "--renewal-ms",
            str(plan.renewal_ms),
            "--renew-retry-ms",
            str(plan.renew_retry_ms),
            "--margin-ms",
            str(plan.margin_ms),
            "--op-timeout-ms",
            str(plan.op_timeout_ms),
            "--unit-ms",
            str(UNIT_MS),
            "--units",
            str(p.units),
            "--completion",
            plan.completion,
            "--clock-offset-ms",
            str(p.clock_offset_ms + taken),
        ]
        if plan.renew:
            args.append("--renew")
        if self.pair is not None:
            args += ["--lock-redis", self.pair.primary_url, "--primary-key", primary_key(self.prefix)]
        if planned is not None and not taken:
            # restarted before its host's clock stepped: the step comes at the moment already planned
            args += [
                "--clock-step-ms",
                str(planned["stepMs"]),
                "--clock-step-at-mono",
                str(planned["fromMono"]),
            ]
        elif plan.clock_step_ms and p.role == plan.clock_step_role and planned is None:
            args += [
                "--clock-step-ms",
                str(plan.clock_step_ms),
                "--clock-step-after-ms",
                str(plan.clock_step_at_ms),
            ]
            args += ["--clock-file", str(self.scratch / f"{p.pod}.clock.json")]
        if p.path == "retry":
            args += ["--attempt", "2"]
        if p.role == "A":
            if plan.ignore_stop:
                args.append("--ignore-stop")
            if plan.fault == "slow":
                args += [
                    "--slow-unit-at",
                    str(plan.fault_at_ms // UNIT_MS),
                    "--slow-unit-ms",
                    str(plan.fault_ms),
                ]
            if plan.fault == "netcut":
                args += ["--redis-user", self.acl_user, "--redis-password", self.acl_password]
        if p.dies_after_trigger:
            args.append("--die-after-trigger")
        if p.threads:
            args += ["--threads", ",".join(p.threads), "--runs", "99"]
        if p.units_list:
            args += ["--units-list", ",".join(str(u) for u in p.units_list)]
        if runs_before:
            args += ["--runs-before", str(runs_before)]
        if p.path == "duplicate_publish":
            args += ["--start-after", "triggered:A"]
        args += after
        err = (self.scratch / f"{p.pod}.stderr").open("wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.procs[p.role if job_id is None else f"{p.role}@{job_id}"] = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env
        )
        err.close()

    def wait_signal(self, name: str, timeout_s: float = WAIT_S) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.client.blpop([signal_list(self.prefix, name)], timeout=0.1):
                return
            for role, p in self.procs.items():
                rc = p.poll()
                if rc not in (None, 0, -signal.SIGKILL):
                    raise ReproduceError(f"pod-{role.lower()} exited with {rc}{self.stderr_tail()}")
        raise ReproduceError(f"timed out waiting for {name!r}{self.stderr_tail()}")

    def stderr_tail(self) -> str:
        tails = []
        for f in sorted(self.scratch.glob("*.stderr")):
            text = f.read_text(errors="replace").strip()
            if text:
                tails.append(f"\n--- {f.stem} stderr ---\n{text[-1500:]}")
        return "".join(tails)

    def a_alive(self) -> bool:
        return self.procs["A"].poll() is None

    # -- the timeline ---------------------------------------------------------------------------------
    def fire(self, p: PodPlan) -> None:
        before = mono_ms()
        if p.path == "scheduler":
            self.client.zadd(self.k["schedule"], {self.job_id: time.time_ns() // 1_000_000})
        elif p.path == "retry":
            self.client.rpush(self.k["retry"], "2")
        elif p.path == "poll":
            self.client.sadd(self.k["pending"], self.job_id)
        elif p.path == "duplicate_publish":
            self.client.xadd(self.k["stream"], {"jobId": self.job_id, "report": "monthly-revenue"})
        self.fired.append({"role": p.role, "path": p.path, "mono": round(before, 3)})

    def tick(self, p: PodPlan) -> None:
        """The pod's own scheduler fires (a tick the pod takes when one of its threads is free)."""
        now = time.time_ns() // 1_000_000
        self.client.rpush(f"{self.k['tick']}:{p.pod}", str(now))
        self.fired.append({"role": p.role, "path": "tick", "mono": round(mono_ms(), 3)})

    def count(self, name: str) -> int:
        return int(self.client.llen(signal_list(self.prefix, name)))

    def up(self) -> None:
        """Every pod has started (its first line is written): its scheduler can fire."""
        end = time.monotonic() + WAIT_S
        for p in self.plan.pods:
            log = self.out / f"{p.pod}.jsonl"
            while not (log.exists() and log.stat().st_size):
                if time.monotonic() > end:
                    raise ReproduceError(f"{p.pod} never came up{self.stderr_tail()}")
                time.sleep(0.02)

    def settle(self) -> None:
        """Wait until every live pod has taken each tick it got and finished each attempt it began."""
        end = time.monotonic() + WAIT_S
        while time.monotonic() < end:
            busy = [
                p.pod
                for p in self.plan.pods
                if self.procs[p.role].poll() is None
                and (
                    self.count(f"done:{p.role}") + self.lost.get(p.role, 0)
                    < self.count(f"triggered:{p.role}")
                    or self.client.llen(f"{self.k['tick']}:{p.pod}")
                )
            ]
            if not busy:
                return
            time.sleep(0.05)
        raise ReproduceError(f"pods still busy after {WAIT_S:.0f}s{self.stderr_tail()}")

    def fault_start(self) -> None:
        plan, a = self.plan, self.procs["A"]
        f: dict[str, Any] = {"kind": plan.fault, "role": "A", "plannedMs": plan.fault_ms}
        if plan.fault == "failover" and self.pair is not None:
            self.pair.kill_primary(self.k["lock"])
            f["startMono"] = self.pair.events["primaryKilledMono"]
            self.faults.append(f)
            return
        if plan.fault in ("pause", "crash", "netcut") and not self.a_alive():
            f["skipped"] = "pod-a had already exited"
            self.faults.append(f)
            return
        if plan.fault == "pause":
            os.kill(a.pid, signal.SIGSTOP)
            f["startMono"] = mono_ms()
        elif plan.fault == "crash":
            os.kill(a.pid, signal.SIGKILL)
            f["startMono"] = f["endMono"] = mono_ms()
            a.wait(timeout=10)
            if plan.layout == "scheduled":
                # the pod is restarted (its scheduler fires on; its id counter starts again at 1); the
                # attempt it was killed in will never be done
                truth = self.scratch / f"{plan.pods[0].pod}.truth.jsonl"
                began = {json.loads(x)["run"] for x in truth.read_text(encoding="utf-8").splitlines() if x}
                self.lost["A"] = self.count("triggered:A") - self.count("done:A")
                f["restarted"] = True
                self.spawn(plan.pods[0], runs_before=len(began))
        elif plan.fault == "stall":
            f["startMono"] = mono_ms()
            self.client.client_pause(plan.fault_ms, all=True)
        elif plan.fault == "netcut":
            f["startMono"] = mono_ms()
            self.client.acl_setuser(self.acl_user, enabled=False)
            self.client.execute_command("CLIENT", "KILL", "USER", self.acl_user)
        self.faults.append(f)

    def fault_end(self) -> None:
        f = self.faults[-1] if self.faults else None
        if f is None or "skipped" in f or "endMono" in f:
            return
        if self.plan.fault == "failover" and self.pair is not None:
            self.pair.promote(self.client, self.prefix)
            f.update(self.pair.events)
            f["endMono"] = self.pair.events["promotedMono"]
        elif self.plan.fault == "pause":
            f["endMono"] = mono_ms()
            os.kill(self.procs["A"].pid, signal.SIGCONT)
        elif self.plan.fault == "stall":
            f["endMono"] = f["startMono"] + self.plan.fault_ms
        elif self.plan.fault == "netcut":
            self.client.acl_setuser(self.acl_user, enabled=True)
            f["endMono"] = mono_ms()

    def timeline(self, t0: float) -> None:
        plan = self.plan
        actions: list[tuple[float, int, Any]] = []
        for i, p in enumerate(plan.pods[1:]):
            if p.fire_ms is not None:
                actions.append((p.fire_ms, i, lambda p=p: self.fire(p)))
        for i, p in enumerate(plan.pods):
            for tick_at in p.ticks_ms:
                actions.append((tick_at, 50 + i, lambda p=p: self.tick(p)))
        if plan.fault in ("pause", "stall", "crash", "netcut", "failover"):
            actions.append((plan.fault_at_ms, 100, self.fault_start))
            if plan.fault != "crash":
                actions.append((plan.fault_at_ms + plan.fault_ms, 101, self.fault_end))
        # a failover's promotion is Sentinel's: the moments after it keep their distance to it
        late = 0.0
        for at, _order, act in sorted(actions, key=lambda x: (x[0], x[1])):
            delay = t0 + late + at - mono_ms()
            if delay > 0:
                time.sleep(delay / 1000)
            act()
            if act == self.fault_end and plan.fault == "failover":
                late = max(late, mono_ms() - (t0 + at))

    def cleanup(self) -> None:
        stop_pods(self.procs.values())
        if self.pair is not None:
            self.pair.keep_logs(self.out)
            self.pair.close()
        try:
            with contextlib.suppress(redis.RedisError):
                if self.plan.fault == "netcut":
                    self.client.acl_deluser(self.acl_user)
            if not self.target.throwaway:
                delete_run_keys(self.client, self.prefix)
        finally:
            self.client.close()

    def moments(self) -> dict[str, list[dict[str, Any]]]:
        return read_moments(self.scratch)


def play(plan: Plan, target: RedisTarget, out: Path) -> dict[str, Any]:
    """Run `plan`; the pods' flat logs land in `out/` (pod-*.jsonl; a failover run's Sentinel and promoted
    replica logs beside them, redis-*.log), the truth is returned (and written)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in (*out.glob("pod-*.jsonl"), *out.glob("redis-*.log")):
        old.unlink()
    scratch = Path(tempfile.mkdtemp(prefix="leaselog-lab-"))
    run = LabRun(plan, target, out, scratch)
    started = time.monotonic()
    try:
        run.client.xgroup_create(run.k["stream"], GROUP, id="0", mkstream=True)
        if plan.fault == "netcut":
            run.client.acl_setuser(
                run.acl_user,
                enabled=True,
                passwords=[f"+{run.acl_password}"],
                keys=["*"],
                channels=["*"],
                commands=["+@all"],
            )
        if plan.fault == "failover":
            if not target.throwaway:
                raise ReproduceError(
                    "a failover run needs throwaway redis-servers (it kills the lock's primary)"
                )
            run.pair = LockPair()
            run.client.set(primary_key(run.prefix), run.pair.primary_url, ex=600)
        if run.pair is not None:
            # the replica is partitioned off before anyone acquires (it will miss A's SET NX and INCR), and
            # as late as that allows (Sentinel promotes no replica whose link has been down too long): the
            # request A takes is published once the pods are up and the replica is cut off
            for p in plan.pods:
                run.spawn(p)
            run.up()
            run.pair.cut()
        run.client.xadd(run.k["stream"], {"jobId": run.job_id, "report": "monthly-revenue"})
        for p in plan.pods if run.pair is None else ():
            run.spawn(p)
        if plan.layout == "pods":
            run.wait_signal("started:A")
            t0 = mono_ms()
            run.timeline(t0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.procs["A"].wait(timeout=WAIT_S)
        else:
            # pods that run several executions stay up until closed: wait until they are idle
            if any(p.ticks_ms for p in plan.pods):
                run.up()
            else:
                run.wait_signal("started:A")
            run.timeline(mono_ms())
            run.settle()
        # a redelivery needs the first message idle for a lease; a fired trigger a moment to be taken
        redelivery = any(p.path == "redelivery" or "claim" in p.threads for p in plan.pods)
        time.sleep(((plan.lease_ms if redelivery else 0) + 300) / 1000)
        if plan.layout != "pods":
            run.settle()
        run.client.set(marker(run.prefix, CLOSE), "1", ex=600)
        for role, proc in run.procs.items():
            try:
                rc = proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired as e:
                raise ReproduceError(f"pod-{role.lower()} did not finish{run.stderr_tail()}") from e
            if rc not in (0, -signal.SIGKILL):
                raise ReproduceError(f"pod-{role.lower()} exited with {rc}{run.stderr_tail()}")
        handoffs = play_handoffs(run)
        effects = run.client.lrange(run.k["effects"], 0, -1)
        moments = run.moments()
        clocks = run.clocks()
    finally:
        run.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)
    truth = {
        "lab": 1,
        "run": plan.name,
        "plan": asdict(plan),
        "job": run.job_id,
        "offsets": {p.pod: p.clock_offset_ms for p in plan.pods},
        "clocks": clocks,
        "faults": run.faults,
        "fired": run.fired,
        "effects": effects,
        "moments": moments,
        "handoffs": handoffs,
        "redis": {"version": target.version},
        "wallSeconds": round(time.monotonic() - started, 2),
    }
    # one line: `leaselog analyze` over this folder counts it as one ignored line, not as malformed
    (out / "truth.json").write_text(json.dumps(truth, separators=(",", ":")) + "\n", encoding="utf-8")
    return truth
