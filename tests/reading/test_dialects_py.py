"""The Python and Kubernetes dialects (python-redis-lock, Celery, client-go leader election): every sample
line read through its format and its dialect, the joins that span lines, and lines that stay quiet."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from leaselog.reading.dialects import BY_NAME, Dialect
from leaselog.reading.fields import RAW_COLUMNS
from leaselog.reading.formats import line_format

MINE = ("python-redis-lock", "celery", "k8s-leader-election")


def read(dialect: Dialect, line: str) -> tuple[str, dict[str, str]] | None:
    fmt = line_format(line.encode())
    assert fmt is not None, line
    rec = fmt.parse(line.encode())[0]
    return dialect.match(str(rec.get("message", rec.get("msg", ""))), rec)


@pytest.mark.parametrize("name", MINE)
def test_every_sample_reads_as_its_event(name: str) -> None:
    d = BY_NAME[name]
    assert d.sources and d.samples and d.advice
    for s in d.samples:
        got = read(d, s.line)
        if s.before or s.after:  # the lock or the outcome comes from the lines around (the reader's join)
            assert got is not None and got[0] == s.event
            continue
        if s.event is None:
            assert got is None, s.line
            continue
        assert got is not None, s.line
        assert got[0] == s.event, s.line
        for k, v in s.fields.items():
            assert got[1].get(k) == v, (s.line, k, got[1])


@pytest.mark.parametrize("name", MINE)
def test_quiet_on_empty_and_unrelated_messages(name: str) -> None:
    d = BY_NAME[name]
    for msg in ("", "worker ready", "Connected to redis://localhost:6379/0", "report rendered in 3 s"):
        assert d.match(msg) is None


def test_redis_lock_versions() -> None:
    d = BY_NAME["python-redis-lock"]
    assert d.match("Acquiring Lock('lock:a') ...") is None  # an attempt, not an acquisition
    assert d.match("Getting 'lock:a' ...") is None
    assert d.match("Acquired Lock('lock:a').") == ("lock_acquired", {"job_id": "a"})
    assert d.match("Got lock for 'lock:a'.") == ("lock_acquired", {"job_id": "a"})
    assert d.match('Acquired Lock("lock:it\'s").') == ("lock_acquired", {"job_id": "it's"})
    assert d.match("Releasing 'lock:a'.") == ("lock_released", {"job_id": "a"})
    assert d.match("Refreshing lock") == ("lease_renewal", {})


def frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    text = [c for c in RAW_COLUMNS if c not in ("line", "fields", "file_index", "dialect")]
    cols = {c: pl.Series(c, [r.get(c) for r in rows], dtype=pl.String) for c in text}
    cols["fields"] = pl.Series("fields", [None] * len(rows), dtype=pl.String)
    cols["line"] = pl.Series("line", [i + 1 for i in range(len(rows))], dtype=pl.Int64)
    cols["file_index"] = pl.Series("file_index", [r.get("file_index", 0) for r in rows], dtype=pl.Int64)
    cols["dialect"] = pl.Series("dialect", [r.get("dialect") for r in rows], dtype=pl.String)
    return pl.DataFrame(cols)


P, C = "python-redis-lock", "celery"
T1, T2 = "11111111-aaaa", "22222222-bbbb"


def test_redis_lock_join_confirms_refreshes_by_the_next_line() -> None:
    rows = [
        {"dialect": P, "event": "lock_acquired", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lease_renewal", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lease_renewal", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "job_progress", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lock_released", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lock_acquired", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lease_renewal", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lock_released", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lock_acquired", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lease_renewal", "thread": "W1"},  # 3.x: no name
        {"dialect": None, "event": "lease_renewal", "job_id": "x"},
    ]
    out = BY_NAME[P].join(frame(rows))  # type: ignore[misc]
    assert out["renewal_outcome"].to_list() == [
        None, "success", "success", None, None, None, "error", None, None, None, None,
    ]  # fmt: skip
    # the last refresh, nothing after it: no outcome (read as a success, as any renewal line without one)
    assert out["event"].to_list()[9] == "lease_renewal"
    assert out.columns == frame(rows).columns


def test_celery_join_gives_tasks_their_lock_and_locks_their_task() -> None:
    rows = [
        {"dialect": C, "event": "job_triggered", "job_id": "t.render", "message_id": T1, "thread": "MainProcess"},
        {"dialect": P, "event": "lock_acquired", "job_id": "report-42", "thread": "ForkPoolWorker-1"},
        {"dialect": C, "event": "job_triggered", "job_id": "t.render", "message_id": T2, "thread": "MainProcess"},
        {"dialect": P, "event": "lock_acquired", "job_id": "report-42", "thread": "ForkPoolWorker-2"},
        {"dialect": P, "event": "lock_released", "job_id": "report-42", "thread": "ForkPoolWorker-1"},
        {"dialect": C, "event": "lock_released", "job_id": "report-42", "execution_id": T1,
         "released": "false", "thread": "ForkPoolWorker-1"},
        {"dialect": P, "event": "lock_released", "job_id": "report-42", "thread": "ForkPoolWorker-2"},
        {"dialect": C, "event": "job_finished", "job_id": "t.render", "execution_id": T2, "status": "ok",
         "thread": "ForkPoolWorker-2"},
        {"dialect": C, "event": "job_finished", "job_id": "t.other", "execution_id": "33333333-cccc",
         "status": "ok", "thread": "ForkPoolWorker-1"},
    ]  # fmt: skip
    out = BY_NAME[C].join(frame(rows))  # type: ignore[misc]
    assert out["job_id"].to_list() == ["report-42"] * 8 + ["t.other"]
    assert out["execution_id"].to_list() == [T1, T1, T2, T2, T1, T1, T2, T2, "33333333-cccc"]
    assert out["released"].to_list() == [None, None, None, None, "false", None, "true", None, None]
    assert out["event"].to_list()[5] == "job_finished" and out["status"].to_list()[5] == "error"


def test_celery_join_crashed_process_takes_the_last_received_task() -> None:
    rows = [
        {"dialect": C, "event": "job_triggered", "job_id": "t.render", "message_id": T1, "thread": "MainProcess"},
        {"dialect": P, "event": "lock_acquired", "job_id": "report-42", "thread": "ForkPoolWorker-1"},
        {"dialect": P, "event": "lease_renewal", "job_id": "report-42", "thread": "ForkPoolWorker-1"},
    ]  # fmt: skip
    out = BY_NAME[C].join(frame(rows))  # type: ignore[misc]
    assert out["execution_id"].to_list() == [T1, T1, T1]
    assert out["job_id"].to_list() == ["report-42"] * 3


def test_joins_leave_empty_and_foreign_frames_alone() -> None:
    for name in (P, C):
        j = BY_NAME[name].join
        assert j is not None
        assert j(frame([])).is_empty()
        other = frame([{"dialect": None, "event": "lock_acquired", "job_id": "x"}])
        assert j(other).equals(other)


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        (
            "[2026-12-01 10:00:00,120: INFO/ForkPoolWorker-1] Acquired Lock('lock:report-42').",
            "[2026-12-01 10:00:00,1: INFO ForkPoolWorker-1 Acquired Lock('lock:report-42').",
        ),
        (
            "I1201 10:00:00.223456       1 leaderelection.go:260] successfully acquired lease kube-system/c",
            "I1201 10:00:00.223456 leaderelection.go successfully acquired lease kube-system/c",
        ),
    ],
    ids=["celery", "klog"],
)
def test_a_malformed_line_is_located_and_its_neighbours_read(tmp_path: Any, good: str, bad: str) -> None:
    from leaselog.config import Settings
    from leaselog.reading.fields import FieldMapper
    from leaselog.reading.reader import Reader
    from leaselog.reading.sources import expand_sources

    path = tmp_path / "pod-a.2026-12-01.log"
    later = good.replace("10:00:00", "10:00:05")  # (an identical line would be a duplicate)
    path.write_text("\n".join([good, bad, later]) + "\n", encoding="utf-8")
    sources, _ = expand_sources([str(path)])
    got = Reader(FieldMapper(Settings())).read(sources)
    report = got.inputs[0]
    assert report.malformed == 1 and [m[1] for m in got.malformed] == [2]
    assert got.raw["line"].to_list() == [1, 3]
    assert got.raw["event"].to_list() == ["lock_acquired", "lock_acquired"]
    assert got.raw["ts"].to_list()[0].startswith("2026-12-01T10:00:00.")


def test_a_lost_worker_s_quoted_traceback_is_a_continuation(tmp_path: Any) -> None:
    # as celery 5.7.0 logs a pool process killed mid-task (billiard 4.3.2 wraps the pool's traceback in
    # `\n"""\n...\n"""`): every line of the block belongs to the error record above it
    from leaselog.config import Settings
    from leaselog.reading.fields import FieldMapper
    from leaselog.reading.reader import Reader
    from leaselog.reading.sources import expand_sources

    pool = "/usr/local/lib/python3.11/site-packages/billiard/pool.py"
    lines = [
        "[2026-12-01 10:00:00,001: INFO/ForkPoolWorker-1] Acquired Lock('lock:report-42').",
        "[2026-12-01 10:00:01,676: ERROR/MainProcess] Process 'ForkPoolWorker-1' pid:32327 exited with "
        "'signal 9 (SIGKILL)'",
        "[2026-12-01 10:00:01,789: ERROR/MainProcess] Task handler raised error: WorkerLostError('Worker "
        "exited prematurely: signal 9 (SIGKILL) Job: 1.')",
        "Traceback (most recent call last):",
        f'  File "{pool}", line 1367, in mark_as_worker_lost',
        "    raise WorkerLostError(",
        "billiard.einfo.ExceptionWithTraceback: ",
        '"""',
        "Traceback (most recent call last):",
        f'  File "{pool}", line 1367, in mark_as_worker_lost',
        "    raise WorkerLostError(",
        "billiard.exceptions.WorkerLostError: Worker exited prematurely: signal 9 (SIGKILL) Job: 1.",
        '"""',
        "[2026-12-01 10:00:02,000: INFO/ForkPoolWorker-2] Acquired Lock('lock:report-43').",
    ]
    path = tmp_path / "worker-a.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sources, _ = expand_sources([str(path)])
    got = Reader(FieldMapper(Settings())).read(sources)
    assert got.inputs[0].malformed == 0 and got.malformed == []
    assert got.raw["line"].to_list() == [1, 14]
    assert got.raw["job_id"].to_list() == ["report-42", "report-43"]
    # the same block with a stray line that is no continuation: located, and its neighbours read alike
    lines.insert(8, "not a celery line")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = Reader(FieldMapper(Settings())).read(expand_sources([str(path)])[0])
    assert [m[1] for m in got.malformed] == [9]
    assert got.raw["line"].to_list() == [1, 15]


