"""Lab runs of the real python-redis-lock inside real Celery workers on a real Redis, scored against truth.

`python -m leaselog.reproduce.prl_lab --runs 100 --seed 1 --out DIR` plays `runs` seeded plans. Each pod
is a real `celery worker` (prefork pool, `--hostname pod-X@lab`, its own `--logfile`, Celery's default
worker format, the Redis broker on the run's throwaway `redis-server`) running the task of
`leaselog.reproduce.prl_worker`, guarded by `redis_lock.Lock` (module doc there). Pod A's worker takes the
first task (`attempt-a`); pod B's worker (concurrency 2) takes a duplicate publish of the same job
(`attempt-b`) once A holds the lock, and blocks in `acquire()` until the lock is free; it also has a free
slot for a redelivered task. In some runs pod C's worker polls the lock without blocking while A works and
gives up (the library's "Failed to acquire" at every tick: normal, never an incident). The lease
(`expire`, whole seconds), the library's `auto_renewal` and A's work time are drawn, and one fault may
hit pod A while it holds the lock:
- `pause`: SIGSTOP of the pool process holding the lock, longer than its lease, then SIGCONT;
- `stall`: the task's work hangs (a call that does not return) past the lease, the process alive;
- `crash`: SIGKILL of the pool process: Celery's `task_reject_on_worker_lost` puts the message back at
  once and pod B receives the same task id a second time (a redelivery);
- `crash-worker`: SIGKILL of pod A's whole worker (its main and pool processes): the message stays
  unacknowledged until the Redis transport's `visibility_timeout` passes, then pod B receives it;
- `redis-pause`: CLIENT PAUSE of the Redis server (the lock and the broker), shorter than the lease.

leaselog reads only the pods' Celery log files (`pod-a.log`, ...: Celery's own lines, the library's lines
and the tracebacks), with `--lease-ttl` set to the lock's `expire` (the library never logs it); its
executions are matched to the truth's attempts by pod and time (`identity.py`), and
`leaselog.reproduce.score` holds its findings against the truth (docs/TRUTH.md's standard).
"""

from __future__ import annotations

import argparse
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
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis

from leaselog.reproduce.identity import translate, true_names
from leaselog.reproduce.keyspace import KeyEvents
from leaselog.reproduce.pod import marker, mono_ms, signal_list
from leaselog.reproduce.prl_settings import (
    ENV_BROKER,
    ENV_POD,
    ENV_PREFIX,
    ENV_TRUTH,
    ENV_VISIBILITY,
    POLL_QUEUE,
    QUEUE,
    TASK_NAME,
    VISIBILITY_TIMEOUT_S,
    celery_settings,
    run_name,
)
from leaselog.reproduce.score import RunScore, score
from leaselog.reproduce.server import RedisTarget, ReproduceError, redis_target

