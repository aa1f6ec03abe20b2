#!/usr/bin/env python3
"""A synthetic job fleet with known ground truth: the benchmark's and the large-report tests' input.

    python bench/gen_fleet.py --jobs 20000 --out fleet.jsonl --truth truth.json
    python bench/gen_fleet.py --jobs 200000 --format ecs --out fleet-ecs.jsonl

Each job is one report request taken by one pod (triggered, lock acquired with a TTL and no renewal,
started, finished, released). Runtimes are log-normal with a tail past the TTL, so some executions outlive
their lease. For some jobs a second pod attempts the same job after the first lease expired (scheduler,
retry, or a redelivery of the same message) and runs alongside: those overlaps are the ground truth
(`truth.json`: every overlapping pair and its overlap in ms). Some jobs also get a scheduler fire that the
lock turns away while the first execution holds a valid lease (`lock_denied`): those never run and are in
no overlap. Unrelated request-log lines are mixed in (`--noise` per lease event on average).

Deterministic for a seed. Shapes: `flat` (the article's JSON), `ecs` (Spring Boot 3.4 ECS), `logstash`,
`logfmt`.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 11, 2, 8, 0, 0, tzinfo=UTC)
LOGGER = "com.example.report.ReportJob"
Fields = dict[str, Any]


def _iso(ms: int) -> str:
    return (START + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _flat(ms: int, pod: str, fields: Fields, message: str) -> str:
    return json.dumps({"ts": _iso(ms), **fields, "pod": pod}, separators=(",", ":"))


def _ecs(ms: int, pod: str, fields: Fields, message: str) -> str:
    rec = {
        "@timestamp": _iso(ms),
        "log.level": "INFO",
        "process.pid": 1,
        "process.thread.name": "report-worker-1",
        "service.name": "report-service",
        "service.node.name": pod,
        "log.logger": LOGGER,
        "message": message,
        **fields,
        "ecs.version": "8.11",
    }
    return json.dumps(rec, separators=(",", ":"))


def _logstash(ms: int, pod: str, fields: Fields, message: str) -> str:
    rec = {
        "@timestamp": _iso(ms).replace("Z", "+00:00"),
        "@version": "1",
        "message": message,
        "logger_name": LOGGER,
        "thread_name": "report-worker-1",
        "level": "INFO",
        "level_value": 20000,
        "HOSTNAME": pod,
        **fields,
    }
    return json.dumps(rec, separators=(",", ":"))


def _logfmt(ms: int, pod: str, fields: Fields, message: str) -> str:
    return " ".join([f"ts={_iso(ms)}", f"pod={pod}", *(f"{k}={v}" for k, v in fields.items())])


SHAPES: dict[str, Callable[[int, str, Fields, str], str]] = {
    "flat": _flat,
    "seed": _flat,  # the name earlier benchmark reports used for the flat shape
    "ecs": _ecs,
    "logstash": _logstash,
    "logfmt": _logfmt,
}


class Fleet:
    """Collects (ms, text) lines; `noise` unrelated lines per lease event on average, drawn from their own RNG."""

    def __init__(self, shape: str, noise: int, seed: int) -> None:
        self.render = SHAPES[shape]
        self.noise = noise
        self.noise_rng = random.Random(seed * 7919 + 1)
        self.lines: list[tuple[int, str]] = []

    def log(self, ms: int, pod: str, fields: Fields, message: str) -> None:
        self.lines.append((ms, self.render(ms, pod, fields, message)))
        r = self.noise_rng
        for _ in range(r.randint(0, 2 * self.noise)):
            at = ms + r.randint(0, 5000)
            http = {
                "http.method": "GET",
                "url.path": f"/api/orders/{r.randrange(10**6)}",
                "status": 200,
                "durationMs": r.randint(1, 90),
            }
            self.lines.append((at, self.render(at, pod, http, "request completed")))


def _execution(
    fleet: Fleet, pod: str, job: str, ex: str, at: int, runtime: int, ttl: int, trigger: Fields
) -> tuple[int, int]:
    """Log one execution that acquires at `at`; returns its (start, end) in ms."""
    base = {"jobId": job, "executionId": ex}
    fleet.log(at - 2, pod, {**base, "event": "job_triggered", **trigger}, "received report request")
    fleet.log(at, pod, {**base, "event": "lock_acquired", "leaseMs": ttl}, "lock acquired")
    start, end = at + 2, at + 2 + runtime
    fleet.log(start, pod, {**base, "event": "job_started"}, "report started")
    fleet.log(end, pod, {**base, "event": "job_finished", "status": "ok"}, "report finished")
    # the owner-checked release deletes only a lease that is still ours
    fleet.log(
        end + 2, pod, {**base, "event": "lock_released", "released": end + 2 < at + ttl}, "lock released"
    )
    return start, end


def generate(
    jobs: int, pods: int, noise: int, ttl: int, shape: str, seed: int, denied_rate: float = 0.05
) -> tuple[list[str], dict[str, Any]]:
    rng = random.Random(seed)
    fleet = Fleet(shape, noise, seed)
    names = [f"report-service-{i}-{rng.randrange(16**5):05x}" for i in range(pods)]
    truth: dict[str, Any] = {"jobs": jobs, "executions": 0, "denied": 0, "overlaps": []}
    clock = 0
    for j in range(jobs):
        job = f"report-{j}"
        clock += rng.randint(1_000, 60_000)
        kafka = {
            "trigger": "kafka",
            "kafka.topic": "report-requests",
            "kafka.partition": j % 12,
            "kafka.offset": j,
        }
        pod_a = rng.choice(names)
        runtime_a = int(rng.lognormvariate(12.5, 0.6))  # median ~4.5 min, a tail past a 10 min TTL
        start_a, end_a = _execution(fleet, pod_a, job, f"{job}-a{j:06x}", clock, runtime_a, ttl, kafka)
        truth["executions"] += 1
        if rng.random() < denied_rate:
            # a scheduler fire while A's lease is valid: the lock turns it away and nothing runs
            pod_d = rng.choice(names)
            at = clock + rng.randint(10, max(11, min(ttl, runtime_a) - 10))
            base = {"jobId": job, "executionId": f"{job}-d{j:06x}"}
            fleet.log(
                at - 1, pod_d, {**base, "event": "job_triggered", "trigger": "scheduler"}, "scheduled run"
            )
            fleet.log(at, pod_d, {**base, "event": "lock_denied"}, "lock held elsewhere")
            truth["denied"] += 1
        if rng.random() < 0.15:
            pod_b = rng.choice([p for p in names if p != pod_a] or names)
            path = rng.choice(["scheduler", "retry", "redelivery"])
            trigger = kafka if path == "redelivery" else {"trigger": path}
            at_b = clock + ttl + rng.randint(100, 30_000)  # after A's lease expired
            runtime_b = int(rng.lognormvariate(12.0, 0.4))
            start_b, end_b = _execution(fleet, pod_b, job, f"{job}-b{j:06x}", at_b, runtime_b, ttl, trigger)
            truth["executions"] += 1
            overlap = min(end_a, end_b) - max(start_a, start_b)
            if overlap > 0:
                truth["overlaps"].append(
                    {
                        "jobId": job,
                        "first": f"{job}-a{j:06x}",
                        "second": f"{job}-b{j:06x}",
                        "overlapMs": overlap,
                    }
                )
    fleet.lines.sort(key=lambda line: line[0])
    return [text for _, text in fleet.lines], truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--pods", type=int, default=8)
    ap.add_argument("--noise", type=int, default=4, help="unrelated lines per lease event, on average")
    ap.add_argument("--ttl-ms", type=int, default=600_000)
    ap.add_argument(
        "--denied-rate", type=float, default=0.05, help="share of jobs with a denied scheduler fire"
    )
    ap.add_argument("--format", default="flat", choices=sorted(SHAPES))
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    ap.add_argument("--truth")
    a = ap.parse_args(argv)
    lines, truth = generate(a.jobs, a.pods, a.noise, a.ttl_ms, a.format, a.seed, a.denied_rate)
    out = Path(a.out)
    with out.open("w", encoding="utf-8") as fh:
        for text in lines:
            fh.write(text + "\n")
    if a.truth:
        Path(a.truth).write_text(json.dumps(truth, indent=1), encoding="utf-8")
    print(f"{len(lines)} lines, {out.stat().st_size / 1e6:.1f} MB, {len(truth['overlaps'])} overlaps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