DIED = "Lock lock:r is not acquired or it already expired."


def test_redis_lock_join_a_dead_renewal_thread_rejects_the_refresh_before_it() -> None:
    # python-redis-lock 4.0.1: the task's release signals the renewal thread while its extend is in
    # flight ("Signaling ... to exit" after "Refreshing"); the extend is rejected and the thread's
    # traceback ends with NotAcquired's message, a record of its own in a Celery worker's log
    rows = [
        {"dialect": P, "event": "lock_acquired", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lease_renewal", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "lease_renewal", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "job_progress", "job_id": "r", "thread": "W1"},
        {"dialect": P, "event": "job_progress", "job_id": "r", "thread": "W1", "message": DIED},
        {"dialect": P, "event": "lock_released", "job_id": "r", "thread": "W1"},
        # another worker process's refresh, confirmed by its next line, is not touched
        {"dialect": P, "event": "lock_acquired", "job_id": "r", "thread": "W2"},
        {"dialect": P, "event": "lease_renewal", "job_id": "r", "thread": "W2"},
        {"dialect": P, "event": "lease_renewal", "job_id": "r", "thread": "W2"},
    ]
    out = BY_NAME[P].join(frame(rows))  # type: ignore[misc]
    assert out["renewal_outcome"].to_list() == [
        None, "success", "rejected", None, None, None, None, "success", None,
    ]  # fmt: skip
    assert out["event"].to_list()[4] == "job_progress"  # the process was alive then
    # without the traceback, the "Signaling" line would have confirmed that refresh
    rows.pop(4)
    out = BY_NAME[P].join(frame(rows))  # type: ignore[misc]
    assert out["renewal_outcome"].to_list()[2] == "success"
    assert BY_NAME[P].match(DIED) == ("job_progress", {"job_id": "r"})


def test_celery_join_a_release_no_task_end_follows_is_not_confirmed() -> None:
    rows = [
        {"dialect": C, "event": "job_triggered", "job_id": "t.render", "message_id": T1, "thread": "MainProcess"},
        {"dialect": P, "event": "lock_acquired", "job_id": "report-42", "thread": "ForkPoolWorker-1"},
        {"dialect": P, "event": "lock_released", "job_id": "report-42", "thread": "ForkPoolWorker-1"},
        # (the worker was killed here: no "succeeded" / "raised" line for T1)
        {"dialect": C, "event": "job_triggered", "job_id": "t.render", "message_id": T2, "thread": "MainProcess"},
        {"dialect": P, "event": "lock_acquired", "job_id": "report-42", "thread": "ForkPoolWorker-2"},
        {"dialect": P, "event": "lock_released", "job_id": "report-42", "thread": "ForkPoolWorker-2"},
        {"dialect": C, "event": "job_finished", "job_id": "t.render", "execution_id": T2, "status": "ok",
         "thread": "ForkPoolWorker-2"},
    ]  # fmt: skip
    out = BY_NAME[C].join(frame(rows))  # type: ignore[misc]
    assert out["event"].to_list() == [
        "job_triggered", "lock_acquired", "job_progress",
        "job_triggered", "lock_acquired", "lock_released", "job_finished",
    ]  # fmt: skip
    assert out["execution_id"].to_list() == [T1, T1, T1, T2, T2, T2, T2]
    assert out["released"].to_list()[5] == "true"
