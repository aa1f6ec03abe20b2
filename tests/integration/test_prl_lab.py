"""A few lab runs of the real python-redis-lock on a real Redis (leaselog.reproduce.prl_lab): the library's
own lines in Celery's worker format, read through the dialects, scored against the truth. The 100-run
campaign is run by hand (`python -m leaselog.reproduce.prl_lab --runs 100`); here, one run per fault."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from leaselog.reproduce.prl_lab import draw, run_one
from leaselog.reproduce.server import redis_target

PLANS = {
    "none": dict(lease_s=1, renew=True, work_ms=1500, fault="none", fault_ms=0, poller_tries=3),
    "pause": dict(lease_s=1, renew=True, work_ms=1500, fault="pause", fault_at_ms=300, fault_ms=2000),
    "crash": dict(lease_s=1, renew=False, work_ms=1500, fault="crash", fault_at_ms=300, fault_ms=0),
}
EXPECTED = {
    "none": {"second_attempt"},
    "pause": {"overlapping_executions", "lease_outlived", "stale_release", "second_attempt"},
    "crash": {"crash_takeover", "second_attempt"},
}


@pytest.mark.redis
@pytest.mark.parametrize("fault", sorted(PLANS))
def test_real_library_run_is_scored_clean(tmp_path: Path, fault: str) -> None:
    pytest.importorskip("redis_lock")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    plan = dataclasses.replace(draw(99, 0), **PLANS[fault])  # type: ignore[arg-type]
    with redis_target(None) as target:
        rs = run_one(plan, target, tmp_path / plan.name)
    found = {i.kind for i in rs.items if i.status == "found"}
    assert [i for i in rs.items if i.status == "missed"] == []
    assert EXPECTED[fault] <= found
    doc = json.loads((tmp_path / plan.name / "leaselog.json").read_text())
    assert doc["lines"]["malformed"] == 0  # the library's lines, Celery's and its tracebacks all read
