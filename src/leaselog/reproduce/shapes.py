"""Flat log rows re-logged in every shape leaselog reads, the way each producer writes them
(docs/FORMATS.md): field names, nesting, time precision and zone, typed values, wrappers. `render(name,
pods)` gives file name -> content. A shape is one function: a row encoder `(row, pod, job) -> lines` under
`@row_shape(...)`, or a whole-fleet renderer `(pods, job) -> {file: lines}` under `@fleet_shape(...)`.
`job` (when given) replaces every row's jobId (samples of different shapes never share a job).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta, timezone
from typing import Any

from leaselog.reproduce.rows import (
    THREAD,
    Pods,
    Row,
    dumps,
    iso,
    kv,
    level,
    logger,
    mdc_str,
    process_starts,
    row_time,
    thread,
)

# shapes whose lines name no thread (and no process standing for one): klog's, and the Python layouts
# services use as they are documented (leaselog.reproduce.python_shapes)
NO_THREAD = ("klog", "python-logging", "python-json-logger")

Encoder = Callable[[Row, str, str | None], list[str]]  # (row, pod, jobId) -> physical lines
KubeEncoder = Callable[[Row, str, str | None, Row], list[str]]  # (row, pod, jobId, kubernetes) -> lines
FleetRenderer = Callable[[Pods, str | None], dict[str, list[str]]]  # pods -> file name -> lines

APP = "report-worker"


@dataclass(frozen=True)
class Shape:
    name: str
    detected: str  # the format leaselog must detect for this shape's files
    render: FleetRenderer
    sample: bool  # written to sample_logs/formats/ (the article's incident in this shape)
    note: str


SHAPES: dict[str, Shape] = {}


def row_shape(name: str, suffix: str, detected: str, *, sample: bool = True) -> Callable[[Encoder], Encoder]:
    """Register a per-row encoder: one file per pod, `<pod><suffix>`."""

    def deco(fn: Encoder) -> Encoder:
        def render(pods: Pods, job: str | None) -> dict[str, list[str]]:
            return {
                f"{pod}{suffix}": [x for r in rows for x in fn(r, pod, job)] for pod, rows in pods.items()
            }

        SHAPES[name] = Shape(name, detected, render, sample, (fn.__doc__ or "").strip())
        return fn

    return deco


def fleet_shape(name: str, detected: str, *, sample: bool = True) -> Callable[[FleetRenderer], FleetRenderer]:
    """Register a renderer that sees the whole fleet at once (batches, merged files)."""

    def deco(fn: FleetRenderer) -> FleetRenderer:
        SHAPES[name] = Shape(name, detected, fn, sample, (fn.__doc__ or "").strip())
        return fn

    return deco


def render(name: str, pods: Pods, job: str | None = None) -> dict[str, str]:
    """file name -> content of `pods`' rows in shape `name`."""
    files = SHAPES[name].render(pods, job)
    return {f: "".join(f"{x}\n" for x in lines) for f, lines in files.items()}


def _nest(flat: Row) -> Row:
    """`kafka.topic` -> {"kafka": {"topic": ..}} as Spring Boot 3.5+ writes dotted MDC keys."""
    out: Row = {}
    for k, v in flat.items():
        cur = out
        parts = k.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = v
    return out


def _mdc(fields: Row) -> Row:
    """MDC values are always strings; key/value pairs (leaseMs, released, elapsedMs) keep their type."""
    typed = ("leaseMs", "released", "elapsedMs", "durationMs", "kafka.partition", "kafka.offset")
    return {k: (v if k in typed else mdc_str(v)) for k, v in fields.items()}


def flat_app(row: Row, pod: str, job: str | None, *, with_ts: bool = True, with_pod: bool = True) -> Row:
    """The app's own JSON line inside a container wrapper."""
    rec: Row = {}
    if with_ts:
        rec["ts"] = row["ts"]
    if with_pod:
        rec["pod"] = pod
    rec.update({k: v for k, v in row.items() if k in ("thread", "level", "logger", "message")})
    rec.update(kv(row, job))
    return rec


