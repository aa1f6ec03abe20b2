"""Shared test helpers: write small JSONL fixtures and analyze them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import leaselog

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def write_logs(tmp_path: Path) -> Callable[..., Path]:
    """write_logs({"pod-a.jsonl": [rows...], ...}) -> folder holding them."""

    def _write(files: dict[str, list[dict[str, Any]]]) -> Path:
        for name, rows in files.items():
            jsonl(tmp_path / name, rows)
        return tmp_path

    return _write


def analyze_rows(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> leaselog.Analysis:
    jsonl(tmp_path / "log.jsonl", rows)
    return leaselog.analyze(tmp_path / "log.jsonl", **options)
