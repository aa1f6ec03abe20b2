"""Wrappers around an application's line: Docker json-file, `kubectl logs --timestamps`, CRI node logs,
Fluent Bit kubernetes envelopes. Each is stripped and the application's line read again, whatever its
shape (JSON of any kind, logfmt, or prose).

The wrapper's own time is kept as `wrapper.time`: the time field of last resort, used only when the
application's line has none. Partial lines (CRI `P`, Docker's 16 KiB chunks) are joined before parsing
by a per-file `join` stage that yields exactly one line per physical line: the joined line where the
record started, then an empty line for every further part, so the reader counts those as ignored and
never loses a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from leaselog.reading.formats._common import (
    WRAPPER_STREAM,
    WRAPPER_TIME,
    Malformed,
    Record,
    flatten_object,
    load_object,
    logfmt_record,
)
from leaselog.reading.formats.console import console_record
from leaselog.reading.formats.json_shapes import object_records

Obj = dict[str, Any] | None

# A line can be joined from many parts; beyond these a writer that never ends a line is cut off (the
# part so far is read as one line) so memory stays bounded.
MAX_JOINED_BYTES = 16 * 1024 * 1024
MAX_JOINED_PARTS = 4096


def app_records(text: bytes | str, wrapper: str) -> list[Record]:
    """The application's own line inside a wrapper: JSON (any shape), a console line, logfmt, or plain text.

    Plain text is a valid line (a banner, a stack-trace line, prose a message rule may match): it becomes
    `{"message": text}`. Text that starts like JSON but is not is malformed: a broken structured line.
    """
    s = text.strip()
    if not s:
        return [{}]
    if s[:1] in (b"{", "{"):
        try:
            obj = load_object(s)
        except Malformed as e:
            raise Malformed(f"{wrapper}: app line: {e}") from e
        return object_records(obj)
    if isinstance(s, bytes):
        try:
            t = s.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Malformed(f"{wrapper}: app line is not valid UTF-8") from e
    else:
        t = s
    rec = console_record(t) if t[:1].isdigit() else None  # a console line (Spring Boot, Logback)
    if rec is None:
        rec = logfmt_record(t)
    return [rec if rec is not None else {"message": t}]


def _with_wrapper(records: list[Record], extra: dict[str, Any]) -> list[Record]:
    for r in records:
        for k, v in extra.items():
            if v is not None:
                r.setdefault(k, v)
    return records


# ---------------------------------------------------------------- Docker json-file


def is_docker(obj: dict[str, Any]) -> bool:
    return isinstance(obj.get("log"), str) and "stream" in obj and "time" in obj


def sniff_docker(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_docker(obj)


def parse_docker(line: bytes) -> list[Record]:
    obj = load_object(line)
    log = obj.get("log")
    if not isinstance(log, str):
        raise Malformed("docker json-file line without a `log` string")
    return _with_wrapper(
        app_records(log, "docker"), {WRAPPER_TIME: obj.get("time"), WRAPPER_STREAM: obj.get("stream")}
    )


def join_docker(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Docker splits lines longer than 16 KiB: every chunk but the last lacks the trailing `\\n`.

    json-file always writes `log` first and ends it with `\\n` when the line is complete, so a complete
    line contains `\\n","stream"`: only the rare chunked lines are parsed here.
    """
    parts: list[str] = []
    first: dict[str, Any] | None = None
    held = 0
    size = 0
    for line in lines:
        if not parts and (b'\\n","stream"' in line or not line.startswith(b'{"log":"')):
            yield line
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("log"), str):
            if parts:
                yield from _flush_docker(parts, first, held)
                parts, first, held, size = [], None, 0, 0
            yield line
            continue
        if first is None:
            first = obj
        parts.append(obj["log"])
        held += 1
        size += len(obj["log"])
        if obj["log"].endswith("\n") or size > MAX_JOINED_BYTES or held >= MAX_JOINED_PARTS:
            yield from _flush_docker(parts, first, held)
            parts, first, held, size = [], None, 0, 0
    if parts:
        yield from _flush_docker(parts, first, held)


