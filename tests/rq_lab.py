"""Real RQ workers on a real `redis-server`: the abandoned-job incident, played for the rq dialect's tests.

Each pod is its own process (`python -m rq_lab worker URL POD`), a burst worker (`rq.Worker.work`) whose
output (stdout and stderr) goes to `pod-X.log`, as a pod's captured console. The worker logs through
RQ's own loggers (`rq.worker`, `rq.job`, `rq.registry`) in RQ's default format `%(asctime)s %(message)s`
(rq 3.0.0 `rq/defaults.py` `DEFAULT_LOGGING_FORMAT`), set on the root logger with `logging.basicConfig` so
that the registry's and the job's loggers are shown too, and with Python's default `asctime` (date and
milliseconds): RQ's CLI default `--date-format %H:%M:%S` has neither.

The lease is the job's entry in the queue's StartedJobRegistry, kept alive by the worker's heartbeat. RQ
gives it `job_monitoring_interval + 60` seconds (rq 3.0.0 `Worker.get_heartbeat_ttl`); the lab's worker
class gives it `LEASE_S` and heartbeats every second (`job_monitoring_interval=1`), so that an incident
takes seconds. The job is enqueued with `Retry(max=1)`: the StartedJobRegistry's cleanup (run by a worker
at start-up, `Worker.clean_registries`) retries an abandoned job that has retries left, and moves one that
has none to the FailedJobRegistry without running it again.

The truth: the job function itself appends its start and end (`time.time()`, the pod) to `truth.jsonl`.
The order of the fault is kept by Redis (the job waits for `go:<pod>` before it returns; the test waits for
truth lines and for the registry entry's expiry), never by a sleep.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

LEASE_S = 2
WORK_S = 0.5  # how long the job works once the test lets it go
WAIT_S = 30.0
# the last line a burst worker logs (rq 3.0.0 `Worker.unsubscribe`, at teardown): after it the process may
# wait out redis-py's pubsub thread (a read of up to 60 s) before it exits, so the lab ends it there
_LAST = "unsubscribing from channel"


def job(truth: str, url: str) -> str:
    """The job: record its start, wait for the test's go for this pod, work as long as the go says (its
    value, in seconds), record its end."""
    pod = os.environ["LAB_POD"]
    with open(truth, "a") as f:
        f.write(json.dumps({"pod": pod, "at": "start", "ms": time.time() * 1000}) + "\n")
    r = redis.Redis.from_url(url)
    got = None
    end = time.monotonic() + WAIT_S
    while got is None and time.monotonic() < end:
        try:
            got = r.blpop([f"go:{pod}"], timeout=1)
        except redis.exceptions.TimeoutError:
            # a read cut short when the process was frozen and woken: ask again
            continue
    if got is not None:
        time.sleep(float(got[1]))  # the job's work (the order of events is the test's go, not this)
    with open(truth, "a") as f:
        f.write(json.dumps({"pod": pod, "at": "end", "ms": time.time() * 1000, "go": got is not None}) + "\n")
    return pod


def _worker(url: str, pod: str) -> None:
    from rq import Queue, Worker

    class LabWorker(Worker):
        def get_heartbeat_ttl(self, job: Any, working_time: float = 0.0) -> int:
            return LEASE_S

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    conn = redis.Redis.from_url(url)
    worker = LabWorker(
        [Queue("default", connection=conn)], connection=conn, name=pod, job_monitoring_interval=1
    )
    worker.work(burst=True, logging_level="INFO")


def _start(out: Path, url: str, pod: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "LAB_POD": pod, "PYTHONPATH": os.pathsep.join(sys.path)}
    log = open(out / f"{pod}.log", "wb")  # noqa: SIM115 (the worker writes it until it exits)
    return subprocess.Popen(
        [sys.executable, "-m", "rq_lab", "worker", url, pod],
        cwd=Path(__file__).parent,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the worker and its work-horse stop together
    )


def _truth(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _until(what: str, test: Any) -> Any:
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        got = test()
        if got:
            return got
        time.sleep(0.01)
    raise TimeoutError(f"rq lab: {what} did not happen within {WAIT_S} s")


def _seen(path: Path, pod: str, at: str) -> bool:
    return any(t["pod"] == pod and t["at"] == at for t in _truth(path))


def play(out: Path, url: str, scenario: str = "abandoned") -> dict[str, Any]:
    """Play `abandoned` (pod A frozen past its registry lease while its job runs: pod B's worker finds the
    entry expired, retries the job and runs it; A wakes and finishes too), `abandoned-no-retry` (the same
    without a Retry: B's cleanup moves the job to the FailedJobRegistry and runs nothing) or `quiet` (A
    runs the job in its lease). Returns the truth: each execution's start and end (epoch ms), and the overlap."""
    from rq import Queue, Retry

    out.mkdir(parents=True, exist_ok=True)
    truth_path = out / "truth.jsonl"
    conn = redis.Redis.from_url(url)
    conn.flushall()
    queue = Queue("default", connection=conn)
    retry = None if scenario == "abandoned-no-retry" else Retry(max=1)
    enqueued = queue.enqueue("rq_lab.job", str(truth_path), url, retry=retry, job_timeout=60)
    a = _start(out, url, "pod-a")
    b = None
    try:
        _until("pod-a's job start", lambda: _seen(truth_path, "pod-a", "start"))
        if scenario.startswith("abandoned"):
            os.killpg(a.pid, signal.SIGSTOP)
            wip = f"rq:wip:{queue.name}"

            def lapsed() -> bool:
                now_s = float(conn.time()[0])  # type: ignore[index]
                scores = conn.zrange(wip, 0, -1, withscores=True)
                return bool(scores) and all(score < now_s for _, score in scores)  # type: ignore[union-attr]

            _until("the registry entry's expiry", lapsed)
            b = _start(out, url, "pod-b")
            if retry is None:  # B's cleanup moves the job to the FailedJobRegistry: B has nothing to run
                _until("pod-b's last line", lambda: _LAST in (out / "pod-b.log").read_text())
            else:
                _until("pod-b's job start", lambda: _seen(truth_path, "pod-b", "start"))
            os.killpg(a.pid, signal.SIGCONT)
            conn.rpush("go:pod-a", WORK_S)
            _until("pod-a's job end", lambda: _seen(truth_path, "pod-a", "end"))
            # B's job ends only once A's worker has logged the end of A's: RQ's bookkeeping after the
            # function returns can take 150 ms on a loaded machine, and B's Job OK must not come first
            _until("pod-a's Job OK", lambda: "Job OK (" in (out / "pod-a.log").read_text())
            conn.rpush("go:pod-b", 0)
        else:
            conn.rpush("go:pod-a", WORK_S)
        for proc, pod in ((a, "pod-a"), (b, "pod-b")):
            if proc is not None:
                _until(f"{pod}'s last line", lambda pod=pod: _LAST in (out / f"{pod}.log").read_text())
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGCONT)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    rows = _truth(truth_path)
    runs = {
        pod: {at: next(t["ms"] for t in rows if t["pod"] == pod and t["at"] == at) for at in ("start", "end")}
        for pod in dict.fromkeys(t["pod"] for t in rows)
    }
    truth: dict[str, Any] = {"jobId": enqueued.id, "leaseMs": LEASE_S * 1000, "runs": runs}
    if "pod-b" in runs:
        ends = min(runs["pod-a"]["end"], runs["pod-b"]["end"])
        truth["overlapMs"] = round(ends - max(runs["pod-a"]["start"], runs["pod-b"]["start"]), 3)
    return truth


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        _worker(sys.argv[2], sys.argv[3])
