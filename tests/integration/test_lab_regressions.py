"""Regression tests built from lab runs: each kept run (tests/fixtures/lab/<name>/, recorded by
lab_fixtures.py on a real Redis) rendered in the shape it names, analyzed, and scored against its truth.

A run whose defect is still open is an expected failure (a strict xfail: it fails once the run passes); once
fixed it joins PASSING.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from lab_fixtures import FIXTURES, ROOT, Fixture

from leaselog.reproduce.campaign import differential, judged, redis_logs, rows_for, score_run, write_shape
from leaselog.reproduce.plan import plan_from_dict
from leaselog.reproduce.score import score
from leaselog.reproduce.undecided import indistinct_pods

# fixed (the checks' fixes for issue 12 are merged): these must stay right
PASSING = {
    "crash-before-lock",
    "denied-attempt",
    "denied-then-takeover",
    "gelf-app-host",
    "late-renewal-success",
    "loki-newest-first",
    "negative-gap-message",
    "otlp-batch",
    "quick-retry-interval",
    "redelivery-step-klog",
    "release-timeout-handover",
    "restart-before-step",
    "restart-between-runs",
    "retry-spacing-interval",
    "skewed-crash-takeover",
    "skewed-handover",
    "step-between-runs",
    "step-then-crash-sorted",
    "stop-ignored",
    "timeout-within-lease",
    "trigger-after-scheduler",
    "trigger-before-acquire",
    "two-threads-klog",
    "wait-then-acquire",
}


def _param(fx: Fixture) -> object:
    # a defect still open fails when it starts passing (strict): it then joins PASSING
    marks = [] if fx.name in PASSING else [pytest.mark.xfail(strict=True, reason=fx.defect)]
    return pytest.param(fx, id=fx.name, marks=marks)


def test_every_fixture_is_a_recorded_lab_run() -> None:
    on_disk = {p.name for p in ROOT.iterdir() if p.is_dir()}
    assert on_disk == {fx.name for fx in FIXTURES}
    for fx in FIXTURES:
        truth = json.loads((ROOT / fx.name / "truth.json").read_text(encoding="utf-8"))
        assert truth["lab"] == 1
        # (recorded before plans had a layout: one execution per pod, the default)
        assert plan_from_dict(truth["plan"]) == dataclasses.replace(
            fx.plan, pods=plan_from_dict(truth["plan"]).pods
        )
        pods = sorted(p.name for p in (ROOT / fx.name).glob("pod-*.jsonl"))
        assert pods == [f"{p.pod}.jsonl" for p in fx.plan.pods]
        assert truth["moments"], fx.name
        assert fx.name in PASSING or fx.defect


@pytest.mark.parametrize("fx", [_param(fx) for fx in FIXTURES])
def test_the_kept_run_scores_clean(fx: Fixture, tmp_path: Path) -> None:
    folder = ROOT / fx.name
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    rs, doc = score_run(folder, truth, fx.plan.shape, tmp_path)
    assert doc["lines"]["malformed"] == 0
    bad = [
        f"{i.status} {i.kind} {i.execution_ids}: {i.why[:160]}"
        for i in rs.items
        if i.status in ("missed", "false", "figure_error")
    ]
    assert bad == []


def test_runs_no_thread_tells_apart_score_clean_without_ids(tmp_path: Path) -> None:
    """Two threads of one pod at once, in klog without ids: the overlap is read right (certain: both
    runs lived at once), what hangs on which line is whose is said to be uncertain, and the scorer takes
    that as undecided, not as a miss or a false finding."""
    folder = ROOT / "two-threads-klog"
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    rs, doc = score_run(folder, truth, "klog", tmp_path, ids=False)
    status = {(i.status, i.kind) for i in rs.items}
    assert not [i for i in rs.items if i.status in ("missed", "false", "figure_error")], rs.items
    assert ("found", "overlapping_executions") in status
    assert ("undecided", "lease_outlived") in status
    assert any("cannot tell these runs apart" in n for n in doc["notes"])
    overlap = [f for f in doc["findings"] if f["kind"] == "overlapping_executions"]
    assert [(f["certainty"], f["severity"]) for f in overlap] == [("certain", "error")]


def test_a_step_between_runs_no_thread_tells_apart_is_found_without_ids(tmp_path: Path) -> None:
    """A redelivery to the same pod runs while the first attempt goes on, and the pod's clock steps back
    between the two, in klog without ids: the step is found where it is (the redelivery's first line) and
    sized by the process's elapsedMs, undone, and the runs read in the order the pod wrote them: the
    overlap and the second attempt as in the flat logs, the zombie time uncertain (which end is whose is a
    guess)."""
    folder = ROOT / "redelivery-step-klog"
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    rs, doc = score_run(folder, truth, "klog", tmp_path, ids=False)
    assert not [i for i in rs.items if i.status in ("missed", "false", "figure_error")], rs.items
    status = {(i.status, i.kind) for i in rs.items}
    assert {
        ("found", "clock_step"),
        ("found", "overlapping_executions"),
        ("found", "second_attempt"),
    } <= status
    assert ("undecided", "lease_outlived") in status
    by_kind = {f["kind"]: f for f in doc["findings"]}
    step = by_kind["clock_step"]
    assert [f["kind"] for f in doc["findings"]].count("clock_step") == 1
    assert (step["certainty"], step["details"]["direction"], step["details"]["line"]) == (
        "certain",
        "backward",
        5,
    )
    assert abs(step["durationMs"] - 2352) <= 1
    assert "it is the pod's clock's" in step["message"]
    overlap = by_kind["overlapping_executions"]
    assert (overlap["certainty"], overlap["severity"], overlap["durationMs"]) == ("certain", "error", 401.0)
    assert by_kind["lease_outlived"]["certainty"] == "uncertain"


# (fixture, shape) pairs whose defect was a log shape read differently from the flat logs
SHAPE_CASES = [
    ("otlp-batch", "otlp", ""),
    # GELF's app name in `host` merged every pod into one (now the file names win)
    ("gelf-app-host", "gelf-app-host", ""),
    # merged GELF pods turned the skewed handover into a certain concurrent_leases
    ("skewed-handover", "gelf-app-host", ""),
    # a Loki export (newest first) was taken in file order
    ("loki-newest-first", "loki", ""),
    # Spring Boot's start-up line under Fluent Bit's Merge_Log_Key was not read: the restart read as a step
    ("restart-between-runs", "fluentbit-key", ""),
    ("restart-between-runs", "klog", ""),
    # a group after a step whose lines share one elapsedMs was never joined to the run it continues
    ("step-then-crash-sorted", "kubectl-prefix", ""),
    ("step-then-crash-sorted", "loki", ""),
]


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        pytest.param(n, s, id=f"{n}-{s}", marks=[pytest.mark.xfail(strict=True, reason=why)] if why else [])
        for n, s, why in SHAPE_CASES
    ],
)
def test_the_kept_run_reads_the_same_in_that_shape(name: str, shape: str) -> None:
    """With execution ids and without, the shape gives the flat logs' findings (with ids)."""
    folder = ROOT / name
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    assert differential(folder, truth, [shape], ids=(True, False)) == {}


@pytest.mark.parametrize(("name", "steps"), [("step-between-runs", [2248.0]), ("restart-between-runs", [])])
@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
def test_the_container_id_tells_a_restart_from_a_step_with_no_start_up_line(
    name: str, steps: list[float], ids: bool, tmp_path: Path
) -> None:
    """Under Fluent Bit each line names its container (`kubernetes.docker_id`; a restarted process is a
    new container). With the start-up lines left out, the forward jump between two runs of a young
    process is then decided: the same container on both sides is a certain clock step, another one a
    restart and no step. (Without a container id the logs cannot tell: an uncertain step, above.)"""
    folder = ROOT / name
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    paths = write_shape(rows_for(folder, ids), "fluentbit-merged", tmp_path, redis_logs(folder))
    dropped = 0
    for p in paths:
        lines = p.read_text(encoding="utf-8").splitlines(True)
        kept = [x for x in lines if "(process running for " not in x]
        dropped += len(lines) - len(kept)
        p.write_text("".join(kept), encoding="utf-8")
    assert dropped >= len(truth["moments"])  # every pod's start-up line at least
    _doc, doc, _n = judged(paths, truth)
    rs = score(truth, doc, indistinct_pods(truth, "fluentbit-merged", ids))
    assert not [i for i in rs.items if i.status in ("missed", "false", "figure_error")], rs.items
    found = [f for f in doc["findings"] if f["kind"] == "clock_step"]
    assert [(f["certainty"], f["durationMs"]) for f in found] == [("certain", s) for s in steps]
    assert all("orRestartAt" not in f["details"] for f in found)
