"""Python's standard library `logging` in its text layouts, and loguru's `serialize=True` lines.

The standard library (CPython 3.11.7 `Lib/logging/__init__.py`): `Formatter.default_time_format =
'%Y-%m-%d %H:%M:%S'` and `default_msec_format = '%s,%03d'`, so `%(asctime)s` is `2026-12-03 11:10:54,365`
(milliseconds after a comma) in local time (`converter = time.localtime`), written without a zone: read
as UTC unless --timezone names the zone the service ran in. Level names are `_levelToName`'s (CRITICAL,
ERROR, WARNING, INFO, DEBUG, NOTSET) or `Level N` for an unnamed level. Two shapes:

- `python-logging`: a line that starts with `asctime`, then one of the layouts services configure:
  `%(asctime)s %(levelname)s [%(name)s] %(message)s`, the logging cookbook's
  `%(asctime)s - %(name)s - %(levelname)s - %(message)s`, `%(asctime)s [%(levelname)s] %(name)s: %(message)s`,
  `%(asctime)s %(levelname)s %(message)s`, `%(asctime)s %(levelname)s:%(name)s:%(message)s`, and
  `basicConfig(format='%(asctime)s %(message)s')` (whatever follows the time is the message);
- `python-basic`: `BASIC_FORMAT = "%(levelname)s:%(name)s:%(message)s"`, what `basicConfig()` writes
  when given no format. It carries no time at all: the order of its lines is their order in the file.

In both, the message's `key=value` pairs (`log.info("acquired jobId=%s ...", job)`) are the line's
fields, last wins; a line without lease fields is unrelated to leases (ignored, not malformed).

python-json-logger 4.2.0 `pythonjsonlogger/core.py` (`BaseJsonFormatter.add_fields`) writes flat JSON, read as
`flat`: the format string's fields as keys (`asctime`, `levelname`, `name`, `message` for the documented
`"%(asctime)s %(levelname)s %(name)s %(message)s"`), then `extra=`'s; `timestamp=True` adds `timestamp`
(`datetime.fromtimestamp(record.created, tz=timezone.utc)`, written by `defaults.datetime_default` as
`isoformat()`); `rename_fields` renames any key. `asctime` is a time key (leaselog.vocabulary).

loguru 0.7.3 `loguru/_handler.py` `Handler._serialize_record`: with `serialize=True` each line is
`{"text": <the formatted line>, "record": {...}}`, the record holding `extra` (what `bind()`,
`contextualize()` and keyword arguments added: the lease fields), `time.repr` (`str()` of an aware
datetime, `2026-12-03 11:10:54.365000+00:00`, local time with its offset; the fraction left out when it is
zero), `time.timestamp` (epoch seconds), `level.name`, `message`, `name`, `function`, `line`,
`thread.name`, `process.name`, `exception`. The record is unwrapped: `extra`'s keys as the line's own,
then time, level, message, logger and thread under their usual names (an `extra` key never shadows them).
"""

from __future__ import annotations

import re
from typing import Any

from leaselog.reading.formats._common import Malformed, Record, decode, flatten, load_object
from leaselog.reading.formats.console import key_value_pairs

Obj = dict[str, Any] | None

_LEVEL = r"(?P<level>CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG|NOTSET|Level \d+)"
_ASCTIME = re.compile(r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:,\d{3})?) (?P<rest>.*)\Z", re.DOTALL)
# what follows `%(asctime)s `, in the layouts services configure (the first that fits)
_LAYOUTS = (
    # %(levelname)s [%(name)s] %(message)s
    re.compile(_LEVEL + r"\s+\[(?P<logger>[^\]\s]*)\]\s?(?P<msg>.*)\Z", re.DOTALL),
    # the cookbook's - %(name)s - %(levelname)s - %(message)s
    re.compile(r"-\s+(?P<logger>\S+)\s+-\s+" + _LEVEL + r"\s+-\s?(?P<msg>.*)\Z", re.DOTALL),
    # [%(levelname)s] %(name)s: %(message)s
    re.compile(r"\[" + _LEVEL + r"\]\s+(?P<logger>[^\s:]+):\s?(?P<msg>.*)\Z", re.DOTALL),
    # %(levelname)s:%(name)s:%(message)s after the time
    re.compile(_LEVEL + r":(?P<logger>[^\s:]*):(?P<msg>.*)\Z", re.DOTALL),
    # %(levelname)s %(message)s
    re.compile(_LEVEL + r"\s+(?P<msg>.*)\Z", re.DOTALL),
)
_BASIC = re.compile(_LEVEL + r":(?P<logger>[^\s:]*):(?P<msg>.*)\Z", re.DOTALL)


