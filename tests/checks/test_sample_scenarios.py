"""`leaselog analyze sample_logs/ --lease-ttl 5s` shows every kind, with the figures the scenarios were
written to produce; the clean sample shows nothing."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import leaselog
from leaselog.checks import REGISTRY
from leaselog.findings import Finding

SAMPLES = Path(__file__).resolve().parent.parent.parent / "sample_logs"
SCENARIOS = SAMPLES / "scenarios"
# sample_logs/formats/ holds format variants of the article incident (another suite checks them)
FOLDERS = [p for p in sorted(SAMPLES.iterdir()) if p.is_dir() and p.name != "formats"]


@pytest.fixture(scope="module")
def findings() -> list[Finding]:
    return leaselog.analyze([str(p) for p in FOLDERS], lease_ttl_ms="5s").finding_list


def _one(findings: list[Finding], code: str, job: str | None, **details: object) -> Finding:
    hits = [
        f
        for f in findings
        if f.code == code
        and (job is None or f.job_id == job)
        and all(f.details.get(k) == v for k, v in details.items())
    ]
    assert len(hits) == 1, [h.message for h in hits]
    return hits[0]


def _fixtures_only() -> set[str]:
    """The checks docs/CHECKS.md's table says no sample shows (sample cell `—`): their fixture files do."""
    readme = (SAMPLES.parent / "docs" / "CHECKS.md").read_text(encoding="utf-8")
    cells = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in readme.splitlines()
        if line.startswith("| LL")
    ]
    return {c[0] for c in cells if c[-1] == "—"}


def test_every_kind_appears(findings: list[Finding]) -> None:
    """Every kind the samples are said to show (docs/CHECKS.md's table), and only those: a new check may
    come with fixtures only (sample `—`) until a scenario shows it."""
    without_sample = _fixtures_only()
    assert without_sample <= {m.code for m in REGISTRY}
    assert {f.kind for f in findings} == {m.kind for m in REGISTRY if m.code not in without_sample}


def test_clean_sample_gives_nothing() -> None:
    assert leaselog.analyze(SAMPLES / "clean").finding_list == []
    assert leaselog.analyze(SAMPLES / "clean", lease_ttl_ms="5s").finding_list == []


def test_busy_fleet_where_nothing_went_wrong_has_no_warning_or_error() -> None:
    """Scheduler fires the lock turned away, a retry that found the job done, jittered renewals: every job
    completed once, so nothing reaches warning; the turned-away fires are one info finding per job."""
    a = leaselog.analyze(SAMPLES / "clean-busy")
    assert [f.message for f in a.finding_list if f.severity != "info"] == []
    not_run = [f for f in a.finding_list if f.kind == "attempts_not_run"]
    assert sorted((f.job_id, f.details["denied"]) for f in not_run) == [
        ("reconcile-1", 2),
        ("reconcile-3", 3),
    ]
    # attempts that never ran have no execution interval
    denied = a.executions.filter(pl.col("end_kind") == "denied")
    assert denied.height == 5 and denied["start"].null_count() == 5 and denied["runtime_ms"].null_count() == 5
    assert {f.kind for f in a.finding_list} == {"attempts_not_run", "second_attempt", "completion_rejected"}


