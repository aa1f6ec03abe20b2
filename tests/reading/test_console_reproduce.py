"""Issue 13, done when: Spring Boot console logs with kv() fields, from a run of `leaselog reproduce` against
a real redis-server, give the same findings as the run's JSON logs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import leaselog
from leaselog.reproduce import ReproduceOptions, run_scenario
from leaselog.reproduce.server import throwaway_redis
from leaselog.reproduce.shapes import SPRING_BANNER, spring_console_line

pytestmark = pytest.mark.redis

FAST = ReproduceOptions(lease_ms=2000, renewal_ms=400)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    with throwaway_redis() as target:
        yield target.url


def _summary(a: leaselog.Analysis) -> list[tuple[Any, ...]]:
    return sorted(
        (f.kind, f.job_id, tuple(f.execution_ids), tuple(sorted(f.pods)), f.duration_ms, f.certainty)
        for f in a.finding_list
    )


@pytest.mark.parametrize("scenario", ["article", "renewal"])
def test_console_kv_logs_of_a_reproduce_run_give_its_json_findings(
    scenario: str, redis_url: str, tmp_path: Path
) -> None:
    run = run_scenario(scenario, FAST, redis_url=redis_url, out=tmp_path / "run")
    console = tmp_path / "console"
    console.mkdir()
    for log in run.logs:
        rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        pods = {r["pod"] for r in rows}
        assert pods == {log.stem}  # one file per pod: the console lines leave the pod to the file name
        lines = [*SPRING_BANNER]
        for r in rows:
            lines.extend(spring_console_line(r, r["pod"], None))
        (console / f"{log.stem}.log").write_text("\n".join(lines) + "\n")
    as_json = leaselog.analyze(run.logs)
    as_console = leaselog.analyze(console)
    assert {r.format for r in as_console.input_reports} == {"spring-console"}
    assert as_console.line_totals()["malformed"] == 0
    assert as_console.events.height == as_json.events.height
    assert _summary(as_json) and _summary(as_console) == _summary(as_json)
