"""The article's incident written by the real Python loggers: the standard library's `logging`,
python-json-logger and loguru, each configured the way a service does it, each line's time fixed to the
story's (a logging Filter sets `record.created`, loguru's `patch` sets `record["time"]`) so leaselog's
figures can be compared with the written truth exactly.

`write(layout, pods, folder)` writes `<pod>.log` per pod. The lease fields are what a service adds to a
line: `extra=` for python-json-logger, `bind()` for loguru, `key=value` pairs in the message for the
standard library's text layouts.
"""

from __future__ import annotations

import io
import logging
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from leaselog.reproduce.rows import Pods, Row, kv, level, row_time

# the standard library's layouts a service configures (or leaves as they are)
STDLIB = {
    # the everyday console layout
    "console": "%(asctime)s %(levelname)s [%(name)s] %(message)s",
    # logging.basicConfig(format=...) as the logging HOWTO shows it
    "basic": "%(asctime)s %(message)s",
    # the logging cookbook's layout
    "cookbook": "%(asctime)s - %(name)s - %(levelname)s - %(message)s",
    # logging.BASIC_FORMAT, what basicConfig() writes when given no format: no time at all
    "default": logging.BASIC_FORMAT,
    # a JSON-looking format string: the message (with its key=value pairs) inside a quoted value
    "json-format": '{"time": "%(asctime)s", "level": "%(levelname)s", "logger": "%(name)s", '
    '"message": "%(message)s"}',
}
LEVELS = {"WARN": logging.WARNING, "ERROR": logging.ERROR, "DEBUG": logging.DEBUG, "INFO": logging.INFO}


class FixedTime(logging.Filter):
    """Gives each record the time the story says (the next one in `times`)."""

    def __init__(self) -> None:
        super().__init__()
        self.at: datetime | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.at is not None:
            record.created = self.at.timestamp()
            record.msecs = self.at.microsecond // 1000
        return True


def pairs(row: Row, job: str | None, pod: str) -> str:
    """The pod and the row's lease fields as `key=value` pairs, as a service's message carries them."""
    fields = {"pod": pod, **kv(row, job)}
    return " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in fields.items())


def _stdlib_logger(
    name: str, formatter: logging.Formatter, out: io.StringIO
) -> tuple[logging.Logger, FixedTime]:
    handler = logging.StreamHandler(out)
    formatter.converter = time.gmtime  # the pods run in UTC (asctime is local time, written without a zone)
    handler.setFormatter(formatter)
    fixed = FixedTime()
    handler.addFilter(fixed)
    log = logging.getLogger(name)
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.DEBUG)
    return log, fixed


def stdlib_lines(fmt: str, rows: list[Row], job: str | None, pod: str, name: str = "report.worker") -> str:
    """The rows through `logging` with format `fmt`, the lease fields as key=value pairs in the message."""
    out = io.StringIO()
    log, fixed = _stdlib_logger(f"{name}.{id(out)}", logging.Formatter(fmt), out)
    log.name = name
    for r in rows:
        fixed.at = row_time(r)
        msg = " ".join(x for x in (str(r.get("message", "")), pairs(r, job, pod)) if x)
        log.log(LEVELS[level(r)], "%s", msg)
    return out.getvalue()


def json_logger_lines(rows: list[Row], job: str | None, pod: str, **options: Any) -> str:
    """The rows through python-json-logger's JsonFormatter (the documented `"%(asctime)s %(levelname)s
    %(name)s %(message)s"` unless `fmt` is given), the lease fields (and the pod) as `extra=`."""
    from pythonjsonlogger.json import JsonFormatter

    fmt = options.pop("fmt", "%(asctime)s %(levelname)s %(name)s %(message)s")
    out = io.StringIO()
    log, fixed = _stdlib_logger(f"json.{id(out)}", JsonFormatter(fmt, **options), out)
    log.name = "report.worker"
    for r in rows:
        fixed.at = row_time(r)
        log.log(LEVELS[level(r)], str(r.get("message", "")), extra={"pod": pod, **kv(r, job)})
    return out.getvalue()


def loguru_lines(rows: list[Row], job: str | None, pod: str) -> str:
    """The rows through loguru with `serialize=True`, the lease fields (and the pod) bound to the line."""
    from loguru import logger

    # loguru has one logger: its handlers (the default stderr one) give way to this sink while it writes,
    # and come back as loguru starts (`logger.add(sys.stderr)`) after
    logger.remove()
    out = io.StringIO()
    logger.add(out, serialize=True, level="DEBUG")
    for r in rows:
        at = row_time(r).astimezone(UTC)

        def fix(rec: Any, at: datetime = at) -> None:
            # loguru's own datetime type (its `text` formats the time with it), at the story's time
            rec["time"] = type(rec["time"]).fromtimestamp(at.timestamp(), tz=UTC)

        line = logger.patch(fix).bind(pod=pod, **kv(r, job))
        line.log({"WARN": "WARNING"}.get(level(r), level(r)), str(r.get("message", "")))
    logger.remove()
    logger.add(sys.stderr)
    return out.getvalue()


