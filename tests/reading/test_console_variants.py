"""Console layouts that were misread: Spring Boot with the tracing correlation block after the level
(Sleuth's and Micrometer Tracing's documented `logging.pattern.level=%5p [${spring.application.name:},
%X{traceId:-},%X{spanId:-}]`), the MDC (`%X`) before the level, and the JVM's unified-logging lines.
Each is read in its shape, its neighbours as before, malformed lines located."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import leaselog
from leaselog.reading.formats import is_noise, line_format
from leaselog.reading.formats.console import console_record

MICROMETER = (
    "2026-11-29T10:00:00.101Z  INFO [report-service,6567a1f0c3d2b1a09f8e7d6c5b4a3921,9f8e7d6c5b4a3921] 1 --- "
    "[   scheduling-1] c.e.report.ReportJob                     : lease acquired event=lock_acquired "
    "jobId=report-42 executionId=a-1 leaseMs=30000"
)
SLEUTH_EMPTY = (
    "2026-11-29 10:00:01.101 DEBUG [report-service,,] 1 --- [   scheduling-1] "
    "n.j.s.core.DefaultLockingTaskExecutor    : Task finished, lock 'report' released"
)
MDC_FIRST = (
    "2026-11-29T10:00:02.101Z traceId=6567a1f0c3d2b1a0, spanId=9f8e7d6c5b4a3921, jobId=report-42, "
    "executionId=a-1 DEBUG 1 --- [   scheduling-1] c.e.report.ReportJob                     : "
    "lease released event=lock_released released=true"
)
UNIFIED = [
    "[0.004s][warning][os,container] Duplicate cpuset controllers detected, picking /sys/fs/cgroup/cpuset,"
    " not /sys/fs/cgroup/cpuset",
    "[0.009s][info][gc] Using G1",
    "[2026-11-29T10:00:00.101+0000][0.015s][info ][gc,init] Version: 17.0.12+7 (release)",
]


def test_micrometer_block_after_the_level() -> None:
    rec = console_record(MICROMETER)
    assert rec is not None and line_format(MICROMETER.encode()).name == "spring-console"  # type: ignore[union-attr]
    assert rec["traceId"] == "6567a1f0c3d2b1a09f8e7d6c5b4a3921" and rec["spanId"] == "9f8e7d6c5b4a3921"
    assert rec["spring.application.name"] == "report-service" and rec["thread"] == "scheduling-1"
    assert rec["jobId"] == "report-42" and rec["leaseMs"] == "30000"
    empty = console_record(SLEUTH_EMPTY)
    assert empty is not None and "traceId" not in empty and empty["thread"] == "scheduling-1"


def test_mdc_before_the_level() -> None:
    rec = console_record(MDC_FIRST)
    assert rec is not None and rec["level"] == "DEBUG" and rec["thread"] == "scheduling-1"
    assert (rec["jobId"], rec["executionId"], rec["event"]) == ("report-42", "a-1", "lock_released")
    assert rec["traceId"] == "6567a1f0c3d2b1a0"


def test_unified_logging_lines_are_noise() -> None:
    assert all(is_noise(line.encode()) for line in UNIFIED)
    assert not is_noise(b"[0.004s] something else")


def test_a_file_of_these_layouts_reads_every_line(tmp_path: Path) -> None:
    bad = "garbage ][ not a log line"
    (tmp_path / "pod-a.log").write_text(
        "\n".join([*UNIFIED, MICROMETER, SLEUTH_EMPTY, bad, MDC_FIRST]) + "\n"
    )
    a = leaselog.analyze(tmp_path)
    (r,) = a.input_reports
    assert r.format == "spring-console"
    assert (r.lines, r.used, r.malformed) == (7, 3, 1)
    assert a.malformed["line"].to_list() == [6]
    ev = a.events.sort("line")
    assert ev.filter(pl.col("line") == 4)["event"].to_list() == ["lock_acquired"]
    assert ev.filter(pl.col("line") == 7)["event"].to_list() == ["lock_released"]
    # the ShedLock line in the Sleuth layout is read by its dialect
    assert ev.filter(pl.col("line") == 5)["raw_event"].to_list() == ["shedlock/finished"]


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "pod-a.log").write_text("")
    a = leaselog.analyze(tmp_path)
    assert a.events.is_empty() and a.line_totals()["malformed"] == 0