# (code, jobId) -> key figures; every number here is arithmetic on the scenario's timestamps
EXPECTED: list[tuple[str, str, dict[str, object]]] = [
    # renewal timeout with stop: renewal at :31.004 times out after 1s; stop requested :31.005, stopped :38.505
    ("LL201", "export-7", {"duration_ms": 1000.0, "severity": "warning"}),
    ("LL204", "export-7", {"duration_ms": 7500.0}),
    # release at :39.510 timed out; lease last confirmed :20.004 + 30s -> may hold the key until :50.004
    ("LL302", "export-7", {"duration_ms": 10494.0}),
    ("LL205", "export-8", {}),
    # process pause with redelivery: 32.1s silence, lease expired :35.003, offset 7712 redelivered, acquired :38.005
    ("LL202", "digest-3", {"duration_ms": 32100.0}),
    ("LL201", "digest-3", {"severity": "error"}),
    ("LL401", "digest-3", {"trigger": "redelivery", "duration_ms": 3002.0}),
    ("LL102", "digest-3", {"duration_ms": 19997.0}),
    ("LL101", "digest-3", {"duration_ms": 16993.0, "certainty": "certain"}),
    ("LL203", "digest-3", {"duration_ms": 7909.0}),
    ("LL503", "digest-3", {"severity": "info"}),
    # crash with takeover: last renewal :10.004 + 15s = :25.004; the poller's acquire at :31.004
    ("LL601", "billing-11", {"duration_ms": 6000.0, "severity": "info"}),
    ("LL401", "billing-11", {"trigger": "poll"}),
    # duplicate publish: offsets 1200 and 1207; A released at :25.010, B acquired :40.004
    ("LL401", "statement-5", {"trigger": "duplicate_publish", "duration_ms": 14994.0, "severity": "info"}),
    ("LL503", "statement-5", {"severity": "info"}),
    # fencing: token 41 rejected after 42 accepted; lease 10s from :06.005 -> :16.005, B acquired :18.003
    ("LL503", "ledger-8", {}),
    ("LL401", "ledger-8", {"trigger": "scheduler", "duration_ms": 1998.0}),
    ("LL202", "ledger-8", {"duration_ms": 22195.0}),
    # failover: A renewed :10.004 (valid to :40.004); B acquired :15.004 and released :23.915
    ("LL103", "sync-4", {"duration_ms": 8911.0, "certainty": "certain"}),
    ("LL401", "sync-4", {"trigger": "retry"}),
    # no fencing: B's token 8 accepted :12.010, A's token 7 accepted :14.010
    ("LL501", "payout-6", {"duration_ms": 2000.0}),
    ("LL502", "payout-6", {"duration_ms": 2000.0}),
    ("LL401", "payout-6", {"trigger": "unknown", "duration_ms": 1000.0}),
    # the article's incident
    ("LL101", "report-42", {"duration_ms": 151498.0, "certainty": "certain"}),
    # stop requested (max runtime) at :24.000, job_finished ok at :25.801: never honoured, under the SLO
    ("LL206", "rollup-5", {"duration_ms": 1801.0, "severity": "warning"}),
    # clean-busy: two scheduler fires turned away while rc-001-a41f ran
    ("LL402", "reconcile-1", {"severity": "info", "execution_ids": ("rc-001-b7c2", "rc-001-c019")}),
]


@pytest.mark.parametrize(("code", "job", "want"), EXPECTED, ids=[f"{c}-{j}" for c, j, _ in EXPECTED])
def test_scenario_figures(findings: list[Finding], code: str, job: str, want: dict[str, object]) -> None:
    hits = [f for f in findings if f.code == code and f.job_id == job and f.certainty == "certain"]
    if code == "LL101" and job == "report-42":
        hits = [f for f in hits if f.pods == ("pod-a", "pod-b")]
    assert len(hits) == 1, [h.message for h in hits]
    f = hits[0]
    for key, value in want.items():
        actual = getattr(f, key)
        if isinstance(value, float):
            assert actual == pytest.approx(value, abs=1.0), (key, f.message)
        else:
            assert actual == value, (key, f.message)
    for e in f.evidence:
        assert json.loads((SAMPLES.parent / e.file).read_text().splitlines()[e.line - 1])["jobId"] == job


def test_lease_settings_per_job_type(findings: list[Finding]) -> None:
    types = {f.details["jobType"] for f in findings if f.code == "LL701"}
    assert {"digest", "ledger", "payout", "export", "sync", "report"} <= types
    assert not {"invoice", "billing", "statement"} & types  # renewed in time, nothing to say
    digest = _one(findings, "LL701", None, jobType="digest")
    assert digest.details["suggested"]["renewalIntervalMs"] == pytest.approx(5000)
    # lease = max(2 x (5.0s + 27.1s pause + 13ms p99 latency), 15s) = 64.226s -> 1m05s
    assert digest.details["suggested"]["leaseMs"] == 65_000
    assert "Trial values" in digest.message


def test_scenarios_are_one_file_per_pod_with_their_own_job_ids() -> None:
    owner: dict[str, str] = {}
    for folder in FOLDERS:
        for path in folder.rglob("*.jsonl"):
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            if folder == SCENARIOS:
                assert len({r["pod"] for r in rows}) == 1, path
                assert all("ts" in r for r in rows), path
            for job in {r["jobId"] for r in rows if "jobId" in r}:
                where = path.parent.name
                assert owner.setdefault(job, where) == where, f"{job} used in {owner[job]} and {where}"
    assert len([p for p in SCENARIOS.iterdir() if p.is_dir()]) >= 5
