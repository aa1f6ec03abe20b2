#!/usr/bin/env python3
"""Sustained throughput and memory of `leaselog watch` on a long synthetic stream.

    python3 bench/watch_stream.py --jobs 20000                 # as fast as watch reads (the pipe pushes back)
    python3 bench/watch_stream.py --jobs 150000 --rate 20000   # a steady 20 000 lines/s

The fleet comes from bench/gen_fleet.py (time-ordered lines of every pod, unrelated request lines mixed
in). It is written to `leaselog watch -` through a real pipe, in 50 ms slices at `--rate` lines/s (0: as
fast as the pipe takes them; a pipe holds 64 KiB, so the writer waits for watch to read). Every
`--every` seconds the watch process's resident memory (VmRSS) and the lines written so far are printed;
at the end, the lines/s that went through, and the findings written. The stream ends with standard
input, and watch exits after its final pass.
"""

from __future__ import annotations

import argparse
import mmap
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20000, help="jobs in the generated fleet")
    ap.add_argument("--rate", type=int, default=0, help="lines per second (0: as fast as watch reads)")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between memory samples")
    ap.add_argument("--input", type=Path, help="a fleet file already generated (else one is made)")
    ap.add_argument("--keep", type=Path, help="folder to keep the generated fleet and the findings in")
    a = ap.parse_args(argv)

    work = a.keep or Path(tempfile.mkdtemp(prefix="leaselog-watch-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    fleet = a.input or work / f"fleet-{a.jobs}.jsonl"
    if not fleet.exists():
        subprocess.run(
            [sys.executable, str(HERE / "gen_fleet.py"), "--jobs", str(a.jobs), "--out", str(fleet)],
            check=True,
        )
    gen = resource.getrusage(resource.RUSAGE_CHILDREN)
    gen_cpu = gen.ru_utime + gen.ru_stime
    fh = fleet.open("rb")
    data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # a long fleet is not read into memory
    total_lines = sum(data[i : i + (1 << 26)].count(b"\n") for i in range(0, len(data), 1 << 26))
    findings = work / "findings.jsonl"
    findings.unlink(missing_ok=True)
    watch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leaselog.cli",
            "watch",
            "-",
            "--jsonl",
            str(findings),
            "-q",
            "--fail-on",
            "never",
        ],
        stdin=subprocess.PIPE,
    )
    assert watch.stdin is not None
    sent = 0
    started = time.monotonic()
    samples: list[tuple[float, int, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(a.every):
            t0, n0 = (samples[-1][0], samples[-1][1]) if samples else (0.0, 0)
            samples.append((time.monotonic() - started, sent, rss_mib(watch.pid)))
            t, n, rss = samples[-1]
            rate = (n - n0) / (t - t0)
            print(
                f"  {t:7.1f}s  {n:>10} lines in  {rate:>9.0f} lines/s since the last  RSS {rss:7.1f} MiB",
                flush=True,
            )

    threading.Thread(target=sample, daemon=True).start()
    print(f"{total_lines} lines ({len(data) / 1e6:.0f} MB) into `leaselog watch -`, rate {a.rate or 'max'}")
    pos = 0
    slice_s = 0.05
    try:
        while pos < len(data):
            if a.rate:
                want = max(1, int(a.rate * slice_s))
                end = pos
                for _ in range(want):
                    end = data.find(b"\n", end) + 1
                    if end == 0:
                        end = len(data)
                        break
                due = started + (sent + want) / a.rate
            else:
                end = data.find(b"\n", min(len(data), pos + (1 << 20))) + 1 or len(data)
                due = 0.0
            piece = data[pos:end]
            watch.stdin.write(piece)
            sent += piece.count(b"\n")
            pos = end
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        watch.stdin.close()
        fed = time.monotonic() - started
        rc = watch.wait()
    finally:
        done.set()
        if watch.poll() is None:
            watch.kill()
    total = time.monotonic() - started
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the watch's CPU time (and gen_fleet's, if run)
    cpu = used.ru_utime + used.ru_stime - gen_cpu
    rss = [r for _, _, r in samples]
    written = findings.read_bytes().count(b"\n") if findings.exists() else 0
    print(
        f"fed {sent} lines in {fed:.1f}s: {sent / fed:.0f} lines/s; watch exited {rc} after {total:.1f}s "
        f"(final pass {total - fed:.1f}s); {written} finding lines written"
    )
    print(
        f"watch CPU time {cpu:.1f}s (user+system, all threads): {sent / cpu:.0f} lines per CPU-second; "
        f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    if rss:
        print(f"RSS MiB: first {rss[0]:.0f}, min {min(rss):.0f}, max {max(rss):.0f}, last {rss[-1]:.0f}")
    if len(samples) > 2:  # steady state: without the first interval (python and polars starting)
        (t1, n1, _), (t2, n2, _) = samples[0], samples[-1]
        print(f"steady: {(n2 - n1) / (t2 - t1):.0f} lines/s from {t1:.0f}s to {t2:.0f}s")
    data.close()
    fh.close()
    if not a.keep:
        for p in (fleet, findings):
            if p.parent == work:
                p.unlink(missing_ok=True)
        os.rmdir(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
