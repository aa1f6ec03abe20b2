"""`leaselog reproduce` against a real redis-server: each scenario's logs, analyzed, against its ground truth.

The figures leaselog derives from the logs' wall-clock `ts` must match what the run measured itself on
CLOCK_MONOTONIC (truth.json) within `truth.tolerance`: 50 ms or 10%, whichever is larger. Short leases
(2 s, renewal every 400 ms: slack for a loaded CI machine) keep every scenario to a few seconds.
Run the fast tests alone with `pytest -m "not redis"`.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import redis

import leaselog
from leaselog.checks import REGISTRY
from leaselog.cli import main
from leaselog.reproduce import SCENARIOS, ReproduceError, ReproduceOptions, ReproduceRun, run_scenario
from leaselog.reproduce.server import free_port, throwaway_redis
from leaselog.reproduce.truth import compare, tolerance

FAST = ReproduceOptions(lease_ms=2000, renewal_ms=400)


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A real redis-server on a free loopback port, never written to disk, started like `reproduce` starts one.

    The scenarios then run against it as against a user's server (`--redis URL`), next to a key that is
    not theirs and must survive.
    """
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    with throwaway_redis() as target:
        client = redis.Redis.from_url(target.url)
        client.set("someone-else:key", "keep me")
        yield target.url
        client.close()


def _run(name: str, redis_url: str, tmp_path: Path) -> tuple[ReproduceRun, leaselog.Analysis]:
    run = run_scenario(name, FAST, redis_url=redis_url, out=tmp_path / name)
    return run, leaselog.analyze(run.logs)


def _lines(run: ReproduceRun) -> dict[str, list[dict[str, Any]]]:
    return {p.stem: [json.loads(x) for x in p.read_text().splitlines()] for p in run.logs}


def _one(a: leaselog.Analysis, kind: str) -> leaselog.Finding:
    hits = [f for f in a.finding_list if f.kind == kind]
    assert len(hits) == 1, [f.kind for f in a.finding_list]
    return hits[0]


def _agrees(run: ReproduceRun, a: leaselog.Analysis) -> None:
    bad = [g for g in compare(run.truth, a) if g.ok is False]
    assert not bad, (bad, run.truth["measured"], run.truth["pods"], [f.kind for f in a.finding_list])


@pytest.mark.redis
def test_article_overlap_matches_ground_truth(redis_url: str, tmp_path: Path) -> None:
    run, a = _run("article", redis_url, tmp_path)
    m = run.truth["measured"]
    _agrees(run, a)
    overlap = _one(a, "overlapping_executions")
    assert overlap.certainty == "certain"  # half a lease of overlap, above the 250 ms skew bound
    assert overlap.duration_ms == pytest.approx(m["overlapMs"], abs=tolerance(m["overlapMs"]))
    assert m["overlapMs"] >= FAST.lease_ms / 2 - tolerance(500)
    zombie = _one(a, "lease_outlived")
    assert zombie.duration_ms == pytest.approx(m["zombieMs"], abs=tolerance(m["zombieMs"]))
    assert _one(a, "stale_release").execution_ids[0] == "attempt-a"
    assert _one(a, "second_attempt").trigger == "scheduler"
    # the article's expected event order, on the run's own monotonic clock
    t = {
        (pod, mo["event"], mo.get("released")): mo["monoMs"]
        for pod, ms in run.truth["moments"].items()
        for mo in ms
    }
    order = [
        t[("pod-a", "lock_acquired", None)],
        t[("pod-b", "lock_acquired", None)],
        t[("pod-a", "job_progress", None)],
        t[("pod-a", "lock_released", False)],
        t[("pod-b", "job_finished", None)],
        t[("pod-b", "lock_released", True)],
    ]
    assert order == sorted(order)
    # B acquired only after A's lease ran out in Redis (it cannot have run out before A's request + TTL)
    assert (
        run.truth["pods"]["pod-b"]["acquiredMono"]
        >= run.truth["pods"]["pod-a"]["acquireSentMono"] + FAST.lease_ms
    )
    # the log is in the article's flat shape with wall-clock ts and elapsedMs
    first = next(x for x in _lines(run)["pod-a"] if x.get("event") == "lock_acquired")
    assert (
        first["ts"].endswith("Z")
        and first["leaseMs"] == FAST.lease_ms
        and "elapsedMs" in first
        and first["owner"]
    )
    # only this run's keys were used, and they are gone; a stranger's key is untouched
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    assert list(client.scan_iter(match=f"leaselog:repro:{run.run_id}:*")) == []
    assert client.get("someone-else:key") == "keep me"


