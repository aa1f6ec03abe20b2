"""The engine-neutral stages (`leaselog.pipeline`): any split of the jobs gives the one-run document.

No engine here: the jobs of every sample set and of every check fixture with more than one job are dealt
at random into 1, 2, 3, 7 and 16 partitions, each analysed alone (`analyze_events`, with the fleet facts
merged from the partitions' own), the fleet checks merged from the partials, the parts handed over in a
random order; the JSON document must be byte-identical to `leaselog.analyze`'s.
"""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import leaselog
from helpers import ROOT, SAMPLES, jsonl
from leaselog.checks import BY_CODE
from leaselog.fleet import FleetContext
from leaselog.pipeline import (
    FLEET_CHECKS,
    JOB_CHECKS,
    analyze_events,
    fleet_findings,
    merge,
    read_source,
    settings_of,
    sources_of,
)

PARTITIONS = (1, 2, 3, 7, 16)
FIXTURES = ROOT / "tests" / "fixtures" / "checks"


def _sample_sets() -> list[Path]:
    sets = [SAMPLES / n for n in ("article-demo", "article-incident", "clean", "clean-busy")]
    sets += sorted(p for p in (SAMPLES / "scenarios").iterdir() if p.is_dir())
    sets += sorted(p for p in (SAMPLES / "formats").iterdir() if p.is_dir())
    return sets


def _cross_job_fixtures() -> list[Path]:
    out = []
    for f in sorted(FIXTURES.glob("*/*.jsonl")):
        jobs = leaselog.analyze(f).events["job_id"].n_unique()
        if jobs > 1:
            out.append(f)
    return out


INPUTS = _sample_sets() + _cross_job_fixtures()


def _document(a: leaselog.Analysis) -> bytes:
    out = io.BytesIO()
    leaselog.write_json(a, out)
    return out.getvalue()


@cache
def _one_run(path: Path) -> tuple[Any, Any, bytes]:
    config = path / "leaselog.toml" if path.is_dir() and (path / "leaselog.toml").exists() else None
    s = settings_of(config=config)
    sources, problems = sources_of(path)
    read = read_source(sources, s)
    return s, (read, problems), _document(leaselog.analyze(path, config=config))


def _split(events: pl.DataFrame, k: int, rnd: random.Random) -> list[pl.DataFrame]:
    """The events dealt into k partitions by job (a job's events all in one), each in input order."""
    jobs = events["job_id"].unique(maintain_order=True).to_list()
    where = {j: rnd.randrange(k) for j in jobs}
    part = events["job_id"].replace_strict(where, return_dtype=pl.Int64, default=where.get(None, 0))
    parts = [events.filter(part == i) for i in range(k)]
    return [p for p in parts if p.height]