def _with_pairs(rec: Record) -> Record:
    if "=" in rec["message"]:
        key_value_pairs(rec["message"], rec)
    return rec


def python_record(text: str) -> Record | None:
    """A `python-logging` line's record (asctime, level, logger, message, then the message's pairs)."""
    m = _ASCTIME.match(text)
    if m is None:
        return None
    rec: Record = {"asctime": m.group("ts")}
    rest = m.group("rest")
    for layout in _LAYOUTS:
        lm = layout.match(rest)
        if lm is not None:
            rec["level"] = lm.group("level")
            logger = lm.groupdict().get("logger")
            if logger:
                rec["logger"] = logger
            rec["message"] = lm.group("msg")
            return _with_pairs(rec)
    rec["message"] = rest  # basicConfig(format='%(asctime)s %(message)s')
    return _with_pairs(rec)


def basic_record(text: str) -> Record | None:
    """A `python-basic` line's record (`LEVEL:logger:message`, no time)."""
    m = _BASIC.match(text)
    if m is None:
        return None
    return _with_pairs({"level": m.group("level"), "logger": m.group("logger"), "message": m.group("msg")})


def parse_python(line: bytes) -> list[Record]:
    rec = python_record(decode(line).rstrip("\r\n"))
    if rec is None:
        raise Malformed("not a Python logging line (`%(asctime)s ...` layout)")
    return [rec]


def sniff_python(line: bytes, obj: Obj) -> bool:
    if obj is not None or not line[:1].isdigit():
        return False
    try:
        return python_record(line.decode("utf-8").rstrip("\r\n")) is not None
    except UnicodeDecodeError:
        return False


def python_shape(line: bytes) -> str | None:
    try:
        parse_python(line)
    except Malformed as e:
        return str(e)
    return None


def parse_basic(line: bytes) -> list[Record]:
    rec = basic_record(decode(line).rstrip("\r\n"))
    if rec is None:
        raise Malformed("not a Python logging default line (LEVEL:logger:message)")
    return [rec]


def sniff_basic(line: bytes, obj: Obj) -> bool:
    if obj is not None or not line[:1].isalpha():
        return False
    try:
        return basic_record(line.decode("utf-8").rstrip("\r\n")) is not None
    except UnicodeDecodeError:
        return False


def basic_shape(line: bytes) -> str | None:
    try:
        parse_basic(line)
    except Malformed as e:
        return str(e)
    return None


# ---------------------------------------------------------------- loguru serialize=True


def is_loguru(obj: dict[str, Any]) -> bool:
    record = obj.get("record")
    return isinstance(record, dict) and "text" in obj and "time" in record and "extra" in record


def sniff_loguru(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_loguru(obj)


def _name(part: Any) -> Any:
    return part.get("name") if isinstance(part, dict) else None


def loguru_record(obj: dict[str, Any]) -> Record:
    """The serialized record unwrapped: `extra` at the top, then time, level, message, logger, thread."""
    record = obj.get("record")
    if not isinstance(record, dict):
        raise Malformed("not a loguru serialized line: no `record` object")
    extra = record.get("extra")
    rec: Record = flatten(extra) if isinstance(extra, dict) else {}
    time = record.get("time")
    if isinstance(time, dict):
        # `repr` keeps the offset the service wrote; `timestamp` (epoch seconds, a float) when it is absent
        rec["loguru.time"] = time.get("repr") if time.get("repr") is not None else time.get("timestamp")
    for key, value in (
        ("level", _name(record.get("level"))),
        ("message", record.get("message")),
        ("logger", record.get("name")),
        ("thread", _name(record.get("thread"))),
    ):
        if value is not None:
            rec.setdefault(key, value)
    return rec


def parse_loguru(line: bytes) -> list[Record]:
    return [loguru_record(load_object(line))]
