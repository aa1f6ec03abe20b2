"""A forward jump between two runs of one pod: a clock step, or a restart of the process.

The pod runs the job on its scheduler thread, finishes and releases, then runs it again. Between the two runs its timestamps
advance more than its elapsedMs. Either its clock jumped forward, or its process restarted and counted
elapsedMs anew from a start after the first run's last line: a restart always reads that way when the
new process's elapsedMs has run past the old one's last value. The logs tell only where a start-up line
lies between (a new elapsedMs origin), where the new process's elapsedMs is longer than the gap (it was
alive before the line before), where the earlier run logs a line after the jump (it lived across), or
where the lines name their container (Docker's and Fluent Bit's container id: a restarted container is a
new one).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import leaselog

T0 = datetime(2026, 11, 3, 9, 0, 0, tzinfo=UTC)
RUN = [
    (0, "job_triggered", {"trigger": "scheduler"}),
    (5, "lock_acquired", {"leaseMs": 2000, "fencingToken": 1}),
    (5, "job_started", {}),
    (900, "job_finished", {"status": "ok"}),
    (901, "lock_released", {"released": True}),
]


def _line(at_ms: float, elapsed: float | None, event: str, run: str, fields: dict[str, Any]) -> str:
    at = T0 + timedelta(milliseconds=at_ms)
    row: dict[str, Any] = {"ts": at.isoformat(timespec="milliseconds"), "jobId": "report-7", "pod": "pod-a"}
    row |= {"thread": "scheduling-1", "executionId": run, "event": event}
    if elapsed is not None:
        row["elapsedMs"] = elapsed
    return json.dumps(row | fields)


def _log(
    path: Path,
    *,
    first_elapsed: int,
    second_at: int,
    second_elapsed: int,
    start_line: bool = False,
    late_line: bool = False,
    containers: tuple[str, str] | None = None,
) -> Path:
    """Run 1 from T0 (its first line at `first_elapsed` on the process's elapsedMs), run 2 from
    `second_at` ms (its first line at `second_elapsed`); `start_line`: Spring Boot's start-up line just
    before run 2 (a new process); `late_line`: run 1 logs one more line after run 2 began; `containers`:
    the container ids runs 1 and 2 log (`container_id`, as Docker's fluentd logging driver adds it)."""
    lines = [_line(ms, first_elapsed + ms, ev, "run-1", {**f}) for ms, ev, f in RUN]
    if start_line:
        up = T0 + timedelta(milliseconds=second_at - 200)
        lines.append(
            json.dumps(
                {
                    "ts": up.isoformat(timespec="milliseconds"),
                    "pod": "pod-a",
                    "logger": "o.s.b.StartupInfoLogger",
                    "message": f"Started App in 0.4 seconds (process running for {(second_elapsed - 200) / 1000})",
                }
            )
        )
    for ms, ev, f in RUN:
        fields = {**f, "fencingToken": 2} if "fencingToken" in f else f
        lines.append(_line(second_at + ms, second_elapsed + ms, ev, "run-2", fields))
        if late_line and ev == "job_started":
            late = _line(
                second_at + ms + 1,
                second_elapsed + ms + 1,
                "lease_renewal",
                "run-1",
                {"renewalOutcome": "success"},
            )
            lines.append(late.replace('"scheduling-1"', '"lease-renewal-1"'))
    if containers is not None:
        ids = [containers[0]] * len(RUN) + [containers[1]] * (len(lines) - len(RUN))
        lines = [x[:-1] + f', "container_id": "{c}"}}' for x, c in zip(lines, ids, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _steps(a: leaselog.Analysis) -> list[leaselog.Finding]:
    return [f for f in a.finding_list if f.kind == "clock_step"]


def test_a_jump_a_young_process_restarting_explains_too_is_uncertain_and_says_so(tmp_path: Path) -> None:
    # run 1's last line at 901 ms (elapsed 1001); run 2 at 3000 ms with elapsed 1800: the wall advanced
    # 2099 ms, elapsedMs 799: a step of 1300 ms, or a process started at 1200 ms after run 1 ended
    a = leaselog.analyze(
        [_log(tmp_path / "pod-a.jsonl", first_elapsed=100, second_at=3000, second_elapsed=1800)]
    )
    steps = _steps(a)
    assert [(f.certainty, f.severity, f.duration_ms) for f in steps] == [("uncertain", "warning", 1300.0)]
    assert steps[0].details["orRestartAt"] == "2026-11-03T09:00:01.200Z"
    assert "may have restarted between the two runs, at about" in steps[0].message
    assert not [f for f in a.finding_list if f.severity == "error"]


def test_a_start_up_line_between_tells_the_restart(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "pod-a.jsonl", first_elapsed=100, second_at=3000, second_elapsed=1800, start_line=True
    )
    assert _steps(leaselog.analyze([log])) == []


def test_a_process_older_than_the_gap_did_not_restart_in_it(tmp_path: Path) -> None:
    # run 2's elapsed (4700) is longer than the 2099 ms gap: the process was alive before run 1's end
    a = leaselog.analyze(
        [_log(tmp_path / "pod-a.jsonl", first_elapsed=3000, second_at=3000, second_elapsed=4700)]
    )
    steps = _steps(a)
    assert [(f.certainty, f.duration_ms) for f in steps] == [("certain", 1300.0)]
    assert "orRestartAt" not in steps[0].details


def test_a_run_that_logs_after_the_jump_lived_across_it(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "pod-a.jsonl", first_elapsed=100, second_at=3000, second_elapsed=1800, late_line=True
    )
    steps = _steps(leaselog.analyze([log]))
    assert [(f.certainty, f.duration_ms) for f in steps] == [("certain", 1300.0)]


def test_one_container_across_the_jump_did_not_restart(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "pod-a.jsonl",
        first_elapsed=100,
        second_at=3000,
        second_elapsed=1800,
        containers=("c0ffee" * 10 + "0001", "c0ffee" * 10 + "0001"),
    )
    steps = _steps(leaselog.analyze([log]))
    assert [(f.certainty, f.duration_ms) for f in steps] == [("certain", 1300.0)]
    assert "orRestartAt" not in steps[0].details


def test_another_container_after_the_jump_is_a_restart_not_a_step(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "pod-a.jsonl",
        first_elapsed=100,
        second_at=3000,
        second_elapsed=1800,
        containers=("c0ffee" * 10 + "0001", "c0ffee" * 10 + "0002"),
    )
    a = leaselog.analyze([log])
    assert _steps(a) == []
    assert not [f for f in a.finding_list if f.severity in ("warning", "error")]


def test_runs_whose_clocks_agree_show_no_step(tmp_path: Path) -> None:
    # elapsed advances as the wall clock does: no jump at all
    a = leaselog.analyze(
        [_log(tmp_path / "pod-a.jsonl", first_elapsed=100, second_at=3000, second_elapsed=3100)]
    )
    assert _steps(a) == []
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    assert _steps(leaselog.analyze([tmp_path / "empty.jsonl"])) == []
