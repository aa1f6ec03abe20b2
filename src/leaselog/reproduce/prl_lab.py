"""Lab runs of the real python-redis-lock on a real Redis, in Celery's worker format, scored against truth.

`python -m leaselog.reproduce.prl_lab --runs 100 --seed 1 --out DIR` plays `runs` seeded plans. Each has
two pods (`prl_worker` processes) whose tasks take the same lock: pod A's task first, pod B's (another
task, the same lock: a duplicate publish) once A has started; B blocks in `acquire()` until the lock is
free. In some runs a pod C polls the lock without blocking while A works and gives up (the library's
"Failed to acquire" at every tick: normal, never an incident). A fault may hit pod A while it works: a pause (SIGSTOP for longer than its lease, then SIGCONT),
a crash (SIGKILL), or a Redis stall (CLIENT PAUSE, shorter than the lease). The lease (`expire`, whole
seconds), the library's `auto_renewal`, and A's work time are drawn too.

leaselog reads only the pods' Celery-format logs (`pod-a.log`, `pod-b.log`: the library's own lines and
Celery's task lines), with `--lease-ttl` set to the lock's `expire` (the library never logs it);
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

from leaselog.reproduce.pod import mono_ms, signal_list
from leaselog.reproduce.score import RunScore, score
from leaselog.reproduce.server import RedisTarget, ReproduceError, redis_target

FAULTS = ("none", "pause", "crash", "stall")
FAULT_WEIGHTS = (3, 3, 2, 2)
WAIT_S = 60.0
LAUNCH = """
import runpy, sys, types
for name, path in (("leaselog", {pkg!r}), ("leaselog.reproduce", {sub!r})):
    m = types.ModuleType(name)
    m.__path__ = [path]
    sys.modules[name] = m
runpy.run_module("leaselog.reproduce.prl_worker", run_name="__main__", alter_sys=True)
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
    fault_at_ms: int  # after A started
    fault_ms: int
    poller_tries: int = 0  # pod C polls the lock (non-blocking) while A works: denials at every tick

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
    if fault == "pause":
        length = rng.randint(lease + 400, 2 * lease + 800)
    elif fault == "stall":
        length = rng.randint(100, lease // 3)
    else:
        length = 0
    # pod C polls for at most half of A's work (it must give up while A still holds the lock)
    tries = rng.choice((0, 0, max(1, work // 2 // 250)))
    return PrlPlan(seed, index, lease_s, renew, work, rng.randint(200, 800), fault, at, length, tries)


def _spawn(
    run: dict[str, Any], role: str, out: Path, scratch: Path, plan: PrlPlan
) -> subprocess.Popen[bytes]:
    here = Path(__file__).resolve().parent
    pod = f"pod-{role.lower()}"
    args = [
        sys.executable,
        "-c",
        LAUNCH.format(pkg=str(here.parent), sub=str(here)),
        "--redis",
        run["url"],
        "--prefix",
        run["prefix"],
        "--job-id",
        run["job"],
        "--task-id",
        f"attempt-{role.lower()}",
        "--pod",
        pod,
        "--role",
        role,
        "--path",
        "first" if role == "A" else "duplicate_publish",
        "--log",
        str(out / f"{pod}.log"),
        "--truth",
        str(scratch / f"{pod}.truth.jsonl"),
        "--lease-s",
        str(plan.lease_s),
        "--work-ms",
        str(plan.work_ms if role == "A" else plan.work_b_ms),
    ]
    if plan.renew:
        args.append("--renew")
    if role in ("B", "C"):
        args += ["--start-after", "started:A"]
    if role == "C":
        args += ["--tries", str(plan.poller_tries)]
    err = (scratch / f"{pod}.stderr").open("wb")
    try:
        return subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ}
        )
    finally:
        err.close()


def _wait(client: Any, prefix: str, name: str, procs: dict[str, subprocess.Popen[bytes]]) -> None:
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        if client.blpop([signal_list(prefix, name)], timeout=0.1):
            return
        for role, p in procs.items():
            if p.poll() not in (None, 0, -signal.SIGKILL):
                raise ReproduceError(f"pod-{role.lower()} exited with {p.returncode}")
    raise ReproduceError(f"timed out waiting for {name!r}")


def play(plan: PrlPlan, target: RedisTarget, out: Path) -> dict[str, Any]:
    """Run `plan`; the pods' Celery-format logs land in `out/`, the truth is returned (and written)."""
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="leaselog-prl-"))
    run = {
        "url": target.url,
        "prefix": f"leaselog:prl:{uuid.uuid4().hex[:8]}",
        "job": f"report-{plan.seed % 1000:03d}{plan.index:04d}",
    }
    client: Any = redis.Redis.from_url(target.url, socket_timeout=WAIT_S)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    faults: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        for role in ("A", "B", "C") if plan.poller_tries else ("A", "B"):
            procs[role] = _spawn(run, role, out, scratch, plan)
        _wait(client, str(run["prefix"]), "started:A", procs)
        t0 = mono_ms()
        if plan.fault != "none":
            time.sleep(max(0.0, (t0 + plan.fault_at_ms - mono_ms()) / 1000))
            f: dict[str, Any] = {"kind": plan.fault, "role": "A", "plannedMs": plan.fault_ms}
            a = procs["A"]
            if plan.fault in ("pause", "crash") and a.poll() is not None:
                f["skipped"] = "pod-a had already exited"
            elif plan.fault == "pause":
                os.kill(a.pid, signal.SIGSTOP)
                f["startMono"] = mono_ms()
                time.sleep(plan.fault_ms / 1000)
                f["endMono"] = mono_ms()
                os.kill(a.pid, signal.SIGCONT)
            elif plan.fault == "crash":
                os.kill(a.pid, signal.SIGKILL)
                f["startMono"] = f["endMono"] = mono_ms()
                a.wait(timeout=10)
            else:
                f["startMono"] = mono_ms()
                client.client_pause(plan.fault_ms, all=True)
                f["endMono"] = f["startMono"] + plan.fault_ms
            faults.append(f)
        for role, proc in procs.items():
            try:
                rc = proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired as e:
                raise ReproduceError(f"pod-{role.lower()} did not finish{_tail(scratch)}") from e
            if rc not in (0, -signal.SIGKILL):
                raise ReproduceError(f"pod-{role.lower()} exited with {rc}{_tail(scratch)}")
        # in time order (a moment noted with the time of the line that announced it comes in late)
        moments = {
            f.name.removesuffix(".truth.jsonl"): sorted(
                (json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()),
                key=lambda m: float(m["monoMs"]),
            )
            for f in sorted(scratch.glob("*.truth.jsonl"))
        }
    finally:
        for p in procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
        with contextlib.suppress(redis.RedisError):
            stale = list(client.scan_iter(match=f"{run['prefix']}:*", count=500))
            stale += [f"lock:{run['job']}", f"lock-signal:{run['job']}"]
            client.delete(*stale)
        client.close()
        shutil.rmtree(scratch, ignore_errors=True)
    pods = [
        {"role": "A", "path": "first", "pod": "pod-a"},
        {"role": "B", "path": "duplicate_publish", "pod": "pod-b"},
    ]
    if plan.poller_tries:
        pods.append({"role": "C", "path": "duplicate_publish", "pod": "pod-c"})
    truth = {
        "lab": "python-redis-lock",
        "run": plan.name,
        "plan": {
            **asdict(plan),
            "lease_ms": plan.lease_ms,
            "renewal_ms": plan.lease_ms * 2 // 3,
            "pods": pods,
        },
        "job": run["job"],
        "offsets": {p["pod"]: 0 for p in pods},
        "faults": faults,
        "effects": [],
        "moments": moments,
        "redis": {"version": target.version},
        "wallSeconds": round(time.monotonic() - started, 2),
    }
    (out / "truth.json").write_text(json.dumps(truth, separators=(",", ":")) + "\n", encoding="utf-8")
    return truth


