"""What every log shape shares: the record type, `Malformed`, flattening, and reading an app line.

A record is a flat dict with dotted keys (`{"log":{"level":"x"}}` -> `log.level`), which is what
`reading.fields.FieldMapper` looks names up in. Wrappers (Docker, kubectl, CRI, Fluent Bit) put their own
time and stream under `wrapper.*` so they never shadow what the application logged.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

Record = dict[str, Any]

# How deep a nested object is flattened into dotted keys. orjson refuses JSON deeper than 1024 levels;
# below that, the rest of a pathological value stays as it is (a string column later), so flattening
# never recurses without bound.
MAX_FLATTEN_DEPTH = 32

# Sub-objects some encoders put MDC / key-value pairs under (logstash-logback-encoder `includeMdcKeyName`
# setups, Beats `fields`, ECS `labels`, tracing-subscriber's JSON `fields` (tokio-rs/tracing
# tracing-subscriber/src/fmt/format/json.rs, v0.3), Microsoft.Extensions.Logging's JSON console formatter's
# `State` (dotnet/runtime src/libraries/Microsoft.Extensions.Logging.Console/src/JsonConsoleFormatter.cs,
# .NET 6-9: the message template's properties)): their keys are also offered un-prefixed, without
# overriding.
MDC_CONTAINERS = ("mdc", "MDC", "labels", "fields", "context", "kv", "State")
# The same formatter with `IncludeScopes`: `Scopes`, a list of what `BeginScope` opened, each a string or an
# object of `Message` and the scope's properties (JsonConsoleFormatter.WriteScopeInformation).
SCOPES = "Scopes"

# Keys a wrapper (not the application) wrote; `ts` aliases fall back to `wrapper.time`.
WRAPPER_TIME = "wrapper.time"
WRAPPER_STREAM = "wrapper.stream"


class Malformed(ValueError):
    """A line that cannot be read in its file's format; the message says why."""


def flatten(obj: dict[str, Any], prefix: str = "", out: Record | None = None) -> Record:
    """Nested objects become dotted keys (`{"log":{"level":"x"}}` -> `log.level`). Flat keys stay.

    Iterative and depth-capped: a line nested thousands of levels deep must not crash the run.
    """
    if out is None:
        out = {}
    stack: list[tuple[dict[str, Any], str, int]] = [(obj, prefix, 0)]
    while stack:
        cur, pre, depth = stack.pop()
        for k, v in cur.items():
            key = f"{pre}{k}"
            if isinstance(v, dict) and depth < MAX_FLATTEN_DEPTH:
                stack.append((v, f"{key}.", depth + 1))
            else:
                out[key] = v
    return out


def flatten_object(obj: dict[str, Any]) -> Record:
    """A JSON object as a record: nested objects flattened, MDC sub-objects also offered un-prefixed."""
    nested = False
    for v in obj.values():
        if isinstance(v, dict):
            nested = True
            break
    scopes = obj.get(SCOPES)
    if not nested and not isinstance(scopes, list):
        return obj
    rec = flatten(obj)
    for c in MDC_CONTAINERS:
        sub = obj.get(c)
        if isinstance(sub, dict):
            for k, v in flatten(sub).items():
                rec.setdefault(k, v)
    if isinstance(scopes, list):
        for scope in scopes:  # outermost first: an inner scope never overrides
            if isinstance(scope, dict):
                for k, v in flatten(scope).items():
                    if k != "Message":  # the scope's own rendering, not the line's message
                        rec.setdefault(k, v)
    return rec


def _json_error(e: orjson.JSONDecodeError) -> Malformed:
    msg = str(e)
    low = msg.lower()
    if "utf-8" in low or "utf8" in low or "surrogate" in low:
        return Malformed("invalid UTF-8")
    if "depth" in low or "recursion" in low:
        return Malformed("JSON nested deeper than 1024 levels")
    return Malformed(f"invalid JSON: {msg.split(':', 1)[0]}")


