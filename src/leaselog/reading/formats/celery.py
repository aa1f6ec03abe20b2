"""Celery's worker log lines: `[%(asctime)s: %(levelname)s/%(processName)s] %(message)s`.

Celery 5.7.0 `celery/app/defaults.py`: `DEFAULT_PROCESS_LOG_FMT` (`worker_log_format`) is the shape above;
`DEFAULT_TASK_LOG_FMT` (`worker_task_log_format`, for task loggers) puts `%(task_name)s[%(task_id)s]: `
before the message. Both leave `datefmt` unset (`worker_log_datefmt`/`worker_task_log_datefmt` default
None), so `asctime` is Python logging's default: local time `2026-12-01 10:00:00,123`, no zone (read as
UTC unless --timezone says otherwise). `processName` is `MainProcess` for the consumer and
`ForkPoolWorker-N` for a prefork pool process: it goes to `processName` (the execution's thread).
`key=value` pairs in a message (an application's own lease fields) become fields, as in console lines.
A traceback follows an error record as `Traceback (most recent call last):`, indented frames and the
exception's line: continuations.
"""

from __future__ import annotations

import re
from typing import Any

from leaselog.reading.formats._common import Malformed, Record, decode
from leaselog.reading.formats.console import key_value_pairs

Obj = dict[str, Any] | None

_LINE = re.compile(
    r"\[(?P<date>\d{4}-\d\d-\d\d) (?P<tod>\d\d:\d\d:\d\d)(?:,(?P<ms>\d{1,6}))?: "
    r"(?P<level>[A-Z]+)/(?P<process>[^\]]+)\] (?P<msg>.*)\Z",
    re.DOTALL,
)
# the task logger's prefix `task_name[task_id]: ` (a task's own log lines)
_TASK = re.compile(r"(?P<task>[\w.:-]+)\[(?P<id>[0-9a-fA-F-]{8,})\]: (?P<msg>.*)\Z", re.DOTALL)


def celery_record(text: str) -> Record | None:
    m = _LINE.match(text)
    if m is None:
        return None
    frac = f".{m.group('ms')}" if m.group("ms") else ""
    rec: Record = {
        "@timestamp": f"{m.group('date')}T{m.group('tod')}{frac}",
        "level": m.group("level"),
        "processName": m.group("process"),
        "message": m.group("msg"),
    }
    t = _TASK.match(m.group("msg"))
    if t is not None:
        rec["celery.task_name"] = t.group("task")
        rec["celery.task_id"] = t.group("id")
        rec["message"] = t.group("msg")
    # an application's lease fields as `key=value` pairs in the message (structlog's KeyValueRenderer,
    # printf): fields, last wins
    if "=" in rec["message"]:
        key_value_pairs(rec["message"], rec)
    return rec


def parse_celery(line: bytes) -> list[Record]:
    rec = celery_record(decode(line).rstrip("\r\n"))
    if rec is None:
        raise Malformed("not a Celery worker line ([TIME: LEVEL/ProcessName] message)")
    return [rec]


def sniff_celery(line: bytes, obj: Obj) -> bool:
    if obj is not None or line[:1] != b"[":
        return False
    try:
        return celery_record(line.decode("utf-8").rstrip("\r\n")) is not None
    except UnicodeDecodeError:
        return False


def celery_shape(line: bytes) -> str | None:
    try:
        parse_celery(line)
    except Malformed as e:
        return str(e)
    return None
