"""Line-oriented text shapes: logfmt (the article's demo output) and plain prose (for message rules)."""

from __future__ import annotations

from typing import Any

from leaselog.reading.formats._common import Malformed, Record, decode, logfmt_record

Obj = dict[str, Any] | None


def parse_logfmt(line: bytes) -> list[Record]:
    rec = logfmt_record(decode(line))
    if rec is None:
        raise Malformed("not logfmt: fewer than two key=value pairs")
    return [rec]


def sniff_logfmt(line: bytes, obj: Obj) -> bool:
    if obj is not None:
        return False
    try:
        return logfmt_record(line.decode("utf-8")) is not None
    except UnicodeDecodeError:
        return False


def logfmt_shape(line: bytes) -> str | None:
    try:
        parse_logfmt(line)
    except Malformed as e:
        return str(e)
    return None


def parse_text(line: bytes) -> list[Record]:
    """Every line is a message; only `[[rules]]` in a leaselog.toml turn such lines into events."""
    return [{"message": decode(line)}]


def sniff_text(line: bytes, obj: Obj) -> bool:
    return False  # never auto-detected: chosen with --format text, or when message rules exist


def text_shape(line: bytes) -> str | None:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid UTF-8"
    return None
