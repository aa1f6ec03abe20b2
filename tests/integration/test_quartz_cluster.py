"""Held-out runs of a real Quartz 2.3.2 JDBC cluster on a real PostgreSQL (tests/integration/quartz_cluster.py:
two scheduler JVMs, Debian's packages): the instance running `DEFAULT.report` (requestsRecovery) is
SIGSTOPped until the other's cluster manager recovers the job and runs it again, then resumed. leaselog,
given only the two instances' log files and the lease (`--lease-ttl`, which Quartz never logs), must find
the overlap with the truth's figure (within 100 ms), the recovery as the second attempt's trigger and the
paused instance working on after it learned it was recovered; a run with no pause stays quiet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from quartz_cluster import QuartzCluster, missing

import leaselog

pytestmark = pytest.mark.quartz
TOLERANCE_MS = 100


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Any:
    lacking = missing()
    if lacking is not None:
        pytest.skip(f"the Quartz lab needs {lacking}")
    made: list[QuartzCluster] = []

    def make(debug: bool) -> QuartzCluster:
        c = QuartzCluster(tmp_path, job_run_shell_debug=debug)
        made.append(c)
        c.start()
        return c

    yield make
    for c in made:
        c.stop()


def _truth_overlap_ms(truth: list[dict[str, Any]], paused: str, other: str) -> int:
    """The two executions' common time, from the job's own start and end marks."""
    start = {t["instance"]: t["at"] for t in truth if t["what"] == "start"}
    end = {t["instance"]: t["at"] for t in truth if t["what"] == "end"}
    return int(min(end[paused], end[other]) - max(start[paused], start[other]))


def _analyze(c: QuartzCluster) -> leaselog.Analysis:
    return leaselog.analyze([str(c.log("A")), str(c.log("B"))], lease_ttl="7.5s")


@pytest.mark.parametrize("debug", [True, False], ids=["job-run-shell-debug", "job-run-shell-info"])
def test_a_paused_instances_recovered_job_overlaps_its_rerun(cluster_factory: Any, debug: bool) -> None:
    c = cluster_factory(debug)
    paused, other = c.pause()
    truth = c.truth()
    a = _analyze(c)
    assert a.line_totals()["malformed"] == 0
    kinds: dict[str, list[leaselog.Finding]] = {}
    for f in a.finding_list:
        kinds.setdefault(f.kind, []).append(f)
    (overlap,) = kinds["overlapping_executions"]
    want = _truth_overlap_ms(truth, paused, other)
    assert overlap.duration_ms is not None
    assert abs(overlap.duration_ms - want) <= TOLERANCE_MS, (overlap.duration_ms, want, c.logs())
    pods = {f"quartz-{paused.lower()}", f"quartz-{other.lower()}"}
    assert set(overlap.pods) == pods
    (second,) = kinds["second_attempt"]
    assert second.trigger == "redelivery" and "`recovery`" in second.message
    (lost,) = kinds["ownership_loss_unhandled"]
    assert lost.pods == (f"quartz-{paused.lower()}",)
    # the paused instance ran on until its job's end, after its cluster manager's line
    end = next(t["at"] for t in truth if t["what"] == "end" and t["instance"] == paused)
    assert lost.duration_ms is not None and 0 < lost.duration_ms <= end
    assert "lease_outlived" in kinds


def test_a_run_with_no_pause_stays_quiet(cluster_factory: Any) -> None:
    c = cluster_factory(True)
    c.clean()
    a = _analyze(c)
    assert a.line_totals()["malformed"] == 0
    assert a.executions.height == 1
    assert not a.finding_list, [f.message for f in a.finding_list]


def test_no_input_gives_no_finding(tmp_path: Path) -> None:
    for name in ("quartz-a.log", "quartz-b.log"):
        (tmp_path / name).write_text("")
    a = leaselog.analyze([str(tmp_path / "quartz-a.log"), str(tmp_path / "quartz-b.log")], lease_ttl="7.5s")
    assert not a.finding_list and a.events.height == 0
