"""One thread in two spellings on one pod: Spring Boot's console `[%15.15t]` (Logback keeps the last 15
characters) and a JSON encoder's whole name. The two are one thread, hence one execution."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import leaselog
from leaselog.thread_spellings import whole_thread_names

WHOLE = "report-stream-listener-1"
CUT = "ream-listener-1"  # what `%15.15t` prints for WHOLE


def console(ts: str, msg: str, kv: str, thread: str = CUT) -> str:
    return (
        f"2026-11-02T{ts}Z  INFO 1 --- [report-worker] [{thread:>15}] c.a.reports.ReportJob"
        f"                    : {msg} {kv}"
    )


def ecs(ts: str, msg: str, fields: dict[str, str], thread: str = WHOLE) -> str:
    row = {
        "@timestamp": f"2026-11-02T{ts}Z",
        "log.level": "INFO",
        "message": msg,
        "ecs.version": "1.2.0",
        "service.name": "report-worker",
        "process.thread.name": thread,
        "log.logger": "c.a.reports.ReportJob",
        "host.name": "pod-a",
    }
    return json.dumps(row | fields)


def mixed_file(folder: Path, execution_id: str | None, acquired_in_json: bool) -> Path:
    """One execution, all by one thread, triggered in JSON and released in JSON; acquired and started on
    the console (`acquired_in_json` False), or acquired in JSON and started and finished on the console
    (True: before the fix, a certain 5.0 s overlapping_executions ERROR and a second_attempt)."""
    ex = f" executionId={execution_id}" if execution_id else ""
    exd = {"executionId": execution_id} if execution_id else {}
    acquired = {"jobId": "report-42", **exd, "event": "lock_acquired", "leaseMs": "600000", "owner": "o1"}
    lines = [ecs("10:00:00.000", "received", {"jobId": "report-42", **exd, "event": "job_triggered"})]
    if acquired_in_json:
        lines += [
            ecs("10:00:00.001", "acquired", acquired),
            console("10:00:00.005", "started", f"jobId=report-42{ex} event=job_started"),
            console("10:00:05.005", "finished", f"jobId=report-42{ex} event=job_finished"),
        ]
    else:
        lines += [
            console(
                "10:00:00.001", "acquired", f"jobId=report-42{ex} event=lock_acquired leaseMs=600000 owner=o1"
            ),
            console("10:00:00.005", "started", f"jobId=report-42{ex} event=job_started"),
            ecs("10:00:05.005", "finished", {"jobId": "report-42", **exd, "event": "job_finished"}),
        ]
    lines.append(
        ecs(
            "10:00:05.010", "released", {"jobId": "report-42", **exd, "event": "lock_released", "owner": "o1"}
        )
    )
    folder.mkdir(parents=True)
    (folder / "pod-a.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("acquired_in_json", [False, True])
@pytest.mark.parametrize("execution_id", ["attempt-a", None])
def test_a_cut_console_thread_is_the_whole_name_of_the_json_lines(
    tmp_path: Path, execution_id: str | None, acquired_in_json: bool
) -> None:
    a = leaselog.analyze(mixed_file(tmp_path / "logs", execution_id, acquired_in_json))
    assert a.executions.height == 1
    assert a.executions["thread"].to_list() == [WHOLE]
    assert [f.kind for f in a.finding_list] == []  # no overlapping_executions, no second_attempt
    assert set(a.events["thread"].to_list()) == {WHOLE}


def frame(threads: list[str | None], pods: list[str] | None = None) -> pl.DataFrame:
    n = len(threads)
    return pl.DataFrame(
        {
            "pod": pods or ["pod-a"] * n,
            "file_index": [0] * n,
            "thread": pl.Series(threads, dtype=pl.String),
            "line": list(range(n)),
        }
    )


def test_the_tail_of_one_longer_name_is_that_name() -> None:
    out = whole_thread_names(frame([CUT, WHOLE, None, "main"]))
    assert out["thread"].to_list() == [WHOLE, WHOLE, None, "main"]
    assert out["line"].to_list() == [0, 1, 2, 3]


def test_a_tail_two_longer_names_share_is_left_as_printed() -> None:
    other = "batch-stream-listener-1"  # also ends `ream-listener-1`
    out = whole_thread_names(frame([CUT, WHOLE, other]))
    assert out["thread"].to_list() == [CUT, WHOLE, other]


def test_a_longer_name_on_another_pod_is_not_this_pods_thread() -> None:
    out = whole_thread_names(frame([CUT, WHOLE], pods=["pod-a", "pod-b"]))
    assert out["thread"].to_list() == [CUT, WHOLE]


def test_a_short_padded_name_is_unchanged(tmp_path: Path) -> None:
    line = console(
        "10:00:00.001", "acquired", "jobId=report-42 event=lock_acquired leaseMs=600000", "scheduling-1"
    )
    assert "[   scheduling-1]" in line
    out = whole_thread_names(frame(["scheduling-1", "my-scheduling-1", "app-my-scheduling-1"]))
    # `scheduling-1` is under 15 characters: printed whole (padded), never cut
    assert out["thread"].to_list() == ["scheduling-1", "app-my-scheduling-1", "app-my-scheduling-1"]
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "pod-a.log").write_text(line + "\n", encoding="utf-8")
    assert leaselog.analyze(folder).events["thread"].to_list() == ["scheduling-1"]


def test_empty_input() -> None:
    empty = frame([])
    assert whole_thread_names(empty).equals(empty)
    assert whole_thread_names(pl.DataFrame()).height == 0
