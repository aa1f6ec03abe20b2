"""Lab runs where one pod runs a job more than once: the runs that logs without execution ids must not merge.

`with_layout(plan, rng)` keeps a drawn plan (one execution per pod) or turns it into one of:
- `scheduled`: every pod has its own scheduler firing the job every few seconds (the same job id each
  time; the lock decides who runs it, the others are turned away); pod A's runs differ in length, and one
  of them may outlive its lease, so that another pod's scheduler gets the lock while A still runs.
- `threads`: pod A has a scheduler pool of two threads; the second thread fires while the first still runs,
  and acquires once the first one's lease is gone (or is turned away while it is renewed).
- `same_pod`: pod A consumes the request on one consumer thread and, when that thread holds the message
  for longer than a lease without acknowledging it, gets it redelivered on its other consumer thread.
The id each execution logs is drawn too (`id_style`): unique, a counter the pod restarts at 1, or the same
id every time. The deterministic versions for tests are `scheduled`, `threads` and `same_pod` below.
"""

from __future__ import annotations

import dataclasses
import random

from leaselog.reproduce.plan import Plan, PodPlan

LAYOUTS = ("pods", "scheduled", "threads", "same_pod")
LAYOUT_WEIGHTS = (4, 2, 1, 1)
ID_STYLES = ("unique", "counter", "reused")
UNIT_MS = 100


def _units(ms: float) -> int:
    return max(1, int(ms) // UNIT_MS)


def with_layout(plan: Plan, rng: random.Random) -> Plan:
    """`plan` as drawn, or turned into a layout where a pod runs the job several times."""
    layout = rng.choices(LAYOUTS, LAYOUT_WEIGHTS)[0]
    if layout == "pods":
        return plan
    lease = plan.lease_ms
    a = plan.pods[0]
    # these layouts are about who ran when: mostly without renewal (a run can outlive its lease), no
    # completions (a scheduled job's runs each commit their own effect: none of them is a duplicate)
    renew = plan.renew and rng.random() < 0.35
    # fewer faults than elsewhere: the point is who ran when; a lone pod has nobody to take a crash over
    fault = plan.fault if rng.random() < 0.5 else "none"
    if fault == "crash" and layout != "scheduled":
        fault = "none"
    id_style = rng.choices(ID_STYLES, (1, 2, 1))[0]
    if layout == "scheduled":
        period = int(lease * rng.uniform(1.3, 2.0))
        ticks = rng.randint(3, 4)
        long_at = rng.randrange(ticks)
        runs = [
            _units(period + lease * rng.uniform(0.2, 0.8))
            if i == long_at
            else _units(lease * rng.uniform(0.2, 0.6))
            for i in range(ticks + 1)
        ]
        pods = [_pod(a, "A", "scheduler", ("tick",), tuple(runs), tuple(i * period for i in range(ticks)))]
        for role in "BC"[: rng.randint(1, 2)]:
            lag = rng.randint(30, 200)
            short = tuple(_units(lease * rng.uniform(0.2, 0.6)) for _ in range(ticks + 1))
            offset = 0 if rng.random() < 0.5 else rng.choice((-1, 1)) * rng.choice((5, 20, 50, 100))
            ticks_ms = tuple(i * period + lag for i in range(ticks))
            pods.append(_pod(a, role, "scheduler", ("tick",), short, ticks_ms, offset=offset))
    elif layout == "threads":
        second = int(lease * rng.uniform(1.15, 1.6))
        first = _units(second + lease * rng.uniform(0.4, 1.0))
        pods = [
            _pod(
                a,
                "A",
                "scheduler",
                ("tick", "tick"),
                (first, _units(lease * rng.uniform(0.2, 0.5))),
                (0, second),
            )
        ]
    else:
        first = _units(lease * rng.uniform(1.5, 2.5))
        # the redelivered message can come a moment before the first lease is gone: the second thread
        # then waits for the lock (logging the denial, or not)
        on_denied = rng.choice(("wait", "wait-silent"))
        units = (first, _units(lease * rng.uniform(0.2, 0.5)))
        pods = [_pod(a, "A", "first", ("stream", "claim"), units, (), on_denied)]
    # a fault lands within pod A's first long stretch of work
    at = min(plan.fault_at_ms, int(max(pods[0].units_list) * UNIT_MS * 0.8))
    # one pod alone cannot show that GELF's `host` is the app's name, not the pod's
    shape = "gelf" if plan.shape == "gelf-app-host" and len(pods) == 1 else plan.shape
    return dataclasses.replace(
        plan,
        shape=shape,
        layout=layout,
        id_style=id_style,
        renew=renew,
        fault=fault,
        completion="none",
        ignore_stop=False,
        fault_at_ms=at,
        pods=tuple(pods),
    )


def _pod(
    a: PodPlan,
    role: str,
    path: str,
    threads: tuple[str, ...],
    units: tuple[int, ...],
    ticks: tuple[int, ...],
    on_denied: str = "exit",
    offset: int | None = None,
) -> PodPlan:
    return dataclasses.replace(
        a,
        role=role,
        path=path,
        fire_ms=None,
        on_denied=on_denied,
        units=units[0],
        clock_offset_ms=a.clock_offset_ms if offset is None else offset,
        dies_after_trigger=False,
        threads=threads,
        units_list=units,
        ticks_ms=ticks,
    )