def _flush_docker(parts: list[str], first: dict[str, Any] | None, held: int) -> Iterator[bytes]:
    assert first is not None
    yield orjson.dumps({**first, "log": "".join(parts)})
    for _ in range(held - 1):
        yield b""


# ---------------------------------------------------------------- kubectl logs --timestamps [--prefix]

_TS = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)"
_KUBECTL = re.compile(rb"(?:\[([^\]]*)\] )?(" + _TS + rb")(?: (.*))?\Z", re.DOTALL)


def sniff_kubectl(line: bytes, obj: Obj) -> bool:
    return obj is None and _KUBECTL.match(line) is not None and _CRI.match(line) is None


def parse_kubectl(line: bytes) -> list[Record]:
    m = _KUBECTL.match(line)
    if m is None:
        raise Malformed("no `kubectl logs --timestamps` time prefix")
    extra: dict[str, Any] = {WRAPPER_TIME: m.group(2).decode()}
    if m.group(1):
        # `kubectl logs --prefix`: [pod/NAME/CONTAINER]; the pod name is as good as Fluent Bit's
        parts = m.group(1).decode("utf-8", "replace").split("/")
        if len(parts) >= 2 and parts[0] == "pod":
            extra["kubernetes.pod_name"] = parts[1]
            if len(parts) >= 3:
                extra["kubernetes.container_name"] = parts[2]
    return _with_wrapper(app_records(m.group(3) or b"", "kubectl"), extra)


def kubectl_shape(line: bytes) -> str | None:
    return None if _KUBECTL.match(line) else "no `kubectl logs --timestamps` time prefix"


# ---------------------------------------------------------------- CRI node log files

_CRI = re.compile(rb"(" + _TS + rb") (stdout|stderr) ([PF])(?::\S*)?(?: (.*))?\Z", re.DOTALL)


def sniff_cri(line: bytes, obj: Obj) -> bool:
    return obj is None and _CRI.match(line) is not None


def parse_cri(line: bytes) -> list[Record]:
    m = _CRI.match(line)
    if m is None:
        raise Malformed("not a CRI log line (`TIME stdout|stderr P|F LINE`)")
    extra = {WRAPPER_TIME: m.group(1).decode(), WRAPPER_STREAM: m.group(2).decode()}
    return _with_wrapper(app_records(m.group(4) or b"", "cri"), extra)


def cri_shape(line: bytes) -> str | None:
    return None if _CRI.match(line) else "not a CRI log line (`TIME stdout|stderr P|F LINE`)"


def join_cri(lines: Iterable[bytes]) -> Iterator[bytes]:
    """Join `P` (partial) lines with the `F` line that ends them; one output per physical line."""
    head: bytes | None = None  # `TIME STREAM` of the first part
    parts: list[bytes] = []
    size = 0
    for line in lines:
        m = _CRI.match(line)
        if m is not None and m.group(3) == b"P":
            if head is None:
                head = m.group(1) + b" " + m.group(2)
            content = m.group(4) or b""
            parts.append(content)
            size += len(content)
            if size > MAX_JOINED_BYTES or len(parts) >= MAX_JOINED_PARTS:
                yield from _flush_cri(head, parts)
                head, parts, size = None, [], 0
            continue
        if head is None:
            yield line
            continue
        if m is not None:  # the F line that completes the parts
            parts.append(m.group(4) or b"")
            yield from _flush_cri(head, parts)
        else:  # the parts were never completed: read them as a line, then this one on its own
            yield from _flush_cri(head, parts)
            yield line
        head, parts, size = None, [], 0
    if head is not None:
        yield from _flush_cri(head, parts)


def _flush_cri(head: bytes, parts: list[bytes]) -> Iterator[bytes]:
    """The joined line at the first part's place, then one empty line per further part."""
    yield head + b" F " + b"".join(parts)
    for _ in range(len(parts) - 1):
        yield b""


