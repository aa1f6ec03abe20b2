"""Plays real BullMQ workers (tests/integration/bullmq_lab/lab.js, BullMQ 6.7.6 under Node) against a real
`redis-server`, and returns their pino logs and the truth they recorded (each job's processor start and
end, on the workers' own `Date.now()`).

- `incident`: pod A takes the only job and blocks its event loop (a busy-wait) past `lockDuration`, so
  BullMQ renews nothing; pod B's stalled checker finds the job's lock gone, moves it back to wait and
  takes it; A's processor returns after B started, and BullMQ refuses A's completion (the lock is B's).
- `incident-late`: the same, but A's processor returns after B completed the job (`Missing lock`);
  `incident-renew`: A's event loop frees after B took the job while A's job goes on (its lock manager's
  renewal fails: `could not renew lock`), then its completion is refused.
- `clean`: two jobs, each on its own pod, each running longer than `lockDuration` with the event loop
  free: BullMQ renews the locks, nothing stalls.

Events are ordered by files the workers write synchronously (a blocked event loop cannot reach Redis),
never by sleeps; `python tests/integration/bullmq_run.py incident DIR` writes one run's files to DIR,
`python tests/integration/bullmq_run.py campaign N DIR` plays N runs of each kind and prints leaselog's
figures beside the truth.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from leaselog.reproduce.server import redis_target

LAB = Path(__file__).with_name("bullmq_lab")
QUEUE = "reports"
LOCK_MS = 2000
STALLED_MS = 500
WAIT_S = 60.0
# incident -> (pod A's mode and work after B started, pod B's mode and work), lab.js's MODEs
INCIDENTS = {
    # A returns while B holds the lock: `Lock mismatch`
    "incident": ("block", 1000, "take", 300),
    # A returns after B completed the job: `Missing lock`
    "incident-late": ("block-late", 400, "take-fast", 700),
    # A's event loop frees while its job goes on: `could not renew lock`, then `Lock mismatch`
    "incident-renew": ("block-await", 1200, "take", 300),
}


@dataclass(frozen=True)
class Run:
    folder: Path
    truth: list[dict[str, object]]  # {"pod", "jobId", "event": "start"|"end", "t": epoch ms}


def missing_tools() -> str | None:
    """Why the lab cannot run here, or None."""
    for tool in ("node", "npm", "redis-server"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (the BullMQ lab runs real Node workers on a real Redis)"
    return None


def install() -> None:
    """`npm ci` of the lab's pinned packages (BullMQ, ioredis, pino), once (test processes running at once
    take turns: the first installs, the others find it done)."""
    with open(LAB / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _install()


def _install() -> None:
    if not (LAB / "node_modules" / "bullmq" / "package.json").exists():
        got = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=LAB, capture_output=True, text=True
        )
        if got.returncode != 0:
            raise RuntimeError(f"`npm ci` in {LAB} failed ({got.returncode}): {got.stderr[-2000:]}")


def _wait(what: str, ready: Callable[[], bool], procs: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not ready():
        for p in procs:
            if p.poll() is not None:
                err = p.stderr.read().decode() if p.stderr else ""
                raise RuntimeError(f"a lab process exited ({p.returncode}) before {what}: {err}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the lab never reached: {what}")
        time.sleep(0.01)  # (polling a file the workers write: the order comes from the file)


def _truth(folder: Path) -> list[dict[str, object]]:
    rows = []
    for f in sorted(folder.glob("truth-*.jsonl")):
        rows += [json.loads(line) for line in f.read_text().splitlines() if line]
    return rows


def _ended(folder: Path, pod: str, text: str) -> bool:
    log = folder / f"{pod}.log"
    return log.exists() and text in log.read_text()


def play(kind: str, folder: Path) -> Run:
    folder.mkdir(parents=True, exist_ok=True)
    install()
    with redis_target(None) as target:
        port = target.url.rsplit(":", 1)[1].split("/")[0]
        node = shutil.which("node") or "node"

        def worker(pod: str, mode: str, work_ms: int) -> subprocess.Popen[bytes]:
            args = [node, "lab.js", "work", port, QUEUE, pod, str(folder), mode]
            args += [str(LOCK_MS), str(STALLED_MS), str(work_ms)]
            return subprocess.Popen(args, cwd=LAB, stderr=subprocess.PIPE)

        def add(count: int) -> None:
            subprocess.run([node, "lab.js", "add", port, QUEUE, str(count)], cwd=LAB, check=True)

        procs: list[subprocess.Popen[bytes]] = []
        try:
            if kind in INCIDENTS:
                a_mode, a_ms, b_mode, b_ms = INCIDENTS[kind]
                procs.append(worker("pod-a", a_mode, a_ms))
                _wait("pod-a ready", lambda: (folder / "ready-pod-a").exists(), procs)
                add(1)
                _wait("pod-a started the job", lambda: (folder / "truth-pod-a.jsonl").exists(), procs)
                procs.append(worker("pod-b", b_mode, b_ms))
                _wait("pod-a refused", lambda: (folder / "a-refused").exists(), procs)
                _wait("pod-b completed", lambda: (folder / "completed-pod-b").exists(), procs)
            elif kind == "clean":
                procs.append(worker("pod-a", "work", 3000))
                procs.append(worker("pod-b", "work", 3000))
                _wait(
                    "both ready",
                    lambda: all((folder / f"ready-{p}").exists() for p in ("pod-a", "pod-b")),
                    procs,
                )
                add(2)
                _wait(
                    "both jobs completed",
                    lambda: (
                        sum(
                            (folder / f"{p}.log").read_text().count("has completed!")
                            for p in ("pod-a", "pod-b")
                            if (folder / f"{p}.log").exists()
                        )
                        == 2
                    ),
                    procs,
                )
            else:
                raise ValueError(kind)
        finally:
            for p in procs:
                if p.poll() is None:
                    os.kill(p.pid, signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    for f in [
        *folder.glob("ready-*"),
        *folder.glob("completed-*"),
        *folder.glob("?-refused"),
        *folder.glob("b-*"),
    ]:
        f.unlink(missing_ok=True)
    return Run(folder, _truth(folder))


def campaign(out: Path, runs: int) -> None:
    """`runs` runs of each incident and of the clean run, each line: leaselog's figures against the truth
    (an attempt ends when BullMQ answered its finishing write; A never renewed, so its lock lapsed
    lockDuration after it took the job)."""
    import leaselog

    for kind in [*sorted(INCIDENTS), "clean"]:
        for i in range(runs):
            run = play(kind, out / f"{kind}-{i}")
            a = leaselog.analyze(sorted(str(p) for p in run.folder.glob("pod-*.log")))
            kinds = sorted({f.kind for f in a.finding_list if f.severity in ("warning", "error")})
            if kind == "clean":
                print(kind, i, kinds, flush=True)
                continue
            t = {(str(r["pod"]), str(r["event"])): int(str(r["t"])) for r in run.truth}
            a_end = t[("pod-a", "refused")]
            overlap = min(a_end, t[("pod-b", "completed")]) - t[("pod-b", "start")]
            zombie = a_end - (t[("pod-a", "processedOn")] + LOCK_MS)
            by = {f.kind: f for f in a.finding_list}
            ov, lo = by.get("overlapping_executions"), by.get("lease_outlived")
            hi = lo.to_json_dict()["details"].get("zombieAtMostMs") if lo else None
            print(
                kind,
                i,
                f"overlap {ov.duration_ms if ov else None} (truth {overlap})",
                f"zombie at least {lo.duration_ms if lo else None}, at most {hi} (truth {zombie})",
                kinds,
                flush=True,
            )


if __name__ == "__main__":
    if sys.argv[1] == "campaign":  # python tests/integration/bullmq_run.py campaign N DIR
        campaign(Path(sys.argv[3]), int(sys.argv[2]))
    else:
        run = play(sys.argv[1], Path(sys.argv[2]))
        print(json.dumps(run.truth, indent=1))
