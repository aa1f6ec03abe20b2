"""Timestamps of several kinds in one file are each read right (the fast `Z` parse only takes the first pass)."""

from __future__ import annotations

import json
from pathlib import Path

import leaselog

CASES = [
    ("2025-06-12T09:14:03.512Z", "2025-06-12T09:14:03.512000+00:00"),
    ("2025-06-12T09:14:04Z", "2025-06-12T09:14:04+00:00"),
    ("2025-06-12T11:14:05.5+02:00", "2025-06-12T09:14:05.500000+00:00"),
    ("2025-06-12 09:14:06.25Z", "2025-06-12T09:14:06.250000+00:00"),
    ("2025-06-12T09:14:07.125", "2025-06-12T09:14:07.125000+00:00"),  # no zone: UTC
    (1749719648000, "2025-06-12T09:14:08+00:00"),  # epoch millis
]


def _analyze(tmp_path: Path, stamps: list[object]) -> list[str]:
    lines = [
        json.dumps({"ts": ts, "jobId": "j", "executionId": f"e{i}", "event": "lock_acquired", "leaseMs": 1})
        for i, ts in enumerate(stamps)
    ]
    (tmp_path / "w.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    a = leaselog.analyze(tmp_path / "w.jsonl")
    return [t.isoformat() for t in a.events.sort("line")["t"]]


def test_mixed_timestamps_in_one_file(tmp_path: Path) -> None:
    assert _analyze(tmp_path, [ts for ts, _ in CASES]) == [want for _, want in CASES]


def test_only_z_timestamps(tmp_path: Path) -> None:
    assert _analyze(tmp_path, [ts for ts, _ in CASES[:2]]) == [want for _, want in CASES[:2]]


def test_only_offset_timestamps(tmp_path: Path) -> None:
    assert _analyze(tmp_path, [CASES[2][0]]) == [CASES[2][1]]
