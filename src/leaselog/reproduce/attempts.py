"""The lab's attempts as they truly went: one per execution id, from the truth's moments.

An attempt's moments are its lines' true times (CLOCK_MONOTONIC milliseconds), whatever its pod's clock
said; the scorer (`leaselog.reproduce.score`) compares leaselog's findings with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaselog.reproduce.identity import run_name

Moment = dict[str, Any]


@dataclass
class Attempt:
    """One attempt (one executionId) as it truly went, in CLOCK_MONOTONIC milliseconds."""

    eid: str
    pod: str
    path: str
    moments: list[Moment]
    triggered: float | None = None
    acquired: float | None = None
    denied: float | None = None
    start: float | None = None
    end: float | None = None
    end_event: str | None = None
    crashed: bool = False
    stop_requested: float | None = None
    stopped: float | None = None

    def renewals(self) -> list[Moment]:
        return [m for m in self.moments if m["event"] == "lease_renewal"]

    def expiry(self, at: float, lease_ms: float) -> float | None:
        """The true expiry of this attempt's lease as it stood at moment `at`."""
        if self.acquired is None:
            return None
        anchor = self.acquired
        for r in self.renewals():
            if r["monoMs"] <= at and r["renewalOutcome"] == "success":
                anchor = r["monoMs"]
        return anchor + lease_ms

    def first(self, event: str) -> Moment | None:
        return next((m for m in self.moments if m["event"] == event), None)

    def valid_until(self, lease_ms: float) -> float | None:
        """The end of this attempt's lease as its own lines tell it: its owner-checked release (the key
        deleted) before expiry, else its last confirmation + the lease."""
        exp = self.expiry(float("inf"), lease_ms)
        rel = self.first("lock_released")
        if exp is not None and rel is not None and rel.get("released") is True and rel["monoMs"] <= exp:
            return float(rel["monoMs"])
        return exp


def attempts(truth: dict[str, Any]) -> list[Attempt]:
    """Each attempt (a pod can run several, one after the other or on several threads), from its moments;
    pods that were never triggered made none."""
    paths = {f"pod-{p['role'].lower()}": p["path"] for p in truth["plan"]["pods"]}
    kill = {f["role"]: f["startMono"] for f in truth["faults"] if f["kind"] == "crash" and "startMono" in f}
    # a pod that killed itself after its pickup (--die-after-trigger) crashed before the lock
    died = {p["role"] for p in truth["plan"]["pods"] if p.get("dies_after_trigger")}
    out = []
    runs: dict[tuple[str, str], list[Moment]] = {}
    for pod, pod_ms in sorted(truth["moments"].items()):
        for m in pod_ms:
            runs.setdefault((pod, run_name(pod, m)), []).append(m)
    for (pod, run), ms in runs.items():
        a = Attempt(run, pod, paths.get(pod, "?"), ms)
        get = {e: a.first(e) for e in ("job_triggered", "lock_acquired", "lock_denied", "job_started")}
        if get["job_triggered"] is not None and "path" in get["job_triggered"]:
            a.path = get["job_triggered"]["path"]
        a.triggered = mono(get["job_triggered"])
        a.acquired = mono(get["lock_acquired"])
        a.denied = mono(get["lock_denied"])
        a.start = mono(get["job_started"]) or a.acquired
        end = next((m for m in ms if m["event"] in ("job_finished", "job_stopped")), None)
        role = pod.removeprefix("pod-").upper()
        if end is not None:
            a.end, a.end_event = end["monoMs"], end["event"]
        elif role in kill and a.acquired is not None:
            a.end, a.end_event, a.crashed = kill[role], "killed", True
        elif role in died and a.acquired is None:
            a.crashed = True  # never ran: no execution, no overlap, no takeover to expect
        a.stop_requested = mono(a.first("job_stop_requested"))
        a.stopped = mono(a.first("job_stopped"))
        out.append(a)
    return out


def mono(m: Moment | None) -> float | None:
    """A moment's true time (ms), None for none."""
    return None if m is None else float(m["monoMs"])