FAULTS = ("none", "pause", "stall", "crash", "crash-worker", "redis-pause")
FAULT_WEIGHTS = (2, 3, 2, 3, 1, 1)
WAIT_S = 60.0  # for a step of the run (a worker's start, a task's end); a redelivery adds the timeout
STOP_S = 20.0  # for a worker's warm shutdown
# the worker, with the leaselog package of this file (whatever is installed) and Celery's command line
LAUNCH = """
import runpy, sys, types
for name, path in (("leaselog", {pkg!r}), ("leaselog.reproduce", {sub!r})):
    m = types.ModuleType(name)
    m.__path__ = [path]
    sys.modules[name] = m
sys.argv = ["celery", *sys.argv[1:]]
runpy.run_module("celery", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class PrlPlan:
    seed: int
    index: int
    lease_s: int
    renew: bool
    work_ms: int  # pod A's work
    work_b_ms: int
    fault: str
    fault_at_ms: int  # after A acquired
    fault_ms: int
    poller_tries: int = 0  # pod C polls the lock (non-blocking) while A works: denials at every tick
    # the Redis transport's visibility timeout: a killed worker's task is redelivered after it (it must
    # exceed every task's run time, or a running task is delivered again)
    visibility_s: int = VISIBILITY_TIMEOUT_S

    @property
    def name(self) -> str:
        return f"prl-{self.seed}-{self.index:04d}"

    @property
    def lease_ms(self) -> int:
        return self.lease_s * 1000

    def describe(self) -> str:
        renew = "auto_renewal" if self.renew else "no renewal"
        fault = "" if self.fault == "none" else f" {self.fault} {self.fault_ms}ms at {self.fault_at_ms}ms"
        poller = f", C polls {self.poller_tries}x" if self.poller_tries else ""
        return f"lease {self.lease_s}s {renew}, A works {self.work_ms}ms{fault}{poller}"


def draw(seed: int, index: int) -> PrlPlan:
    rng = random.Random(seed * 1_000_003 + index)
    lease_s = rng.choice((1, 2))
    lease = lease_s * 1000
    renew = rng.random() < 0.65
    fault = rng.choices(FAULTS, FAULT_WEIGHTS)[0]
    # with renewals the task may outlast its lease; without, it mostly fits in it (and sometimes not)
    work = rng.randint(lease + 200, 3 * lease) if renew else rng.randint(200, lease + lease // 2)
    at = rng.randint(100, max(150, work - 100))
    if fault in ("pause", "stall"):
        length = rng.randint(lease + 400, 2 * lease + 800)
    elif fault == "redis-pause":
        length = rng.randint(100, lease // 3)
    else:
        length = 0
    # pod C polls for at most half of A's work (it must give up while A still holds the lock)
    tries = rng.choice((0, 0, max(1, work // 2 // 250)))
    return PrlPlan(seed, index, lease_s, renew, work, rng.randint(200, 800), fault, at, length, tries)


@dataclass
class Worker:
    pod: str
    proc: subprocess.Popen[bytes]


def _start_worker(
    pod: str, queue: str, concurrency: int, env: dict[str, str], out: Path, scratch: Path
) -> Worker:
    """`celery worker` for one pod: prefork, its hostname and log file, Celery's INFO level (the
    library's loggers at DEBUG: prl_worker), no mingle/gossip/heartbeat (one-shot workers)."""
    here = Path(__file__).resolve().parent
    args = [
        sys.executable,
        "-c",
        LAUNCH.format(pkg=str(here.parent), sub=str(here)),
        "-A",
        "leaselog.reproduce.prl_worker",
        "worker",
        "--pool",
        "prefork",
        "--concurrency",
        str(concurrency),
        "--hostname",
        f"{pod}@lab",
        "--queues",
        queue,
        "--logfile",
        str(out / f"{pod}.log"),
        "--loglevel",
        "INFO",
        "--without-mingle",
        "--without-gossip",
        "--without-heartbeat",
    ]
    pod_env = {**env, ENV_POD: pod, ENV_TRUTH: str(scratch / f"{pod}.truth.jsonl")}
    err = (scratch / f"{pod}.stderr").open("wb")
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=subprocess.STDOUT,
            env=pod_env,
            start_new_session=True,  # its own process group: the worker and its pool processes
        )
    finally:
        err.close()
    return Worker(pod, proc)


