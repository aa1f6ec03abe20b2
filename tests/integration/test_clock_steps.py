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
from leaselog.reproduce import ReproduceOptions, run_scenario
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
