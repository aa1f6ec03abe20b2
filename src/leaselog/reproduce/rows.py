"""A lab worker's flat log rows, and the same rows as loggers that leave something out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Row = dict[str, Any]
Pods = Mapping[str, list[Row]]


def without_ids(pods: Pods) -> dict[str, list[Row]]:
    """The same rows as a worker that logs no execution id would write them."""
    drop = ("executionId", "execution_id")
    return {pod: [{k: v for k, v in r.items() if k not in drop} for r in rows] for pod, rows in pods.items()}


def without_threads(pods: Pods) -> dict[str, list[Row]]:
    """The same rows as a layout that logs no thread carries them."""
    return {pod: [{k: v for k, v in r.items() if k != "thread"} for r in rows] for pod, rows in pods.items()}