def load_object(line: bytes | str) -> dict[str, Any]:
    """One JSON object, or Malformed saying why not."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise _json_error(e) from e
    if not isinstance(obj, dict):
        raise Malformed(f"JSON {type(obj).__name__}, not an object")
    return obj


def try_object(line: bytes) -> dict[str, Any] | None:
    """The line as a JSON object, or None (for sniffing: never raises)."""
    s = line.lstrip()
    if s[:1] != b"{":
        return None
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def json_object_shape(line: bytes) -> str | None:
    """Cheap check for lines the reader does not parse (no job-id name in them): looks like an object?"""
    s = line.strip()
    if s[:1] == b"{" and s[-1:] == b"}":
        return None
    return "not a JSON object"


_LOGFMT = re.compile(r'([^\s=]+)(?:=("(?:[^"\\]|\\.)*"|[^\s]*))?')
_UNESCAPE = re.compile(r"\\(.)")


def logfmt_record(text: str) -> Record | None:
    """`key=value key="quoted \\" value" bare` as a record, or None if it has fewer than two pairs."""
    rec: Record = {}
    pairs = 0
    for m in _LOGFMT.finditer(text):
        key, val = m.group(1), m.group(2)
        if val is None:
            rec[key] = True
            continue
        pairs += 1
        if len(val) >= 2 and val.startswith('"') and val.endswith('"'):
            val = _UNESCAPE.sub(r"\1", val[1:-1])
        rec[key] = val
    return rec if pairs >= 2 else None


_KUBELET_POD_DIR = re.compile(r"^(?P<ns>[^_/]+)_(?P<pod>[^_/]+)_[0-9a-f-]{8,}$")
_CONTAINERS_LINK = re.compile(r"^(?P<pod>[^_/]+)_(?P<ns>[^_/]+)_(?P<container>.+)-[0-9a-f]{64}\.log$")
_DOCKER_FILE = re.compile(r"^(?P<id>[0-9a-f]{64})-json\.log$")


def pod_from_path(path: str) -> str:
    """The pod a file stands for when no line names one (docs/FORMATS.md: the file name is the pod).

    Node log layouts name it in the path: `/var/log/pods/<ns>_<pod>_<uid>/<container>/0.log`,
    `/var/log/containers/<pod>_<ns>_<container>-<id>.log`; Docker's `<id>-json.log` gives the short id.
    Otherwise the file name up to its first dot (`pod-a.jsonl` -> `pod-a`).
    """
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    if len(parts) >= 3:
        m = _KUBELET_POD_DIR.match(parts[-3])
        if m:
            return m.group("pod")
    m2 = _CONTAINERS_LINK.match(name)
    if m2:
        return m2.group("pod")
    m3 = _DOCKER_FILE.match(name)
    if m3:
        return m3.group("id")[:12]
    return name.split(".")[0]


_CONTINUATION_STARTS = (
    b"Caused by:",
    b"Suppressed:",
    b"...",
    b"at ",
    b"Exception",
    b"java.",
    # a Python traceback (Celery logs one under each failed task)
    b"Traceback (most recent call last):",
    b"During handling of the above exception",
    b"The above exception was the direct cause",
)
# billiard's ExceptionWithTraceback (a pool process's traceback, as Celery logs a lost worker's task):
# `\n"""\n%s"""` around the remote traceback (billiard 4.3.2 `billiard/einfo.py`): a line of three quotes
_QUOTED_TRACEBACK = b'"""'
# a stack trace's first line: `org.example.SomeException: message` (a qualified class name that ends
# in Exception/Error/Throwable)
_EXCEPTION_LINE = re.compile(
    rb"(?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)(?::|\Z)"
    # a Python traceback's last line: `package.module.ExceptionClass: message` (lower-case modules), or a
    # builtin's, unqualified (`ValueError: bad month`, `TimeoutError: timed out`, a bare `KeyError`)
    rb"|(?:[a-z_][a-z0-9_]*\.)+[A-Z]\w*: "
    rb"|[A-Z][A-Za-z0-9]*(?:Error|Exception)(?:: |\Z)"
)
# the same test as a regex over a line (Rust syntax), for the reader's columnar path
CONTINUATION_RE = (
    r"^(?:[ \t]|Caused by:|Suppressed:|\.\.\.|at |Exception|java\.|"
    r"Traceback \(most recent call last\):|During handling of the above exception|"
    r"The above exception was the direct cause|\"\"\"\s*$|"
    r"(?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)(?::|$)|"
    r"(?:[a-z_][a-z0-9_]*\.)+[A-Z]\w*: |[A-Z][A-Za-z0-9]*(?:Error|Exception)(?:: |$))"
)


def looks_like_continuation(line: bytes) -> bool:
    """Stack-trace / multi-line message continuations (the reader attaches them to the event before)."""
    return (
        line[:1] in (b" ", b"\t")
        or line.startswith(_CONTINUATION_STARTS)
        or line.rstrip() == _QUOTED_TRACEBACK
        or (line[:1].isalpha() and _EXCEPTION_LINE.match(line) is not None)
    )


def decode(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("invalid UTF-8") from e


def fields_json(rec: dict[str, Any]) -> str:
    try:
        return orjson.dumps(rec, default=str).decode()
    except TypeError:
        # a value nested deeper than orjson writes (255 levels; repr would recurse too): keep the rest
        safe: dict[str, Any] = {}
        for k, v in rec.items():
            try:
                orjson.dumps(v, default=str)
                safe[k] = v
            except TypeError:
                safe[k] = "<value nested too deep>"
        return orjson.dumps(safe, default=str).decode()
