"""How the lab scores its failover and clock-step runs, on hand-made truths (no Redis): concurrent leases
expected after a failover, a clock step expected per step inside its pod's logged span, and a figure
allowed to be off by the steps it spans (and by no more)."""

from __future__ import annotations

import copy
from typing import Any

from leaselog.reproduce.identity import clock_offset, clock_steps, true_runs
from leaselog.reproduce.score import expectations, score, step_allowance


def _m(event: str, mono: float, **fields: Any) -> dict[str, Any]:
    return {"event": event, "monoMs": mono, "wallMs": 1_000_000 + int(mono), **fields}


def _f(kind: str, ids: list[str], severity: str = "warning", **kw: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "severity": severity,
        "certainty": kw.pop("certainty", "certain"),
        "jobId": "report-1",
        "executionIds": ids,
        "pods": kw.pop("pods", None),
        "durationMs": kw.pop("durationMs", None),
        "trigger": kw.pop("trigger", None),
        "message": "...",
    }


def _doc(*findings: dict[str, Any]) -> dict[str, Any]:
    return {"lines": {"malformed": 0}, "findings": list(findings)}


def _truth(moments: dict[str, list[dict[str, Any]]], **kw: Any) -> dict[str, Any]:
    pods = [
        {"role": p.removeprefix("pod-").upper(), "path": "first" if p == "pod-a" else "retry"}
        for p in moments
    ]
    return {
        "run": "hand-made",
        "job": "report-1",
        "plan": {
            "lease_ms": 1500,
            "renewal_ms": 500,
            "renew": True,
            "pods": pods,
            "fault": kw.get("fault", "none"),
        },
        "offsets": dict.fromkeys(moments, 0),
        "clocks": kw.get("clocks", {p: [{"fromMono": None, "offsetMs": 0}] for p in moments}),
        "faults": kw.get("faults", []),
        "effects": [],
        "moments": moments,
    }


# the measured failover: A acquires at 0 (token 1); the primary dies at 100, the replica (without A's key)
# is promoted at 150; B reconnects and acquires at 220 with token 1 again; A's renewal at 500 reconnects and
# is rejected, A stops at 600; its release deletes nothing. B releases at 1020.
FAILOVER = _truth(
    {
        "pod-a": [
            _m("job_triggered", -5, trigger="stream"),
            _m("lock_acquired", 0, fencingToken=1),
            _m("job_started", 1),
            _m("lock_reconnected", 499),
            _m("lease_renewal", 500, renewalOutcome="rejected"),
            _m("ownership_lost", 500),
            _m("job_stop_requested", 501, reason="ownership_uncertain"),
            _m("job_stopped", 600),
            _m("lock_released", 601, released=False),
        ],
        "pod-b": [
            _m("job_triggered", 210, trigger="retry"),
            _m("lock_reconnected", 215),
            _m("lock_acquired", 220, fencingToken=1),
            _m("job_started", 221),
            _m("job_finished", 1019),
            _m("lock_released", 1020, released=True),
        ],
    },
    fault="failover",
    faults=[{"kind": "failover", "role": "A", "startMono": 100, "endMono": 150}],
)

RIGHT = [
    _f("concurrent_leases", ["attempt-a", "attempt-b"], "error", durationMs=800.0),
    _f("overlapping_executions", ["attempt-a", "attempt-b"], "error", durationMs=379.0),
    _f("renewal_failed", ["attempt-a"]),
    _f("stale_release", ["attempt-a"]),
    _f("second_attempt", ["attempt-a", "attempt-b"], trigger="retry"),
    _f("renewal_gap", ["attempt-a"]),
]


def _bad(rs: Any) -> list[tuple[str, str]]:
    return sorted((i.status, i.kind) for i in rs.items if i.status in ("missed", "false", "figure_error"))


def test_a_failover_expects_the_concurrent_leases_with_their_figure() -> None:
    got = {e.kind: e for e in expectations(FAILOVER)}
    # B acquired at 220; the earlier of the two leases' ends, as their lines tell them: B's release at 1020
    # (A's lease, acquired at 0 and never renewed, was valid to 1500)
    assert got["concurrent_leases"].figure == 800
    assert got["concurrent_leases"].eids == ("attempt-a", "attempt-b")
    rs = score(FAILOVER, _doc(*RIGHT))
    assert _bad(rs) == []
    # the renewal gap of an execution the failover hit is plausible
    assert [i.why for i in rs.items if i.kind == "renewal_gap"] == ["hit by a failover"]
    assert _bad(score(FAILOVER, _doc(*RIGHT[1:]))) == [("missed", "concurrent_leases")]
    far = copy.deepcopy(RIGHT)
    far[0]["durationMs"] = 700.0
    assert _bad(score(FAILOVER, _doc(*far))) == [("figure_error", "concurrent_leases")]


