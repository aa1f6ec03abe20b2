"""Log shapes: detection and per-line parsing into flattened records (dotted keys).

Each format turns one physical line into zero or more records (OTLP batches hold many), or raises
`Malformed` with a reason. Detection follows FORMATS.md's order; `detect_format` looks at a file's
first non-blank lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

Record = dict[str, Any]


class Malformed(ValueError):
    """A line that cannot be read in its file's format; the message says why."""


def flatten(obj: dict[str, Any], prefix: str = "", out: Record | None = None) -> Record:
    """Nested objects become dotted keys (`{"log":{"level":"x"}}` -> `log.level`). Flat keys stay."""
    if out is None:
        out = {}
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            flatten(v, f"{key}.", out)
        else:
            out[key] = v
    return out


def _load_object(line: bytes) -> dict[str, Any]:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        msg = str(e)
        if "utf-8" in msg.lower() or "utf8" in msg.lower():
            raise Malformed("invalid UTF-8") from e
        raise Malformed(f"invalid JSON: {msg.split(':', 1)[0]}") from e
    if not isinstance(obj, dict):
        raise Malformed(f"JSON {type(obj).__name__}, not an object")
    return obj


def parse_flat(line: bytes) -> list[Record]:
    obj = _load_object(line)
    if any(isinstance(v, dict) for v in obj.values()):
        return [flatten(obj)]
    return [obj]


_LOGFMT = re.compile(r'([^\s=]+)(?:=("(?:[^"\\]|\\.)*"|[^\s]*))?')


def parse_logfmt(line: bytes) -> list[Record]:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("invalid UTF-8") from e
    rec: Record = {}
    pairs = 0
    for m in _LOGFMT.finditer(text):
        key, val = m.group(1), m.group(2)
        if val is None:
            rec[key] = True
            continue
        pairs += 1
        if val.startswith('"') and val.endswith('"') and len(val) >= 2:
            val = re.sub(r"\\(.)", r"\1", val[1:-1])
        rec[key] = val
    if pairs < 2:
        raise Malformed("not logfmt: fewer than two key=value pairs")
    return [rec]


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    parse: Callable[[bytes], list[Record]]
    sniff: Callable[[bytes], bool]
    json_like: bool  # lines are JSON objects (used by the reader's cheap shape check)


def _sniff_flat(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def _sniff_logfmt(line: bytes) -> bool:
    try:
        parse_logfmt(line)
    except Malformed:
        return False
    return True


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("flat", "one flat JSON object per line (the article's shape); nested objects are flattened",
               parse_flat, _sniff_flat, True),
        Format("logfmt", "key=value pairs (the article's demo output); values are strings",
               parse_logfmt, _sniff_logfmt, False),
    )
}

# Detection order (most specific first). Later formats plug in here.
DETECTION_ORDER: list[str] = ["flat", "logfmt"]


def detect_format(sample: list[bytes]) -> str | None:
    """The first format in DETECTION_ORDER that reads most of the sample lines, or None."""
    lines = [s for s in sample if s.strip()]
    if not lines:
        return None
    for name in DETECTION_ORDER:
        fmt = FORMATS[name]
        ok = sum(1 for s in lines if fmt.sniff(s))
        if ok and ok * 2 >= len(lines):
            return name
    return None
