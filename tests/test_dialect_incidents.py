"""Each lock library's incident in sample_logs/dialects/<library>/, read with no mapping file (only the
lease length passed where the library never logs it), gives the incident's findings with the right
figures; its clean runs give nothing at warning or error; an input of only hidden library loggers says so.

Figures count on execution identity without ids (leaselog.execution_runs): ShedLock's runs on one pod
are told apart by their acquisitions on the scheduler's thread.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import leaselog

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs" / "dialects"


def _by_kind(a: leaselog.Analysis) -> dict[str, list[leaselog.Finding]]:
    out: dict[str, list[leaselog.Finding]] = {}
    for f in a.finding_list:
        out.setdefault(f.kind, []).append(f)
    return out


def test_shedlock_run_longer_than_lock_at_most_for() -> None:
    a = leaselog.analyze(str(SAMPLES / "shedlock"))
    got = _by_kind(a)
    assert a.line_totals()["malformed"] == 0
    (outlived,) = got["lease_outlived"]
    # pod-a locked at 10:00:00.004 until 10:05:00.004 (lockAtMostFor 5m) and finished at 10:07:02.318
    assert outlived.duration_ms == 122_314 and "pod-a" in outlived.pods
    # its unlock deleted the key by name after the expiry (no owner check): that proves no ownership, so the
    # zombie is no contradiction of the clocks but a certain error
    assert (outlived.severity, outlived.certainty) == ("error", "certain")
    (overlap,) = got["overlapping_executions"]
    # pod-b locked at 10:05:00.021 and finished at 10:06:31.544
    assert overlap.duration_ms == 91_523
    assert "lockAtMostFor" in overlap.message and "safeUpdate" in overlap.message
    # denials at every tick and the clean run after are the lock doing its job: nothing at warning or error
    flagged = {f.kind for f in a.finding_list if f.severity in ("warning", "error")}
    assert flagged <= {"lease_outlived", "overlapping_executions", "second_attempt", "lease_settings"}


def test_shedlock_clean_run_is_quiet(tmp_path: Path) -> None:
    lines = (SAMPLES / "shedlock" / "pod-b.log").read_text().splitlines()
    # pod-b alone: denials at every tick, then two runs well inside lockAtMostFor
    (tmp_path / "pod-b.log").write_text("\n".join(lines) + "\n")
    a = leaselog.analyze(str(tmp_path))
    assert a.events.height > 0
    assert not [
        f for f in a.finding_list if f.severity in ("warning", "error") and f.kind != "lease_settings"
    ]


def test_lock_at_least_for_keeping_the_lock_is_quiet(tmp_path: Path) -> None:
    head = "2026-11-29T10:0{m}:00.00{s}Z DEBUG 1 --- [report-service] [   scheduling-1] "
    ex = "n.j.s.core.DefaultLockingTaskExecutor    : "
    rows = []
    for m in range(4):
        pod_line = head.format(m=m, s=1) + ex
        rows.append(
            pod_line + f"Locked 'report', lock will be held at most until 2026-11-29T10:0{m + 5}:00.001Z"
        )
        rows.append(
            head.format(m=m, s=5)
            + ex
            + f"Task finished, lock 'report' will be released at 2026-11-29T10:0{m}:30.001Z"
        )
    (tmp_path / "pod-a.log").write_text("\n".join(rows) + "\n")
    (tmp_path / "pod-b.log").write_text(
        "\n".join(head.format(m=m, s=2) + ex + "Not executing 'report'. It's locked." for m in range(4))
        + "\n"
    )
    a = leaselog.analyze(str(tmp_path))
    assert a.events.height == 20  # 12 lines; each Locked and Not executing is a scheduler tick too
    assert not [
        f for f in a.finding_list if f.severity in ("warning", "error") and f.kind != "lease_settings"
    ]


def test_redisson_watchdog_failure_joins_the_apps_execution() -> None:
    a = leaselog.analyze(str(SAMPLES / "redisson"))
    got = _by_kind(a)
    (failed,) = got["renewal_failed"]
    assert list(failed.execution_ids) == ["a-1"]  # the watchdog's line joined the app's execution
    assert "lockWatchdogTimeout" in failed.message and "3.44.0" in failed.message
    (overlap,) = got["overlapping_executions"]
    assert overlap.duration_ms == 29_567  # b-1 from 10:01:00.551 to 10:01:30.124, a-1 ran on
    renewals = a.events.filter(leaselog_event("lease_renewal"))
    assert renewals.height == 1  # the watchdog's one line, not duplicated


def leaselog_event(name: str):  # type: ignore[no-untyped-def]
    import polars as pl

    return pl.col("event") == name


def test_redis_lock_registry_expiry_at_unlock() -> None:
    a = leaselog.analyze(str(SAMPLES / "spring-redis-lock-registry"), lease_ttl="60s")
    got = _by_kind(a)
    assert a.line_totals()["malformed"] == 0
    (overlap,) = got["overlapping_executions"]
    assert overlap.duration_ms == 15_378  # pod-b acquired at 10:01:00.031; pod-a's task ended 10:01:15.409
    (outlived,) = got["lease_outlived"]
    assert outlived.duration_ms == 15_392  # pod-a's 60 s lease from 10:00:00.017 (its line, not lockedAt)
    assert "setRenewalTaskScheduler" in outlived.message


@pytest.mark.parametrize("library", ["shedlock", "spring-redis-lock-registry"])
def test_library_at_info_says_which_logger_to_turn_on(tmp_path: Path, library: str) -> None:
    for f in (SAMPLES / library).iterdir():
        kept = [ln for ln in f.read_text().splitlines() if "DEBUG" not in ln and "Unexpected error" not in ln]
        (tmp_path / f.name).write_text("\n".join(kept) + "\n")
    from leaselog.unread import nothing_read

    a = leaselog.analyze(str(tmp_path))
    unread = nothing_read(a.input_reports)
    assert unread is not None and unread.headline.startswith("no lease events in ")
    assert any("DEBUG" in r for r in unread.reasons)


def _as_json(line: str, layout: str, pod: str) -> str | None:
    """A console line of the sample re-logged in Spring Boot's structured JSON layout (`ecs` or
    `logstash`), as `logging.structured.format.console` writes it."""
    import json

    from leaselog.reading.formats.console import console_record

    rec = console_record(line)
    if rec is None:
        return None
    logger = rec["logger"].replace("n.j.s.core.", "net.javacrumbs.shedlock.core.")
    if layout == "ecs":
        out = {
            "@timestamp": rec["@timestamp"],
            "log.level": rec["level"],
            "process.pid": 1,
            "process.thread.name": rec["thread"],
            "service.name": "report-service",
            "service.node.name": pod,
            "log.logger": logger,
            "message": rec["message"],
            "ecs.version": "8.11",
        }
    else:
        out = {
            "@timestamp": rec["@timestamp"],
            "@version": "1",
            "message": rec["message"],
            "logger_name": logger,
            "thread_name": rec["thread"],
            "level": rec["level"],
            "level_value": 10000,
        }
    return json.dumps(out, separators=(",", ":"))


@pytest.mark.parametrize("layout", ["ecs", "logstash"])
def test_shedlock_incident_in_json_layouts(tmp_path: Path, layout: str) -> None:
    for f in (SAMPLES / "shedlock").iterdir():
        rows = [j for ln in f.read_text().splitlines() if (j := _as_json(ln, layout, f.stem)) is not None]
        (tmp_path / f"{f.stem}.jsonl").write_text("\n".join(rows) + "\n")
    a = leaselog.analyze(str(tmp_path))
    console = leaselog.analyze(str(SAMPLES / "shedlock"))

    def summary(x: leaselog.Analysis) -> list[tuple[object, ...]]:
        return sorted((f.kind, f.duration_ms, tuple(sorted(f.pods))) for f in x.finding_list)

    assert a.line_totals()["malformed"] == 0 and {r.format for r in a.input_reports} == {layout}
    assert summary(a) == summary(console)


def test_one_acquisition_logged_by_app_and_library_is_one_event(tmp_path: Path) -> None:
    head = "2026-11-29T10:00:0{s}Z {lvl} 1 --- [report-service] [   scheduling-1] {lg:<40}: "
    ex, app = "n.j.s.core.DefaultLockingTaskExecutor", "c.e.report.ReportJob"
    (tmp_path / "pod-a.log").write_text(
        "\n".join(
            [
                head.format(s="0.004", lvl="DEBUG", lg=ex)
                + "Locked 'report', lock will be held at most until 2026-11-29T10:05:00.004Z",
                head.format(s="0.006", lvl=" INFO", lg=app)
                + "lock taken event=lock_acquired jobId=report leaseMs=300000",
                head.format(s="5.000", lvl=" INFO", lg=app)
                + "done event=lock_released jobId=report released=true",
                head.format(s="5.002", lvl="DEBUG", lg=ex) + "Task finished, lock 'report' released",
            ]
        )
        + "\n"
    )
    a = leaselog.analyze(str(tmp_path))
    import polars as pl

    ev = a.events.filter(pl.col("event").is_in(["lock_acquired", "lock_released"]))
    assert ev["event"].to_list() == ["lock_acquired", "lock_released"]
    assert ev["raw_event"].to_list() == ["lock_acquired", "lock_released"]  # the app's lines are kept
    assert a.executions.height == 1


def test_redis_lock_registry_without_lease_ttl_says_what_cannot_be_measured() -> None:
    a = leaselog.analyze(str(SAMPLES / "spring-redis-lock-registry"))
    (overlap,) = _by_kind(a)["overlapping_executions"]
    assert overlap.duration_ms == 15_378  # the overlap needs no lease length
    assert "lease_outlived" not in _by_kind(a)
    assert "pass --lease-ttl" in overlap.message


def test_a_sentinel_failover_explains_the_concurrent_leases() -> None:
    """The lab's failover (sample_logs/dialects/redis-sentinel: two pods' lines, the Sentinel's and the
    promoted replica's logs as Redis wrote them): the concurrent leases cite Sentinel's `+switch-master`
    beside the reconnects and the token handed twice."""
    a = leaselog.analyze(str(SAMPLES / "redis-sentinel"))
    assert a.line_totals()["malformed"] == 0
    (f,) = _by_kind(a)["concurrent_leases"]
    assert (f.severity, f.certainty, f.duration_ms) == ("error", "certain", 1170.0)
    assert (
        "Sentinel switched the primary of leaselog-lock from 127.0.0.1:50509 to 127.0.0.1:44031 at "
        "16:46:04.049 (" in f.message
    )
    assert "redis-sentinel.log:26)" in f.message and "master changed" in f.message
    assert "WAIT 1 <ms>" in f.message and "min-replicas-to-write" in f.message
    (cited,) = [e for e in f.evidence if e.file.endswith("redis-sentinel.log")]
    assert (cited.line, cited.note) == (26, "Sentinel switches the primary")
    d = f.to_json_dict()["details"]
    assert d["redisFailover"] == {
        "at": "2026-12-01T16:46:04.049000+00:00",
        "master": "leaselog-lock",
        "previousPrimary": "127.0.0.1:50509",
        "primary": "127.0.0.1:44031",
        "file": str(SAMPLES / "redis-sentinel" / "redis-sentinel.log"),
        "line": 26,
    }


def test_a_failover_outside_the_two_leases_is_not_cited(tmp_path: Path) -> None:
    """The same pods with the Sentinel's log of a failover an hour earlier (and the replica's log left out):
    the concurrent leases are found as before, and no failover is cited; without the Redis logs at all,
    the finding is the same but for the citation."""
    src = SAMPLES / "redis-sentinel"
    for name in ("pod-a.jsonl", "pod-b.jsonl"):
        (tmp_path / name).write_text((src / name).read_text())
    (tmp_path / "redis-sentinel.log").write_text(
        (src / "redis-sentinel.log").read_text().replace(" 16:46:", " 15:46:")
    )
    with_sentinel = leaselog.analyze(str(tmp_path))
    (tmp_path / "redis-sentinel.log").unlink()
    bare = leaselog.analyze(str(tmp_path))
    whole = leaselog.analyze(str(src))
    for a in (with_sentinel, bare):
        (f,) = _by_kind(a)["concurrent_leases"]
        assert "Sentinel" not in f.message and "redisFailover" not in f.to_json_dict()["details"]
        assert not [e for e in f.evidence if e.file.endswith(".log")]

    # citing the failover changes neither what is found nor how certain it is
    def summary(x: leaselog.Analysis) -> list[tuple[object, ...]]:
        return sorted((f.kind, f.duration_ms, f.severity, f.certainty) for f in x.finding_list)

    assert summary(with_sentinel) == summary(bare) == summary(whole)


def test_a_sentinel_failover_says_the_lock_lost_the_key(tmp_path: Path) -> None:
    """The same pods with their reconnect lines left out and the later token larger (the counter kept the
    earlier increment): alone, a clock offset explains the pair as well (uncertain, at warning); with the
    Sentinel's `+switch-master` in the window, the lock's Redis says it failed over: certain, as before."""
    src = SAMPLES / "redis-sentinel"
    for name in ("pod-a.jsonl", "pod-b.jsonl"):
        lines = [x for x in (src / name).read_text().splitlines() if '"lock_reconnected"' not in x]
        if name == "pod-b.jsonl":
            lines = [x.replace('"fencingToken":1', '"fencingToken":2') for x in lines]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    (alone,) = _by_kind(leaselog.analyze(str(tmp_path)))["concurrent_leases"]
    assert (alone.certainty, alone.severity) == ("uncertain", "warning")
    assert "nothing in the logs says the lock lost the key" in alone.message
    (tmp_path / "redis-sentinel.log").write_text((src / "redis-sentinel.log").read_text())
    (told,) = _by_kind(leaselog.analyze(str(tmp_path)))["concurrent_leases"]
    assert (told.certainty, told.severity) == ("certain", "error")
    assert "Sentinel switched the primary of leaselog-lock" in told.message
    assert "nothing in the logs says" not in told.message
    assert told.duration_ms == alone.duration_ms


def test_a_redis_cluster_failover_explains_the_concurrent_leases() -> None:
    """A real Redis Cluster's failover (sample_logs/dialects/redis-cluster: two pods' lines, a surviving
    primary's log and the promoted replica's): the concurrent leases cite the replica's `Failover election
    won` as a Cluster's failover, beside the reconnects and the token handed twice; the other node's FAIL
    and vote lines are no failover of their own."""
    folder = SAMPLES / "redis-cluster"
    a = leaselog.analyze(str(folder))
    assert a.line_totals()["malformed"] == 0
    (f,) = _by_kind(a)["concurrent_leases"]
    assert (f.severity, f.certainty, f.duration_ms) == ("error", "certain", 1706.0)
    assert (
        "A replica of the lock's Redis Cluster won its failover election and became a primary (\"Failover "
        "election won: I'm the new master.\") at 20:00:06.392 (" in f.message
    )
    assert "redis-node-4.log:51)" in f.message and "Sentinel" not in f.message
    assert "Both were handed fencing token 1" in f.message and "min-replicas-to-write" in f.message
    (cited,) = [e for e in f.evidence if e.file.endswith(".log")]
    assert (cited.file, cited.line, cited.note) == (
        str(folder / "redis-node-4.log"),
        51,
        "a Redis Cluster replica wins its failover election",
    )
    assert f.to_json_dict()["details"]["redisFailover"] == {
        "at": "2026-12-01T20:00:06.392000+00:00",
        "master": None,
        "previousPrimary": None,
        "primary": None,
        "file": str(folder / "redis-node-4.log"),
        "line": 51,
    }


def test_a_redis_cluster_failover_says_the_lock_lost_the_key(tmp_path: Path) -> None:
    """The Cluster sample's pods without their reconnect lines and the later token larger: alone, a clock
    offset explains the pair as well (uncertain); with the surviving primary's log only (its FAIL and vote
    lines) still uncertain; with the promoted replica's election, certain and cited."""
    src = SAMPLES / "redis-cluster"
    for name in ("pod-a.jsonl", "pod-b.jsonl"):
        lines = [x for x in (src / name).read_text().splitlines() if '"lock_reconnected"' not in x]
        if name == "pod-b.jsonl":
            lines = [x.replace('"fencingToken":1', '"fencingToken":2') for x in lines]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    (tmp_path / "redis-node-2.log").write_text((src / "redis-node-2.log").read_text())
    (alone,) = _by_kind(leaselog.analyze(str(tmp_path)))["concurrent_leases"]
    assert (alone.certainty, alone.severity) == ("uncertain", "warning")
    assert "Redis Cluster" not in alone.message and "redisFailover" not in alone.to_json_dict()["details"]
    (tmp_path / "redis-node-4.log").write_text((src / "redis-node-4.log").read_text())
    (told,) = _by_kind(leaselog.analyze(str(tmp_path)))["concurrent_leases"]
    assert (told.certainty, told.severity) == ("certain", "error")
    assert "Redis Cluster won its failover election" in told.message
    assert told.duration_ms == alone.duration_ms


# Spring Boot's console layout (`[%15.15t]`, `%wEx`: a blank line before the trace), DEBUG on the registry,
# both pods' first acquisitions printing `lockedAt=1970-01-01@00:00:00.000` (the lock object's creation)
_RLR_HEAD = "1 --- [report-service] [   scheduling-1] "
_RLR_LOGGER = "o.s.i.redis.util.RedisLockRegistry       : "


def _rlr_lock(ts: str, verb: str, locked: str, client: str) -> str:
    return (
        f"{ts} DEBUG {_RLR_HEAD}{_RLR_LOGGER}{verb} lock; RedisLock [lockKey=reports:nightly-export,"
        f"lockedAt={locked}, clientId={client}]"
    )


def _rlr_info(ts: str, message: str) -> str:
    return f"{ts}  INFO {_RLR_HEAD}c.e.report.ReportJob                     : {message}"


def _rlr_console(folder: Path, *, expired: bool) -> Path:
    epoch = "1970-01-01@00:00:00.000"
    a_end = [
        _rlr_info("2026-11-29T10:01:22.402Z", "Report written: 41233 rows"),
        f"2026-11-29T10:01:22.409Z ERROR {_RLR_HEAD}o.s.s.s.TaskUtils$LoggingErrorHandler    : "
        "Unexpected error occurred in scheduled task",
        "",
        "java.util.ConcurrentModificationException: Lock was released in the store due to expiration. "
        "The integrity of data protected by this lock may have been compromised.",
        "\tat org.springframework.integration.redis.util.RedisLockRegistry$RedisLock.unlock"
        "(RedisLockRegistry.java:631) ~[spring-integration-redis-6.4.1.jar:6.4.1]",
        "\tat com.example.report.ReportJob.run(ReportJob.java:38) ~[classes/:na]",
        "",
    ]
    if not expired:  # the same task ending inside its lease, released as usual
        a_end = [
            _rlr_info("2026-11-29T10:00:42.402Z", "Report written: 41233 rows"),
            _rlr_lock("2026-11-29T10:00:42.409Z", "Released", "2026-11-29@10:00:00.017", "4c1b9d0e"),
        ]
    a = [
        _rlr_lock("2026-11-29T10:00:00.017Z", "Acquired", epoch, "4c1b9d0e"),
        _rlr_info("2026-11-29T10:00:00.020Z", "Building the daily report"),
        *a_end,
    ]
    b = [
        _rlr_lock("2026-11-29T10:01:00.031Z", "Acquired", epoch, "7d2e0c4a"),
        _rlr_info("2026-11-29T10:01:00.034Z", "Building the daily report"),
        _rlr_info("2026-11-29T10:01:30.880Z", "Report written: 41233 rows"),
        _rlr_lock("2026-11-29T10:01:30.884Z", "Released", "2026-11-29@10:01:00.031", "7d2e0c4a"),
    ]
    (folder / "pod-a.log").write_text("\n".join(a) + "\n", encoding="utf-8")
    (folder / "pod-b.log").write_text("\n".join(b) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("ttl", [None, "60s"], ids=["no-ttl", "ttl-60s"])
def test_redis_lock_registry_console_wex_incident(tmp_path: Path, ttl: str | None) -> None:
    """The task outlives its 60 s lock by 22.4 s while the other pod runs: the trace after %wEx's blank line
    is the unlock's expiry (no crash), the stale lockedAt orders nothing (no clock_contradiction)."""
    a = leaselog.analyze(str(_rlr_console(tmp_path, expired=True)), lease_ttl=ttl)
    got = _by_kind(a)
    assert a.line_totals()["malformed"] == 0
    (overlap,) = got["overlapping_executions"]
    assert (overlap.duration_ms, overlap.certainty, overlap.severity) == (22_378, "certain", "error")
    assert not {"crash_takeover", "clock_contradiction", "clock_step", "concurrent_leases"} & set(got)
    if ttl is None:
        assert "lease_outlived" not in got
    else:
        (outlived,) = got["lease_outlived"]
        assert (
            outlived.duration_ms == 22_392
        )  # from 10:01:00.017 (its line's time, not lockedAt) to the unlock


def test_redis_lock_registry_console_run_inside_its_lock_is_quiet(tmp_path: Path) -> None:
    a = leaselog.analyze(str(_rlr_console(tmp_path, expired=False)), lease_ttl="60s")
    assert {f.kind for f in a.finding_list if f.severity == "error"} == set()
    assert not {"crash_takeover", "clock_contradiction", "overlapping_executions"} & set(_by_kind(a))
