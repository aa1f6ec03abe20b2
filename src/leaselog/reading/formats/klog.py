"""Kubernetes klog text lines (kubernetes/klog v2, `internal/buffer/buffer.go` `FormatHeader`, v2.140.0):

    Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg...

`L` is the severity (I, W, E, F), then month, day and the time of day (no year: the year comes from the
file's date, as for time-of-day console lines), then a space-padded id that klog fills with the process
id (`Pid`, "TODO: should be TID"): not a thread, kept as `klog.pid`. The message is either printf text
(`klog.Infof`) or, for structured calls (`logger.Info(msg, k, v)`, `klog.InfoS`), the Go-quoted message
and `key=value` pairs (`"Successfully acquired lease" lock="kube-system/ctrl"`); the deprecated klogr
"serialize" format quotes the keys too (`"msg"="..." "lock"="..."`). Pairs become fields.
"""

from __future__ import annotations

import json
import re
from typing import Any

from leaselog.reading.formats._common import Malformed, Record, decode
from leaselog.reading.formats.console import TIME_OF_DAY

Obj = dict[str, Any] | None

# the key the month and day go under: the reader adds the year (see TIME_OF_DAY)
MONTH_DAY = "klog.month_day"

_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL"}
_LINE = re.compile(
    r"(?P<sev>[IWEF])(?P<mm>\d\d)(?P<dd>\d\d) (?P<tod>\d\d:\d\d:\d\d(?:\.\d{1,9})?)\s+(?P<pid>\d+) "
    r"(?P<caller>[^\s:\]]+:\d+)\] ?(?P<msg>.*)\Z",
    re.DOTALL,
)
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_PAIR = re.compile(r"\s*(?P<key>" + _QUOTED + r"|[A-Za-z_][\w.\-/]*)=(?P<val>" + _QUOTED + r"|\S*)")


def _unquote(s: str) -> str:
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        try:
            got = json.loads(s)  # Go's strconv.Quote escapes are JSON's for what messages hold
        except ValueError:
            return s[1:-1]
        return got if isinstance(got, str) else s[1:-1]
    return s


def _structured(msg: str, rec: Record) -> None:
    """`"message" k=v k2="v 2"` (or klogr's `"msg"="message" "k"="v"`): message and pairs into `rec`."""
    rest = msg
    m = re.match(_QUOTED, rest)
    if m is not None and rest[m.end() : m.end() + 1] != "=":
        rec["message"] = _unquote(m.group(0))
        rest = rest[m.end() :]
    pos = 0
    while True:
        p = _PAIR.match(rest, pos)
        if p is None or p.end() == pos:
            break
        key, val = _unquote(p.group("key")), _unquote(p.group("val"))
        if key == "msg" and "message" not in rec:
            rec["message"] = val
        else:
            rec[key] = val
        pos = p.end()


def klog_record(text: str) -> Record | None:
    m = _LINE.match(text)
    if m is None:
        return None
    rec: Record = {
        "level": _LEVELS[m.group("sev")],
        TIME_OF_DAY: m.group("tod"),
        MONTH_DAY: f"{m.group('mm')}-{m.group('dd')}",
        "klog.pid": m.group("pid"),
        "caller": m.group("caller"),
    }
    msg = m.group("msg")
    if msg.startswith('"'):
        _structured(msg, rec)
    rec.setdefault("message", msg)
    return rec


def parse_klog(line: bytes) -> list[Record]:
    rec = klog_record(decode(line).rstrip("\r\n"))
    if rec is None:
        raise Malformed("not a klog line (Lmmdd hh:mm:ss.uuuuuu PID file:line] message)")
    return [rec]


def sniff_klog(line: bytes, obj: Obj) -> bool:
    if obj is not None or line[:1] not in (b"I", b"W", b"E", b"F"):
        return False
    try:
        return klog_record(line.decode("utf-8").rstrip("\r\n")) is not None
    except UnicodeDecodeError:
        return False


def klog_shape(line: bytes) -> str | None:
    try:
        parse_klog(line)
    except Malformed as e:
        return str(e)
    return None