def loguru_flat_lines(rows: list[Row], job: str | None, pod: str) -> str:
    """The rows through loguru's recipe for a flat line of one's own ("Serializing log messages using a custom
    function": a `patch()` that puts `json.dumps` of a subset of the record in `extra`, a sink whose format is
    only that), the bound fields in the subset too."""
    import json

    from loguru import logger

    def serialize(rec: Any) -> str:
        extra = {k: v for k, v in rec["extra"].items() if k != "serialized"}
        subset = {"timestamp": rec["time"].timestamp(), "message": rec["message"], "level": rec["level"].name}
        return json.dumps({**subset, **extra})

    logger.remove()
    out = io.StringIO()
    logger.add(out, format="{extra[serialized]}", level="DEBUG")
    for r in rows:
        at = row_time(r).astimezone(UTC)

        def patching(rec: Any, at: datetime = at) -> None:
            rec["time"] = type(rec["time"]).fromtimestamp(at.timestamp(), tz=UTC)
            rec["extra"]["serialized"] = serialize(rec)

        line = logger.bind(pod=pod, **kv(r, job)).patch(patching)
        line.log({"WARN": "WARNING"}.get(level(r), level(r)), str(r.get("message", "")))
    logger.remove()
    logger.add(sys.stderr)
    return out.getvalue()


Writer = Callable[[list[Row], str | None, str], str]

WRITERS: dict[str, Writer] = {
    **{
        f"stdlib-{k}": (lambda rows, job, pod, f=f: stdlib_lines(f, rows, job, pod))
        for k, f in STDLIB.items()
    },
    "python-json-logger": lambda rows, job, pod: json_logger_lines(rows, job, pod),
    "python-json-logger-timestamp": lambda rows, job, pod: json_logger_lines(
        rows,
        job,
        pod,
        fmt="%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level"},
        timestamp=True,
    ),
    "loguru": loguru_lines,
    "loguru-flat": loguru_flat_lines,
}


def structlog_lines(rows: list[Row], job: str | None, pod: str) -> str:
    """The rows through structlog's JSONRenderer (`add_log_level`, `TimeStamper(fmt="iso")`, the event name
    as structlog's `event`, the lease fields and the pod as keyword arguments); its clock set to the
    row's time (`structlog.processors` reads `datetime.datetime.now`)."""
    import datetime as dt
    import types

    import structlog

    out = io.StringIO()
    at: list[datetime] = []

    class Clock(dt.datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Clock:  # type: ignore[override]
            return cls.fromtimestamp(at[-1].timestamp(), tz=tz)

    structlog.processors.datetime = types.SimpleNamespace(datetime=Clock, timezone=dt.timezone)  # type: ignore[attr-defined]
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    log = structlog.get_logger().bind(pod=pod)
    for r in rows:
        at.append(row_time(r))
        fields = {k: v for k, v in kv(r, job).items() if k != "event"}
        name = str(r.get("event") or r.get("message", ""))
        getattr(log, {"WARN": "warning"}.get(level(r), level(r).lower()))(name, **fields)
    return out.getvalue()


def ecs_logging_lines(rows: list[Row], job: str | None, pod: str) -> str:
    """The rows through ecs-logging's StdlibFormatter, the lease fields and the pod as `extra=`."""
    from ecs_logging import StdlibFormatter

    out = io.StringIO()
    log, fixed = _stdlib_logger(f"ecs.{id(out)}", StdlibFormatter(), out)
    log.name = "report.worker"
    for r in rows:
        fixed.at = row_time(r)
        log.log(LEVELS[level(r)], str(r.get("message", "")), extra={"pod": pod, **kv(r, job)})
    return out.getvalue()


# written once with the real libraries into tests/fixtures/python_loggers/<name>/ (they are not the project's
# dependencies): `python tests/reading/python_loggers.py` in a virtualenv holding structlog and ecs-logging
FIXTURES: dict[str, Writer] = {"structlog": structlog_lines, "ecs-logging": ecs_logging_lines}
FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "python_loggers"


def write(layout: str, pods: Pods, folder: Path, job: str | None = None) -> dict[str, Path]:
    """`<pod>.log` per pod in `folder`, written by the real library in `layout`."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for pod, rows in pods.items():
        p = folder / f"{pod}.log"
        p.write_text({**WRITERS, **FIXTURES}[layout](rows, job, pod), encoding="utf-8")
        out[pod] = p
    return out


if __name__ == "__main__":
    from importlib.metadata import version

    import shapes

    for name in FIXTURES:
        folder = FIXTURE_DIR / name
        write(name, shapes.story(), folder)
        (folder / "VERSION").write_text(f"{name} {version(name)}\n", encoding="utf-8")
    print(f"wrote {FIXTURE_DIR}")
