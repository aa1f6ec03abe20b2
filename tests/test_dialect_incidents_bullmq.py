"""BullMQ's incident in sample_logs/dialects/bullmq/ (a real run of tests/integration/bullmq_run.py:
BullMQ 6.7.6 workers under Node, pino's JSON lines, the lab's paths replaced by `/app`): pod A's event
loop blocked for 3.4 s holding a job whose lock lasts 2 s; pod B's stalled check moved the job back to
wait at 18:18:45.580 and B took it at .583; A's processor returned at 18:18:46.586 and BullMQ refused its
completion twice (`Lock mismatch for job 1. Cmd moveToFinished from active`, at .593 and .598). Truth
(the workers' `Date.now()`): A's processor ran 18:18:43.187-46.586 and its attempt ended with BullMQ's
second refusal at .598; B ran from 45.585: overlap 1013 ms (1001 to A's processor's return); A's lock
lapsed at 45.187 (no renewal), so 1411 ms of zombie."""

from __future__ import annotations

from pathlib import Path

import leaselog

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "dialects" / "bullmq"


def test_bullmq_blocked_event_loop_sample() -> None:
    a = leaselog.analyze(str(SAMPLE))
    assert a.line_totals() == {"total": 6, "used": 6, "ignored": 0, "malformed": 0}
    got = {f.kind: f for f in a.finding_list}
    assert got["overlapping_executions"].duration_ms == 1015  # B's active .583 to A's last refusal .598
    outlived = got["lease_outlived"]
    assert outlived.duration_ms == 1015 and outlived.to_json_dict()["details"]["zombieAtMostMs"] == 1412
    assert "at least" in outlived.message and "renewals are not logged" in outlived.message
    assert "BullMQ: the job stalled" in outlived.message and "worker thread" in outlived.message
    assert "redelivery" in got["second_attempt"].message
    assert "bullmq/lock-mismatch" in got["stale_release"].message
    ex = a.executions.sort("execution_id")
    assert ex["execution_id"].to_list() == ["1@pod-a#1", "1@pod-b#1"]
    assert ex["trigger"].to_list() == [None, "stalled"]
    assert ex["lease_ms"].to_list() == [2000, 2000]


def test_empty_and_unrelated_pino_lines_give_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty.log").write_text("")
    assert leaselog.analyze(str(tmp_path)).finding_list == []
    (tmp_path / "worker.log").write_text(
        '{"level":30,"time":1796408323186,"pid":1,"hostname":"pod-a","msg":"worker listening"}\n'
        '{"level":30,"time":1796408323190,"pid":1,"hostname":"pod-a","msg":"Job 1 is now waiting"}\n'
    )
    a = leaselog.analyze(str(tmp_path))
    assert a.finding_list == [] and a.events.is_empty()


def test_a_malformed_line_is_located_and_its_neighbours_read(tmp_path: Path) -> None:
    lines = (SAMPLE / "report-worker-pod-a.log").read_text().splitlines()
    (tmp_path / "report-worker-pod-a.log").write_text(
        "\n".join([lines[0], '{"level":30,"time":', *lines[1:]]) + "\n"
    )
    (tmp_path / "report-worker-pod-b.log").write_text((SAMPLE / "report-worker-pod-b.log").read_text())
    a = leaselog.analyze(str(tmp_path))
    assert a.line_totals()["malformed"] == 1
    assert {f.kind for f in a.finding_list} >= {"overlapping_executions", "lease_outlived", "stale_release"}
    assert next(f for f in a.finding_list if f.kind == "overlapping_executions").duration_ms == 1015


def test_job_id_only_in_the_message_reads_the_same(tmp_path: Path) -> None:
    """Handlers that log the message alone (no `jobId` beside it): the job id in the message is the job and
    the delivery's message id."""
    for f in SAMPLE.iterdir():
        (tmp_path / f.name).write_text(f.read_text().replace('"jobId":"1",', ""))
    a = leaselog.analyze(str(tmp_path))
    got = {f.kind: f for f in a.finding_list}
    assert got["overlapping_executions"].duration_ms == 1015
    assert "redelivery" in got["second_attempt"].message


def test_bullmq_in_use_without_its_lines_says_which_handlers_to_log(tmp_path: Path) -> None:
    (tmp_path / "worker.log").write_text(
        '{"level":30,"time":1796408323186,"pid":1,"hostname":"pod-a","msg":"starting bullmq worker"}\n'
        '{"level":30,"time":1796408323190,"pid":1,"hostname":"pod-a","msg":"rendered report 42"}\n'
    )
    from leaselog.unread import nothing_read

    a = leaselog.analyze(str(tmp_path))
    unread = nothing_read(a.input_reports)
    assert unread is not None
    assert any("BullMQ" in r and "worker.on('active'" in r for r in unread.reasons)
