"""Which true attempt each of leaselog's executions is: matched by pod and time, never by name.

A lab run's truth names every attempt (`attempt-a`, `attempt-a2`, ...: pod A's first and second) whatever
id its worker logged: a unique one, a counter that restarts with the process, the same id every time, or
none at all (then leaselog names the executions it infers itself). To hold findings against the truth,
each execution leaselog reconstructed is matched to the attempt on the same pod whose logged lines span
the same time (the truth knows each moment's true wall time and the pod's clock offset at that moment,
a clock step included, so it knows the `ts` the line was logged with; where leaselog undid the step, its
time is the pod's clock before the step, and that span matches too), and every finding's `executionIds` is
rewritten to those true names.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import polars as pl

# a line's `ts` is the truth's wall time + the pod's offset, both in whole ms; the margin only absorbs
# renderings that round to coarser steps
SLACK_MS = 2.0


@dataclass(frozen=True)
class TrueRun:
    name: str
    pod: str
    first_ms: float  # the first and last lease line of the attempt, in the pod's logged (skewed) time
    last_ms: float


def run_name(pod: str, moment: dict[str, Any]) -> str:
    """A moment's true attempt: the worker records it; older truths had one attempt per pod."""
    return str(moment.get("run") or f"attempt-{pod.removeprefix('pod-')}")


def clock_offset(truth: dict[str, Any], pod: str, mono: float) -> float:
    """How far `pod`'s logging clock was off (ms) at true moment `mono` (CLOCK_MONOTONIC ms): its offset,
    and, from a clock step on, its offset after the step (`truth["clocks"]`; older truths: `offsets`)."""
    steps = truth.get("clocks", {}).get(pod)
    if not steps:
        return float(truth.get("offsets", {}).get(pod, 0))
    now = [s for s in steps if s["fromMono"] is None or s["fromMono"] <= mono]
    return float((now or steps[:1])[-1]["offsetMs"])


def clock_steps(truth: dict[str, Any]) -> list[tuple[str, float, float]]:
    """Every clock step of the run: (pod, CLOCK_MONOTONIC ms it happened at, its size in ms, signed)."""
    out = []
    for pod, steps in truth.get("clocks", {}).items():
        for before, after in pairwise(steps):
            out.append((pod, float(after["fromMono"]), float(after["offsetMs"]) - float(before["offsetMs"])))
    return out


def true_runs(truth: dict[str, Any], *, stepped: bool = True, resolution_ms: float = 0.0) -> list[TrueRun]:
    """Every true attempt's span of logged time; `stepped=False`: as if the pod's clock had never stepped
    (its offset before any step), the time leaselog reads where it undid a step by elapsedMs;
    `resolution_ms`: as a rendering truncated to that many ms writes it (0: as logged)."""
    spans: dict[tuple[str, str], list[float]] = {}
    for pod, ms in truth["moments"].items():
        for m in ms:
            if "wallMs" in m:
                off = clock_offset(truth, pod, float(m["monoMs"]) if stepped else float("-inf"))
                t = float(m["wallMs"]) + off
                t = math.floor(t / resolution_ms) * resolution_ms if resolution_ms > 0 else t
                spans.setdefault((pod, run_name(pod, m)), []).append(t)
    return [TrueRun(name, pod, min(ts), max(ts)) for (pod, name), ts in spans.items()]


def true_names(
    truth: dict[str, Any], executions: pl.DataFrame, resolution_ms: float = 0.0
) -> dict[tuple[str, str], str]:
    """(job, leaselog's execution id) -> the true attempt it is: for the run's job, the attempt of the same
    pod whose span of logged time is closest; for a clean handoff's job (one attempt per pod), its pod's.
    `resolution_ms`: the logs were rendered with their times truncated to that (a whole-second rendering:
    the spans are compared as it wrote them)."""
    out = _handoff_names(truth, executions)
    runs = true_runs(truth, resolution_ms=resolution_ms)
    if not runs or executions.height == 0:
        return out
    # where leaselog undid a clock step by elapsedMs, its times are the pod's clock before the step
    unstepped = {(r.pod, r.name): r for r in true_runs(truth, stepped=False, resolution_ms=resolution_ms)}
    ex = executions.filter(pl.col("job_id") == truth["job"]).select(
        "execution_id",
        "pod",
        pl.col("first_seen").dt.epoch("ms").cast(pl.Float64).alias("first"),
        pl.col("last_seen").dt.epoch("ms").cast(pl.Float64).alias("last"),
    )
    pods = {r.pod for r in runs}
    job = str(truth["job"])
    for eid, pod, first, last in ex.iter_rows():
        if first is None:
            continue
        cands = [r for r in runs if r.pod == pod] if pod in pods else runs
        if not cands:
            continue
        end = first if last is None else last
        out[(job, str(eid))] = min(
            cands,
            key=lambda r: min(_distance(r, first, end), _distance(unstepped[(r.pod, r.name)], first, end)),
        ).name
    return out


def _handoff_names(truth: dict[str, Any], executions: pl.DataFrame) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for h in truth.get("handoffs", ()):
        runs = {pod: str(ms[0]["run"]) for pod, ms in h["moments"].items() if ms}
        ex = executions.filter(pl.col("job_id") == h["job"]).select("execution_id", "pod")
        for eid, pod in ex.iter_rows():
            if pod in runs:
                out[(str(h["job"]), str(eid))] = runs[pod]
    return out


def _distance(r: TrueRun, first: float, last: float) -> tuple[bool, float]:
    """The attempt whose span holds the execution's first line wins; among several (threads of one pod
    running at once), the one that began and ended closest to it."""
    inside = r.first_ms - SLACK_MS <= first <= r.last_ms + SLACK_MS
    return (not inside, abs(r.first_ms - first) + abs(r.last_ms - last))


def translate(doc: dict[str, Any], names: dict[tuple[str, str], str]) -> dict[str, Any]:
    """A copy of leaselog's document with every finding's executionIds in true names (`true_names`)."""
    out = copy.copy(doc)
    out["findings"] = []
    for f in doc["findings"]:
        g = dict(f)
        if f.get("executionIds"):
            job = str(f.get("jobId"))
            g["executionIds"] = [names.get((job, e), e) for e in f["executionIds"]]
        out["findings"].append(g)
    return out


def execution_count(executions: pl.DataFrame, job: str) -> int:
    return executions.filter(pl.col("job_id") == job).height
