"""The Quartz dialect's join (leaselog.reading.dialects.quartz): what its lines that name no job are about,
and the application's own lines as the instance's claim. Lines it cannot place are counted, never crash,
and never change how their neighbours are read."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from leaselog.config import Settings
from leaselog.reading.fields import FieldMapper
from leaselog.reading.reader import Reader, ReadResult
from leaselog.reading.sources import expand_sources

_HEAD = "2026-12-04 18:19:{s} [{thread}] {level} {logger} - "
_WORKER = "ReportScheduler_Worker-1"
_CM = "QuartzScheduler_ReportScheduler-B_ClusterManager"
_SHELL = "org.quartz.core.JobRunShell"
_STORE = "org.quartz.impl.jdbcjobstore.JobStoreTX"
_APP = "com.example.report.ReportJob"


def _line(s: str, thread: str, level: str, logger: str, message: str) -> str:
    return _HEAD.format(s=s, thread=thread, level=level, logger=logger) + message


RECOVERY = _line(
    "04.467", _CM, "INFO", _STORE, "ClusterManager: ......Scheduled 1 recoverable job(s) for recovery."
)
ZOMBIE = _line(
    "04.517",
    _CM.replace("-B_", "-A_"),
    "WARN",
    _STORE,
    "This scheduler instance (A) is still active but was recovered by another instance in the cluster.  "
    "This may cause inconsistent behavior.",
)
START = _line("04.535", _WORKER, "DEBUG", _SHELL, "Calling execute on job DEFAULT.report")
APP_START = _line("04.548", _WORKER, "INFO", _APP, "event=job_started jobId=DEFAULT.report")
APP_END = _line("08.635", _WORKER, "INFO", _APP, "event=job_finished jobId=DEFAULT.report status=ok")


def _read(tmp_path: Path, lines: list[str]) -> ReadResult:
    path = tmp_path / "quartz-b.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sources, _ = expand_sources([str(path)])
    return Reader(FieldMapper(Settings())).read(sources)


def _events(got: ReadResult) -> list[tuple[int, str, str | None, str | None]]:
    return [
        (r["line"], r["event"], r["job_id"], r["thread"])
        for r in got.raw.sort("line", maintain_order=True).iter_rows(named=True)
    ]


def test_a_recovery_is_the_trigger_of_the_next_start_on_its_instance(tmp_path: Path) -> None:
    got = _read(tmp_path, [RECOVERY, START, APP_START, APP_END])
    assert _events(got) == [
        (1, "job_triggered", "DEFAULT.report", _WORKER),
        (2, "lock_acquired", "DEFAULT.report", _WORKER),
        (2, "job_started", "DEFAULT.report", _WORKER),
        (3, "job_started", "DEFAULT.report", _WORKER),
        (4, "job_finished", "DEFAULT.report", _WORKER),
        (4, "lock_released", "DEFAULT.report", _WORKER),
    ]
    assert got.raw.filter(pl.col("event") == "job_triggered")["trigger"].to_list() == ["recovery"]


def test_without_quartzs_start_the_applications_start_is_the_claim(tmp_path: Path) -> None:
    got = _read(tmp_path, [RECOVERY, APP_START, APP_END])
    assert [e[:2] for e in _events(got)] == [
        (1, "job_triggered"),
        (2, "lock_acquired"),
        (2, "job_started"),
        (3, "job_finished"),
        (3, "lock_released"),
    ]


def test_a_job_whose_own_lock_is_logged_gets_no_claim(tmp_path: Path) -> None:
    """The application logs its lock around the job: that lock is the lease, Quartz's start no second one."""
    lock = _line("04.540", _WORKER, "INFO", _APP, "event=lock_acquired jobId=DEFAULT.report leaseMs=30000")
    release = _line("08.640", _WORKER, "INFO", _APP, "event=lock_released jobId=DEFAULT.report released=true")
    got = _read(tmp_path, [RECOVERY, START, lock, APP_START, APP_END, release])
    acquired = got.raw.filter(pl.col("event") == "lock_acquired")
    # Quartz's own start line is still a claim (the library's line); the application's lines add none
    assert acquired["line"].to_list() == [2, 3]
    assert got.raw.filter(pl.col("event") == "lock_released")["line"].to_list() == [6]


def test_lines_no_job_can_be_given_are_counted_ignored(tmp_path: Path) -> None:
    """A recovery no start follows in the file, a zombie line with no job running: read, no event; the
    application's lines of a job Quartz never named stay the application's alone."""
    got = _read(tmp_path, [APP_START, APP_END, ZOMBIE, RECOVERY])
    report = got.inputs[0]
    assert [e[:2] for e in _events(got)] == [(1, "job_started"), (2, "job_finished")]
    assert report.malformed == 0 and report.ignored == 2


def test_the_zombie_line_is_about_the_job_running_then(tmp_path: Path) -> None:
    got = _read(tmp_path, [START, APP_START, ZOMBIE, "not a log line at all", APP_END])
    lost = got.raw.filter(pl.col("event") == "ownership_lost")
    assert lost["job_id"].to_list() == ["DEFAULT.report"] and lost["thread"].to_list() == [_WORKER]
    assert got.inputs[0].malformed == 1
    assert got.raw.filter(pl.col("event") == "job_finished")["line"].to_list() == [5]


def test_empty_input(tmp_path: Path) -> None:
    got = _read(tmp_path, [])
    assert got.raw.is_empty()