def _partitioned(path: Path, k: int, seed: int) -> bytes:
    s, (read, problems), _ = _one_run(path)
    rnd = random.Random(seed)
    chunks = _split(read.events, k, rnd)
    fleet = FleetContext.merge(FleetContext.of(c) for c in chunks)
    parts = [analyze_events(c, s, fleet) for c in chunks]
    rnd.shuffle(parts)
    rows = fleet_findings([p.partials for p in parts], s)
    return _document(merge([read], read.events, parts, rows, s, problems))


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: str(p.relative_to(ROOT)))
@settings(max_examples=2, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_any_split_of_the_jobs_gives_the_one_run_document(path: Path, seed: int) -> None:
    *_, expected = _one_run(path)
    for k in PARTITIONS:
        assert _partitioned(path, k, seed + k) == expected, f"{k} partitions"


def test_the_inputs_cover_fleet_facts_and_the_fleet_check() -> None:
    # the property above means something only if the inputs hold what a split could change
    names = {p.parent.name for p in INPUTS if p.is_file()}
    assert {"LL601", "LL701"} <= names
    assert (BY_CODE["LL701"],) == FLEET_CHECKS
    assert BY_CODE["LL601"] in JOB_CHECKS and BY_CODE["LL202"] in JOB_CHECKS


def _crash_then_other_job(tmp_path: Path) -> Path:
    """crash-1 acquires a 10 s lease and its log ends; only another job's lines go on past the expiry."""
    t0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)

    def at(s: float) -> str:
        return (t0 + timedelta(seconds=s)).isoformat().replace("+00:00", "Z")

    rows = [
        {"ts": at(0), "event": "lock_acquired", "jobId": "crash-1", "executionId": "c1", "pod": "a", "leaseMs": 10000},
        {"ts": at(1), "event": "job_started", "jobId": "crash-1", "executionId": "c1", "pod": "a"},
        {"ts": at(2), "event": "lock_acquired", "jobId": "other-2", "executionId": "o1", "pod": "b", "leaseMs": 60000},
        {"ts": at(3), "event": "job_started", "jobId": "other-2", "executionId": "o1", "pod": "b"},
        {"ts": at(40), "event": "job_finished", "jobId": "other-2", "executionId": "o1", "pod": "b"},
        {"ts": at(41), "event": "lock_released", "jobId": "other-2", "executionId": "o1", "pod": "b"},
    ]  # fmt: skip
    return jsonl(tmp_path / "two.jsonl", rows)


def test_crash_takeover_reads_the_log_end_of_the_whole_input(tmp_path: Path) -> None:
    path = _crash_then_other_job(tmp_path)
    one = leaselog.analyze(path)
    crash = one.findings.filter(pl.col("code") == "LL601")
    assert crash["job_id"].to_list() == ["crash-1"]
    s = settings_of()
    read = read_source(sources_of(path)[0], s)
    alone = read.events.filter(pl.col("job_id") == "crash-1")
    # the crashed job's own lines end before its lease expires: alone, it looks like a log window's end
    assert analyze_events(alone, s).findings.filter(pl.col("code") == "LL601").height == 0
    # with the whole input's log end it is the crash one run reports, message included
    with_fleet = analyze_events(alone, s, FleetContext.of(read.events)).findings
    assert with_fleet.filter(pl.col("code") == "LL601")["message"].to_list() == crash["message"].to_list()


def test_fleet_context_merges_to_the_whole_inputs_log_ends(tmp_path: Path) -> None:
    path = _crash_then_other_job(tmp_path)
    events = read_source(sources_of(path)[0], settings_of()).events
    halves = [events.filter(pl.col("job_id") == j) for j in ("crash-1", "other-2")]
    merged = FleetContext.merge(FleetContext.of(h) for h in halves)
    assert merged.log_ends.equals(FleetContext.of(events).log_ends)
    ends = merged.timeline_ends()
    assert ends["timeline"].to_list() == ["wall"]
    assert ends["log_end"].to_list() == [datetime(2026, 11, 2, 8, 0, 41, tzinfo=UTC)]
    assert FleetContext.merge([]).log_ends.height == 0


def test_no_events_give_no_findings_and_merge_to_an_empty_document() -> None:
    s = settings_of()
    empty = read_source([], s)
    assert empty.events.height == 0
    part = analyze_events(empty.events, s, FleetContext.of(empty.events))
    assert part.findings.height == 0 and part.executions.height == 0
    rows = fleet_findings([part.partials], s)
    assert rows.height == 0
    d = leaselog.document(merge([empty], empty.events, [part], rows, s))
    assert (d["jobs"], d["executions"], d["findings"]) == (0, 0, [])


def test_seq_base_numbers_a_sources_events_after_the_others(tmp_path: Path) -> None:
    path = _crash_then_other_job(tmp_path)
    s = settings_of()
    plain = read_source(sources_of(path)[0], s).events
    shifted = read_source(sources_of(path)[0], s, seq_base=3 << 40).events
    assert (shifted["seq"] - plain["seq"]).unique().to_list() == [3 << 40]
    assert shifted.drop("seq").equals(plain.drop("seq"))
