"""The article's incident as the everyday Go, .NET and Rust loggers write it, key for key and time for time
as their sources do (none of them installs here, so these renderers follow the cited source):

- zap's production JSON (uber-go/zap config.go `NewProductionEncoderConfig`, v1.27): `ts` epoch seconds
  with a fraction (`zapcore.EpochTimeEncoder`: `float64(t.UnixNano()) / 1e9`), `level` lower case, `caller`,
  `msg`, the fields at top level;
- zerolog (rs/zerolog globals.go, v1.33): `level`, the fields, `time`, `message`; `TimeFieldFormat` is
  `time.RFC3339` (whole seconds) by default, so services set `time.RFC3339Nano` or `TimeFormatUnixMs`;
- log/slog (golang/go src/log/slog/handler.go, json_handler.go, text_handler.go, Go 1.21+): `time`, `level`
  (`INFO`), `msg`, the attrs; JSONHandler writes RFC 3339 with nanoseconds, TextHandler `key=value` with
  milliseconds (`time=2026-11-02T10:00:00.000Z`) and quotes a value with spaces;
- Serilog's CompactJsonFormatter (serilog/serilog-formatting-compact CompactJsonFormatter.cs, v3.0):
  `@t` (`ToString("O")`, 7 fraction digits), `@mt`, `@l` only when not Information, the properties at top
  level;
- Microsoft.Extensions.Logging's JSON console formatter (dotnet/runtime
  src/libraries/Microsoft.Extensions.Logging.Console/src/JsonConsoleFormatter.cs, .NET 8): `Timestamp`
  (only with `TimestampFormat` set), `EventId`, `LogLevel`, `Category`, `Message`, and `State` holding
  `Message`, the template's properties and `{OriginalFormat}`;
- tracing-subscriber's JSON (tokio-rs/tracing tracing-subscriber/src/fmt/format/json.rs, v0.3):
  `timestamp` (RFC 3339, microseconds), `level` (`INFO`), `fields` {`message`, the event's fields},
  `target`, and `span`/`spans` when inside one.

`write(logger, pods, folder)` writes `<pod>.log` per pod.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from leaselog.reproduce.rows import Pods, Row, kv, level, row_time

Render = Callable[[Row, str], str]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def _message(row: Row) -> str:
    return str(row.get("message", ""))


def _fields(row: Row, pod: str) -> dict[str, Any]:
    return {"pod": pod, **kv(row, None)}


def _rfc3339(t: datetime, digits: int) -> str:
    t = t.astimezone(UTC)
    frac = f"{t.microsecond:06d}000"[:digits]
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if digits else "") + "Z"


def _go_nano(t: datetime) -> str:
    """Go's RFC3339Nano: the fraction without trailing zeros (none at all on a whole second)."""
    frac = f"{t.astimezone(UTC).microsecond:06d}".rstrip("0")
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + "Z"


def zap(row: Row, pod: str) -> str:
    t = row_time(row)
    secs = t.timestamp()  # Go's strconv 'f', -1: no `.0` on a whole second
    ts: float | int = int(secs) if secs.is_integer() else secs
    head = {"level": level(row).lower(), "ts": ts, "caller": "worker/report.go:88"}
    return _dumps({**head, "msg": _message(row), **_fields(row, pod)})


def zerolog(row: Row, pod: str, unix_ms: bool = False, seconds: bool = False) -> str:
    """`time` as `TimeFieldFormat` says: RFC3339Nano, Unix milliseconds, or the default whole seconds."""
    t = row_time(row)
    when: Any = round(t.timestamp() * 1000) if unix_ms else _rfc3339(t, 0) if seconds else _go_nano(t)
    return _dumps({"level": level(row).lower(), **_fields(row, pod), "time": when, "message": _message(row)})


def slog_json(row: Row, pod: str) -> str:
    t = _go_nano(row_time(row))
    return _dumps({"time": t, "level": level(row).upper(), "msg": _message(row), **_fields(row, pod)})


def _slog_value(v: Any) -> str:
    s = str(v).lower() if isinstance(v, bool) else str(v)
    return json.dumps(s) if (not s or any(c in s for c in ' ="\\') or not s.isprintable()) else s


def slog_text(row: Row, pod: str) -> str:
    pairs = {
        "time": _rfc3339(row_time(row), 3),
        "level": level(row).upper(),
        "msg": _message(row),
        **_fields(row, pod),
    }
    return " ".join(f"{k}={_slog_value(v)}" for k, v in pairs.items())


_SERILOG_LEVELS = {"DEBUG": "Debug", "WARN": "Warning", "ERROR": "Error"}
_MEL_LEVELS = {"DEBUG": "Debug", "INFO": "Information", "WARN": "Warning", "ERROR": "Error"}


def serilog(row: Row, pod: str) -> str:
    """`@t` is DateTimeOffset's round-trip `O`: seven fraction digits and the offset (`+00:00` in UTC)."""
    at = _rfc3339(row_time(row), 7).removesuffix("Z") + "+00:00"
    out: dict[str, Any] = {"@t": at, "@mt": _message(row)}
    lvl = _SERILOG_LEVELS.get(level(row).upper())
    if lvl is not None:
        out["@l"] = lvl
    return _dumps({**out, **_fields(row, pod)})


def mel_json(row: Row, pod: str) -> str:
    """`TimestampFormat = "yyyy-MM-ddTHH:mm:ss.fffZ"` with `UseUtcTimestamp` (the formatter writes no time
    unless given a format)."""
    state = {"Message": _message(row), **_fields(row, pod), "{OriginalFormat}": _message(row)}
    return _dumps(
        {
            "Timestamp": _rfc3339(row_time(row), 3),
            "EventId": 0,
            "LogLevel": _MEL_LEVELS.get(level(row).upper(), "Information"),
            "Category": "Reports.ReportJob",
            "Message": _message(row),
            "State": state,
        }
    )


def mel_scopes(row: Row, pod: str) -> str:
    """`IncludeScopes = true`, the lease fields in a `BeginScope` dictionary the job opens, a string scope
    (ASP.NET Core's kind) outside it; the line's own State holds only its message."""
    obj = json.loads(mel_json({k: v for k, v in row.items() if k in ("ts", "level", "message")}, pod))
    fields = _fields(row, pod)
    scope = {"Message": "System.Collections.Generic.Dictionary`2[System.String,System.Object]", **fields}
    obj["State"] = {"Message": _message(row), "{OriginalFormat}": _message(row)}
    obj["Scopes"] = ["RequestPath:/jobs", scope] if len(fields) > 1 else ["RequestPath:/jobs"]
    return _dumps(obj)


def tracing(row: Row, pod: str) -> str:
    return _dumps(
        {
            "timestamp": _rfc3339(row_time(row), 6),
            "level": level(row).upper(),
            "fields": {"message": _message(row), **_fields(row, pod)},
            "target": "report_worker::job",
        }
    )


WRITERS: dict[str, Render] = {
    "zap": zap,
    "zerolog": zerolog,
    "zerolog-default": lambda r, p: zerolog(r, p, seconds=True),
    "zerolog-unixms": lambda r, p: zerolog(r, p, unix_ms=True),
    "slog-json": slog_json,
    "slog-text": slog_text,
    "serilog-compact": serilog,
    "mel-json": mel_json,
    "mel-json-scopes": mel_scopes,
    "tracing-json": tracing,
}


def write(logger: str, pods: Pods, folder: Path) -> None:
    render = WRITERS[logger]
    folder.mkdir(parents=True, exist_ok=True)
    for pod, rows in pods.items():
        (folder / f"{pod}.log").write_text("".join(render(r, pod) + "\n" for r in rows))
