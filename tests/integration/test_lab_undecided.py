"""How the lab scores findings that say the logs cannot tell two runs apart (hand-made truths, no Redis):
accepted as `undecided` where the rendering lacks the thread and the distinct id the truth needs, and only
when the analysis says so."""

from __future__ import annotations

from typing import Any

from leaselog.execution_runs import IDENTITIES, POD, UNTOLD
from leaselog.reproduce.score import score
from leaselog.reproduce.undecided import indistinct_pods


def _m(event: str, mono: float, run: str, **fields: Any) -> dict[str, Any]:
    return {"event": event, "monoMs": mono, "wallMs": 1_000_000 + int(mono), "run": run, **fields}


# two threads of pod-a: attempt-a acquires at 0 (1.5 s lease, no renewal) and runs to 3000; attempt-a2
# acquires at 2200, after a's lease expired, and finishes at 2900
MOMENTS = [
    _m("job_triggered", 0, "attempt-a", path="scheduler"),
    _m("lock_acquired", 0, "attempt-a"),
    _m("job_started", 0, "attempt-a"),
    _m("job_triggered", 2190, "attempt-a2", path="scheduler"),
    _m("lock_acquired", 2200, "attempt-a2"),
    _m("job_started", 2200, "attempt-a2"),
    _m("job_finished", 2900, "attempt-a2"),
    _m("lock_released", 2901, "attempt-a2", released=True),
    _m("job_finished", 3000, "attempt-a"),
    _m("lock_released", 3001, "attempt-a", released=False),
]


def _truth(shape: str = "klog", id_style: str = "unique") -> dict[str, Any]:
    return {
        "run": "hand-made",
        "job": "report-1",
        "plan": {
            "lease_ms": 1500,
            "renewal_ms": 500,
            "renew": False,
            "pods": [{"role": "A", "path": "scheduler"}],
            "fault": "none",
            "shape": shape,
            "id_style": id_style,
        },
        "offsets": {"pod-a": 0},
        "clocks": {"pod-a": [{"fromMono": None, "offsetMs": 0}]},
        "faults": [],
        "effects": [],
        "moments": {"pod-a": MOMENTS},
    }


def _f(kind: str, ids: list[str], told: bool, **kw: Any) -> dict[str, Any]:
    how = IDENTITIES[POD] if told else IDENTITIES[UNTOLD]
    return {
        "kind": kind,
        "severity": kw.pop("severity", "warning"),
        "certainty": kw.pop("certainty", "uncertain"),
        "jobId": "report-1",
        "executionIds": ids,
        "pods": ["pod-a"],
        "durationMs": kw.pop("durationMs", None),
        "trigger": kw.pop("trigger", None),
        "details": {"executionFrom": [how] * len(ids)},
        "message": "...",
    }


def _doc(*findings: dict[str, Any]) -> dict[str, Any]:
    return {"lines": {"malformed": 0}, "findings": list(findings)}


def _status(rs: Any, kind: str) -> list[str]:
    return [i.status for i in rs.items if i.kind == kind]


def test_the_pods_no_rendering_tells_apart() -> None:
    assert indistinct_pods(_truth(), "klog", ids=False) == {"pod-a"}
    assert indistinct_pods(_truth(id_style="reused"), "klog", ids=True) == {"pod-a"}
    assert indistinct_pods(_truth(), "klog", ids=True) == set()  # distinct ids tell them apart
    assert indistinct_pods(_truth(), "flat", ids=False) == set()  # the thread tells them apart


def test_runs_at_once_are_told_on_the_clock_before_a_step() -> None:
    # pod-a's clock steps back 3.5 s while both run: their logged spans no longer overlap (a2 logs from
    # -1310 to -599, a from -499 to 0), yet they ran at once
    stepped = _truth()
    stepped["clocks"] = {"pod-a": [{"fromMono": None, "offsetMs": 0}, {"fromMono": 1000, "offsetMs": -3500}]}
    assert indistinct_pods(stepped, "klog", ids=False) == {"pod-a"}


def test_a_finding_that_says_it_cannot_tell_is_undecided_where_the_logs_cannot() -> None:
    # a's zombie under the other reading of which finish is whose: 800 ms, not the true 1500 ms
    zombie = _f("lease_outlived", ["attempt-a"], told=False, durationMs=800.0)
    rs = score(_truth(), _doc(zombie), frozenset({"pod-a"}))
    assert _status(rs, "lease_outlived") == ["undecided"]
    # the same finding where a thread or an id would have told the runs apart: wrong (uncertain, yet
    # beyond the clock-skew bound; figure off)
    rs = score(_truth(), _doc(zombie), frozenset())
    assert "undecided" not in _status(rs, "lease_outlived") and rs.failed


def test_only_when_the_analysis_says_so() -> None:
    """An uncertain finding about runs the analysis did tell apart is held to the truth as usual."""
    zombie = _f("lease_outlived", ["attempt-a"], told=True, durationMs=800.0)
    rs = score(_truth(), _doc(zombie), frozenset({"pod-a"}))
    assert "undecided" not in _status(rs, "lease_outlived") and rs.failed
    # and never at error
    zombie = _f("lease_outlived", ["attempt-a"], told=False, durationMs=800.0, severity="error")
    assert "undecided" not in _status(score(_truth(), _doc(zombie), frozenset({"pod-a"})), "lease_outlived")


def test_an_unexpected_finding_that_says_it_cannot_tell_is_tolerated() -> None:
    # a finding the truth does not expect (a crash: under one reading of the lines, a died at 2200), said
    # to be undecidable, on the pod whose runs the rendering cannot tell apart
    extra = _f("crash_takeover", ["attempt-a", "attempt-a2"], told=False, durationMs=700.0)
    rs = score(_truth(), _doc(extra), frozenset({"pod-a"}))
    assert _status(rs, "crash_takeover") == ["tolerated"]
    rs = score(_truth(), _doc(extra), frozenset())
    assert _status(rs, "crash_takeover") == ["false"]
