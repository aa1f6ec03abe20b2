"""A lab worker's flat log rows, and the same rows as loggers that leave something out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timezone
from typing import Any

Row = dict[str, Any]
Pods = Mapping[str, list[Row]]

META = ("ts", "pod", "thread", "level", "logger", "message")
THREAD = "report-exec-1"  # the thread a layout names when the rows do not say


def without_ids(pods: Pods) -> dict[str, list[Row]]:
    """The same rows as a worker that logs no execution id would write them."""
    drop = ("executionId", "execution_id")
    return {pod: [{k: v for k, v in r.items() if k not in drop} for r in rows] for pod, rows in pods.items()}


def without_threads(pods: Pods) -> dict[str, list[Row]]:
    """The same rows as a layout that logs no thread carries them."""
    return {pod: [{k: v for k, v in r.items() if k != "thread"} for r in rows] for pod, rows in pods.items()}


def row_time(row: Row) -> datetime:
    return datetime.fromisoformat(str(row["ts"]).replace("Z", "+00:00"))


def iso(t: datetime, digits: int = 3, tz: timezone = UTC) -> str:
    t = t.astimezone(tz)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{t.microsecond:06d}{'000'}"[:digits]
    zone = "Z" if tz is UTC else t.strftime("%z")[:3] + ":" + t.strftime("%z")[3:]
    return f"{base}.{frac}{zone}" if digits else f"{base}{zone}"


def thread(row: Row, default: str = THREAD) -> str:
    """The thread that logged the row (the worker's own name for it), or the layout's usual one."""
    return str(row.get("thread") or default)


def kv(row: Row, job: str | None) -> Row:
    """The row's MDC / key-value fields (everything but time, pod, level, logger, message)."""
    out = {k: v for k, v in row.items() if k not in META}
    if "jobId" in out and job is not None:
        out["jobId"] = job
    return out


def mdc_str(v: Any) -> str:
    """A value as an MDC string (`false`, not Python's `False`)."""
    return str(v).lower() if isinstance(v, bool) else str(v)


def level(row: Row) -> str:
    return str(row.get("level", "INFO"))


def logger(row: Row) -> str:
    return str(row.get("logger", "c.a.reports.ReportJob"))


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def process_starts(rows: list[Row]) -> list[int]:
    """Each row's container on its pod, counted: the pod's start-up lines before it (a process started
    again on the pod, after its start-up line, is a new container with a new id)."""
    starts = 0
    out = []
    for i, r in enumerate(rows):
        if i and "(process running for " in str(r.get("message", "")):
            starts += 1
        out.append(starts)
    return out


def with_containers(pods: Pods) -> dict[str, list[Row]]:
    """The same rows, each naming its container (`container_id`) as the shapes that log one do
    (`shapes.CONTAINER_SHAPES`): the flat logs such a shape is held against."""
    return {
        pod: [{**r, "container_id": f"{pod}/{n}"} for r, n in zip(rows, process_starts(rows), strict=True)]
        for pod, rows in pods.items()
    }
