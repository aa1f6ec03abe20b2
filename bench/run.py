#!/usr/bin/env python3
"""leaselog's benchmark: full analysis against the baselines, on synthetic fleet logs with ground truth.

    python bench/run.py --quick                  # ~20 000 jobs, one run each: a minute on a laptop
    python bench/run.py                          # 200 000 jobs (~870 MB flat), 3 runs, 1x/4x/gzip scaling
    python bench/run.py --format ecs --jobs 50000

Each contender runs as its own process (wall time and peak RSS measured with os.wait4):
  a  leaselog analyze X --json out.json            (the whole product: read, reconstruct, 16 checks, JSON)
  b  polars scan_ndjson(schema).filter(event).collect()   (the floor: parsing JSON with polars)
  c  DuckDB read_json_auto(X) WHERE event IS NOT NULL, materialised
  d  jq -c 'select(.event != null)'
  n  leaselog analyze X-noids --json        (the same input with every executionId removed: executions are
                                             then cut out of each job and pod's lines by the lifecycle)
  z  with --before SRC: a, run from another checkout's `src` (before a change), on every input a runs on, in
     the same run (so a change's before and after share the machine's load)
Each run's CPU time (user + system, all threads) is reported next to its wall time: on a shared machine the
wall time varies with the load, the CPU time much less.
Correctness: leaselog's overlapping_executions findings == the generator's ground truth (jobId + pair).
Input is made by bench/gen_fleet.py (the project's own generator) into bench/data/ (git-ignored), once; 4x is four copies
with their jobIds/executionIds/pods renamed apart, so the truth is four times the 1x truth. noise4x is
the 1x input grown to 4x its size by unrelated lines only: every lease-event line is kept byte for byte,
the unrelated lines are repeated in place, so the lease events and the truth are exactly the 1x ones (what
shows whether memory follows the lease events kept or the input size). (gen_fleet's
noise lines draw from their own random stream, but copying keeps the lease events byte for byte.)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT / "bench" / "gen_fleet.py"

# the lease-event fields each shape carries (the floor's "right schema": only what an analysis needs)
SCHEMAS: dict[str, dict[str, str]] = {
    "seed": {
        "ts": "String",
        "jobId": "String",
        "executionId": "String",
        "pod": "String",
        "event": "String",
        "leaseMs": "Int64",
        "status": "String",
        "released": "Boolean",
        "trigger": "String",
        "kafka.topic": "String",
        "kafka.partition": "Int64",
        "kafka.offset": "Int64",
    },
}
SCHEMAS["ecs"] = {
    **{k: v for k, v in SCHEMAS["seed"].items() if k not in ("ts", "pod")},
    "@timestamp": "String",
    "service.node.name": "String",
    "message": "String",
}

FLOOR = """
import sys, polars as pl
schema = {k: getattr(pl, v) for k, v in %r.items()}
df = pl.scan_ndjson(sys.argv[1], schema=schema).filter(pl.col("event").is_not_null()).collect()
print(df.height)
"""

# where leaselog's time goes, stage by stage, in one process (what the ratios above are made of): each
# stage's wall seconds, and its CPU seconds (`<stage>_cpu`: user + system of every thread of the process)
STAGES = """
import sys, time, json, resource
import leaselog
import leaselog.pipeline as A
from leaselog.pipeline import analyze
t = {}
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
def timed(name, f):
    def wrapper(*a, **k):
        t0, c0 = time.perf_counter(), cpu(); r = f(*a, **k)
        t[name] = t.get(name, 0) + time.perf_counter() - t0
        t[name + "_cpu"] = t.get(name + "_cpu", 0) + cpu() - c0
        return r
    return wrapper