# ---------------------------------------------------------------- Spring Boot / Logback JSON


@row_shape("ecs-3.4", ".json", "ecs")
def ecs_34(row: Row, pod: str, job: str | None) -> list[str]:
    """Spring Boot 3.4 `logging.structured.format.console=ecs`: dotted keys, MDC as strings."""
    rec = {
        "@timestamp": iso(row_time(row), 3),
        "log.level": level(row),
        "process.pid": 1,
        "process.thread.name": thread(row),
        "service.name": APP,
        "service.version": "1.4.2",
        "service.environment": "prod",
        "service.node.name": pod,
        "log.logger": logger(row),
        "message": row.get("message", ""),
        **_mdc(kv(row, job)),
        "ecs.version": "8.11",
    }
    return [dumps(rec)]


@row_shape("ecs-3.5", ".json", "ecs")
def ecs_35(row: Row, pod: str, job: str | None) -> list[str]:
    """Spring Boot 3.5 ECS: nested objects, microseconds; a WARN carries a stack trace on plain lines."""
    rec = {
        "@timestamp": iso(row_time(row), 6),
        "log": {"level": level(row), "logger": logger(row)},
        "process": {"pid": 1, "thread": {"name": thread(row)}},
        "service": {"name": APP, "version": "1.4.2", "node": {"name": pod}},
        "message": row.get("message", ""),
        **_nest(_mdc(kv(row, job))),
        "ecs": {"version": "8.11"},
    }
    lines = [dumps(rec)]
    if row.get("level") == "WARN":  # an exception logged with it: the trace follows on plain lines
        lines += [
            "java.lang.IllegalStateException: pool nearly exhausted",
            "\tat com.acme.db.Pool.borrow(Pool.java:118)",
            "\tat com.acme.reports.ReportJob.run(ReportJob.java:42)",
            "\t... 12 common frames omitted",
        ]
    return lines


@row_shape("ecs-java", ".json", "ecs")
def ecs_java(row: Row, pod: str, job: str | None) -> list[str]:
    """ecs-logging-java's EcsEncoder: the pod in `host.name`, origin object, MDC flattened as strings."""
    rec = {
        "@timestamp": iso(row_time(row), 3),
        "log.level": level(row),
        "message": row.get("message", ""),
        "ecs.version": "1.2.0",
        "service.name": APP,
        "event.dataset": APP,
        "process.thread.name": thread(row),
        "log.logger": logger(row),
        "log": {"origin": {"file": {"name": "ReportJob.java", "line": 42}, "function": "run"}},
        "host.name": pod,
        **{k: mdc_str(v) for k, v in kv(row, job).items()},
    }
    return [dumps(rec)]


@row_shape("logstash", ".json", "logstash")
def logstash(row: Row, pod: str, job: str | None) -> list[str]:
    """logstash-logback-encoder defaults: local time with offset (+02:00), the pod in HOSTNAME."""
    cest = timezone(timedelta(hours=2))
    rec = {
        "@timestamp": iso(row_time(row), 3, cest),
        "@version": "1",
        "message": row.get("message", ""),
        "logger_name": logger(row),
        "thread_name": thread(row),
        "level": level(row),
        "level_value": 30000 if level(row) == "WARN" else 20000,
        "HOSTNAME": pod,
        **kv(row, job),
    }
    return [dumps(rec)]


@row_shape("logstash-epoch", ".json", "logstash")
def logstash_epoch(row: Row, pod: str, job: str | None) -> list[str]:
    """logstash-logback-encoder with `<timestampPattern>[UNIX_TIMESTAMP_AS_NUMBER]` and short names,
    MDC under a sub-object (`"mdc"`)."""
    rec = {
        "@timestamp": int(row_time(row).timestamp() * 1000),
        "@version": "1",
        "message": row.get("message", ""),
        "logger": logger(row),
        "thread": thread(row),
        "level": level(row),
        "levelVal": 20000,
        "HOSTNAME": pod,
        "mdc": {k: mdc_str(v) for k, v in kv(row, job).items()},
    }
    return [dumps(rec)]


