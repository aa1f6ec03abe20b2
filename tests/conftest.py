"""Shared fixtures. Plain helpers live in tests/helpers.py (`from helpers import jsonl, SAMPLES`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from helpers import ROOT, SAMPLES, analyze_rows, jsonl

__all__ = ["ROOT", "SAMPLES", "analyze_rows", "jsonl"]

# In CI, property tests run the same examples every time (a red CI must be reproducible, never a dice
# roll); locally they explore new inputs on every run. No per-example deadline anywhere: on a shared
# 2-core machine one polars call can take longer than hypothesis' default 200 ms, and a DeadlineExceeded
# there says nothing about leaselog (it made test_durations_column_equals_format_duration flaky).
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("local", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "local")


@pytest.fixture
def write_logs(tmp_path: Path) -> Callable[..., Path]:
    """write_logs({"pod-a.jsonl": [rows...], ...}) -> folder holding them."""

    def _write(files: dict[str, list[dict[str, Any]]]) -> Path:
        for name, rows in files.items():
            jsonl(tmp_path / name, rows)
        return tmp_path

    return _write
