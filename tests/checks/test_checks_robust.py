"""Checks never crash on odd but possible event sequences, and every finding keeps the contract."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import leaselog
from conftest import jsonl
from leaselog.checks import REGISTRY
from leaselog.vocabulary import CANONICAL_EVENTS

KINDS = {m.kind for m in REGISTRY}
# every canonical event, plus aliases that imply a field (an outcome, a release result)
EVENTS = [*CANONICAL_EVENTS, "release_failed", "release_deleted_0", "lease_renewal_timeout"]

event_row = st.fixed_dictionaries(
    {
        "sec": st.integers(0, 60_000),
        "job": st.sampled_from(["report-1", "report-2", "sync-3"]),
        "ex": st.sampled_from(["a", "b", "c", None]),
        "pod": st.sampled_from(["pod-a", "pod-b", None]),
        "event": st.sampled_from(EVENTS),
    },
    optional={
        "leaseMs": st.sampled_from([1000, 5000, 30000]),
        "fencingToken": st.integers(1, 5),
        "renewalOutcome": st.sampled_from(["success", "rejected", "timeout", "error", "weird"]),
        "latencyMs": st.integers(0, 3000),
        "released": st.booleans(),
        "releaseOutcome": st.sampled_from(["timeout", "error", "ok"]),
        "outcome": st.sampled_from(["accepted", "duplicate", "rejected"]),
        "trigger": st.sampled_from(["kafka", "scheduler", "retry", "poll", "http"]),
        "kafka.offset": st.integers(0, 3),
        "messageId": st.sampled_from(["m1", "m2"]),
        "deliveryCount": st.integers(1, 3),
        "attempt": st.integers(1, 3),
        "status": st.sampled_from(["ok", "failed"]),
        "reason": st.sampled_from(["ownership_uncertain", "lease_expired"]),
    },
)


def _row(d: dict[str, Any]) -> dict[str, Any]:
    sec = d.pop("sec")
    out = {
        "ts": f"2026-11-03T09:{sec // 60_000:02d}:{(sec // 1000) % 60:02d}.{sec % 1000:03d}Z",
        "jobId": d.pop("job"),
    }
    ex, pod = d.pop("ex"), d.pop("pod")
    if ex is not None:
        out["executionId"] = ex
    if pod is not None:
        out["pod"] = pod
    out.update(d)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(event_row, max_size=25),
    ttl=st.sampled_from([None, 2000.0]),
    interval=st.sampled_from([None, 1000.0]),
)
def test_checks_survive_any_sequence(
    rows: list[dict[str, Any]], ttl: float | None, interval: float | None
) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = jsonl(Path(d) / "log.jsonl", [_row(dict(r)) for r in rows])
        a = leaselog.analyze(path, lease_ttl_ms=ttl, renewal_interval_ms=interval)
        for f in a.finding_list:
            j = f.to_json_dict()
            assert j["kind"] in KINDS
            assert j["message"] and "None" not in j["message"], j["message"]
            assert f.evidence, j
            assert all(1 <= e.line <= len(rows) for e in f.evidence)
            if f.kind == "second_attempt":
                assert f.trigger in {
                    "redelivery",
                    "duplicate_publish",
                    "scheduler",
                    "retry",
                    "poll",
                    "unknown",
                }
                assert len(f.execution_ids) == 2
            if f.kind == "crash_takeover":
                assert f.execution_ids[0] != (f.execution_ids[1:] or [None])[0]