def _wait(client: Any, prefix: str, name: str, workers: dict[str, Worker], timeout: float = WAIT_S) -> str:
    """Wait for the marker `name` (a worker's or a task's signal); its value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = client.blpop([signal_list(prefix, name)], timeout=0.1)
        if got:
            return str(got[1].decode())
        for w in workers.values():
            if w.proc.poll() not in (None, -signal.SIGKILL):
                raise ReproduceError(f"{w.pod}'s worker exited with {w.proc.returncode}")
    raise ReproduceError(f"timed out waiting for {name!r}")


def _stop(workers: dict[str, Worker], killed: set[str]) -> None:
    """A warm shutdown of every worker at once (SIGTERM: Celery finishes and logs it), then each
    worker's process group is killed."""
    for role, w in workers.items():
        if role not in killed and w.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(w.proc.pid, signal.SIGTERM)
    end = time.monotonic() + STOP_S
    for w in workers.values():
        with contextlib.suppress(subprocess.TimeoutExpired):
            w.proc.wait(timeout=max(0.1, end - time.monotonic()))
    for w in workers.values():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(w.proc.pid, signal.SIGCONT)
            os.killpg(w.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            w.proc.wait(timeout=10)


def play(plan: PrlPlan, target: RedisTarget, out: Path) -> dict[str, Any]:
    """Run `plan`; the pods' Celery logs land in `out/`, the truth is returned (and written)."""
    from celery import Celery

    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="leaselog-prl-"))
    prefix = f"leaselog:prl:{uuid.uuid4().hex[:8]}"
    job = f"report-{plan.seed % 1000:03d}{plan.index:04d}"
    env = {**os.environ, ENV_BROKER: target.url, ENV_PREFIX: prefix, ENV_VISIBILITY: str(plan.visibility_s)}
    client: Any = redis.Redis.from_url(target.url, socket_timeout=WAIT_S)
    producer = Celery("leaselog-lab-producer")
    producer.conf.update(celery_settings(target.url, plan.visibility_s))
    workers: dict[str, Worker] = {}
    faults: list[dict[str, Any]] = []
    key_events = KeyEvents(target.url, f"lock:{job}")
    killed: set[str] = set()
    started = time.monotonic()
    task = {"job": job, "lease_s": plan.lease_s, "renew": plan.renew}
    try:
        workers["A"] = _start_worker("pod-a", QUEUE, 1, env, out, scratch)
        if plan.poller_tries:
            workers["C"] = _start_worker("pod-c", POLL_QUEUE, 1, env, out, scratch)
        for role in workers:
            _wait(client, prefix, f"ready:pod-{role.lower()}", workers)
        # A's task is the first of the queue; it waits for B's worker before it takes the lock
        hang = {"hang_at_ms": plan.fault_at_ms, "hang_ms": plan.fault_ms} if plan.fault == "stall" else {}
        a_task = {**task, "work_ms": plan.work_ms, "path": "first", "wait_for": "go", **hang}
        producer.send_task(TASK_NAME, kwargs=a_task, task_id="attempt-a", queue=QUEUE)
        _wait(client, prefix, "received:attempt-a", workers)
        workers["B"] = _start_worker("pod-b", QUEUE, 2, env, out, scratch)
        _wait(client, prefix, "ready:pod-b", workers)
        client.set(marker(prefix, "go"), "1", ex=600)
        pid = int(_wait(client, prefix, "started:attempt-a", workers))
        t0 = mono_ms()
        b_task = {**task, "work_ms": plan.work_b_ms, "path": "duplicate_publish"}
        producer.send_task(TASK_NAME, kwargs=b_task, task_id="attempt-b", queue=QUEUE)
        waits = ["done:attempt-b"]
        if plan.poller_tries:
            c_task = {**task, "work_ms": 0, "path": "duplicate_publish", "tries": plan.poller_tries}
            producer.send_task(TASK_NAME, kwargs=c_task, task_id="attempt-c", queue=POLL_QUEUE)
            waits.append("done:attempt-c")
        a_done = "done:attempt-a"
        if plan.fault not in ("none", "stall"):
            time.sleep(max(0.0, (t0 + plan.fault_at_ms - mono_ms()) / 1000))
            f = _fault(plan, client, prefix, pid, workers["A"])
            faults.append(f)
            if f["kind"] == "crash" and "skipped" not in f:
                a_done = f"done:{run_name('attempt-a', 2)}"
                if f["scope"] == "worker":
                    killed.add("A")
                if client.exists(marker(prefix, "done:attempt-a")):
                    # the task ended between the check and the kill: it comes back only if Celery had
                    # not acknowledged it yet
                    f["landed"] = "after the task's end"
                    again = f"received:{run_name('attempt-a', 2)}"
                    grace = 5.0 + (plan.visibility_s if f["scope"] == "worker" else 0)
                    with contextlib.suppress(ReproduceError):
                        _wait(client, prefix, again, workers, timeout=grace)
                    if not client.exists(marker(prefix, again)):
                        a_done = "done:attempt-a"
        timeout = WAIT_S + (plan.visibility_s if "A" in killed else 0)
        for name in [a_done, *waits]:
            _wait(client, prefix, name, workers, timeout)
        if plan.fault == "stall":
            faults.append({"kind": "work-stall", "role": "A", "plannedMs": plan.fault_ms})
    except ReproduceError as e:
        raise ReproduceError(f"{e}{_tail(scratch)}") from e
    finally:
        t_stop = time.monotonic()
        _stop(workers, killed)
        stop_s = time.monotonic() - t_stop
        key_events.close()
        with contextlib.suppress(redis.RedisError):
            stale = list(client.scan_iter(match=f"{prefix}:*", count=500))
            stale += [f"lock:{job}", f"lock-signal:{job}"]
            client.delete(*stale)
        client.close()
        # in time order (a moment noted with the time of the line that announced it comes in late)
        moments = {
            f.name.removesuffix(".truth.jsonl"): sorted(
                (json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()),
                key=lambda m: float(m["monoMs"]),
            )
            for f in sorted(scratch.glob("*.truth.jsonl"))
        }
        shutil.rmtree(scratch, ignore_errors=True)
    key_events.settle_from_redis(moments)
    for f in faults:
        if f["kind"] == "work-stall":  # when the task's work hung and resumed, as the task noted it
            hung = {
                m["event"]: m["monoMs"] for m in moments.get("pod-a", []) if m["event"].startswith("work_")
            }
            f.update(startMono=hung.get("work_hang"), endMono=hung.get("work_resumed"))
    pods = [
        {"role": "A", "path": "first", "pod": "pod-a"},
        {"role": "B", "path": "duplicate_publish", "pod": "pod-b"},
    ]
    if plan.poller_tries:
        pods.append({"role": "C", "path": "duplicate_publish", "pod": "pod-c"})
    truth = {
        "lab": "python-redis-lock in Celery",
        "run": plan.name,
        "plan": {
            **asdict(plan),
            "lease_ms": plan.lease_ms,
            "renewal_ms": plan.lease_ms * 2 // 3,
            "pods": pods,
        },
        "job": job,
        "offsets": {p["pod"]: 0 for p in pods},
        "faults": faults,
        "effects": [],
        "moments": moments,
        "redis": {"version": target.version},
        "wallSeconds": round(time.monotonic() - started, 2),
        "stopSeconds": round(stop_s, 2),
    }
    (out / "truth.json").write_text(json.dumps(truth, separators=(",", ":")) + "\n", encoding="utf-8")
    return truth


