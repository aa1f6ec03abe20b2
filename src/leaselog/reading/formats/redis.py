"""A Redis server's or Sentinel's own log file, as `serverLogRaw` writes it (github.com/redis/redis,
`src/server.c`, 5.0 to 7.2 and unstable alike):

    <pid>:<role> <dd Mon yyyy HH:MM:SS.mmm> <level> <message>

`role` is `X` for a Sentinel, `M` a primary, `S` a replica, `C` a child writing an RDB or AOF file; `level`
is one of `.` (debug), `-` (verbose), `*` (notice), `#` (warning). The time is the server's local time
without a zone (`nolocks_localtime`): leaselog reads it in `--timezone` (UTC unless told) and says so in a
note. A line written from a signal handler (`serverLogFromHandler`) is `<pid>:signal-handler (<unix
seconds>) <message>`. Redis 4.0 and older wrote no year (`dd Mon HH:MM:SS.mmm`): those lines are not read.
Raw lines (the ASCII-art logo on a terminal, a crash report's dump) have no header and are malformed.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from leaselog.reading.formats._common import Malformed, Record, decode

Obj = dict[str, Any] | None

_MONTHS = {
    m: i
    for i, m in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], start=1
    )
}
_ROLES = {"X": "sentinel", "M": "master", "S": "replica", "C": "child"}
_LEVELS = {".": "DEBUG", "-": "VERBOSE", "*": "NOTICE", "#": "WARNING"}
_LINE = re.compile(
    r"(?P<pid>\d+):(?P<role>[XMSC]) (?P<dd>\d\d) (?P<mon>[A-Z][a-z]{2}) (?P<yyyy>\d{4}) "
    r"(?P<tod>\d\d:\d\d:\d\d\.\d{3}) (?P<level>[.\-*#]) (?P<msg>.*)\Z",
    re.DOTALL,
)
_SIGNAL = re.compile(r"(?P<pid>\d+):signal-handler \((?P<epoch>\d+)\) (?P<msg>.*)\Z", re.DOTALL)
_SHAPE = "not a Redis log line (PID:ROLE dd Mon yyyy HH:MM:SS.mmm LEVEL message)"


def redis_record(text: str) -> Record | None:
    m = _LINE.match(text)
    if m is not None:
        month = _MONTHS.get(m.group("mon"))
        if month is None:
            return None
        return {
            # zone-less local time: typed (and its zone decided) with every other timestamp
            "time": f"{m.group('yyyy')}-{month:02d}-{m.group('dd')}T{m.group('tod')}",
            "level": _LEVELS[m.group("level")],
            "redis.pid": m.group("pid"),
            "redis.role": _ROLES[m.group("role")],
            "message": m.group("msg"),
        }
    s = _SIGNAL.match(text)
    if s is not None:
        try:
            at = datetime.fromtimestamp(int(s.group("epoch")), UTC)
        except (ValueError, OverflowError, OSError):  # seconds no clock can hold: not a line Redis wrote
            return None
        return {
            "time": at.isoformat().replace("+00:00", "Z"),
            "level": "WARNING",
            "redis.pid": s.group("pid"),
            "redis.role": "signal-handler",
            "message": s.group("msg"),
        }
    return None


def parse_redis(line: bytes) -> list[Record]:
    rec = redis_record(decode(line).rstrip("\r\n"))
    if rec is None:
        raise Malformed(_SHAPE)
    return [rec]


def sniff_redis(line: bytes, obj: Obj) -> bool:
    if obj is not None or not line[:1].isdigit():
        return False
    try:
        return redis_record(line.decode("utf-8").rstrip("\r\n")) is not None
    except UnicodeDecodeError:
        return False


def redis_shape(line: bytes) -> str | None:
    try:
        parse_redis(line)
    except Malformed as e:
        return str(e)
    return None
