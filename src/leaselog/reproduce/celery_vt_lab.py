"""A real Celery visibility-timeout redelivery, played on two real workers and a real Redis.

`python -m leaselog.reproduce.celery_vt_lab --out DIR [--scenario redelivery|quiet]` starts a throwaway
`redis-server`, then real `celery worker`s (solo pool, `--hostname pod-X@lab`, each its own `--logfile` in
Celery's default format) of `leaselog.reproduce.celery_vt_worker` (module doc there), and writes the pods'
logs and `truth.json` to DIR.

- `redelivery`: both workers up (each logged `ready.`); one takes the task (pod A below), which holds
  until the harness lets it go. Once the delivery is older than the visibility timeout, the transport
  puts it back on the queue and the idle worker (B) receives the same task id again; when B's attempt has
  started (its `started:2` key), the harness lets both attempts go on, and each works 700 ms more. Truth: A's attempt overlapped B's from
  B's start to A's end, and outlived its visibility timeout by A's end minus (A's delivery stamp + the
  timeout).
- `quiet`: both workers up, the task finishes well within the timeout: one attempt, nothing redelivered.

Every step waits on a Redis key the task pushes or on a worker's own log line, never on a sleep.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import redis

from leaselog.reproduce.celery_vt_settings import (
    ENV_BROKER,
    ENV_POD,
    ENV_PREFIX,
    ENV_TRUTH,
    ENV_VISIBILITY,
    QUEUE,
    TASK_NAME,
    VISIBILITY_TIMEOUT_S,
    celery_settings,
)
from leaselog.reproduce.server import ReproduceError, throwaway_redis

WAIT_S = 60.0
SCENARIOS = ("redelivery", "quiet")
AFTER_MS = 700  # each attempt's work once the harness let it go (the overlap's length, about)


def _start(pod: str, out: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    args = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "leaselog.reproduce.celery_vt_worker",
        "worker",
        "--pool",
        "solo",
        "--hostname",
        f"{pod}@lab",
        "--queues",
        QUEUE,
        "--logfile",
        str(out / f"{pod}.log"),
        "--loglevel",
        "INFO",
        "--without-mingle",
        "--without-gossip",
        "--without-heartbeat",
    ]
    err = (out / f"{pod}.stderr").open("wb")
    try:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=subprocess.STDOUT,
            env={**env, ENV_POD: pod},
            start_new_session=True,
        )
    finally:
        err.close()


def _until_line(path: Path, text: str, procs: list[subprocess.Popen[bytes]]) -> None:
    """Until the worker's own log holds `text` (its `ready.`, a task's end line)."""
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        if path.exists() and text in path.read_text(encoding="utf-8", errors="replace"):
            return
        for p in procs:
            if p.poll() is not None:
                raise ReproduceError(f"a worker exited with {p.returncode}")
        time.sleep(0.02)
    raise ReproduceError(f"timed out waiting for {text!r} in {path.name}")


def _pop(client: Any, name: str, procs: list[subprocess.Popen[bytes]]) -> str:
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        got = client.blpop([name], timeout=0.2)
        if got:
            return str(got[1].decode())
        for p in procs:
            if p.poll() is not None:
                raise ReproduceError(f"a worker exited with {p.returncode}")
    raise ReproduceError(f"timed out waiting for {name}")


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Warm shutdown (SIGTERM: Celery logs it), then each worker's process group killed."""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)


def play(out: Path, scenario: str = "redelivery", visibility_s: int = VISIBILITY_TIMEOUT_S) -> dict[str, Any]:
    """Play `scenario`; the pods' logs land in `out`, and the run's truth is returned (and written to
    `out/truth.json`)."""
    if scenario not in SCENARIOS:
        raise ReproduceError(f"unknown scenario {scenario!r}: {', '.join(SCENARIOS)}")
    out.mkdir(parents=True, exist_ok=True)
    from celery import Celery

    with throwaway_redis() as target, tempfile.TemporaryDirectory(prefix="leaselog-vt-") as tmp:
        prefix = f"leaselog:vt:{uuid.uuid4().hex[:8]}"
        truth_file = Path(tmp) / "truth.jsonl"
        src = str(Path(__file__).resolve().parents[2])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
            ENV_BROKER: target.url,
            ENV_PREFIX: prefix,
            ENV_TRUTH: str(truth_file),
            ENV_VISIBILITY: str(visibility_s),
        }
        client = redis.Redis.from_url(target.url)
        producer = Celery("leaselog-vt-producer")
        producer.conf.update(celery_settings(target.url, visibility_s))
        procs: list[subprocess.Popen[bytes]] = []
        try:
            for pod in ("pod-a", "pod-b"):
                procs.append(_start(pod, out, env))
            for pod in ("pod-a", "pod-b"):
                _until_line(out / f"{pod}.log", "ready.", procs)
            if scenario == "quiet":
                task_id = str(uuid.uuid4())
                producer.send_task(TASK_NAME, kwargs={"work_ms": 300}, task_id=task_id, queue=QUEUE)
                pod = _pop(client, f"{prefix}:started:1", procs)
                _until_line(out / f"{pod}.log", f"[{task_id}] succeeded", procs)
            else:
                task_id = str(uuid.uuid4())
                kwargs = {"hold_until": "release", "after_ms": AFTER_MS}
                producer.send_task(TASK_NAME, kwargs=kwargs, task_id=task_id, queue=QUEUE)
                first = _pop(client, f"{prefix}:started:1", procs)
                second = _pop(client, f"{prefix}:started:2", procs)
                client.set(f"{prefix}:release", "1")
                for pod in {first, second}:
                    _until_line(out / f"{pod}.log", f"[{task_id}] succeeded", procs)
                if first == second:
                    raise ReproduceError("both attempts ran on one worker")
        finally:
            _stop(procs)
            producer.close()
        attempts = [json.loads(x) for x in truth_file.read_text().splitlines()] if truth_file.exists() else []
    for f in out.glob("*.stderr"):
        f.unlink()
    attempts.sort(key=lambda a: a["attempt"])
    truth: dict[str, Any] = {
        "scenario": scenario,
        "taskId": task_id,
        "visibilityTimeoutMs": visibility_s * 1000,
        "attempts": attempts,
    }
    if len(attempts) == 2:
        a, b = attempts
        truth["overlapMs"] = round(a["endMs"] - b["startMs"], 3)
        truth["outlivedMs"] = round(a["endMs"] - (a["deliveredMs"] + visibility_s * 1000), 3)
        truth["receiptGapMs"] = round(b["deliveredMs"] - a["deliveredMs"], 3)
    (out / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--scenario", choices=SCENARIOS, default="redelivery")
    ap.add_argument("--visibility-timeout", type=int, default=VISIBILITY_TIMEOUT_S)
    args = ap.parse_args(argv)
    print(json.dumps(play(args.out, args.scenario, args.visibility_timeout), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
