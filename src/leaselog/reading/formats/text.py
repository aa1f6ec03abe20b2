"""Line-oriented text shapes: logfmt (the article's demo output) and plain prose (for message rules)."""

from __future__ import annotations

from typing import Any

from leaselog.reading.formats._common import Malformed, Record, decode, logfmt_record
from leaselog.reading.formats.console import console_record
from leaselog.reading.formats.python_logging import basic_record, python_record

Obj = dict[str, Any] | None


def parse_logfmt(line: bytes) -> list[Record]:
    text = decode(line)
    if text.lstrip()[:1] == "{":  # a JSON line (broken, if its own shape did not read it): never logfmt
        raise Malformed("a JSON line, not logfmt")
    if text[:1].isdigit() and console_record(text) is not None:
        # `2026-.. INFO 1 --- [main] x : jobId=..` has pairs, but its header is a console line's
        raise Malformed("a console log line, not logfmt")
    if (text[:1].isdigit() and python_record(text) is not None) or (
        text[:1].isupper() and basic_record(text) is not None
    ):
        # `2026-.. 11:10:54,365 INFO [x] jobId=..`, `INFO:x:jobId=..`: Python logging's header, not a pair
        raise Malformed("a Python logging line, not logfmt")
    rec = logfmt_record(text)
    if rec is None:
        raise Malformed("not logfmt: fewer than two key=value pairs")
    return [rec]


def sniff_logfmt(line: bytes, obj: Obj) -> bool:
    if obj is not None:
        return False
    try:
        parse_logfmt(line)
    except Malformed:
        return False
    return True


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
