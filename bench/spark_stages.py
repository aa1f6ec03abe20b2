#!/usr/bin/env python3
"""Time and memory per stage of `--engine spark` on one input (docs/SPARK.md's measured stages).

    python bench/spark_stages.py fleet.jsonl --master 'local[2]' --json out.json

Memory is the resident set of the driver process and everything it started (the JVM, whose executors run
inside it in local mode, and the Python workers), sampled every 0.2 s: its peak within each stage.
Driver payload is what the analyze stage sends to the driver (Arrow IPC, zstd), per execution.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

import leaselog
from leaselog.pipeline import settings_of
from leaselog.spark import StageTimes, run, session


def _tree_rss(root: int) -> int:
    """Resident bytes of a process and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            ppid, pages = int(parts[1]), int(parts[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
        rss[int(d)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("input", nargs="+")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=None)
    ap.add_argument("--json", type=Path, required=True)
    args = ap.parse_args()

    samples: list[tuple[float, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.perf_counter(), _tree_rss(os.getpid())))
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    start = time.perf_counter()
    times = StageTimes()
    spark = session(args.master)
    spark.sparkContext.setLogLevel("ERROR")
    times.mark("session", start)
    a = run(args.input, settings_of(), spark=spark, partitions=args.partitions, times=times)
    t = time.perf_counter()
    leaselog.write_json(a, args.json)
    times.mark("json", t)
    done.set()
    bounds, at = {}, start
    for name, secs in times.seconds.items():
        bounds[name] = (at, at + secs)
        at += secs
    peak = {
        name: round(max((r for ts, r in samples if lo <= ts <= hi), default=0) / 2**20)
        for name, (lo, hi) in bounds.items()
    }
    c = a.counts()
    print(
        json.dumps(
            {
                "master": args.master,
                "partitions": times.partitions,
                "seconds": times.seconds,
                "total_s": round(time.perf_counter() - start, 1),
                "peak_rss_mib": peak,
                "events": c.events,
                "executions": c.executions,
                "findings": a.findings.height,
                "driver_bytes": times.driver_bytes,
                "driver_bytes_per_execution": round(times.driver_bytes / max(1, c.executions), 1),
                "events_per_partition": round(c.events / max(1, times.partitions)),
            },
            indent=1,
        )
    )
    spark.stop()


if __name__ == "__main__":
    main()
