"""Clean handoffs right after a clock step: what the logs must not turn into an overlap.

A run whose pod's logging clock stepped (`Plan.clock_step_ms`) goes on, once its own pods are done and the
step is taken, with two handoffs of two other jobs between the stepped pod and another pod of the run: the
first owner runs about a second of idempotent scheduled work under a 2 s lease (no renewal), releases the
key (the release deletes it while its lease still holds), and the second owner acquires some 0.6 s later
(`<job>-h1`: the stepped pod then the other; `<job>-h2`: the other then the stepped pod). The stepped
clock shifts one owner's lines by the step against the other's, so a step forward on the earlier owner (or
back on the later one) makes the two runs look overlapping by clocks alone; the release and the next
acquisition prove their order.

Each handoff's second owner takes no trigger before the first owner's release is signalled
(`--start-after`), and the harness fires the job's schedule again only after that signal: the order is
made by coordination, the gap between release and acquisition is what the run measured. Each owner is a
worker process of its own on its pod (its `elapsedMs` counts from that process's start; with
`Plan.handoff_elapsed` false its lines carry none). The truth of each handoff lands in
`truth["handoffs"]`: the job, the two owners' pods and their moments.
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import time
from pathlib import Path
from typing import Any, Protocol

from leaselog.reproduce.plan import Plan, PodPlan
from leaselog.reproduce.pod import marker, mono_ms, read_moments
from leaselog.reproduce.server import ReproduceError

LEASE_MS = 2000
UNITS = 10  # of the lab's 100 ms units: about a second of work
GAP_MS = 600  # from the first owner's release to the schedule firing again
CLOSE = "closed-handoffs"
WAIT_S = 60.0


class LabRun(Protocol):
    """What a handoff needs of the run it follows (`lab.LabRun`)."""

    plan: Plan
    scratch: Path
    out: Path
    prefix: str
    job_id: str
    k: dict[str, str]
    client: Any
    procs: dict[str, subprocess.Popen[bytes]]

    def planned_step(self, p: PodPlan) -> dict[str, Any] | None: ...

    def spawn(
        self,
        p: PodPlan,
        runs_before: int = 0,
        *,
        plan: Plan | None = None,
        job_id: str | None = None,
        truth: Path | None = None,
        after: tuple[str, ...] = (),
    ) -> None: ...

    def wait_signal(self, name: str, timeout_s: float = ...) -> None: ...

    def stderr_tail(self) -> str: ...


def with_handoffs(plan: Plan, rng: random.Random) -> Plan:
    """A clock-step run gets two handoffs between its stepped pod and another pod (drawn by `rng`, apart
    from the run's own draws), with or without `elapsedMs`; any other run is left as it is."""
    if not plan.clock_step_ms or len(plan.pods) < 2:
        return plan
    others = [p.role for p in plan.pods if p.role != plan.clock_step_role]
    return dataclasses.replace(
        plan, handoffs=(plan.clock_step_role, rng.choice(others)), handoff_elapsed=rng.random() < 0.5
    )


def jobs(truth: dict[str, Any]) -> set[str]:
    """The jobs of the run's clean handoffs (none: no handoff was played)."""
    return {str(h["job"]) for h in truth.get("handoffs", ())}


def unclean(truth: dict[str, Any], job: str) -> str | None:
    """Why the handoff of `job` was not clean as played (None: it was): an owner that ran past its lease
    (a loaded machine can stretch a second of work past 2 s) or whose release deleted nothing. Its lease
    findings are then the truth's, not false."""
    for h in truth.get("handoffs", ()):
        if h["job"] != job:
            continue
        for pod, ms in h["moments"].items():
            acquired = next((m["monoMs"] for m in ms if m["event"] == "lock_acquired"), None)
            end = next((m["monoMs"] for m in ms if m["event"] in ("job_finished", "job_stopped")), None)
            release = next((m for m in ms if m["event"] == "lock_released"), None)
            if acquired is not None and end is not None and end - acquired > LEASE_MS:
                return f"{pod} ran {end - acquired - LEASE_MS:.0f} ms past its {LEASE_MS} ms lease"
            if release is not None and release.get("released") is False:
                return f"{pod}'s release deleted nothing"
    return None


def play_handoffs(run: LabRun) -> list[dict[str, Any]]:
    """Play the plan's handoffs once its pods are done; their truth (empty: none planned, or the stepped pod
    never logged the lease line that plans its step)."""
    plan = run.plan
    if not plan.handoffs:
        return []
    stepped = _pod(plan, plan.handoffs[0])
    step = run.planned_step(stepped)
    if step is None:
        return []
    while mono_ms() < float(step["fromMono"]):  # the host's clock steps at the moment planned
        time.sleep(0.01)
    folder = run.scratch / "handoffs"
    folder.mkdir(exist_ok=True)
    other = _pod(plan, plan.handoffs[1])
    out = [
        _handoff(run, f"{run.job_id}-h1", stepped, other, folder),
        _handoff(run, f"{run.job_id}-h2", other, stepped, folder),
    ]
    run.client.set(marker(run.prefix, CLOSE), "1", ex=600)
    if not plan.handoff_elapsed:
        _drop_elapsed(run.out, {h["job"] for h in out})
    return out


def _pod(plan: Plan, role: str) -> PodPlan:
    return next(p for p in plan.pods if p.role == role)


def _handoff(run: LabRun, job: str, first: PodPlan, second: PodPlan, folder: Path) -> dict[str, Any]:
    """One handoff of `job`: `first` runs and releases, then `second` acquires."""
    plan = dataclasses.replace(
        run.plan,
        lease_ms=LEASE_MS,
        renew=False,
        completion="idempotent",
        ignore_stop=False,
        fault="none",
        clock_step_ms=0,
        clock_step_role="",
        clock_step_at_ms=0,
    )
    released = f"released:{job}"
    owners = []
    for p, extra in ((first, ("--mark-after", released)), (second, ("--start-after", released))):
        owner = dataclasses.replace(
            p,
            path="scheduler",
            fire_ms=None,
            on_denied="exit",
            units=UNITS,
            dies_after_trigger=False,
            threads=(),
            units_list=(),
            ticks_ms=(),
        )
        run.spawn(
            owner,
            plan=plan,
            job_id=job,
            truth=folder / f"{job}.{p.pod}.truth.jsonl",
            after=("--close-marker", CLOSE, *extra),
        )
        owners.append(f"{p.role}@{job}")
    fired = [_fire(run, job)]
    run.wait_signal(released)
    time.sleep(GAP_MS / 1000)  # the schedule's next tick: a gap, not an order (the signal made that)
    fired.append(_fire(run, job))
    for key in owners:
        try:
            rc = run.procs[key].wait(timeout=WAIT_S)
        except Exception as e:
            raise ReproduceError(f"the handoff of {job} did not finish{run.stderr_tail()}") from e
        if rc != 0:
            raise ReproduceError(f"pod {key} of the handoff of {job} exited with {rc}{run.stderr_tail()}")
    moments = {
        name.removeprefix(f"{job}."): rows
        for name, rows in read_moments(folder).items()
        if name.startswith(f"{job}.")
    }
    return {"job": job, "first": first.pod, "second": second.pod, "fired": fired, "moments": moments}


def _fire(run: LabRun, job: str) -> float:
    """The job's schedule fires (the harness's scheduler, as `LabRun.fire` for the run's own job)."""
    before = mono_ms()
    run.client.zadd(run.k["schedule"], {job: time.time_ns() // 1_000_000})
    return round(before, 3)


def _drop_elapsed(out: Path, handoff_jobs: set[str]) -> None:
    """The handoffs' lines as a worker that logs no `elapsedMs` writes them."""
    for f in sorted(out.glob("pod-*.jsonl")):
        rows = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        for r in rows:
            if r.get("jobId") in handoff_jobs:
                r.pop("elapsedMs", None)
        f.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows), encoding="utf-8")
