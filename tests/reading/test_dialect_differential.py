"""The differential check: a lab run against a real redis-server, re-logged as each JVM lock library prints
it (leaselog.reproduce.render_jvm) and read by that library's dialect, gives the same findings (kinds,
executions' pods, figures) as the same facts written in leaselog's own vocabulary.

(Needs execution identity without ids, leaselog.execution_runs: both sides carry no execution id.)
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import leaselog
from leaselog.reading.dialects import BY_NAME
from leaselog.reproduce import ReproduceOptions, run_scenario
from leaselog.reproduce.render_jvm import LIBRARIES, facts, render
from leaselog.reproduce.server import throwaway_redis

pytestmark = pytest.mark.redis

FAST = ReproduceOptions(lease_ms=2000, renewal_ms=400)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Path]]]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    out = tmp_path_factory.mktemp("lab")
    with throwaway_redis() as target:
        yield {
            name: run_scenario(name, FAST, redis_url=target.url, out=out / name).logs
            for name in ("article", "renewal")
        }


def _summary(a: leaselog.Analysis) -> list[tuple[Any, ...]]:
    return sorted(
        (f.kind, f.job_id, tuple(sorted(f.pods)), f.duration_ms, f.severity)
        for f in a.finding_list
        if f.kind != "lease_settings"
    )


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("scenario", ["article", "renewal"])
def test_library_lines_read_as_the_same_facts(
    runs: dict[str, list[Path]], scenario: str, library: str, tmp_path: Path
) -> None:
    lib, flat = tmp_path / "lib", tmp_path / "flat"
    lib.mkdir()
    flat.mkdir()
    for log in runs[scenario]:
        rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        (lib / f"{log.stem}.log").write_text("\n".join(render(library, rows)) + "\n")
        (flat / f"{log.stem}.jsonl").write_text("\n".join(json.dumps(r) for r in facts(library, rows)) + "\n")
    ttl = {"lease_ttl": "2s"}
    as_flat = leaselog.analyze(flat, **ttl)
    as_lib = leaselog.analyze(lib, **ttl)
    assert as_lib.line_totals()["malformed"] == 0
    assert as_lib.events.height == as_flat.events.height > 0
    read_by = {name for r in as_lib.input_reports for name, n in r.dialects.items() if n}
    # Redisson logs only failed renewals: a run without one has the app's lines only
    assert read_by == {library} or (library == "redisson" and not read_by)
    if not BY_NAME[library].silent_renewals or not read_by:
        assert _summary(as_lib) == _summary(as_flat)
    else:
        # the library logs no successful renewal (Redisson's watchdog): the flat rows, which lack them too,
        # take the lease to end at acquisition + TTL; the library's reading knows it lasted at least that,
        # and at most until the next holder acquired the key. Its zombie is then a lower bound of the one
        # the run's full logs (every renewal) measure, and the figures that hang on the expiry differ
        full = leaselog.analyze(runs[scenario], **ttl)
        bounded = ("lease_outlived", "second_attempt")
        assert [s for s in _summary(as_lib) if s[0] not in bounded] == [
            s for s in _summary(as_flat) if s[0] not in bounded
        ]
        assert {f.kind for f in as_lib.finding_list} == {f.kind for f in as_flat.finding_list}
        (zombie,) = [f for f in as_lib.finding_list if f.kind == "lease_outlived"]
        (true_zombie,) = [f for f in full.finding_list if f.kind == "lease_outlived"]
        assert zombie.duration_ms is not None and true_zombie.duration_ms is not None
        assert zombie.duration_ms <= true_zombie.duration_ms + 1.0
        assert "renewals are not logged" in zombie.message
    if scenario == "article":  # the incident itself survives in every library's lines
        assert "overlapping_executions" in {f.kind for f in as_lib.finding_list}