# ---------------------------------------------------------------- Grafana Loki `logcli query --output=jsonl`

_LOKI_KEYS = frozenset({"labels", "line", "timestamp"})


def is_loki(obj: dict[str, Any]) -> bool:
    """logcli writes exactly {"labels": {..}, "line": "..", "timestamp": ".."} (labels optional)."""
    return isinstance(obj.get("line"), str) and "timestamp" in obj and obj.keys() <= _LOKI_KEYS


def sniff_loki(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_loki(obj)


def parse_loki(line: bytes) -> list[Record]:
    obj = load_object(line)
    text = obj.get("line")
    if not isinstance(text, str):
        raise Malformed("logcli line without a `line` string")
    extra: dict[str, Any] = {WRAPPER_TIME: obj.get("timestamp")}
    labels = obj.get("labels")
    if isinstance(labels, dict):
        for k, v in labels.items():
            extra[f"loki.{k}"] = v
        # the Kubernetes service-discovery label is the pod, as good as Fluent Bit's
        pod = labels.get("pod") or labels.get("pod_name") or labels.get("k8s_pod_name")
        if isinstance(pod, str) and pod:
            extra["kubernetes.pod_name"] = pod
        elif isinstance(labels.get("container"), str):  # (Docker, Compose) the container stands for it
            extra["pod_name"] = labels["container"]
    return _with_wrapper(app_records(text, "loki"), extra)


# ---------------------------------------------------------------- Fluent Bit kubernetes filter

_ENVELOPE = frozenset(
    {"kubernetes", "log", "stream", "time", "logtag", "date", "@timestamp", "kubernetes_cluster", "_p"}
)
_JOB_ID_HINTS = ("jobId", "job_id", "jobID", "jobid", "job.id")


def is_fluentbit(obj: dict[str, Any]) -> bool:
    k = obj.get("kubernetes")
    return (isinstance(k, dict) and "pod_name" in k) or "kubernetes.pod_name" in obj


def sniff_fluentbit(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_fluentbit(obj)


def fluentbit_records(obj: dict[str, Any]) -> list[Record]:
    """An envelope: the app's keys merged at top level (`Merge_Log On`), under a key (`Merge_Log_Key`),
    or only in the `log` string (merge off). `kubernetes.*` is added to what the app logged."""
    env: Record = {}
    kube = obj.get("kubernetes")
    if isinstance(kube, dict):
        env.update(flatten_object({"kubernetes": kube}))
    for k in ("kubernetes.pod_name", "kubernetes.namespace_name", "kubernetes.container_name"):
        if k in obj:
            env[k] = obj[k]
    if obj.get("stream") in ("stdout", "stderr"):
        env[WRAPPER_STREAM] = obj["stream"]
    if "time" in obj:
        env[WRAPPER_TIME] = obj["time"]
    log = obj.get("log")
    merged = {k: v for k, v in obj.items() if k not in _ENVELOPE}
    if not merged and isinstance(log, str):
        # merge off: the app's line is only in `log`
        return _with_wrapper(app_records(log, "fluent-bit"), env)
    if isinstance(log, dict):
        merged = {**log, **merged}
    rec = flatten_object(merged)
    for v in merged.values():
        # Merge_Log_Key: the app's keys sit under one key; offer them un-prefixed (a line with no job id
        # is offered too when it has a message: a lock library's or the framework's own line)
        if isinstance(v, dict) and any(h in v for h in (*_JOB_ID_HINTS, "message", "msg")):
            for k2, v2 in flatten_object(v).items():
                rec.setdefault(k2, v2)
    if "@timestamp" in obj:
        rec.setdefault("@timestamp", obj["@timestamp"])
    if isinstance(log, str) and "message" not in rec:
        rec["message"] = log.rstrip("\n")
    return _with_wrapper([rec], env)


def parse_fluentbit(line: bytes) -> list[Record]:
    return fluentbit_records(load_object(line))
