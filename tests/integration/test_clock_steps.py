"""A pod's logging clock that steps while it runs the job, on the logs of a real-Redis run.

A logging clock that steps moves every `ts` the pod writes after the step by the step's size, while its
`elapsedMs` (monotonic) runs on. The run's own logs, stepped that way on one pod at a moment inside an
execution, must give the findings of the unstepped logs (same kinds, executions, severities, certainty,
figures within a few ms: the step is undone by elapsedMs), plus the step itself (`clock_step`) at the
line where it happened, with its size.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import leaselog
from leaselog.reproduce import ReproduceOptions, run_scenario, shapes
from leaselog.reproduce.server import throwaway_redis

FAST = ReproduceOptions(lease_ms=2000, renewal_ms=400)


@pytest.fixture(scope="module")
def renewal_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Path]]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    out = tmp_path_factory.mktemp("clock-steps")
    with throwaway_redis() as target:
        run = run_scenario("renewal", FAST, redis_url=target.url, out=out / "renewal")
    yield list(run.logs)


def _stepped(
    logs: list[Path], pod_log: Path, from_line: int, step_ms: int, out: Path, *, ids: bool = True
) -> Path:
    """A copy of the run's logs with `pod_log`'s timestamps from line `from_line` on moved by `step_ms`
    (and every execution id dropped unless `ids`)."""
    out.mkdir(parents=True)
    for p in logs:
        lines = p.read_text(encoding="utf-8").splitlines()
        if not ids:
            lines = [
                json.dumps({k: v for k, v in json.loads(x).items() if k != "executionId"}) for x in lines
            ]
        if p == pod_log:
            for i in range(from_line - 1, len(lines)):
                d = json.loads(lines[i])
                t = datetime.fromisoformat(d["ts"].replace("Z", "+00:00")) + timedelta(milliseconds=step_ms)
                d["ts"] = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
                lines[i] = json.dumps(d, separators=(",", ":"))
        (out / p.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _key(f: leaselog.Finding) -> tuple[str, tuple[str, ...], str, str]:
    return (f.kind, f.execution_ids, f.severity, f.certainty)


@pytest.mark.redis
@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
@pytest.mark.parametrize("step_ms", [1500, -1500])
def test_a_step_inside_an_execution_is_reported_and_changes_nothing_else(
    renewal_run: list[Path], step_ms: int, ids: bool, tmp_path: Path
) -> None:
    base = leaselog.analyze(_stepped(renewal_run, renewal_run[0], 1, 0, tmp_path / "base", ids=ids))
    assert not [f for f in base.finding_list if f.kind == "clock_step"]
    for pod_log in renewal_run:
        lines = [json.loads(x) for x in pod_log.read_text(encoding="utf-8").splitlines()]
        lease = [i + 1 for i, d in enumerate(lines) if "jobId" in d]
        # a moment inside the execution: after its second lease line, before its last
        for at in (lease[2], lease[len(lease) // 2]):
            stepped = _stepped(renewal_run, pod_log, at, step_ms, tmp_path / f"{pod_log.stem}-{at}", ids=ids)
            a = leaselog.analyze(stepped)
            steps = [f for f in a.finding_list if f.kind == "clock_step"]
            assert len(steps) == 1, [f.message for f in steps]
            step = steps[0]
            assert step.severity == "warning"
            assert step.duration_ms is not None and abs(step.duration_ms - abs(step_ms)) <= 5
            assert step.details["direction"] == ("forward" if step_ms > 0 else "backward")
            assert step.details["line"] == at and f"{pod_log.name}:{at}" in step.message
            assert a.malformed.height == base.malformed.height == 0
            rest = [f for f in a.finding_list if f.kind != "clock_step"]
            assert sorted(map(_key, rest)) == sorted(map(_key, base.finding_list))

            # the same figures, finding by finding (a kind may have several on one execution: in order)
            def figures(found: list[leaselog.Finding]) -> list[tuple[str, tuple[str, ...], float]]:
                return sorted(
                    (f.kind, f.execution_ids, f.duration_ms if f.duration_ms is not None else -1.0)
                    for f in found
                )

            for got, want in zip(figures(rest), figures(base.finding_list), strict=True):
                assert got[:2] == want[:2] and abs(got[2] - want[2]) <= 5, (got, want)


# -- renderings whose lines are sorted by their timestamps ------------------------------------------------

# OTLP batches (several records on one line), a Loki export (every pod in one file, newest first) and
# `kubectl logs --prefix --timestamps` (every pod in one file, oldest first): a step back moves the lines
# logged after it among those logged before it
SORTED_SHAPES = ("otlp", "loki", "kubectl-prefix")


def _rendered(folder: Path, shape: str, out: Path) -> Path:
    """The flat logs in `folder` rendered in `shape` under `out`, as the lab writes them."""
    pods = {
        p.stem: [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines() if x.strip()]
        for p in sorted(folder.glob("*.jsonl"))
    }
    out.mkdir(parents=True)
    for name, content in shapes.render(shape, pods).items():
        (out / name).write_text(content, encoding="utf-8")
    return out


def _records(shape: str, line: str) -> list[tuple[str, int]]:
    """(event, elapsedMs) of the lease records on one line of a rendering."""
    if shape == "otlp":
        batch = json.loads(line)
        out = []
        for rl in batch["resourceLogs"]:
            for sl in rl["scopeLogs"]:
                for rec in sl["logRecords"]:
                    attrs = {a["key"]: next(iter(a["value"].values())) for a in rec["attributes"]}
                    if "event" in attrs:
                        out.append((str(attrs["event"]), int(attrs["elapsedMs"])))
        return out
    app = json.loads(json.loads(line)["line"]) if shape == "loki" else json.loads(line.split(" ", 2)[2])
    return [(app["event"], int(app["elapsedMs"]))] if "event" in app else []


def _figures(found: list[leaselog.Finding]) -> list[tuple[str, tuple[str, ...], str, str, float]]:
    return sorted(
        (
            f.kind,
            f.execution_ids,
            f.severity,
            f.certainty,
            f.duration_ms if f.duration_ms is not None else -1.0,
        )
        for f in found
        if f.kind != "lease_settings"
    )


def _same_figures(got: list[leaselog.Finding], want: list[leaselog.Finding]) -> None:
    g, w = _figures(got), _figures(want)
    assert [x[:4] for x in g] == [x[:4] for x in w]
    for a, b in zip(g, w, strict=True):
        assert abs(a[4] - b[4]) <= 5, (a, b)


@pytest.mark.redis
@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
@pytest.mark.parametrize("step_ms", [1500, -1500])
@pytest.mark.parametrize("shape", SORTED_SHAPES)
def test_a_step_in_a_rendering_sorted_by_time_is_read_as_in_the_flat_logs(
    renewal_run: list[Path], shape: str, step_ms: int, ids: bool, tmp_path: Path
) -> None:
    """The pod's lines are read in the order it wrote them (elapsedMs): the step is found once, with its
    size, at the line that holds the first record logged after it, and every figure is the flat logs'."""
    for pod_log in renewal_run:
        lines = [json.loads(x) for x in pod_log.read_text(encoding="utf-8").splitlines()]
        lease = [i + 1 for i, d in enumerate(lines) if "jobId" in d]
        at = lease[len(lease) // 2]
        flat = _stepped(renewal_run, pod_log, at, step_ms, tmp_path / f"{pod_log.stem}-flat", ids=ids)
        want = leaselog.analyze(flat)
        (flat_step,) = [f for f in want.finding_list if f.kind == "clock_step"]
        assert flat_step.details["line"] == at
        rendered = _rendered(flat, shape, tmp_path / f"{pod_log.stem}-{shape}")
        got = leaselog.analyze(rendered)
        steps = [f for f in got.finding_list if f.kind == "clock_step"]
        assert len(steps) == 1, [f.message for f in steps]
        step = steps[0]
        assert step.duration_ms is not None and abs(step.duration_ms - abs(step_ms)) <= 5
        assert step.details["direction"] == ("forward" if step_ms > 0 else "backward")
        # where: the rendering's line that holds the record the flat log has first after the step
        first = lines[at - 1]
        text = Path(step.details["file"]).read_text(encoding="utf-8").splitlines()[step.details["line"] - 1]
        assert (first["event"], first["elapsedMs"]) in _records(shape, text)
        assert got.malformed.height == 0
        _same_figures(got.finding_list, want.finding_list)


@pytest.mark.redis
@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
@pytest.mark.parametrize("shape", SORTED_SHAPES)
def test_a_rendering_sorted_by_time_without_a_step_shows_none(
    renewal_run: list[Path], shape: str, ids: bool, tmp_path: Path
) -> None:
    flat = _stepped(renewal_run, renewal_run[0], 1, 0, tmp_path / "flat", ids=ids)
    want = leaselog.analyze(flat)
    got = leaselog.analyze(_rendered(flat, shape, tmp_path / shape))
    assert not [f for f in got.finding_list if f.kind == "clock_step"]
    assert not got.events["clock_step_ms"].is_not_null().any()
    _same_figures(got.finding_list, want.finding_list)


LAB = Path(__file__).resolve().parents[1] / "fixtures" / "lab" / "denied-then-takeover"


def _offset(logs: list[Path], pod_log: Path, offset_ms: int, out: Path, *, ids: bool = True) -> Path:
    """The run's logs with every timestamp of `pod_log` moved by `offset_ms`: a clock that stepped before
    the pod's first lease line, or runs off by that much all along."""
    return _stepped(logs, pod_log, 1, offset_ms, out, ids=ids)


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
def test_a_clock_behind_all_along_shows_in_a_denial_and_makes_no_confident_two_leases(
    ids: bool, tmp_path: Path
) -> None:
    # a real run: pod-a is killed 400 ms into its lease; pod-b, turned away by the lock 150 ms after pod-a
    # acquired, waits and takes the key over once pod-a's lease expired
    logs = sorted(LAB.glob("pod-*.jsonl"))
    clean = leaselog.analyze(_offset(logs, logs[1], 0, tmp_path / "clean", ids=ids))
    kinds = {f.kind for f in clean.finding_list}
    assert not kinds & {"clock_step", "clock_contradiction", "concurrent_leases"}, kinds
    # pod-b's clock 1 s behind: its takeover is logged 0.87 s inside pod-a's lease, its denial 0.85 s before
    # pod-a's acquisition (the only holder: token 1)
    behind = leaselog.analyze(_offset(logs, logs[1], -1000, tmp_path / "behind", ids=ids))
    found = {f.kind: f for f in behind.finding_list}
    said = found["clock_contradiction"]
    assert said.pods == ("pod-a", "pod-b") and said.certainty == "uncertain" and said.severity == "warning"
    assert said.duration_ms is not None and 800 < said.duration_ms < 900, said.duration_ms
    assert "is turned away by the lock" in said.message
    # what is left of two leases at once after the proven offset is within the skew bound: not proven
    both = found["concurrent_leases"]
    assert (both.severity, both.certainty) == ("warning", "uncertain"), both.message
    assert "runs at least" in both.message and "behind pod-a's" in both.message
    assert found["second_attempt"].certainty == "uncertain"
    assert found["crash_takeover"].certainty == "uncertain"
    assert not [f for f in behind.finding_list if f.severity == "error"], [
        f.message for f in behind.finding_list
    ]
    # pod-b's clock ahead instead: its denial falls inside pod-a's lease, its takeover later: nothing to say
    ahead = leaselog.analyze(_offset(logs, logs[1], 1000, tmp_path / "ahead", ids=ids))
    kinds = {f.kind for f in ahead.finding_list}
    assert not kinds & {"clock_step", "clock_contradiction", "concurrent_leases"}, kinds


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no-ids"])
def test_a_clock_behind_all_along_with_no_fact_to_show_it_makes_no_confident_two_leases(
    ids: bool, tmp_path: Path
) -> None:
    # the run above without pod-b's denial: no line orders the two pods' events but the fencing tokens
    # (1, then 2), which say the lock's Redis kept pod-a's acquisition; pod-b's takeover, logged 1 s early,
    # falls 0.87 s inside pod-a's lease by the clocks
    src = tmp_path / "src"
    src.mkdir()
    for p in sorted(LAB.glob("pod-*.jsonl")):
        keep = [x for x in p.read_text(encoding="utf-8").splitlines() if '"lock_denied"' not in x]
        (src / p.name).write_text("\n".join(keep) + "\n", encoding="utf-8")
    logs = sorted(src.glob("pod-*.jsonl"))
    clean = leaselog.analyze(_offset(logs, logs[1], 0, tmp_path / "clean", ids=ids))
    assert "concurrent_leases" not in {f.kind for f in clean.finding_list}
    behind = leaselog.analyze(_offset(logs, logs[1], -1000, tmp_path / "behind", ids=ids))
    (both,) = [f for f in behind.finding_list if f.kind == "concurrent_leases"]
    assert (both.severity, both.certainty) == ("warning", "uncertain"), both.message
    assert "the fencing counter kept" in both.message
    assert both.duration_ms == 603.0, both.duration_ms  # to the first of the two leases' ends
    assert not [f for f in behind.finding_list if f.severity == "error"], [
        f.message for f in behind.finding_list
    ]
