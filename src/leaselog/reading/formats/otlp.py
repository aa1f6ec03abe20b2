"""OpenTelemetry OTLP-JSON, as the collector's `file` exporter writes it: one batch per line.

`{"resourceLogs":[{"resource":{"attributes":[..]},"scopeLogs":[{"scope":{..},"logRecords":[..]}]}]}`.
Every log record becomes one record: resource attributes (`k8s.pod.name`, `service.name`) first, then
the record's own attributes over them, `body` as `message`. Attribute values are typed
(`{"intValue":"42"}`: int64 as a decimal string); numbers are accepted where strings are specified.
"""

from __future__ import annotations

from typing import Any

from leaselog.reading.formats._common import MAX_FLATTEN_DEPTH, Malformed, Record, load_object

Obj = dict[str, Any] | None


def _list(x: Any, where: str) -> list[Any]:
    if x is None:
        return []
    if not isinstance(x, list):
        raise Malformed(f"OTLP: {where} is {type(x).__name__}, not a list")
    return x


def any_value(v: Any, depth: int = 0) -> Any:
    """An OTLP AnyValue (`{"stringValue": ..}` etc.) as a plain value; nested kvlists as dicts."""
    if not isinstance(v, dict):
        return v  # already plain (some exporters write bare values)
    if depth > MAX_FLATTEN_DEPTH:
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return v["intValue"]  # int64 as a decimal string: typed later, exactly
    if "boolValue" in v:
        return v["boolValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        arr = v["arrayValue"]
        vals = arr.get("values") if isinstance(arr, dict) else None
        return [any_value(x, depth + 1) for x in vals] if isinstance(vals, list) else []
    if "kvlistValue" in v:
        kv = v["kvlistValue"]
        vals = kv.get("values") if isinstance(kv, dict) else None
        return _attributes(vals, depth + 1) if isinstance(vals, list) else {}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None  # an empty AnyValue


def _attributes(attrs: Any, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(attrs, list):
        return out
    for a in attrs:
        if isinstance(a, dict) and isinstance(a.get("key"), str):
            out[a["key"]] = any_value(a.get("value"), depth)
    return out


def _flat_into(rec: Record, prefix: str, value: dict[str, Any], depth: int = 0) -> None:
    for k, v in value.items():
        if isinstance(v, dict) and depth < MAX_FLATTEN_DEPTH:
            _flat_into(rec, f"{prefix}{k}.", v, depth + 1)
        else:
            rec.setdefault(f"{prefix}{k}", v)


def _nonzero(v: Any) -> bool:
    return v not in (None, "", "0", 0)


def otlp_records(obj: dict[str, Any]) -> list[Record]:
    out: list[Record] = []
    for i, rl in enumerate(_list(obj.get("resourceLogs"), "resourceLogs")):
        if not isinstance(rl, dict):
            raise Malformed(f"OTLP: resourceLogs[{i}] is not an object")
        resource = rl.get("resource")
        res_attrs = _attributes(resource.get("attributes")) if isinstance(resource, dict) else {}
        for j, sl in enumerate(_list(rl.get("scopeLogs"), f"resourceLogs[{i}].scopeLogs")):
            if not isinstance(sl, dict):
                raise Malformed(f"OTLP: resourceLogs[{i}].scopeLogs[{j}] is not an object")
            scope = sl.get("scope")
            scope_name = scope.get("name") if isinstance(scope, dict) else None
            for lr in _list(sl.get("logRecords"), f"resourceLogs[{i}].scopeLogs[{j}].logRecords"):
                if isinstance(lr, dict):
                    out.append(_log_record(lr, res_attrs, scope_name))
    return out


def _log_record(lr: dict[str, Any], res_attrs: dict[str, Any], scope_name: Any) -> Record:
    rec: Record = {}
    # record attributes win over resource attributes of the same name
    _flat_into(rec, "", _attributes(lr.get("attributes")))
    _flat_into(rec, "", res_attrs)
    t = lr.get("timeUnixNano")
    if _nonzero(t):
        rec["timeUnixNano"] = t
    elif _nonzero(lr.get("observedTimeUnixNano")):
        rec["observedTimeUnixNano"] = lr["observedTimeUnixNano"]
    body = any_value(lr.get("body"))
    if isinstance(body, dict):
        _flat_into(rec, "", body)  # a structured body: its keys are fields too
    elif body is not None:
        rec.setdefault("message", body)
    for k in ("severityText", "severityNumber", "traceId", "spanId", "eventName"):
        v = lr.get(k)
        if v not in (None, ""):
            rec.setdefault(k, v)
    if scope_name:
        rec.setdefault("otel.scope.name", scope_name)
    return rec


def parse_otlp(line: bytes) -> list[Record]:
    obj = load_object(line)
    if "resourceLogs" not in obj:
        raise Malformed("not an OTLP batch: no `resourceLogs`")
    return otlp_records(obj)


def sniff_otlp(line: bytes, obj: Obj) -> bool:
    return obj is not None and "resourceLogs" in obj