A.Reader.read = timed("read", A.Reader.read)
A.build_events = timed("build_events", A.build_events)
A.reconstruct = timed("reconstruct", A.reconstruct)
A.run_checks = timed("checks", A.run_checks)
A.finalize = timed("finalize", A.finalize)
analyze = timed("analyze", analyze)
a = analyze(sys.argv[1], keep_fields=False)  # as `analyze --json` runs
timed("write_json", leaselog.write_json)(a, sys.argv[2])
t["findings"] = len(a.finding_list)
t["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(t))
"""

DUCKDB = """
import sys, duckdb
con = duckdb.connect()
con.execute(f"CREATE TABLE ev AS SELECT * FROM read_json_auto('{sys.argv[1]}', format='newline_delimited') "
            "WHERE event IS NOT NULL")
print(con.execute("SELECT count(*) FROM ev").fetchone()[0])
"""


@dataclass
class Timing:
    name: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    ok: bool = True
    note: str = ""

    @property
    def wall(self) -> float:
        return statistics.median(self.walls) if self.walls else float("nan")

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus) if self.cpus else float("nan")

    @property
    def rss(self) -> float:
        return max(self.rss_mb) if self.rss_mb else float("nan")


def run_once(
    cmd: list[str], stdout: Any = subprocess.DEVNULL, env: dict[str, str] | None = None
) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds (user + system), peak RSS MiB, exit code) of one whole process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 1) and p.stderr is not None:
        sys.stderr.write(p.stderr.read().decode(errors="replace")[-2000:])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, p.returncode


def measure(name: str, cmd: list[str], runs: int, env: dict[str, str] | None = None) -> Timing:
    t = Timing(name)
    for _ in range(runs):
        wall, cpu, rss, rc = run_once(cmd, env=env)
        if rc not in (0, 1):  # leaselog exits 1 only with --fail-on
            t.ok, t.note = False, f"exit {rc}"
            break
        t.walls.append(wall)
        t.cpus.append(cpu)
        t.rss_mb.append(rss)
    return t


def generate(fmt: str, jobs: int, data: Path) -> tuple[Path, Path]:
    out = data / f"fleet-{fmt}-{jobs}.jsonl"
    truth = data / f"fleet-{fmt}-{jobs}.truth.json"
    if not out.exists() or not truth.exists():
        print(f"generating {out} ...", flush=True)
        subprocess.run(
            [
                sys.executable,
                str(GEN),
                "--jobs",
                str(jobs),
                "--format",
                fmt,
                "--out",
                str(out),
                "--truth",
                str(truth),
            ],
            check=True,
        )
    return out, truth


def make_4x(src: Path) -> Path:
    """Four copies, each with its ids renamed apart (`report-` -> `cK-report-`): jobs never collide."""
    out = src.with_name(src.stem + "-4x.jsonl")
    if out.exists():
        return out
    print(f"writing {out} ...", flush=True)
    with out.open("wb") as w:
        for k in range(4):
            with src.open("rb") as r:
                rest = b""
                while chunk := r.read(64 << 20):
                    data = rest + chunk
                    cut = data.rfind(b"\n") + 1
                    w.write(data[:cut].replace(b"report-", b"c%d-report-" % k))
                    rest = data[cut:]
                w.write(rest.replace(b"report-", b"c%d-report-" % k))
    return out


def make_noise4x(src: Path) -> Path:
    """The input grown to 4x its bytes by unrelated lines only: lease-event lines (those with an `"event"`
    key) are written once, unchanged and in order; each unrelated line is repeated in place as often as
    keeps the output at 4x the input read so far."""
    out = src.with_name(src.stem + "-noise4x.jsonl")
    if out.exists():
        return out
    print(f"writing {out} ...", flush=True)
    read = written = 0
    with src.open("rb") as r, out.open("wb") as w:
        buf: list[bytes] = []
        for line in r:
            read += len(line)
            buf.append(line)
            written += len(line)
            if b'"event":' not in line:
                while written < 4 * read:
                    buf.append(line)
                    written += len(line)
            if len(buf) >= 100_000:
                w.write(b"".join(buf))
                buf.clear()
        w.write(b"".join(buf))
    return out


def make_noids(src: Path) -> Path:
    """The input with every `"executionId":"..."` removed: the logs most teams have."""
    out = src.with_name(src.stem + "-noids.jsonl")
    if out.exists():
        return out
    print(f"writing {out} ...", flush=True)
    key = re.compile(rb'"executionId":\s*"[^"]*",?\s*')
    with src.open("rb") as r, out.open("wb") as w:
        while chunk := r.readlines(1 << 24):
            w.write(key.sub(b"", b"".join(chunk)))
    return out


def same_findings(ids_json: Path, noids_json: Path) -> dict[str, Any]:
    """Whether two documents' findings tell the same story, executions' names aside (in a child process,
    for the reason given in check_overlaps)."""
    got = subprocess.run(
        [sys.executable, "-c", SAME, str(ids_json), str(noids_json)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(got.stdout))


SAME = """
import json, sys
from collections import Counter
def story(path):
    doc = json.loads(open(path, "rb").read())
    return doc["executions"], Counter(
        (f["kind"], f["severity"], f["certainty"], f["jobId"], tuple(sorted(f["pods"])), f["start"], f["end"],
         f["durationMs"], f.get("trigger")) for f in doc["findings"])
(ea, a), (eb, b) = story(sys.argv[1]), story(sys.argv[2])
print(json.dumps({"findings": sum(a.values()), "only_with_ids": sum((a - b).values()),
                  "only_without": sum((b - a).values()), "executions": [ea, eb],
                  "equal": a == b and ea == eb}))
"""


def make_gz(src: Path) -> Path:
    out = src.with_name(src.name + ".gz")
    if not out.exists():
        print(f"writing {out} ...", flush=True)
        with src.open("rb") as r, gzip.open(out, "wb", compresslevel=1) as w:
            shutil.copyfileobj(r, w, 16 << 20)
    return out


def count_lines(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        while chunk := fh.read(64 << 20):
            n += chunk.count(b"\n")
    return n


def check_overlaps(findings_json: Path, truth: dict[str, Any], copies: int = 1) -> dict[str, Any]:
    """Overlapping executions found vs the generator's ground truth, as (jobId, {first, second}).

    Computed in a child process: loading a findings JSON takes this process to over 1 GB, and a process
    started later by fork + exec inherits that as its starting peak RSS (Linux folds the forking parent's
    high-water mark into the child's `ru_maxrss`), which would have been reported as leaselog's.
    """
    got = subprocess.run(
        [sys.executable, "-c", CHECK, str(findings_json), str(copies)],
        input=json.dumps(truth["overlaps"]),
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(got.stdout))


CHECK = """
import json, sys
doc = json.loads(open(sys.argv[1], "rb").read())
overlaps, copies = json.load(sys.stdin), int(sys.argv[2])
found = {(f["jobId"], frozenset(f["executionIds"])) for f in doc["findings"] if f["kind"] == "overlapping_executions"}
expected = set()
for k in range(copies):
    ren = (lambda s, k=k: s.replace("report-", f"c{k}-report-")) if copies > 1 else (lambda s: s)
    expected |= {(ren(o["jobId"]), frozenset({ren(o["first"]), ren(o["second"])})) for o in overlaps}
print(json.dumps({"truth": len(expected), "found": len(found), "missing": len(expected - found),
                  "extra": len(found - expected), "equal": found == expected, "lines": doc["lines"]}))
"""


def leaselog_cmd(path: Path, out: Path) -> list[str]:
    entry = "import sys; from leaselog.cli import main; sys.exit(main())"
    return [sys.executable, "-c", entry, "analyze", str(path), "--json", str(out), "--quiet"]


def fmt_row(t: Timing, size: int, lines: int) -> str:
    if not t.walls:
        return f"| {t.name} | failed ({t.note}) | | | | | |"
    return (
        f"| {t.name} | {t.wall:.2f} | {t.cpu:.2f} | {t.rss:.0f} | {lines / t.wall / 1e6:.2f} | "
        f"{size / t.wall / 1e6:.0f} | {', '.join(f'{w:.2f}' for w in t.walls)} |"
    )


def env_with(src: Path | None) -> dict[str, str] | None:
    """The environment a `--before` run gets: its checkout's `src` first on the import path."""
    if src is None:
        return None
    return {**os.environ, "PYTHONPATH": str(src.resolve())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=200_000, help="jobs in the 1x input (200 000: ~870 MB flat)")
    ap.add_argument("--quick", action="store_true", help="20 000 jobs, one run, no 4x: a developer's minute")
    ap.add_argument(
        "--runs", type=int, default=3, help="runs per contender; the median wall time is reported"
    )
    ap.add_argument("--format", default="seed", choices=["seed", "ecs"], help="gen_fleet shape (seed = flat)")
    ap.add_argument("--data", type=Path, default=ROOT / "bench" / "data")
    ap.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--no-scaling", action="store_true", help="skip the 4x, noise4x and gzip runs")
    ap.add_argument("--only", default="abcdn", help="contenders to run, e.g. `ab`")
    ap.add_argument("--scale", default="4x,noise4x,gzip", help="scaling runs to make, e.g. `noise4x`")
    ap.add_argument("--stages", action="store_true", help="also time leaselog's stages in one process")
    ap.add_argument(
        "--before",
        type=Path,
        help="another checkout's src folder: also run leaselog from it (z) on every input, in this same run",
    )
    a = ap.parse_args(argv)
    if a.quick:
        a.jobs, a.runs, a.no_scaling = 20_000, 1, True
    a.data.mkdir(parents=True, exist_ok=True)
    a.results.mkdir(parents=True, exist_ok=True)
    x, truth_path = generate(a.format, a.jobs, a.data)
    truth = json.loads(truth_path.read_text())
    size, lines = x.stat().st_size, count_lines(x)
    out = a.results / f"leaselog-{a.format}-{a.jobs}.json"
    print(
        f"input {x}: {size / 1e6:.0f} MB, {lines:,} lines, {len(truth['overlaps'])} overlaps in the truth; "
        f"{a.runs} run(s) each; {os.cpu_count()} CPUs",
        flush=True,
    )

    before = env_with(a.before)
    if before is None:
        a.only = a.only.replace("z", "")
    elif "z" not in a.only:
        a.only = a.only.replace("a", "az") if "a" in a.only else a.only + "z"
    contenders = {
        "a": ("a leaselog analyze --json", leaselog_cmd(x, out)),
        "z": (
            "z leaselog before (--before)",
            leaselog_cmd(x, a.results / f"before-{a.format}-{a.jobs}.json"),
        ),
        "b": ("b polars scan_ndjson (floor)", [sys.executable, "-c", FLOOR % SCHEMAS[a.format], str(x)]),
        "c": ("c duckdb read_json_auto", [sys.executable, "-c", DUCKDB, str(x)]),
        "d": ("d jq select(.event)", ["jq", "-c", "select(.event != null)", str(x)]),
    }
    out_noids = a.results / f"leaselog-{a.format}-{a.jobs}-noids.json"
    if "n" in a.only:
        contenders["n"] = ("n leaselog, no execution ids", leaselog_cmd(make_noids(x), out_noids))
    if "d" in a.only and shutil.which("jq") is None:
        print("jq is not on PATH: d is skipped", flush=True)
        a.only = a.only.replace("d", "")
    timings: dict[str, Timing] = {}
    for key in a.only:
        name, cmd = contenders[key]
        print(f"running {name} ...", flush=True)
        timings[key] = measure(name, cmd, a.runs, before if key == "z" else None)

    report: dict[str, Any] = {
        "input": {"path": str(x), "bytes": size, "lines": lines, "format": a.format, "jobs": a.jobs},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": a.runs,
        "timings": {
            k: {
                "wall_s": t.wall,
                "walls": t.walls,
                "cpu_s": t.cpu,
                "cpus": t.cpus,
                "peak_rss_mb": t.rss,
                "rss_runs_mb": t.rss_mb,
                "ok": t.ok,
            }
            for k, t in timings.items()
        },
    }
    table = [
        "| contender | wall s (median) | CPU s (median) | peak RSS MiB | M lines/s | MB/s | wall s, each run |",
        "|---|---|---|---|---|---|---|",
    ]
    table += [fmt_row(t, size, lines) for t in timings.values()]
    ratios = {}
    if "a" in timings:
        for k in "bcdz":
            if k in timings and timings[k].walls:
                ratios[f"a/{k}"] = timings["a"].wall / timings[k].wall
                ratios[f"a/{k} CPU"] = timings["a"].cpu / timings[k].cpu
        if "n" in timings:
            ratios["n/a"] = timings["n"].wall / timings["a"].wall
            report["noids"] = same_findings(out, out_noids)
        report["ratios"] = ratios
        report["correctness"] = check_overlaps(out, truth)

    if a.stages:
        for label, env in (("stages", None), ("stages_before", before)) if before else (("stages", None),):
            print(f"timing leaselog's stages ({label}) ...", flush=True)
            got = subprocess.run(
                [sys.executable, "-c", STAGES, str(x), str(a.results / f"{label}.json")],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
            report[label] = json.loads(got.stdout.strip().splitlines()[-1])

    if not a.no_scaling and "a" in timings:
        makers = {"4x": (make_4x, 4), "noise4x": (make_noise4x, 1), "gzip": (make_gz, 1)}
        scale: dict[str, Any] = {}
        for label in a.scale.split(","):
            make, copies = makers[label]
            path = make(x)
            o = a.results / f"leaselog-{a.format}-{a.jobs}-{label}.json"
            print(f"running a on {label} ...", flush=True)
            big = label in ("4x", "noise4x")
            t = measure(f"a {label}", leaselog_cmd(path, o), max(1, a.runs - 1) if big else a.runs)
            scale[label] = {
                "wall_s": t.wall,
                "walls": t.walls,
                "cpu_s": t.cpu,
                "peak_rss_mb": t.rss,
                "rss_runs_mb": t.rss_mb,
                "bytes": path.stat().st_size,
                "correctness": check_overlaps(o, truth, copies),
            }
            if before is not None:
                print(f"running z on {label} ...", flush=True)
                zo = a.results / f"before-{a.format}-{a.jobs}-{label}.json"
                z = measure(
                    f"z {label}", leaselog_cmd(path, zo), max(1, a.runs - 1) if big else a.runs, before
                )
                scale[label]["z_wall_s"], scale[label]["z_cpu_s"] = z.wall, z.cpu
                scale[label]["z_peak_rss_mb"] = z.rss
                scale[label]["a/z"] = t.wall / z.wall
                scale[label]["a/z CPU"] = t.cpu / z.cpu
            if label == "noise4x":  # noisy logs: the floor and DuckDB on the same file, in the same run
                for key in "bc":
                    if key in timings:
                        name, cmd = contenders[key]
                        print(f"running {key} on {label} ...", flush=True)
                        other = measure(f"{key} {label}", [*cmd[:-1], str(path)], max(1, a.runs - 1))
                        scale[label][f"{key}_wall_s"] = other.wall
                        scale[label][f"{key}_cpu_s"] = other.cpu
                        scale[label][f"{key}_peak_rss_mb"] = other.rss
                        scale[label][f"a/{key}"] = t.wall / other.wall
                        scale[label][f"a/{key} CPU"] = t.cpu / other.cpu
        base = timings["a"]
        for label in list(scale):
            scale[f"time_{label}_over_1x"] = scale[label]["wall_s"] / base.wall
            scale[f"rss_{label}_over_1x"] = scale[label]["peak_rss_mb"] / base.rss
        report["scaling"] = scale

    print()
    print("\n".join(table))
    if ratios:
        print("ratios: " + ", ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))
    if "correctness" in report:
        c = report["correctness"]
        print(
            f"overlaps: found {c['found']}, truth {c['truth']}, missing {c['missing']}, extra {c['extra']}"
            f" -> {'EQUAL' if c['equal'] else 'DIFFERENT'}; lines {c['lines']}"
        )
    if "noids" in report:
        n = report["noids"]
        print(
            f"without execution ids: {n['findings']} findings, {n['only_with_ids']} only with ids, "
            f"{n['only_without']} only without; executions {n['executions'][0]} vs {n['executions'][1]}"
            f" -> {'SAME' if n['equal'] else 'DIFFERENT'}"
        )
    for label in ("stages", "stages_before"):
        if label in report:
            print(f"{label} (s): " + ", ".join(f"{k} {v:.2f}" for k, v in report[label].items()))
    if "scaling" in report:
        s = report["scaling"]
        what = {"4x": "4x", "noise4x": "noise4x (4x the bytes, same lease events)", "gzip": "gzip"}
        for label in a.scale.split(","):
            r = s[label]
            print(
                f"{what[label]}: {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s ({s[f'time_{label}_over_1x']:.2f}x "
                f"time), peak RSS {r['peak_rss_mb']:.0f} MiB ({s[f'rss_{label}_over_1x']:.2f}x); overlaps equal: "
                f"{r['correctness']['equal']}"
                + "".join(
                    f"; {k} {r[f'{k}_wall_s']:.2f} s (CPU {r[f'{k}_cpu_s']:.2f} s, {r[f'{k}_peak_rss_mb']:.0f} MiB),"
                    f" a/{k} = {r[f'a/{k}']:.2f} (CPU {r[f'a/{k} CPU']:.2f})"
                    for k in "bcz"
                    if f"a/{k}" in r
                )
            )
    dest = a.results / f"bench-{a.format}-{a.jobs}.json"
    dest.write_text(json.dumps(report, indent=1))
    print(f"wrote {dest}")
    ok = report.get("correctness", {}).get("equal", True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