@pytest.mark.redis
def test_renewal_pause_safeguards_work(redis_url: str, tmp_path: Path) -> None:
    run, a = _run("renewal", redis_url, tmp_path)
    m, pods = run.truth["measured"], run.truth["pods"]
    assert m["pauseBeforeWrite"], "SIGSTOP must land between A's last checkpoint and its write"
    # and outside a renewal: one caught between its request and its line would be logged after the pause,
    # long after Redis renewed (the harness resumes and stops A again until none is in flight)
    assert m["pauseInsideRenewal"] is False
    assert m["pauseMs"] >= FAST.lease_ms  # a real pause longer than the lease
    _agrees(run, a)
    assert pods["pod-a"]["renewals"].get("rejected") == 1 and pods["pod-a"]["renewals"]["success"] >= 2
    assert pods["pod-a"]["stopReason"] == "ownership_uncertain"
    assert m["completions"] == {"pod-a": "rejected", "pod-b": "accepted"}
    assert m["acceptedEffects"] == 1 and m["duplicateEffects"] == 0  # one committed effect in Redis
    assert pods["pod-b"]["fencingToken"] > pods["pod-a"]["fencingToken"]
    assert _one(a, "renewal_failed").execution_ids[0] == "attempt-a"
    assert _one(a, "completion_rejected").execution_ids[0] == "attempt-a"
    assert _one(a, "second_attempt").trigger == "redelivery"
    gap = _one(a, "renewal_gap")
    assert gap.duration_ms is not None and gap.duration_ms >= m["pauseMs"] - tolerance(m["pauseMs"])
    # stop requested (ownership_uncertain), then confirmed: the delay leaselog reconstructs is the run's own
    ex = a.executions.filter(pl.col("execution_id") == "attempt-a").row(0, named=True)
    assert ex["end_event"] == "job_stopped"
    got = (ex["stopped_at"] - ex["stop_requested_at"]).total_seconds() * 1000
    assert got == pytest.approx(m["stopDelayMs"]["pod-a"], abs=tolerance(m["stopDelayMs"]["pod-a"]))
    assert not {"duplicate_effect", "stale_write_accepted", "ownership_loss_unhandled"} & {
        f.kind for f in a.finding_list
    }


@pytest.mark.redis
def test_resume_when_keeps_the_paused_pod_paused_until_it_holds(redis_url: str, tmp_path: Path) -> None:
    """A caller's condition (a test's watch) holds A's SIGSTOP past the scenario's own schedule: here 1.5 s
    past the earliest moment the scenario would resume it; the run stays the same incident."""
    first: list[float] = []

    def held_long_enough() -> bool:
        first.append(time.monotonic())
        return first[-1] - first[0] >= 1.5

    run = run_scenario(
        "renewal", FAST, redis_url=redis_url, out=tmp_path / "held", resume_when=held_long_enough
    )
    m = run.truth["measured"]
    assert len(first) > 1 and m["pauseBeforeWrite"]
    assert m["pauseMs"] >= FAST.lease_ms + FAST.renewal_ms + 1500, m["pauseMs"]
    a = leaselog.analyze(run.logs)
    _agrees(run, a)
    assert set(SCENARIOS["renewal"].expected) <= {f.kind for f in a.finding_list}


def test_resume_when_is_refused_by_a_scenario_that_pauses_no_pod(tmp_path: Path) -> None:
    with pytest.raises(ReproduceError, match="pauses no pod"):
        run_scenario("article", FAST, out=tmp_path, resume_when=lambda: True)


