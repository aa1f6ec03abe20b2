"""Application JSON shapes: flat (the article), Spring Boot / Elastic ECS, Logstash, GELF.

They differ in where things sit, not in what they say: ECS 3.5+ nests (`{"service":{"node":{"name":..}}}`)
where ECS 3.4 and ecs-logging-java write dotted keys, GELF prefixes every extra field with `_` and calls
the application `host`. Each parser turns a line into the flat dotted record the field mapper reads.
"""

from __future__ import annotations

from typing import Any

from leaselog.reading.formats._common import Malformed, Record, flatten_object, load_object
from leaselog.reading.formats.python_logging import is_loguru, loguru_record

Obj = dict[str, Any] | None


def parse_flat(line: bytes) -> list[Record]:
    return [flatten_object(load_object(line))]


def sniff_flat(line: bytes, obj: Obj) -> bool:
    return obj is not None


def is_ecs(obj: dict[str, Any]) -> bool:
    if "@timestamp" not in obj:
        return False
    if "ecs.version" in obj:
        return True
    ecs = obj.get("ecs")
    return isinstance(ecs, dict) and "version" in ecs


def sniff_ecs(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_ecs(obj)


# ECS 3.4 (dotted), 3.5+ (nested) and ecs-logging-java read the same once flattened.
parse_ecs = parse_flat

_LOGSTASH_MARKERS = ("logger_name", "level_value", "levelVal", "logger", "thread_name")


def is_logstash(obj: dict[str, Any]) -> bool:
    return "@version" in obj and any(k in obj for k in _LOGSTASH_MARKERS)


def sniff_logstash(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_logstash(obj)


parse_logstash = parse_flat


def is_gelf(obj: dict[str, Any]) -> bool:
    return obj.get("version") == "1.1" and "short_message" in obj


def sniff_gelf(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_gelf(obj)


def gelf_record(obj: dict[str, Any]) -> Record:
    """`_jobId` -> `jobId`; `host` (Spring Boot writes the application name there) -> `gelf.host`.

    `gelf.host` is the pod source of last resort (docs/FORMATS.md): an explicit pod field always wins.
    """
    rec: Record = {}
    for k, v in obj.items():
        if k == "host":
            rec["gelf.host"] = v
        elif k.startswith("_") and len(k) > 1:
            rec[k[1:]] = v
        else:
            rec[k] = v
    return flatten_object(rec)


def parse_gelf(line: bytes) -> list[Record]:
    obj = load_object(line)
    if "short_message" not in obj and "version" not in obj:
        raise Malformed("not a GELF message: no `version`/`short_message`")
    return [gelf_record(obj)]


def object_records(obj: dict[str, Any]) -> list[Record]:
    """An application's JSON object of any known shape (used inside wrappers, where shapes mix per line)."""
    if "resourceLogs" in obj:
        from leaselog.reading.formats.otlp import otlp_records

        return otlp_records(obj)
    if is_gelf(obj):
        return [gelf_record(obj)]
    if is_loguru(obj):
        return [loguru_record(obj)]
    return [flatten_object(obj)]