_SYSLOG = {"ERROR": 3, "WARN": 4, "INFO": 6, "DEBUG": 7}


def _gelf(row: Row, host: str, job: str | None) -> list[str]:
    rec: Row = {
        "version": "1.1",
        "short_message": row.get("message", ""),
        "timestamp": round(row_time(row).timestamp(), 3),
        "level": _SYSLOG[level(row)],
        "_level_name": level(row),
        "host": host,
        "_logger_name": logger(row),
        "_thread_name": thread(row),
    }
    rec.update({f"_{k}": v for k, v in kv(row, job).items()})
    return [dumps(rec)]


@row_shape("gelf", ".json", "gelf")
def gelf(row: Row, pod: str, job: str | None) -> list[str]:
    """`logging.structured.gelf.host=${HOSTNAME}`: host carries the pod (the default is the app name)."""
    return _gelf(row, pod, job)


@row_shape("gelf-app-host", ".json", "gelf", sample=False)
def gelf_app_host(row: Row, pod: str, job: str | None) -> list[str]:
    """Spring Boot's GELF default: `host` is the application name, the same on every pod (one file per
    pod, named after it, as `kubectl logs` gives)."""
    return _gelf(row, APP, job)


# ---------------------------------------------------------------- OpenTelemetry


def _any(v: Any) -> Row:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}  # int64 as a decimal string
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


_OTEL_NAMES = {
    "kafka.topic": "messaging.destination.name",
    "kafka.partition": "messaging.kafka.destination.partition",
    "kafka.offset": "messaging.kafka.message.offset",
    "trigger": "messaging.system",
}


def _otlp_batches(rows: list[Row], pod: str, job: str | None, per_batch: int = 3) -> list[str]:
    lines = []
    for i in range(0, len(rows), per_batch):
        records = []
        for row in rows[i : i + per_batch]:
            ns = int(row_time(row).timestamp() * 1000) * 1_000_000
            attrs = [{"key": _OTEL_NAMES.get(k, k), "value": _any(v)} for k, v in kv(row, job).items()]
            if "thread" in row:  # OpenTelemetry's semantic convention for the logging thread
                attrs.append({"key": "thread.name", "value": {"stringValue": str(row["thread"])}})
            records.append(
                {
                    "timeUnixNano": str(ns),
                    "observedTimeUnixNano": str(ns + 1_200_000),
                    "severityNumber": 13 if level(row) == "WARN" else 9,
                    "severityText": level(row),
                    "body": {"stringValue": row.get("message", "")},
                    "attributes": attrs,
                    "traceId": "",
                    "spanId": "",
                }
            )
        resource = {
            "attributes": [
                {"key": "service.name", "value": {"stringValue": APP}},
                {"key": "k8s.pod.name", "value": {"stringValue": pod}},
                {"key": "k8s.namespace.name", "value": {"stringValue": "reports"}},
            ]
        }
        lines.append(
            dumps(
                {
                    "resourceLogs": [
                        {
                            "resource": resource,
                            "scopeLogs": [{"scope": {"name": "com.acme.reports"}, "logRecords": records}],
                        }
                    ]
                }
            )
        )
    return lines