def _fault(plan: PrlPlan, client: Any, prefix: str, pid: int, a: Worker) -> dict[str, Any]:
    """The plan's fault on pod A, now: the truth's record of it."""
    kind = {"redis-pause": "stall", "crash-worker": "crash"}.get(plan.fault, plan.fault)
    f: dict[str, Any] = {"kind": kind, "role": "A", "plannedMs": plan.fault_ms}
    if plan.fault in ("pause", "crash", "crash-worker") and client.exists(marker(prefix, "done:attempt-a")):
        f["skipped"] = "attempt-a had already ended"
    elif plan.fault == "pause":
        os.kill(pid, signal.SIGSTOP)
        f["startMono"] = mono_ms()
        f["pid"] = pid
        time.sleep(plan.fault_ms / 1000)
        f["endMono"] = mono_ms()
        os.kill(pid, signal.SIGCONT)
    elif plan.fault == "crash":
        os.kill(pid, signal.SIGKILL)
        f["startMono"] = f["endMono"] = mono_ms()
        f["scope"], f["pid"] = "pool process", pid
    elif plan.fault == "crash-worker":
        os.killpg(a.proc.pid, signal.SIGKILL)
        f["startMono"] = f["endMono"] = mono_ms()
        f["scope"], f["pid"] = "worker", a.proc.pid
        a.proc.wait(timeout=10)
    else:
        f["startMono"] = mono_ms()
        client.client_pause(plan.fault_ms, all=True)
        f["endMono"] = f["startMono"] + plan.fault_ms
    return f


def _tail(scratch: Path) -> str:
    parts = []
    for f in sorted(scratch.glob("*.stderr")):
        text = f.read_text(errors="replace").strip()
        if text:
            parts.append(f"\n--- {f.stem} ---\n{text[-1200:]}")
    return "".join(parts)


def analyze(folder: Path, truth: dict[str, Any]) -> dict[str, Any]:
    """leaselog's document for the run's Celery logs, its executions named as the truth's attempts."""
    import leaselog

    paths = sorted(folder.glob("pod-*.log"))
    lease = f"{truth['plan']['lease_ms']}ms"
    a = leaselog.analyze(paths, lease_ttl=lease, keep_fields=False)
    return translate(leaselog.document(a), true_names(truth, a.executions))