def test_concurrent_leases_are_expected_only_after_a_failover() -> None:
    quiet = copy.deepcopy(FAILOVER)
    quiet["plan"]["fault"] = "none"
    assert "concurrent_leases" not in {e.kind for e in expectations(quiet)}
    # and a certain one there is false
    assert ("false", "concurrent_leases") in _bad(score(quiet, _doc(*RIGHT)))


# pod-b's clock steps back 2 s at 400, between its denial (300) and its acquisition (1100); A holds the lock
# from 0 to 1000; pod-a's clock never steps
STEP = _truth(
    {
        "pod-a": [
            _m("job_triggered", -5, trigger="stream"),
            _m("lock_acquired", 0),
            _m("job_started", 1),
            _m("job_finished", 1000),
            _m("lock_released", 1001, released=True),
        ],
        "pod-b": [
            _m("job_triggered", 290, trigger="retry"),
            _m("lock_denied", 300),
            _m("lock_acquired", 1100),
            _m("job_started", 1101),
            _m("job_finished", 1600),
            _m("lock_released", 1601, released=True),
        ],
    },
    clocks={
        "pod-a": [{"fromMono": None, "offsetMs": 0}],
        "pod-b": [{"fromMono": None, "offsetMs": 20}, {"fromMono": 400.0, "offsetMs": -1980}],
    },
)


def test_the_truth_knows_each_pods_clock_as_a_function_of_time() -> None:
    assert clock_steps(STEP) == [("pod-b", 400.0, -2000.0)]
    assert [clock_offset(STEP, "pod-b", t) for t in (300, 400, 1100)] == [20, -1980, -1980]
    assert clock_offset(STEP, "pod-a", 1100) == 0
    # the attempts' spans in the time their lines were logged with (B's end stamped before its start)
    spans = {r.name: (r.first_ms, r.last_ms) for r in true_runs(STEP)}
    # B's denial (at 300, +20 ms) is the last line it logged; its acquisition (at 1100) the first
    assert spans["attempt-b"] == (1_000_000 + 1100 - 1980, 1_000_000 + 300 + 20)


def test_a_clock_step_inside_its_pods_span_is_expected_by_pod() -> None:
    (e,) = [e for e in expectations(STEP) if e.kind == "clock_step"]
    assert (e.eids, e.figure) == (("pod-b",), 2000.0)
    base = [_f("second_attempt", ["attempt-a", "attempt-b"], trigger="retry")]
    rs = score(STEP, _doc(*base))
    # leaselog has the check (LL104): a step it does not report is a miss
    assert [(i.status, i.kind) for i in rs.items if i.kind == "clock_step"] == [("missed", "clock_step")]
    assert rs.failed
    step = _f("clock_step", [], pods=["pod-b"], durationMs=1990.0)
    assert [(i.status, i.kind) for i in score(STEP, _doc(*base, step)).items if i.kind == "clock_step"] == [
        ("found", "clock_step")
    ]
    # on the other pod it is no such step: false
    wrong = _f("clock_step", [], pods=["pod-a"], durationMs=2000.0)
    assert ("false", "clock_step") in _bad(score(STEP, _doc(*base, wrong)))
    # a clock contradiction on the stepped pod is plausible
    contra = _f("clock_contradiction", ["attempt-b"], pods=["pod-b"])
    assert _bad(score(STEP, _doc(*base, step, contra))) == []
    # a step before the pod's first lease line (or after its last) is only an offset: nothing to expect
    early = copy.deepcopy(STEP)
    early["clocks"]["pod-b"][1]["fromMono"] = 100.0
    assert "clock_step" not in {e.kind for e in expectations(early)}


def test_a_figure_may_be_off_by_the_steps_it_spans_and_no_more() -> None:
    # a step of 2 s on pod-b at 400: within pod-b's [300, 1100] (one pod) and before a cross-pod figure's end
    assert step_allowance(STEP, ("pod-b",), (300.0, 1100.0)) == 2000
    assert step_allowance(STEP, ("pod-b",), (500.0, 1100.0)) == 0
    assert step_allowance(STEP, ("pod-a", "pod-b"), (500.0, 1100.0)) == 2000
    assert step_allowance(STEP, ("pod-a",), (0.0, 1100.0)) == 0
    # B's overlap with A, as logged: B's start stamped 2 s early, so 1.9 s "overlap" instead of none; an A
    # that really overlapped is scored with the step allowed
    overlap = copy.deepcopy(STEP)
    overlap["moments"]["pod-a"][3]["monoMs"] = 1300  # A finished at 1300: 200 ms of true overlap with B
    overlap["moments"]["pod-a"][4]["monoMs"] = 1301
    found = [
        _f("second_attempt", ["attempt-a", "attempt-b"], trigger="retry"),
        _f("overlapping_executions", ["attempt-a", "attempt-b"], "error", durationMs=2199.0),
        _f("clock_step", [], pods=["pod-b"], durationMs=2000.0),
    ]
    rs = score(overlap, _doc(*found))
    assert _bad(rs) == []
    assert [(i.status, i.kind) for i in rs.items if i.status == "step_allowed"] == [
        ("step_allowed", "overlapping_executions")
    ]
    beyond = copy.deepcopy(found)
    beyond[1]["durationMs"] = 2300.0  # off by 2100 ms: more than the step + 50 ms
    assert _bad(score(overlap, _doc(*beyond))) == [("figure_error", "overlapping_executions")]