@fleet_shape("otlp", "otlp")
def otlp(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """The collector's file exporter: one batch per line, up to three records per batch."""
    return {f"{pod}.jsonl": _otlp_batches(rows, pod, job) for pod, rows in pods.items()}


# ---------------------------------------------------------------- container runtimes and shippers


@row_shape("docker", "-json.log", "docker")
def docker(row: Row, pod: str, job: str | None) -> list[str]:
    """Docker's json-file driver; a WARN line made long (20 KB) is split into 16 KiB chunks."""
    app = dumps(flat_app(row, pod, job)) + "\n"
    t = iso(row_time(row) + timedelta(microseconds=180), 9)
    if row.get("level") == "WARN":  # a long line: Docker splits it into 16 KiB chunks
        big = dumps({**flat_app(row, pod, job), "detail": "x" * 20_000}) + "\n"
        return [
            dumps({"log": big[:16384], "stream": "stdout", "time": t}),
            dumps({"log": big[16384:], "stream": "stdout", "time": t}),
        ]
    return [json.dumps({"log": app, "stream": "stdout", "time": t}, separators=(",", ":"))]


@row_shape("kubectl", ".log", "kubectl")
def kubectl(row: Row, pod: str, job: str | None) -> list[str]:
    """`kubectl logs --timestamps`: the app logs no time and no pod: the prefix gives the time, the file
    name the pod; a WARN carries a stack-trace line."""
    lines = [f"{iso(row_time(row), 9)} {dumps(flat_app(row, pod, job, with_ts=False, with_pod=False))}"]
    if row.get("level") == "WARN":
        lines.append(f"{iso(row_time(row), 9)} \tat com.acme.db.Pool.borrow(Pool.java:118)")
    return lines


@fleet_shape("kubectl-prefix", "kubectl", sample=False)
def kubectl_prefix(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`kubectl logs -l app=report-worker --prefix --timestamps`: every pod in one file, each line
    `[pod/NAME/CONTAINER] TIME app-json`, the app logging neither time nor pod."""
    rows = sorted(
        ((row_time(r), pod, i, r) for pod, rs in pods.items() for i, r in enumerate(rs)),
        key=lambda x: (x[0], x[1], x[2]),
    )
    return {
        f"{APP}.log": [
            f"[pod/{pod}/{APP}] {iso(t, 9)} {dumps(flat_app(r, pod, job, with_ts=False, with_pod=False))}"
            for t, pod, _i, r in rows
        ]
    }


@row_shape("cri", ".log", "cri")
def cri(row: Row, pod: str, job: str | None) -> list[str]:
    """containerd/CRI-O node log files; a lock_acquired line written in three parts (P, P, F)."""
    t = iso(row_time(row) + timedelta(microseconds=250), 9)
    app = dumps(flat_app(row, pod, job))
    if row.get("event") == "lock_acquired":  # a long line the runtime wrote in parts
        third = len(app) // 3
        return [
            f"{t} stdout P {app[:third]}",
            f"{t} stdout P {app[third : 2 * third]}",
            f"{t} stdout F {app[2 * third :]}",
        ]
    return [f"{t} stdout F {app}"]


def kube_shape(name: str) -> Callable[[KubeEncoder], KubeEncoder]:
    """Register a Fluent Bit encoder `(row, pod, job, kubernetes) -> lines`: one file per pod, each line
    with the kubernetes filter's metadata, whose `docker_id` is the container's (a process started again
    on the pod, after its start-up line, is a new container with a new id)."""

    def deco(fn: KubeEncoder) -> KubeEncoder:
        def render(pods: Pods, job: str | None) -> dict[str, list[str]]:
            return {
                f"{pod}.jsonl": [
                    x for r, k in zip(rows, _kube(pod, rows), strict=True) for x in fn(r, pod, job, k)
                ]
                for pod, rows in pods.items()
            }

        SHAPES[name] = Shape(name, "fluentbit", render, True, (fn.__doc__ or "").strip())
        CONTAINER_SHAPES.add(name)
        return fn

    return deco


# the shapes whose lines name the pod's container (another one: a restarted process)
CONTAINER_SHAPES: set[str] = set()


def _kube(pod: str, rows: list[Row]) -> list[Row]:
    """Each row's `kubernetes` object: the container counts the pod's start-up lines before the row."""
    out = []
    for starts in process_starts(rows):
        docker_id = hashlib.sha256(f"{pod}/{starts}".encode()).hexdigest()
        out.append(
            {
                "pod_name": pod,
                "namespace_name": "reports",
                "pod_id": "0b7e",
                "host": "node-3",
                "container_name": APP,
                "docker_id": docker_id,
                "labels": {"app": APP},
            }
        )
    return out


@kube_shape("fluentbit-merged")
def fluentbit_merged(row: Row, pod: str, job: str | None, kube: Row) -> list[str]:
    """Fluent Bit's kubernetes filter with Merge_Log: the app's keys at the top level."""
    app = flat_app(row, pod, job, with_pod=False)
    rec = {
        "time": iso(row_time(row), 9),
        "stream": "stdout",
        "_p": "F",
        "log": dumps(app),
        **app,
        "kubernetes": kube,
    }
    return [dumps(rec)]


@kube_shape("fluentbit-key")
def fluentbit_key(row: Row, pod: str, job: str | None, kube: Row) -> list[str]:
    """Fluent Bit with Merge_Log_Key app: the app's keys under `app`."""
    app = flat_app(row, pod, job, with_pod=False)
    rec = {
        "time": iso(row_time(row), 9),
        "stream": "stdout",
        "log": dumps(app),
        "app": app,
        "kubernetes": kube,
    }
    return [dumps(rec)]


@kube_shape("fluentbit-log")
def fluentbit_log(row: Row, pod: str, job: str | None, kube: Row) -> list[str]:
    """Fluent Bit without Merge_Log: the app's JSON as a string in `log`."""
    app = flat_app(row, pod, job, with_pod=False)
    rec = {"time": iso(row_time(row), 9), "stream": "stdout", "log": dumps(app) + "\n", "kubernetes": kube}
    return [dumps(rec)]


@row_shape("logfmt", ".logfmt", "logfmt")
def logfmt(row: Row, pod: str, job: str | None) -> list[str]:
    """key=value pairs, quoted when the value has a space."""
    rec = flat_app(row, pod, job)
    parts = []
    for k, v in rec.items():
        s = str(v).lower() if isinstance(v, bool) else str(v)
        parts.append(f'{k}="{s}"' if (" " in s or not s) else f"{k}={s}")
    return [" ".join(parts)]


@fleet_shape("loki", "loki")
def loki(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`logcli query --output=jsonl '{app="report-worker"}'`: every pod in one file, newest first
    (logcli's default direction is backward); the line is the app's JSON, the pod a label."""
    rows = [(r, pod) for pod, rs in pods.items() for r in rs]
    # the fleet's lines in the order they were written, then read backward: lines of one millisecond come
    # newest first too (a stable sort with reverse=True would keep them oldest first)
    rows.sort(key=lambda rp: (row_time(rp[0]), rp[1]))
    rows.reverse()
    out = []
    for row, pod in rows:
        labels = {"app": APP, "container": APP, "namespace": "reports", "pod": pod}
        line = dumps(flat_app(row, pod, job, with_pod=False))
        out.append(
            json.dumps(
                {"labels": labels, "line": line, "timestamp": iso(row_time(row), 9)},
                separators=(",", ":"),
                sort_keys=True,
            )
        )
    return {f"{APP}.jsonl": out}


SPRING_BANNER = [
    "",
    "  .   ____          _            __ _ _",
    " /\\\\ / ___'_ __ _ _(_)_ __  __ _ \\ \\ \\ \\",
    "( ( )\\___ | '_ | '_| | '_ \\/ _` | \\ \\ \\ \\",
    " \\\\/  ___)| |_)| | | | | || (_| |  ) ) ) )",
    "  '  |____| .__|_| |_|_| |_\\__, | / / / /",
    " =========|_|==============|___/=/_/_/_/",
    "",
    " :: Spring Boot ::                (v3.5.0)",
    "",
]


def _kv_value(s: str) -> str:
    """kv() writes `key=value`; a value with a blank, a quote or a bracket (or empty) is quoted so it
    reads back whole."""
    if s and not any(c in s for c in ' ",]}'):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def spring_console_line(row: Row, pod: str, job: str | None) -> list[str]:
    """One row as Spring Boot 3.5's default console line (`spring.application.name` set), the lease fields
    as logstash-logback-encoder's `kv()` renders them in the message; a stack trace under a WARN line."""
    pairs = " ".join(f"{k}={_kv_value(mdc_str(v))}" for k, v in kv(row, job).items())
    msg = " ".join(x for x in (str(row.get("message", "")), pairs) if x)
    name = thread(row, "scheduling-1" if "jobId" in row else "main")
    line = f"{iso(row_time(row))} {level(row):>5} 1 --- [{APP}] [{name:>15}] {logger(row):<40.40} : {msg}"
    if level(row) == "WARN":
        return [
            line,
            "java.lang.IllegalStateException: pool exhausted",
            "\tat com.acme.db.Pool.borrow(Pool.java:118)",
            "\t... 12 more",
        ]
    return [line]


@fleet_shape("spring-console", "spring-console")
def spring_console(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """Spring Boot's default console output, as a terminal or `kubectl logs` shows it: the banner, then
    console lines with the lease fields as `kv()` pairs; the pod is the file name (one file per pod)."""
    return {
        f"{pod}.log": [*SPRING_BANNER, *(x for r in rows for x in spring_console_line(r, pod, job))]
        for pod, rows in pods.items()
    }


def pool_processes(rows: list[Row]) -> dict[str, str]:
    """Celery's `processName` per lab thread of a pod: `main` is MainProcess, every other thread (a renewal
    thread too: one name per thread, as in the flat lines) `ForkPoolWorker-N` in the order they first log."""
    names = dict.fromkeys(thread(r, THREAD if "jobId" in r else "main") for r in rows)
    workers = [n for n in names if n != "main"]
    return {"main": "MainProcess", **{n: f"ForkPoolWorker-{i}" for i, n in enumerate(workers, 1)}}


def celery_line(row: Row, job: str | None, process: str) -> str:
    """Celery's worker format (`[%(asctime)s: %(levelname)s/%(processName)s] %(message)s`: local time,
    milliseconds after a comma, no zone), the lease fields as `key=value` pairs."""
    pairs = " ".join(f"{k}={_kv_value(mdc_str(v))}" for k, v in kv(row, job).items())
    msg = " ".join(x for x in (str(row.get("message", "")), pairs) if x)
    t = row_time(row)
    asctime = t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"
    lvl = {"WARN": "WARNING"}.get(level(row), level(row))
    return f"[{asctime}: {lvl}/{process}] {msg}"


@fleet_shape("celery", "celery")
def celery(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """Celery's worker log, one file per pod: each lab thread is a pool process of its own."""
    procs = {pod: pool_processes(rows) for pod, rows in pods.items()}
    return {
        f"{pod}.log": [
            celery_line(r, job, procs[pod][thread(r, THREAD if "jobId" in r else "main")]) for r in rows
        ]
        for pod, rows in pods.items()
    }


@fleet_shape("klog", "klog")
def klog(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """Kubernetes klog text (`Lmmdd hh:mm:ss.uuuuuu PID file:line] "message" key="value"`), as a
    structured `logger.Info` writes it; no year in the lines: the file's name carries the date."""

    def line(row: Row) -> str:
        t = row_time(row)
        pairs = " ".join(
            f"{k}={json.dumps(v) if isinstance(v, str) else mdc_str(v)}" for k, v in kv(row, job).items()
        )
        head = f"{level(row)[:1]}{t:%m%d %H:%M:%S}.{t.microsecond:06d}       1 worker.go:42]"
        return " ".join(x for x in (head, json.dumps(str(row.get("message", ""))), pairs) if x)

    return {
        f"{pod}.{row_time(rows[0]):%Y-%m-%d}.log": [line(r) for r in rows]
        for pod, rows in pods.items()
        if rows
    }


@fleet_shape("flat", "flat", sample=False)
def flat(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """The rows as they are: one JSON object per line, one file per pod (what the lab's workers write)."""
    return {
        f"{pod}.jsonl": [dumps({**r, **({"jobId": job} if job and "jobId" in r else {})}) for r in rows]
        for pod, rows in pods.items()
    }
