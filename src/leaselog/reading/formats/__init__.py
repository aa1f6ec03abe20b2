"""Log shapes: detection and per-line parsing into flattened records (dotted keys).

Each format turns one physical line into zero or more records (OTLP batches hold many), or raises
`Malformed` with a reason. Detection follows docs/FORMATS.md's order; `detect_format` looks at a file's
first non-blank lines. One module per family: `json_shapes` (flat, ECS, Logstash, GELF), `otlp`,
`containers` (Docker, kubectl, CRI, Fluent Bit), `text` (logfmt, plain prose), `celery` (Celery's worker
lines), `klog` (Kubernetes components' text lines), `redis` (a Redis server's or Sentinel's own log),
`python_logging` (the standard library's text layouts, loguru's `serialize=True` lines).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from leaselog.reading.formats import (
    celery,
    console,
    containers,
    exports,
    json_shapes,
    klog,
    otlp,
    python_logging,
    redis,
    text,
)
from leaselog.reading.formats._common import (
    CONTINUATION_RE,
    Malformed,
    Record,
    fields_json,
    flatten,
    json_object_shape,
    looks_like_continuation,
    pod_from_path,
    try_object,
)
from leaselog.reading.formats.console import TIME_OF_DAY, is_noise
from leaselog.reading.formats.klog import MONTH_DAY

__all__ = [
    "BOM",
    "CONTINUATION_RE",
    "DETECTION_ORDER",
    "FORMATS",
    "MONTH_DAY",
    "TIME_OF_DAY",
    "Format",
    "Malformed",
    "Record",
    "detect_format",
    "fields_json",
    "flatten",
    "is_noise",
    "line_format",
    "looks_like_continuation",
    "pod_from_path",
    "sniff_votes",
]

Sniff = Callable[[bytes, dict[str, Any] | None], bool]
Join = Callable[[Iterable[bytes]], Iterator[bytes]]


@dataclass(frozen=True)
class Format:
    """One log shape.

    `parse(line)` -> records or Malformed; `sniff(line, obj)` says whether a sample line is of this shape
    (`obj` is the line already parsed as a JSON object, or None); `shape_error(line)` is the cheap check
    for lines the reader skips parsing (no job-id name in them): None when the line looks right, else why
    not; `join`, when set, is a per-file stage joining partial lines (one output line per input line,
    empty ones for absorbed parts); `maps` says in words what the shape puts where; `note`, when set,
    is said under every file of this shape.
    """

    name: str
    description: str
    parse: Callable[[bytes], list[Record]]
    sniff: Sniff
    json_like: bool  # lines are JSON objects (used by the reader's cheap shape check)
    maps: str = ""
    shape_error: Callable[[bytes], str | None] = json_object_shape
    join: Join | None = None
    note: str = ""  # what the Inputs table says under a file of this shape (a shape that writes no time)


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            "cri",
            "CRI node log file (/var/log/pods): `TIME stdout|stderr P|F LINE`; P parts joined",
            containers.parse_cri,
            containers.sniff_cri,
            False,
            maps="app line read again in any shape; TIME -> wrapper.time (time fallback); "
            "P (partial) lines joined with the F line that ends them",
            shape_error=containers.cri_shape,
            join=containers.join_cri,
        ),
        Format(
            "spring-console",
            "plain console lines: Spring Boot 2.x/3.x, Logback and Log4j2 default patterns",
            console.parse_console,
            console.sniff_console,
            False,
            maps="time, level, thread, logger read from the line (time of day only: the date from the "
            "file name, else its modification time); key=value pairs in the message (kv(), printf) or in an "
            "MDC block -> fields, last wins; pod from the file name unless a pair names it",
            shape_error=console.console_shape,
        ),
        Format(
            "kubectl",
            "`kubectl logs --timestamps` output: RFC 3339 time, a space, the app line",
            containers.parse_kubectl,
            containers.sniff_kubectl,
            False,
            maps="app line read again in any shape (also any plain log whose lines start with an RFC 3339 "
            "time); time prefix -> wrapper.time (time fallback); "
            "`--prefix` [pod/NAME/CONTAINER] -> kubernetes.pod_name",
            shape_error=containers.kubectl_shape,
        ),
        Format(
            "celery",
            "Celery worker lines: `[TIME: LEVEL/ProcessName] message` (worker_log_format, "
            "worker_task_log_format)",
            celery.parse_celery,
            celery.sniff_celery,
            False,
            maps="asctime (local, no zone) -> time; processName (MainProcess, ForkPoolWorker-N) -> thread; "
            "a task logger's `name[id]: ` -> celery.task_name, celery.task_id; pod from the file name",
            shape_error=celery.celery_shape,
        ),
        Format(
            "python-logging",
            "Python logging text lines: `%(asctime)s` (`2026-12-03 11:10:54,365`) then the level, logger "
            "and message in a common layout",
            python_logging.parse_python,
            python_logging.sniff_python,
            False,
            maps="asctime (local, no zone: --timezone) -> time; levelname -> level; name -> logger; "
            "key=value pairs in the message -> fields, last wins; pod from the file name unless a pair "
            "names it",
            shape_error=python_logging.python_shape,
        ),
        Format(
            "python-basic",
            "Python logging's default layout `%(levelname)s:%(name)s:%(message)s` (basicConfig() with no "
            "format): no time",
            python_logging.parse_basic,
            python_logging.sniff_basic,
            False,
            maps="levelname -> level; name -> logger; key=value pairs in the message -> fields; no time: "
            "the order is the file's line order; pod from the file name unless a pair names it",
            shape_error=python_logging.basic_shape,
            note="Python logging's default layout writes no time: the order comes from line order "
            "(add %(asctime)s to the format)",
        ),
        Format(
            "klog",
            "Kubernetes klog text: `Lmmdd hh:mm:ss.uuuuuu PID file:line] msg`, printf or structured "
            '(`"msg" key="value"`)',
            klog.parse_klog,
            klog.sniff_klog,
            False,
            maps="month, day and time (no year: the year of the file's date) -> time; severity -> level; "
            "PID -> klog.pid (not a thread); file:line -> caller; a structured line's quoted message -> "
            "message and its key=value pairs -> fields; pod from the file name",
            shape_error=klog.klog_shape,
        ),
        Format(
            "redis",
            "a Redis server's or Sentinel's own log file: `PID:ROLE dd Mon yyyy HH:MM:SS.mmm LEVEL message`",
            redis.parse_redis,
            redis.sniff_redis,
            False,
            maps="day, month, year and time (the server's local time, no zone: --timezone) -> time; level "
            "character -> level; PID -> redis.pid; role (X Sentinel, M primary, S replica, C child) -> "
            "redis.role; pod from the file name. No job: only the redis-server dialect's lines are read "
            "(a failover)",
            shape_error=redis.redis_shape,
        ),
        Format(
            "loguru",
            'loguru `serialize=True`: {"text": <the formatted line>, "record": {...}} per line',
            python_logging.parse_loguru,
            python_logging.sniff_loguru,
            True,
            maps="record.extra (bind(), contextualize()) -> the line's fields; record.time.repr (else "
            "record.time.timestamp) -> time; record.level.name -> level; record.message -> message; "
            "record.name -> logger; record.thread.name -> thread",
        ),
        Format(
            "otlp",
            "OpenTelemetry OTLP-JSON file exporter: one `resourceLogs` batch per line",
            otlp.parse_otlp,
            otlp.sniff_otlp,
            True,
            maps="each logRecord -> one event; typed attribute values unwrapped (int64 strings kept exact); "
            "resource attributes (k8s.pod.name -> pod, service.name); body -> message; "
            "timeUnixNano (else observedTimeUnixNano) -> time",
        ),
        Format(
            "fluentbit",
            "Fluent Bit kubernetes filter envelope (`kubernetes.pod_name`)",
            containers.parse_fluentbit,
            containers.sniff_fluentbit,
            True,
            maps="kubernetes.pod_name -> pod (first precedence); app keys merged at top level, under a "
            "Merge_Log_Key, or read again from the `log` string; time -> wrapper.time",
        ),
        Format(
            "docker",
            'Docker json-file: {"log": "<app line>\\n", "stream", "time"}',
            containers.parse_docker,
            containers.sniff_docker,
            True,
            maps="`log` string read again in any shape; time -> wrapper.time (time fallback); "
            "16 KiB chunks joined",
            join=containers.join_docker,
        ),
        Format(
            "loki",
            'Grafana Loki `logcli query --output=jsonl`: {"labels", "line", "timestamp"}',
            containers.parse_loki,
            containers.sniff_loki,
            True,
            maps="`line` read again in any shape; labels -> loki.*, label pod -> kubernetes.pod_name; "
            "timestamp -> wrapper.time (time fallback); newest-first output is fine (order comes from time)",
        ),
        Format(
            "gcloud",
            "Cloud Logging LogEntry (`gcloud logging read --format=json`: one array, newest first)",
            exports.parse_gcloud,
            exports.sniff_gcloud,
            True,
            maps="jsonPayload (or textPayload read again in any shape) -> the app's record; "
            "resource.labels.pod_name -> kubernetes.pod_name; timestamp -> wrapper.time (time fallback); "
            "severity -> level when the app has none; insertId, logName, labels -> gcloud.*",
        ),
        Format(
            "cloudwatch",
            "CloudWatch Logs events (`aws logs filter-log-events`, `get-log-events`: `events`; "
            "Logs Insights rows)",
            exports.parse_cloudwatch,
            exports.sniff_cloudwatch,
            True,
            maps="message (@message) read again in any shape; timestamp (ms) -> wrapper.time; the pod from "
            "logStreamName (Fluent Bit's `...var.log.containers.POD_NS_CONTAINER-ID.log`, else the last "
            "part of `PREFIX/NAME`)",
        ),
        Format(
            "journald",
            "systemd journal (`journalctl -o json`, `-o json-pretty`)",
            exports.parse_journald,
            exports.sniff_journald,
            True,
            maps="MESSAGE read again in any shape; __REALTIME_TIMESTAMP (µs) -> wrapper.time; "
            "CONTAINER_NAME (a dockershim `k8s_C_POD_NS_UID_N` gives POD) -> pod_name, then _HOSTNAME",
        ),
        Format(
            "elasticsearch",
            "Elasticsearch/OpenSearch search hits (`_search` responses, scroll pages, elasticdump)",
            exports.parse_search_hit,
            exports.sniff_search_hit,
            True,
            maps="_source (a Fluent Bit record read as one) -> the app's record; `fields` values "
            "(arrays of one unwrapped) added; Filebeat's kubernetes.pod.name -> pod; _index, _id -> es.*",
        ),
        Format(
            "datadog",
            "Datadog Logs API v2 (`/api/v2/logs/events`: `data[]`)",
            exports.parse_datadog,
            exports.sniff_datadog,
            True,
            maps="attributes.attributes (else the message read again) -> the app's record; "
            "attributes.timestamp -> wrapper.time; tag pod_name: -> pod; host -> hostname",
        ),
        Format(
            "splunk",
            'Splunk export (`search/jobs/export?output_mode=json`: {"result": {"_raw", "_time"}} per line)',
            exports.parse_splunk,
            exports.sniff_splunk,
            True,
            maps="_raw read again in any shape; _time -> wrapper.time; a /var/log/containers source, "
            "else the `pod` field, names the pod; host -> hostname",
        ),
        Format(
            "gelf",
            "GELF 1.1 (Spring Boot `gelf`): `version` 1.1, `short_message`, epoch-seconds `timestamp`",
            json_shapes.parse_gelf,
            json_shapes.sniff_gelf,
            True,
            maps="`_jobId` -> jobId (underscore stripped); timestamp (epoch s) -> time; short_message -> "
            "message; host (the app name) -> gelf.host, the pod of last resort",
        ),
        Format(
            "logstash",
            "Logstash JSON (Spring Boot `logstash`, logstash-logback-encoder): `@version`",
            json_shapes.parse_logstash,
            json_shapes.sniff_logstash,
            True,
            maps="@timestamp (ISO with offset, or epoch ms) -> time; MDC/key-values at top level or under "
            "mdc/fields; HOSTNAME -> pod",
        ),
        Format(
            "ecs",
            "Elastic Common Schema (Spring Boot 3.4 dotted, 3.5+ nested, ecs-logging-java)",
            json_shapes.parse_ecs,
            json_shapes.sniff_ecs,
            True,
            maps="nested objects flattened to dotted keys; @timestamp -> time; service.node.name -> pod; "
            "MDC/key-values at top level (dotted MDC keys nested in 3.5+, e.g. kafka.topic)",
        ),
        Format(
            "flat",
            "one flat JSON object per line (the article's shape); nested objects are flattened",
            json_shapes.parse_flat,
            json_shapes.sniff_flat,
            True,
            maps="ts/@timestamp/timestamp/time -> time; pod/podName/HOSTNAME -> pod; names as in "
            "`vocabulary.FIELD_ALIASES`",
        ),
        Format(
            "logfmt",
            "key=value pairs (the article's demo output); values are strings",
            text.parse_logfmt,
            text.sniff_logfmt,
            False,
            maps='key=value, key="quoted", bare key (true); numbers coerced later',
            shape_error=text.logfmt_shape,
        ),
        Format(
            "text",
            "plain text lines; only message rules (leaselog.toml [[rules]]) turn them into events",
            text.parse_text,
            text.sniff_text,
            False,
            maps="the whole line -> message",
            shape_error=text.text_shape,
        ),
    )
}

# docs/FORMATS.md's detection order: wrappers first (strip, recurse), then the most specific JSON shapes.
# `text` is never auto-detected: a file of prose is only read with --format text or message rules.
DETECTION_ORDER: list[str] = [
    "cri",
    "spring-console",
    "kubectl",
    "celery",
    "python-logging",
    "python-basic",
    "klog",
    "redis",
    "loguru",
    "otlp",
    "fluentbit",
    "docker",
    "loki",
    "gcloud",
    "cloudwatch",
    "journald",
    "elasticsearch",
    "datadog",
    "splunk",
    "gelf",
    "logstash",
    "ecs",
    "flat",
    "logfmt",
]


def _sample(sample: list[bytes]) -> list[bytes]:
    """The lines detection looks at: not blank, not noise (banner, JVM warnings), not a stack-trace
    continuation (those carry no shape). A BOM is not part of a line's shape."""
    out = []
    for s in sample:
        s = s.removeprefix(BOM)
        if s.strip() and not is_noise(s) and not looks_like_continuation(s):
            out.append(s)
    return out