def test_concurrent_leases_are_optional_after_a_release_that_failed() -> None:
    """A's renewal and its release hit the gap before the promotion (errors), then B acquires: by A's lines
    its lease could still be valid, but a failed release may have deleted the key: the logs cannot tell."""
    gap = copy.deepcopy(FAILOVER)
    gap["moments"]["pod-a"] = [
        _m("job_triggered", -5, trigger="stream"),
        _m("lock_acquired", 0, fencingToken=1),
        _m("job_started", 1),
        _m("lease_renewal", 120, renewalOutcome="error"),
        _m("job_stop_requested", 121, reason="ownership_uncertain"),
        _m("job_stopped", 180),
        _m("lock_released", 181, releaseOutcome="error"),
    ]
    (e,) = [e for e in expectations(gap) if e.kind == "concurrent_leases"]
    assert e.optional and e.figure == 800
    base = [
        _f("renewal_failed", ["attempt-a"]),
        _f("second_attempt", ["attempt-a", "attempt-b"], trigger="retry"),
    ]
    assert _bad(score(gap, _doc(*base))) == []
    # a release that deleted nothing is no such doubt: A's lease stood
    kept = copy.deepcopy(gap)
    kept["moments"]["pod-a"][-1] = _m("lock_released", 181, released=False)
    (e,) = [e for e in expectations(kept) if e.kind == "concurrent_leases"]
    assert not e.optional


def test_a_release_that_failed_inside_the_window_bounds_the_figure_from_below() -> None:
    """A's release fails 300 ms after B acquired: A's lease stood at least until then (figure at least
    300 ms) and, if the release did nothing, until B's release (800 ms). Either figure is right; less is
    not."""
    late = copy.deepcopy(FAILOVER)
    late["moments"]["pod-a"][-1] = _m("lock_released", 520, releaseOutcome="error")
    (e,) = [e for e in expectations(late) if e.kind == "concurrent_leases"]
    assert (e.optional, e.figure, e.figure_min) == (False, 800, 300)
    rest = [f for f in RIGHT[1:] if f["kind"] != "stale_release"]  # (its release failed: not a stale one)
    for said, bad in ((800.0, []), (310.0, []), (100.0, [("figure_error", "concurrent_leases")])):
        found = _f("concurrent_leases", ["attempt-a", "attempt-b"], "error", durationMs=said)
        assert _bad(score(late, _doc(found, *rest))) == bad, said
    # a release that failed after the window ended changes nothing
    after = copy.deepcopy(FAILOVER)
    after["moments"]["pod-a"][-1] = _m("lock_released", 1200, releaseOutcome="error")
    (e,) = [e for e in expectations(after) if e.kind == "concurrent_leases"]
    assert (e.figure, e.figure_min) == (800, 800)


def test_a_step_or_restart_on_a_restarted_pod_is_tolerated_only_when_it_says_so() -> None:
    a_runs = [_m("job_triggered", 0.0, executionId="a1"), _m("job_finished", 900.0, executionId="a1")]
    a_runs += [_m("job_triggered", 3000.0, executionId="a2"), _m("job_finished", 3900.0, executionId="a2")]
    restarted = [{"kind": "crash", "role": "A", "startMono": 1000.0, "endMono": 1000.0, "restarted": True}]
    either = _f("clock_step", ["a1", "a2"], certainty="uncertain", pods=["pod-a"], durationMs=1300.0)
    either["details"] = {"orRestartAt": "2026-12-01T08:00:01.200Z"}
    said = score(_truth({"pod-a": a_runs}, faults=restarted), _doc(either))
    assert [i.status for i in said.items] == ["tolerated"]
    # a certain step there, or one that does not name the restart, is a false finding
    sure = {**either, "certainty": "certain"}
    assert [i.status for i in score(_truth({"pod-a": a_runs}, faults=restarted), _doc(sure)).items] == [
        "false"
    ]
    bare = {**either, "details": {}}
    assert [i.status for i in score(_truth({"pod-a": a_runs}, faults=restarted), _doc(bare)).items] == [
        "false"
    ]
    # and on a pod that never restarted
    assert [i.status for i in score(_truth({"pod-a": a_runs}), _doc(either)).items] == ["false"]
