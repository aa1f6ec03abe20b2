"""What in a run's truth excuses a finding the truth does not expect (score.py's tolerances): a lease
confirmed late in its own log, a renewal the faults or the load troubled."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from leaselog.reproduce.attempts import Attempt

__all__ = ["confirmation_lag", "renewal_trouble"]


def confirmation_lag(pair: list[Attempt]) -> float | None:
    """How long after its request the line that last confirmed the earlier lease of `pair` (its
    acquisition, or a renewal success before the later one's acquisition) was written. A pod that stalls
    between Redis's reply and its line (a loaded machine) logs that confirmation, and so its lease's end,
    as much late; no log can tell."""
    first, later = sorted(pair, key=lambda a: a.acquired if a.acquired is not None else float("inf"))
    if first.acquired is None or later.acquired is None:
        return None
    anchor = first.first("lock_acquired")
    for r in first.renewals():
        if r["monoMs"] <= later.acquired and r.get("renewalOutcome") == "success":
            anchor = r
    if anchor is None or "sentMonoMs" not in anchor:
        return None
    return float(anchor["monoMs"]) - float(anchor["sentMonoMs"])


def renewal_trouble(a: Attempt, truth: dict[str, Any]) -> str | None:
    plan = truth["plan"]
    for fault in truth["faults"]:
        if "startMono" not in fault or fault["kind"] not in ("pause", "stall", "netcut", "failover"):
            continue
        if fault["kind"] not in ("stall", "failover") and a.pod != f"pod-{fault['role'].lower()}":
            continue
        if a.start is not None and fault["startMono"] <= (a.end or a.start) and fault["endMono"] >= a.start:
            return f"hit by a {fault['kind']}"
    rs = a.renewals()
    if any(r["renewalOutcome"] != "success" or r.get("late") for r in rs):
        return "failed renewals"
    if not plan.get("renew", True):
        return None  # no renewal lifecycle: there is no renewal task to starve
    times = [t for t in (a.acquired, *(r["monoMs"] for r in rs)) if t is not None]
    if a.end is not None:
        times.append(a.end)
    if any(t2 - t1 > 1.5 * plan["renewal_ms"] for t1, t2 in pairwise(times)):
        return "a true renewal spacing above 1.5 x the interval"
    return None
