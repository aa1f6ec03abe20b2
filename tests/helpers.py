"""Shared test helpers (importable as `helpers`: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import leaselog

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def analyze_rows(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> leaselog.Analysis:
    jsonl(tmp_path / "log.jsonl", rows)
    return leaselog.analyze(tmp_path / "log.jsonl", **options)
