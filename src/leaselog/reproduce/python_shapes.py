"""The fleet's rows as Python services log them (leaselog.reading.formats.python_logging cites each
library's source): registered into `leaselog.reproduce.shapes.SHAPES` on import. The lease fields (and the
pod) are what a service adds to a line: `key=value` pairs in the standard library's message, `extra=` for
python-json-logger, `bind()` for loguru. tests/reading/test_python_loggers.py checks each renderer writes
what the real library writes for the same rows.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from leaselog.reproduce.rows import Row, kv, level, mdc_str, row_time, thread
from leaselog.reproduce.shapes import row_shape

LOGGER = "report.worker"  # the service's module logger (`logging.getLogger(__name__)`)
# Python's level names for the rows' (CPython `logging._levelToName`)
_LEVELS = {"WARN": "WARNING", "FATAL": "CRITICAL"}
# loguru 0.7.3 `loguru/_defaults.py`: each level's number and icon
_LOGURU = {
    "DEBUG": (10, "\U0001f41e"),
    "INFO": (20, "\u2139\ufe0f"),
    "WARNING": (30, "\u26a0\ufe0f"),
    "ERROR": (40, "\u274c"),
    "CRITICAL": (50, "\u2620\ufe0f"),
}


def python_level(row: Row) -> str:
    return _LEVELS.get(level(row), level(row))


def asctime(t: datetime) -> str:
    """`logging.Formatter.formatTime`'s default: `%Y-%m-%d %H:%M:%S` then `,%03d` milliseconds (UTC here)."""
    t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S") + f",{t.microsecond // 1000:03d}"


def fields(row: Row, pod: str, job: str | None) -> Row:
    return {"pod": pod, **kv(row, job)}


def message_with_pairs(row: Row, pod: str, job: str | None) -> str:
    """The message and the fields as `key=value` pairs, as `log.info("... jobId=%s", job)` writes them."""
    pairs = " ".join(f"{k}={mdc_str(v)}" for k, v in fields(row, pod, job).items())
    return " ".join(x for x in (str(row.get("message", "")), pairs) if x)


@row_shape("python-logging", ".log", "python-logging")
def python_logging(row: Row, pod: str, job: str | None) -> list[str]:
    """The standard library's everyday console layout, `%(asctime)s %(levelname)s [%(name)s] %(message)s`,
    the lease fields as `key=value` pairs in the message (the time local, here UTC, without a zone)."""
    return [f"{asctime(row_time(row))} {python_level(row)} [{LOGGER}] {message_with_pairs(row, pod, job)}"]


@row_shape("python-json-logger", ".log", "flat")
def python_json_logger(row: Row, pod: str, job: str | None) -> list[str]:
    """python-json-logger's JsonFormatter with its documented `%(asctime)s %(levelname)s %(name)s
    %(message)s`: those keys in that order, then `extra=` (the pod and the lease fields)."""
    rec = {
        "asctime": asctime(row_time(row)),
        "levelname": python_level(row),
        "name": LOGGER,
        "message": str(row.get("message", "")),
        **fields(row, pod, job),
    }
    return [json.dumps(rec)]


def _loguru_time(t: datetime) -> str:
    """`str()` of loguru's aware datetime (`2026-11-02 10:00:00.120000+00:00`, no fraction when zero)."""
    return str(t.astimezone(UTC))


@row_shape("loguru", ".log", "loguru")
def loguru(row: Row, pod: str, job: str | None) -> list[str]:
    """loguru's `serialize=True` line: `text` (its default format, uncoloured) and the record, the pod and
    the lease fields bound with `bind()` (under `record.extra`), the thread the row names (else
    `MainThread`)."""
    t = row_time(row).astimezone(UTC)
    lvl = python_level(row)
    no, icon = _LOGURU.get(lvl, (20, _LOGURU["INFO"][1]))
    message = str(row.get("message", ""))
    function, line = "run_report", 42
    text = f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} | {lvl:<8} | {LOGGER}:{function}:{line} - {message}\n"
    record: dict[str, Any] = {
        "elapsed": {"repr": "0:00:01.500000", "seconds": 1.5},
        "exception": None,
        "extra": fields(row, pod, job),
        "file": {"name": "worker.py", "path": "/app/report/worker.py"},
        "function": function,
        "level": {"icon": icon, "name": lvl, "no": no},
        "line": line,
        "message": message,
        "module": "worker",
        "name": LOGGER,
        "process": {"id": 1, "name": "MainProcess"},
        "thread": {"id": 140245120374592, "name": thread(row, "MainThread")},
        "time": {"repr": _loguru_time(t), "timestamp": t.timestamp()},
    }
    return [json.dumps({"text": text, "record": record}, ensure_ascii=False)]
