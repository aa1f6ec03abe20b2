"""A pod value shared by every file of a multi-file input is no pod identity: the file name wins.

Spring Boot's GELF output writes the application name in `host`, identical on every pod (issue 12, #4).
Taken as the pod, it merged the pods into one and made a cross-pod handover within the clock-skew bound a
"certain" error; with each file's name as its pod the same handover is uncertain, below error.
"""

from __future__ import annotations

import json
from pathlib import Path

import leaselog


def _gelf(ts: float, ex: str, event: str, **extra: object) -> str:
    rec = {"version": "1.1", "short_message": event, "timestamp": ts, "level": 6, "host": "report-worker"}
    rec |= {"_jobId": "report-6", "_executionId": ex, "_event": event}
    rec |= {f"_{k}": v for k, v in extra.items()}
    return json.dumps(rec)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _handover(tmp_path: Path) -> list[Path]:
    """attempt-a's 2 s lease runs out at 14.518 by pod-a's clock; pod-c acquires at 14.479 by its own."""
    t0 = 1796037852.518
    a = [
        _gelf(t0 - 0.008, "attempt-a", "job_triggered", trigger="stream", messageId="1-0", deliveryCount=1),
        _gelf(t0, "attempt-a", "lock_acquired", leaseMs=2000, fencingToken=1),
        _gelf(t0 + 0.001, "attempt-a", "job_started"),
        _gelf(t0 + 3.5, "attempt-a", "job_finished", status="ok"),
        _gelf(t0 + 3.501, "attempt-a", "lock_released", released=False),
    ]
    c = [
        _gelf(t0 + 1.957, "attempt-c", "job_triggered", trigger="stream", messageId="1-0", deliveryCount=2),
        _gelf(t0 + 1.961, "attempt-c", "lock_acquired", leaseMs=2000, fencingToken=2),
        _gelf(t0 + 1.962, "attempt-c", "job_started"),
        _gelf(t0 + 2.9, "attempt-c", "job_finished", status="ok"),
        _gelf(t0 + 2.901, "attempt-c", "lock_released", released=True),
    ]
    return [_write(tmp_path / "pod-a.json", a), _write(tmp_path / "pod-c.json", c)]


def test_app_name_in_every_file_gives_way_to_the_file_names(tmp_path: Path) -> None:
    a = leaselog.analyze(_handover(tmp_path))
    pods = dict(zip(a.executions["execution_id"], a.executions["pod"], strict=True))
    assert pods == {"attempt-a": "pod-a", "attempt-c": "pod-c"}
    concurrent = [f for f in a.finding_list if f.kind == "concurrent_leases"]
    assert concurrent, "the handover 39 ms before the lease ran out is still reported"
    for f in concurrent:
        assert f.certainty == "uncertain" and f.severity != "error", f.message
        assert set(f.pods) == {"pod-a", "pod-c"}


def test_one_file_keeps_its_lines_pod(tmp_path: Path) -> None:
    a = leaselog.analyze(_handover(tmp_path)[:1])
    assert set(a.executions["pod"]) == {"report-worker"}


def test_rotated_files_of_one_pod_keep_it(tmp_path: Path) -> None:
    """Files whose names give one pod (a rotation) tell nothing apart: the lines' pod stays."""
    files = _handover(tmp_path)
    files[0].rename(tmp_path / "worker.json")
    files[1].rename(tmp_path / "worker.json.1")
    a = leaselog.analyze([tmp_path / "worker.json", tmp_path / "worker.json.1"])
    assert set(a.executions["pod"]) == {"report-worker"}


def test_distinct_pods_in_the_lines_are_kept(tmp_path: Path) -> None:
    files = _handover(tmp_path)
    text = files[1].read_text(encoding="utf-8").replace('"host": "report-worker"', '"host": "worker-7"')
    files[1].write_text(text, encoding="utf-8")
    a = leaselog.analyze(files)
    assert set(a.executions["pod"]) == {"report-worker", "worker-7"}
