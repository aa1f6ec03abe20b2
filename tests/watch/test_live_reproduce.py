"""`leaselog watch` follows real `leaselog reproduce` pods (worker processes against a real redis-server)
while they write: each finding comes after the line that establishes it and while the execution it is about
still runs (its first record is `open`), and at idle exit the final findings are `leaselog analyze`'s on the
same files. How soon is not asserted (a wall-clock bound fails on a loaded machine): the delays are in the
assertion messages."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from watch_helpers import final_findings, normalised

import leaselog
from leaselog.reproduce import ReproduceOptions, run_scenario
from leaselog.reproduce.server import throwaway_redis

pytestmark = pytest.mark.redis

FAST = ReproduceOptions(lease_ms=2000, renewal_ms=400)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    with throwaway_redis() as target:
        yield target.url


class Seen:
    """When each line of the files in a folder first appeared (polled every 5 ms by a thread)."""

    def __init__(self, files: list[Path], folder: Path) -> None:
        self.files, self.folder = files, folder
        self.lines: dict[str, list[tuple[float, dict[str, Any]]]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        done: dict[str, int] = {}
        while not self.stop.is_set():
            now = time.monotonic()
            for f in [*self.files, *sorted(self.folder.glob("pod-*.jsonl"))]:
                try:
                    text = f.read_bytes()
                except OSError:
                    continue
                whole = text[: text.rfind(b"\n") + 1].decode().splitlines()
                for line in whole[done.get(f.name, 0) :]:
                    self.lines.setdefault(f.name, []).append((now, json.loads(line)))
                done[f.name] = len(whole)
            time.sleep(0.005)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def _ts(d: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(d["ts"].replace("Z", "+00:00"))


def test_watch_follows_reproduce_pods_live(redis_url: str, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    out = tmp_path / "findings.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    watch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leaselog.cli",
            "watch",
            str(logs),
            "--jsonl",
            str(out),
            "--exit-when-idle",
            "4s",
            "-q",
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    seen = Seen([out], logs)
    try:
        time.sleep(1.0)  # the watch is up (python start) before the pods write their first line
        run = run_scenario("article", FAST, redis_url=redis_url, out=logs)
        rc = watch.wait(timeout=60)
    finally:
        if watch.poll() is None:
            watch.kill()
        seen.close()
    assert watch.stderr is not None
    assert rc == 1, watch.stderr.read().decode()  # an error-level finding stands (--fail-on error)

    pod_a, pod_b = seen.lines["pod-a.jsonl"], seen.lines["pod-b.jsonl"]
    written = seen.lines["findings.jsonl"]
    # the overlap: B's acquisition while A has not finished
    b_acquired = next(t for t, d in pod_b if d.get("event") == "lock_acquired")
    overlap = next(t for t, d in written if d["kind"] == "overlapping_executions")
    assert overlap >= b_acquired, overlap - b_acquired
    # the lease outlived: the first line of A past its lease's expiry
    acquired = next(d for _, d in pod_a if d.get("event") == "lock_acquired")
    expiry = _ts(acquired) + timedelta(milliseconds=acquired["leaseMs"])
    past = next(t for t, d in pod_a if d.get("jobId") == run.truth["job"] and _ts(d) > expiry)
    outlived, outlived_state = next(
        (t, d["state"])
        for t, d in written
        if d["kind"] == "lease_outlived" and d["certainty"] == "certain" and d["jobId"] == run.truth["job"]
    )
    assert outlived >= past, outlived - past
    # both came while A still ran (open), and are final at the end
    states = [d["state"] for _, d in written if d["kind"] == "overlapping_executions"]
    assert states[0] == "open" and states[-1] == "final", (states, overlap - b_acquired)
    assert outlived_state == "open", (outlived_state, outlived - past)

    batch = leaselog.document(leaselog.analyze(logs))["findings"]
    assert {d["kind"] for d in batch} >= {"overlapping_executions", "lease_outlived", "second_attempt"}
    assert final_findings(out.read_bytes()) == normalised(batch)


def _asked(d: dict[str, Any]) -> bool:
    """The uncertain "still running?" lease_outlived about A, asked while A writes nothing."""
    return d["kind"] == "lease_outlived" and bool(d["details"].get("stillRunning"))


def test_watch_asks_still_running_while_a_pod_is_paused(redis_url: str, tmp_path: Path) -> None:
    """`reproduce renewal`: pod A is SIGSTOPped past its lease. While it is stopped it writes nothing; the
    wall clock passing its expiry + the skew bound gives the uncertain "still running?" while it is stopped;
    A's first line after it resumes turns it into the certain lease_outlived; the end equals analyze.
    The window is opened by coordination, not timing: the scenario resumes A only once the watch's --jsonl
    holds the question (`resume_when`), however late a loaded machine lets the watch ask."""
    logs = tmp_path / "logs"
    logs.mkdir()
    out = tmp_path / "findings.jsonl"
    watch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leaselog.cli",
            "watch",
            str(logs),
            "--jsonl",
            str(out),
            "--exit-when-idle",
            "4s",
            "-q",
        ],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    seen = Seen([out], logs)
    wall_minus_mono = time.time() - time.monotonic()
    try:
        time.sleep(1.0)
        run = run_scenario(
            "renewal",
            FAST,
            redis_url=redis_url,
            out=logs,
            resume_when=lambda: any(_asked(d) for _, d in list(seen.lines.get("findings.jsonl", []))),
        )
        rc = watch.wait(timeout=60)
    finally:
        if watch.poll() is None:
            watch.kill()
        seen.close()
    assert watch.stderr is not None
    assert rc == 1, watch.stderr.read().decode()
    job = run.truth["job"]
    written = [(t, d) for t, d in seen.lines["findings.jsonl"] if d["jobId"] == job]
    asked = [(t, d) for t, d in written if _asked(d)]
    assert asked, [d["kind"] for _, d in written]
    t_asked, d_asked = asked[0]
    assert (d_asked["certainty"], d_asked["state"], d_asked["executionIds"]) == (
        "uncertain",
        "open",
        ["attempt-a"],
    )
    expiry = datetime.fromisoformat(d_asked["start"].replace("Z", "+00:00")).timestamp() - wall_minus_mono
    assert t_asked - expiry >= 0.25, t_asked - expiry  # not before expiry + skew bound
    # A wrote nothing while it was asked about: its next line came later
    a_lines = [t for t, d in seen.lines["pod-a.jsonl"] if d.get("jobId") == job]
    assert any(t > t_asked for t in a_lines) and not any(expiry < t < t_asked for t in a_lines)
    # the same finding, established by the logs once A wrote again
    same = [d for _, d in written if d["kind"] == "lease_outlived" and d["start"] == d_asked["start"]]
    assert (same[-1]["certainty"], same[-1]["state"]) == ("certain", "final")
    assert final_findings(out.read_bytes()) == normalised(
        leaselog.document(leaselog.analyze(logs))["findings"]
    )