def _tail(scratch: Path) -> str:
    parts = []
    for f in sorted(scratch.glob("*.stderr")):
        text = f.read_text(errors="replace").strip()
        if text:
            parts.append(f"\n--- {f.stem} ---\n{text[-1200:]}")
    return "".join(parts)


def analyze(folder: Path, lease_ms: int) -> dict[str, Any]:
    import leaselog

    paths = sorted(folder.glob("pod-*.log"))
    return leaselog.document(leaselog.analyze(paths, lease_ttl=f"{lease_ms}ms", keep_fields=False))


def run_one(plan: PrlPlan, target: RedisTarget, folder: Path) -> RunScore:
    truth = play(plan, target, folder)
    doc = analyze(folder, plan.lease_ms)
    (folder / "leaselog.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    rs = score(truth, doc)
    (folder / "score.json").write_text(json.dumps(rs.to_dict(), indent=1) + "\n", encoding="utf-8")
    return rs


def campaign(runs: int, seed: int, out: Path, keep: bool = False, start: int = 0) -> int:
    """Play and score `runs` plans; print one line per run and a table per fault; 1 when any run failed."""
    table: dict[str, Counter[str]] = {}
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
                table.setdefault(plan.fault, Counter())["errors"] += 1
                failed += 1
                continue
            row = table.setdefault(plan.fault, Counter())
            row["runs"] += 1
            row["failed"] += rs.failed
            for status in ("found", "missed", "false", "figure_error", "tolerated"):
                row[status] += sum(rs.count(status).values())
            failed += rs.failed
            verdict = "FAIL" if rs.failed else "ok"
            print(f"{plan.name} {verdict} {time.monotonic() - t:.1f}s  {plan.describe()}", flush=True)
            for item in rs.items:
                if item.status in ("missed", "false", "figure_error"):
                    print(f"    {item.status} {item.kind} {','.join(item.execution_ids)}: {item.why[:200]}")
            if not rs.failed and not keep:
                shutil.rmtree(folder, ignore_errors=True)
    cols = ("runs", "failed", "found", "missed", "false", "figure_error", "tolerated", "errors")
    print("| fault | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for fault in FAULTS:
        if fault in table:
            print(f"| {fault} | " + " | ".join(str(table[fault][c]) for c in cols) + " |")
    total = sum(table.values(), Counter())
    print("| all | " + " | ".join(str(total[c]) for c in cols) + " |")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m leaselog.reproduce.prl_lab", description=__doc__)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("prl-lab"))
    p.add_argument("--keep", action="store_true", help="keep the folders of runs that passed too")
    a = p.parse_args(argv)
    return campaign(a.runs, a.seed, a.out, a.keep, a.start)


if __name__ == "__main__":
    raise SystemExit(main())
