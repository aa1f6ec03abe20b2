"""Shared fixtures. Plain helpers live in tests/helpers.py (`from helpers import jsonl, SAMPLES`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import ROOT, SAMPLES, analyze_rows, jsonl

__all__ = ["ROOT", "SAMPLES", "analyze_rows", "jsonl"]


@pytest.fixture
def write_logs(tmp_path: Path) -> Callable[..., Path]:
    """write_logs({"pod-a.jsonl": [rows...], ...}) -> folder holding them."""

    def _write(files: dict[str, list[dict[str, Any]]]) -> Path:
        for name, rows in files.items():
            jsonl(tmp_path / name, rows)
        return tmp_path

    return _write
