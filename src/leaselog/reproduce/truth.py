"""Ground truth: the figures a reproduction measured itself, from its pods' CLOCK_MONOTONIC moments.

These are computed independently of leaselog's analysis (which reads the wall-clock `ts` of the logs), so
a test can hold one against the other. Definitions follow docs/PRODUCT.md's contract:
- `overlapMs`: from the later execution's start to the earlier one's end (its last moment if it crashed);
- `zombieMs`: an execution's end minus its lease expiry (last confirmed acquire/renewal + lease);
- `takeoverMs`: the next acquisition minus the crashed execution's lease expiry; `sinceLastLineMs`: the
  same acquisition minus the crashed execution's last logged moment;
- `stopDelayMs`: a pod's confirmed stop minus its stop request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from leaselog.analysis import Analysis
    from leaselog.reproduce.options import ReproduceOptions

Moment = dict[str, Any]


def _first(ms: list[Moment], event: str) -> Moment | None:
    return next((m for m in ms if m["event"] == event), None)


def _pod_figures(ms: list[Moment], lease_ms: int) -> dict[str, Any]:
    acquired = _first(ms, "lock_acquired")
    started = _first(ms, "job_started")
    end = next((m for m in ms if m["event"] in ("job_finished", "job_stopped")), None)
    renewals = [m for m in ms if m["event"] == "lease_renewal"]
    # the lease's last confirmed point: the acquisition, then each successful renewal that was in time
    anchor = acquired["monoMs"] if acquired else None
    for r in renewals:
        if anchor is None or r["renewalOutcome"] != "success" or r["monoMs"] > anchor + lease_ms:
            break
        anchor = r["monoMs"]
    counts: dict[str, int] = {}
    for r in renewals:
        counts[r["renewalOutcome"]] = counts.get(r["renewalOutcome"], 0) + 1
    stop_req = _first(ms, "job_stop_requested")
    stopped = _first(ms, "job_stopped")
    release = _first(ms, "lock_released")
    completion = _first(ms, "completion")
    trigger = _first(ms, "job_triggered")
    last = ms[-1] if ms else None
    return {
        "trigger": trigger.get("trigger") if trigger else None,
        "messageId": trigger.get("messageId") if trigger else None,
        "deliveryCount": trigger.get("deliveryCount") if trigger else None,
        "fencingToken": acquired.get("fencingToken") if acquired else None,
        "acquiredMono": acquired["monoMs"] if acquired else None,
        "startMono": started["monoMs"] if started else None,
        "endMono": end["monoMs"] if end else None,
        "endEvent": end["event"] if end else None,
        "lastMono": last["monoMs"] if last else None,
        "lastEvent": last["event"] if last else None,
        "leaseExpiryMono": None if anchor is None else anchor + lease_ms,
        # Redis cannot have let the first lease run out before (request sent + lease)
        "acquireSentMono": acquired.get("sentMonoMs") if acquired else None,
        "renewals": counts,
        "maxRenewalLatencyMs": max(
            (r["latencyMs"] for r in renewals if r["renewalOutcome"] == "success"), default=None
        ),
        "stopReason": stop_req.get("reason") if stop_req else None,
        "stopCause": stop_req.get("cause") if stop_req else None,
        "stopDelayMs": _diff(stopped, stop_req),
        "releaseDeleted": release.get("released") if release else None,
        "releaseOutcome": release.get("releaseOutcome") if release else None,
        "completion": None
        if completion is None
        else {
            "outcome": completion["outcome"],
            "fencingToken": completion.get("fencingToken"),
            "mono": completion["monoMs"],
        },
    }


def _diff(later: Moment | None, earlier: Moment | None) -> float | None:
    if later is None or earlier is None:
        return None
    return round(float(later["monoMs"]) - float(earlier["monoMs"]), 1)


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 1)


def measure(
    scenario: str,
    job_id: str,
    options: ReproduceOptions,
    moments: dict[str, list[Moment]],
    faults: dict[str, Any],
    effects: list[str],
) -> dict[str, Any]:
    """The scenario's own figures (milliseconds) from its pods' moments and its fault timings."""
    pods = {pod: _pod_figures(ms, options.lease_ms) for pod, ms in moments.items()}
    a, b = pods.get("pod-a", {}), pods.get("pod-b", {})
    measured: dict[str, Any] = {}
    # A ends at its finish/stop, or (crashed) at its last logged moment
    a_end = a.get("endMono") or a.get("lastMono")
    a_start = a.get("startMono") or a.get("acquiredMono")
    b_start, b_end = b.get("startMono"), b.get("endMono")
    if a_start is not None and a_end is not None and b_start is not None and b_end is not None:
        lo, hi = max(float(a_start), float(b_start)), min(float(a_end), float(b_end))
        measured["overlapMs"] = round(max(0.0, hi - lo), 1)
    zombie = _sub(a_end, a.get("leaseExpiryMono"))
    measured["zombieMs"] = max(0.0, zombie) if zombie is not None else None
    measured["takeoverMs"] = _sub(b.get("acquiredMono"), a.get("leaseExpiryMono"))
    if "kill" in faults:
        measured["sinceLastLineMs"] = _sub(b.get("acquiredMono"), a.get("lastMono"))
        measured["killedAfterLastLineMs"] = _sub(faults["kill"]["mono"], a.get("lastMono"))
    if "pause" in faults:
        measured["pauseMs"] = faults["pause"]["ms"]
        # did the pause land between A's last checkpoint and its write, as the scenario intends?
        comp = a.get("completion")
        measured["pauseBeforeWrite"] = bool(comp and comp["mono"] >= faults["pause"]["endMono"])
        # a renewal sent before the pause and logged after it: Redis renewed long before the line says
        start = faults["pause"]["startMono"]
        measured["pauseInsideRenewal"] = any(
            m.get("sentMonoMs", start) < start < m["monoMs"]
            for m in moments.get(f"pod-{faults['pause']['role'].lower()}", [])
            if m["event"] == "lease_renewal"
        )
    if "stall" in faults:
        measured["stallMs"] = faults["stall"]["ms"]
    measured["stopDelayMs"] = {
        pod: f["stopDelayMs"] for pod, f in pods.items() if f["stopDelayMs"] is not None
    }
    measured["completions"] = {pod: f["completion"]["outcome"] for pod, f in pods.items() if f["completion"]}
    measured["acceptedEffects"] = len(effects)
    measured["duplicateEffects"] = max(0, len(effects) - 1)
    if a.get("messageId") and b.get("trigger") == "stream":
        measured["secondAttemptTrigger"] = (
            "redelivery" if b.get("messageId") == a.get("messageId") else "duplicate_publish"
        )
    elif b.get("trigger") is not None:
        measured["secondAttemptTrigger"] = b["trigger"]
    return {"measured": measured, "pods": pods, "faults": faults, "moments": moments}


# -- ground truth against an analysis ---------------------------------------------------------------------

TOLERANCE_MS = 50.0
TOLERANCE_SHARE = 0.10


def tolerance(truth_ms: float) -> float:
    """How far leaselog's figure may be from the measured one: 50 ms or 10%, whichever is larger.

    The logs carry millisecond timestamps and each line is stamped a few microseconds after the moment the
    worker measured, so honest agreement is within a few ms; the margin absorbs a loaded machine.
    """
    return max(TOLERANCE_MS, TOLERANCE_SHARE * abs(truth_ms))


@dataclass(frozen=True)
class Agreement:
    """One thing the reproduction knows and what leaselog made of it; `ok` None means not checkable."""

    what: str
    truth: str
    found: str
    ok: bool | None


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}ms"


def compare(truth: dict[str, Any], analysis: Analysis) -> list[Agreement]:
    """Hold the analysis of a reproduction's logs against what the reproduction measured itself."""
    from leaselog.checks import REGISTRY

    known = {m.kind for m in REGISTRY}
    m = truth["measured"]
    found = [f for f in analysis.finding_list if f.job_id == truth["job"]]
    kinds = {f.kind for f in found}
    out: list[Agreement] = []

    for kind in truth["expected"]["kinds"]:
        ok = (kind in kinds) if kind in known else None
        out.append(
            Agreement(
                f"finding {kind}",
                "expected",
                "found" if kind in kinds else ("missing" if kind in known else "check not available"),
                ok,
            )
        )
    for kind in truth["expected"]["absentKinds"]:
        hits = [f for f in found if f.kind == kind]
        if any(f.certainty == "certain" for f in hits):
            out.append(Agreement(f"finding {kind}", "must not appear", "found", False))
        elif hits:
            # Each pod stamps its line a little after Redis acted (more on a loaded machine), so e.g. B's
            # acquire can be logged a few ms "before" A's lease ran out. A finding the check itself calls
            # uncertain (within the clock-skew bound) does not contradict the truth; a certain one would.
            out.append(Agreement(f"finding {kind}", "must not appear", "uncertain only", None))

    def figure(what: str, truth_ms: float | None, kind: str) -> None:
        if truth_ms is None or truth_ms <= 0 or kind not in truth["expected"]["kinds"]:
            return
        # every figure in the truth is about pod A's execution (the first one)
        hits = [
            f.duration_ms
            for f in found
            if f.kind == kind and f.duration_ms is not None and f.execution_ids[:1] == ("attempt-a",)
        ]
        got = hits[0] if hits else None
        ok = None if kind not in known else (got is not None and abs(got - truth_ms) <= tolerance(truth_ms))
        out.append(Agreement(what, _ms(truth_ms), _ms(got), ok))

    figure("overlap", m.get("overlapMs"), "overlapping_executions")
    figure("zombie time after lease expiry", m.get("zombieMs"), "lease_outlived")
    figure("takeover latency after expiry", m.get("takeoverMs"), "crash_takeover")

    ex = analysis.executions.filter(pl.col("job_id") == truth["job"])
    for pod, delay in m.get("stopDelayMs", {}).items():
        row = ex.filter(pl.col("pod") == pod)
        got = None
        if row.height and row["stopped_at"][0] is not None and row["stop_requested_at"][0] is not None:
            got = (row["stopped_at"][0] - row["stop_requested_at"][0]).total_seconds() * 1000
        ok = got is not None and abs(got - delay) <= tolerance(delay)
        out.append(Agreement(f"stop delay {pod} (request -> stopped)", _ms(delay), _ms(got), ok))

    want = m.get("secondAttemptTrigger")
    if want is not None and "second_attempt" in truth["expected"]["kinds"]:
        got_t = next((f.trigger for f in found if f.kind == "second_attempt"), None)
        out.append(
            Agreement(
                "second attempt's trigger",
                want,
                got_t or "-",
                None if "second_attempt" not in known else got_t == want,
            )
        )

    comps = analysis.events.filter((pl.col("job_id") == truth["job"]) & (pl.col("event") == "completion"))
    logged = dict(zip(comps["pod"].to_list(), comps["outcome"].to_list(), strict=True))
    for pod, outcome in m.get("completions", {}).items():
        out.append(
            Agreement(f"completion {pod}", outcome, logged.get(pod) or "-", logged.get(pod) == outcome)
        )
    dup = "duplicate_effect" in kinds
    out.append(
        Agreement(
            "duplicate committed effects",
            str(m.get("duplicateEffects", 0)),
            "reported" if dup else "none reported",
            dup == bool(m.get("duplicateEffects")),
        )
    )
    for what, key in (
        ("pause (SIGSTOP -> SIGCONT)", "pauseMs"),
        ("Redis stall (CLIENT PAUSE)", "stallMs"),
        ("crashed pod: takeover after its last line", "sinceLastLineMs"),
    ):
        if m.get(key) is not None:
            out.append(Agreement(what, _ms(m[key]), "", None))
    return out