BOM = b"\xef\xbb\xbf"


def sniff_votes(sample: list[bytes]) -> dict[str, int]:
    """How many sample lines each auto-detectable format reads (each line parsed once)."""
    lines = _sample(sample)
    objs = [try_object(s) for s in lines]
    return {
        name: sum(1 for s, o in zip(lines, objs, strict=True) if FORMATS[name].sniff(s, o))
        for name in DETECTION_ORDER
    }


def detect_format(sample: list[bytes]) -> str | None:
    """The first format in DETECTION_ORDER that reads at least half the sample lines; else the one that
    reads the most (the first in DETECTION_ORDER on a tie); None when no line has a known shape.

    This is only the file's *first guess*, the shape tried first on every line (and the one that lets
    a uniform JSON file take the reader's columnar path): a line that does not fit it is read by
    `line_format`, so a banner, a head of JVM warnings or a run of lines of another shape never changes
    how the rest of the file is read.
    """
    n = len(_sample(sample))
    votes = sniff_votes(sample)
    best = max(votes.values(), default=0)
    if not best:
        return None
    for name in DETECTION_ORDER:
        if votes[name] * 2 >= n:
            return name
    return next(name for name in DETECTION_ORDER if votes[name] == best)


# one line on its own: JSON lines are only ever read as JSON (a broken object is malformed, never
# read as logfmt), text lines as a wrapper, a console line or logfmt
_JSON_ORDER = [n for n in DETECTION_ORDER if FORMATS[n].json_like]
_TEXT_ORDER = [n for n in DETECTION_ORDER if not FORMATS[n].json_like]


def line_format(line: bytes) -> Format | None:
    """The shape of one line on its own (docs/FORMATS.md's order), or None when no shape reads it."""
    if line.lstrip()[:1] == b"{":
        obj = try_object(line)
        if obj is None:
            return None
        for name in _JSON_ORDER:
            if FORMATS[name].sniff(line, obj):
                return FORMATS[name]
        return None
    for name in _TEXT_ORDER:
        if FORMATS[name].sniff(line, None):
            return FORMATS[name]
    return None