@pytest.mark.redis
def test_renewal_stall_stops_before_the_lease_ends(redis_url: str, tmp_path: Path) -> None:
    run, a = _run("renewal-stall", redis_url, tmp_path)
    m, pa = run.truth["measured"], run.truth["pods"]["pod-a"]
    _agrees(run, a)
    assert pa["renewals"].get("timeout") == 1 and pa["stopCause"] == "renewal_timeout"
    assert pa["endEvent"] == "job_stopped" and pa["endMono"] < pa["leaseExpiryMono"]
    # the stop comes at the next checkpoint: within one unit of work of the request
    assert m["stopDelayMs"]["pod-a"] <= FAST.unit_ms + tolerance(FAST.unit_ms)
    assert pa["releaseOutcome"] == "timeout"
    assert _one(a, "renewal_failed").execution_ids[0] == "attempt-a"
    assert _one(a, "release_failed").execution_ids[0] == "attempt-a"
    assert m["completions"] == {"pod-b": "accepted"} and m["duplicateEffects"] == 0
    assert not {"overlapping_executions", "lease_outlived"} & {f.kind for f in a.finding_list}


@pytest.mark.redis
def test_crash_takeover_latency(redis_url: str, tmp_path: Path) -> None:
    run, a = _run("crash", redis_url, tmp_path)
    m, pods = run.truth["measured"], run.truth["pods"]
    _agrees(run, a)
    assert pods["pod-a"]["endEvent"] is None and pods["pod-a"]["lastEvent"] == "lease_renewal"
    crash = _one(a, "crash_takeover")
    assert crash.execution_ids == ("attempt-a", "attempt-b")
    assert crash.duration_ms == pytest.approx(m["takeoverMs"], abs=tolerance(m["takeoverMs"]))
    second = _one(a, "second_attempt")
    assert second.trigger == "redelivery"
    assert pods["pod-b"]["messageId"] == pods["pod-a"]["messageId"] and pods["pod-b"]["deliveryCount"] == 2
    assert not {"overlapping_executions", "lease_outlived"} & {f.kind for f in a.finding_list}


@pytest.mark.redis
def test_cli_reproduce_with_a_throwaway_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package `redis-server`)")
    out = tmp_path / "run"
    html = tmp_path / "report.html"
    args = ["--lease", "1s", "--out", str(out), "--json", str(tmp_path / "f.json"), "--html", str(html)]
    code = main(["reproduce", "article", *args])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "Ground truth" in text and "DIFFERS" not in text
    data = json.loads((tmp_path / "f.json").read_text())
    kinds = {f["kind"] for f in data["findings"]}
    assert {"overlapping_executions", "lease_outlived", "stale_release"} <= kinds
    truth = json.loads((out / "truth.json").read_text())
    assert truth["redis"]["throwaway"] is True and truth["scenario"] == "article"
    assert truth["job"] in html.read_text(encoding="utf-8")  # the HTML report of the same analysis
    # truth.json is one line, so analyzing the whole folder counts it as ignored, never malformed
    again = leaselog.analyze(out)
    assert again.line_totals()["malformed"] == 0


def test_missing_redis_server_names_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ReproduceError, match="apt-get install redis-server"), throwaway_redis():
        pass


def test_unreachable_redis_url_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReproduceError, match="cannot reach Redis"):
        run_scenario("article", FAST, redis_url=f"redis://127.0.0.1:{free_port()}/0", out=tmp_path)


def test_options_that_cannot_renew_in_time_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ReproduceError, match="must fit inside the lease"):
        run_scenario("renewal", ReproduceOptions(lease_ms=1000, renewal_ms=1000), out=tmp_path)


def test_a_stall_too_short_to_time_out_a_renewal_is_refused(redis_url: str, tmp_path: Path) -> None:
    short = ReproduceOptions(lease_ms=2000, renewal_ms=400, stall_ms=300)
    with pytest.raises(ReproduceError, match="must cover a renewal interval"):
        run_scenario("renewal-stall", short, redis_url=redis_url, out=tmp_path)


def test_cli_unknown_scenario_is_a_usage_error() -> None:
    assert main(["reproduce", "no-such-scenario"]) == 2


def test_every_scenario_states_its_expectations_in_known_kinds() -> None:
    contract = {m.kind for m in REGISTRY}  # the registry test holds these to docs/PRODUCT.md
    for s in SCENARIOS.values():
        assert set(s.expected) <= contract and set(s.absent) <= contract, s.name
        assert not set(s.expected) & set(s.absent), s.name
        assert s.second_attempt_trigger in {"redelivery", "duplicate_publish", "scheduler", "retry", "poll"}