def run_one(plan: PrlPlan, target: RedisTarget, folder: Path) -> RunScore:
    truth = play(plan, target, folder)
    doc = analyze(folder, truth)
    (folder / "leaselog.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    rs = score(truth, doc)
    (folder / "score.json").write_text(json.dumps(rs.to_dict(), indent=1) + "\n", encoding="utf-8")
    return rs


class Tally:
    """A campaign's counts: per finding kind (runs it shows in, expected, found, missed, false, uncertain,
    figure errors, tolerated) and per fault (runs, failed runs, and the same statuses)."""

    STATUSES = ("found", "missed", "false", "figure_error", "tolerated")

    def __init__(self) -> None:
        self.kinds: dict[str, Counter[str]] = {}
        self.faults: dict[str, Counter[str]] = {}

    def add(self, fault: str, rs: RunScore | None) -> None:
        row = self.faults.setdefault(fault, Counter())
        if rs is None:
            row["errors"] += 1
            return
        row["runs"] += 1
        row["failed"] += rs.failed
        for status in self.STATUSES:
            row[status] += sum(rs.count(status).values())
        seen: set[str] = set()
        for item in rs.items:
            k = self.kinds.setdefault(item.kind, Counter())
            if item.status != "optional":
                seen.add(item.kind)
            k[item.status] += 1
            if item.status in ("found", "missed"):
                k["expected"] += 1
        for kind, n in rs.uncertain.items():
            self.kinds.setdefault(kind, Counter())["uncertain"] += n
        for kind in seen:
            self.kinds[kind]["runs"] += 1

    def markdown(self) -> str:
        cols = ("runs", "expected", "found", "missed", "false", "uncertain", "figure_error", "tolerated")
        heads = ("runs", "expected", "found", "missed", "false", "uncertain", "figure errors", "tolerated")
        out = ["| kind | " + " | ".join(heads) + " |", "|---" * (len(cols) + 1) + "|"]
        for kind in sorted(self.kinds):
            out.append(f"| {kind} | " + " | ".join(str(self.kinds[kind][c]) for c in cols) + " |")
        fcols = ("runs", "failed", "found", "missed", "false", "figure_error", "tolerated", "errors")
        fheads = ("runs", "failed", "found", "missed", "false", "figure errors", "tolerated", "could not run")
        out += ["", "| fault | " + " | ".join(fheads) + " |", "|---" * (len(fcols) + 1) + "|"]
        for fault in FAULTS:
            if fault in self.faults:
                out.append(f"| {fault} | " + " | ".join(str(self.faults[fault][c]) for c in fcols) + " |")
        total = sum(self.faults.values(), Counter())
        out.append("| all | " + " | ".join(str(total[c]) for c in fcols) + " |")
        return "\n".join(out)


def _report(name: str, rs: RunScore, took: str, what: str) -> None:
    print(f"{name} {'FAIL' if rs.failed else 'ok'} {took} {what}", flush=True)
    for item in rs.items:
        if item.status in ("missed", "false", "figure_error"):
            print(f"    {item.status} {item.kind} {','.join(item.execution_ids)}: {item.why[:200]}")


def campaign(runs: int, seed: int, out: Path, keep: bool = False, start: int = 0) -> int:
    """Play and score `runs` plans; print one line per run and the tables; 1 when any run failed."""
    tally = Tally()
    failed = 0
    with redis_target(None) as target:
        for i in range(start, start + runs):
            plan = draw(seed, i)
            folder = out / plan.name
            shutil.rmtree(folder, ignore_errors=True)
            t = time.monotonic()
            try:
                rs = run_one(plan, target, folder)
            except ReproduceError as e:
                print(f"{plan.name} could not run: {str(e).splitlines()[0]}", flush=True)
                tally.add(plan.fault, None)
                failed += 1
                continue
            tally.add(plan.fault, rs)
            failed += rs.failed
            _report(plan.name, rs, f"{time.monotonic() - t:.1f}s ", plan.describe())
            if not rs.failed and not keep:
                shutil.rmtree(folder, ignore_errors=True)
    print(tally.markdown())
    return 1 if failed else 0


def replay(folders: list[Path]) -> int:
    """Score kept runs again (their logs and truth.json; e.g. after a fix); 1 when any run failed."""
    tally = Tally()
    failed = 0
    runs = sorted({t.parent for f in folders for t in [*f.glob("truth.json"), *f.glob("*/truth.json")]})
    for folder in runs:
        truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
        rs = score(truth, analyze(folder, truth))
        tally.add(str(truth["plan"]["fault"]), rs)
        failed += rs.failed
        _report(
            folder.name,
            rs,
            "",
            PrlPlan(**{k: v for k, v in truth["plan"].items() if k in _PLAN_FIELDS}).describe(),
        )
    print(tally.markdown())
    return 1 if failed else 0


_PLAN_FIELDS = tuple(PrlPlan.__dataclass_fields__)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m leaselog.reproduce.prl_lab", description=__doc__)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("prl-lab"))
    p.add_argument("--keep", action="store_true", help="keep the folders of runs that passed too")
    p.add_argument(
        "--replay", type=Path, nargs="+", default=None, help="score kept runs (folders) again, play nothing"
    )
    a = p.parse_args(argv)
    if a.replay:
        return replay(a.replay)
    return campaign(a.runs, a.seed, a.out, a.keep, a.start)


if __name__ == "__main__":
    raise SystemExit(main())
