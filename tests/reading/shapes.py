"""The article's incident (sample_logs/article-incident/) re-logged in every shape leaselog reads.

`python tests/reading/shapes.py` (re)writes sample_logs/formats/<shape>/; test_samples.py checks that the
files on disk are exactly what this produces and that each gives the flat version's findings. Each shape
is written the way its producer writes it (FORMATS.md): field names, nesting, time precision and zone,
typed values, wrappers; jobId becomes `report-42-<shape>` so no two sample folders share a job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FLAT = ROOT / "sample_logs" / "article-incident"
OUT = ROOT / "sample_logs" / "formats"

Row = dict[str, Any]
META = ("ts", "pod", "level", "logger", "message")


def story() -> dict[str, list[Row]]:
    """pod -> the flat rows of that pod's file, in order."""
    out: dict[str, list[Row]] = {}
    for f in sorted(FLAT.glob("*.jsonl")):
        out[f.stem] = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return out


def _t(row: Row) -> datetime:
    return datetime.fromisoformat(row["ts"].replace("Z", "+00:00"))


def _iso(t: datetime, digits: int = 3, tz: timezone = UTC) -> str:
    t = t.astimezone(tz)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{t.microsecond:06d}{'000'}"[:digits]
    zone = "Z" if tz is UTC else t.strftime("%z")[:3] + ":" + t.strftime("%z")[3:]
    return f"{base}.{frac}{zone}" if digits else f"{base}{zone}"


def _kv(row: Row, job: str) -> Row:
    """The row's MDC / key-value fields (everything but time, pod, level, logger, message)."""
    kv = {k: v for k, v in row.items() if k not in META}
    if "jobId" in kv:
        kv["jobId"] = job
    return kv


def _s(v: Any) -> str:
    """A value as an MDC string (`false`, not Python's `False`)."""
    return str(v).lower() if isinstance(v, bool) else str(v)


def _level(row: Row) -> str:
    return str(row.get("level", "INFO"))


def _logger(row: Row) -> str:
    return str(row.get("logger", "c.a.reports.ReportJob"))


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


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


def _mdc(kv: Row) -> Row:
    """MDC values are always strings; key/value pairs (leaseMs, released, elapsedMs) keep their type."""
    typed = ("leaseMs", "released", "elapsedMs", "durationMs", "kafka.partition", "kafka.offset")
    return {k: (v if k in typed else _s(v)) for k, v in kv.items()}


Encoder = Callable[[Row, str, str], list[str]]  # (row, pod, jobId) -> physical lines


def ecs_34(row: Row, pod: str, job: str) -> list[str]:
    rec = {
        "@timestamp": _iso(_t(row), 3),
        "log.level": _level(row),
        "process.pid": 1,
        "process.thread.name": "report-exec-1",
        "service.name": "report-worker",
        "service.version": "1.4.2",
        "service.environment": "prod",
        "service.node.name": pod,
        "log.logger": _logger(row),
        "message": row.get("message", ""),
        **_mdc(_kv(row, job)),
        "ecs.version": "8.11",
    }
    return [_dumps(rec)]


def ecs_35(row: Row, pod: str, job: str) -> list[str]:
    rec = {
        "@timestamp": _iso(_t(row), 6),
        "log": {"level": _level(row), "logger": _logger(row)},
        "process": {"pid": 1, "thread": {"name": "report-exec-1"}},
        "service": {"name": "report-worker", "version": "1.4.2", "node": {"name": pod}},
        "message": row.get("message", ""),
        **_nest(_mdc(_kv(row, job))),
        "ecs": {"version": "8.11"},
    }
    lines = [_dumps(rec)]
    if row.get("level") == "WARN":  # an exception logged with it: the trace follows on plain lines
        lines += [
            "java.lang.IllegalStateException: pool nearly exhausted",
            "\tat com.acme.db.Pool.borrow(Pool.java:118)",
            "\tat com.acme.reports.ReportJob.run(ReportJob.java:42)",
            "\t... 12 common frames omitted",
        ]
    return lines


def ecs_java(row: Row, pod: str, job: str) -> list[str]:
    rec = {
        "@timestamp": _iso(_t(row), 3),
        "log.level": _level(row),
        "message": row.get("message", ""),
        "ecs.version": "1.2.0",
        "service.name": "report-worker",
        "event.dataset": "report-worker",
        "process.thread.name": "report-exec-1",
        "log.logger": _logger(row),
        "log": {"origin": {"file": {"name": "ReportJob.java", "line": 42}, "function": "run"}},
        "host.name": pod,
        **{k: _s(v) for k, v in _kv(row, job).items()},
    }
    return [_dumps(rec)]


def logstash(row: Row, pod: str, job: str) -> list[str]:
    cest = timezone(timedelta(hours=2))
    rec = {
        "@timestamp": _iso(_t(row), 3, cest),
        "@version": "1",
        "message": row.get("message", ""),
        "logger_name": _logger(row),
        "thread_name": "report-exec-1",
        "level": _level(row),
        "level_value": 30000 if _level(row) == "WARN" else 20000,
        "HOSTNAME": pod,
        **_kv(row, job),
    }
    return [_dumps(rec)]


def logstash_epoch(row: Row, pod: str, job: str) -> list[str]:
    """logstash-logback-encoder with `<timestampPattern>[UNIX_TIMESTAMP_AS_NUMBER]` and short names,
    MDC under a sub-object (`"mdc"`)."""
    rec = {
        "@timestamp": int(_t(row).timestamp() * 1000),
        "@version": "1",
        "message": row.get("message", ""),
        "logger": _logger(row),
        "thread": "report-exec-1",
        "level": _level(row),
        "levelVal": 20000,
        "HOSTNAME": pod,
        "mdc": {k: _s(v) for k, v in _kv(row, job).items()},
    }
    return [_dumps(rec)]


_SYSLOG = {"ERROR": 3, "WARN": 4, "INFO": 6, "DEBUG": 7}


def gelf(row: Row, pod: str, job: str) -> list[str]:
    """`logging.structured.gelf.host=${HOSTNAME}`: host carries the pod (the default is the app name)."""
    rec: Row = {
        "version": "1.1",
        "short_message": row.get("message", ""),
        "timestamp": round(_t(row).timestamp(), 3),
        "level": _SYSLOG[_level(row)],
        "_level_name": _level(row),
        "host": pod,
        "_logger_name": _logger(row),
        "_thread_name": "report-exec-1",
    }
    rec.update({f"_{k}": v for k, v in _kv(row, job).items()})
    return [_dumps(rec)]


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


def otlp_batches(rows: list[Row], pod: str, job: str) -> list[str]:
    """The collector's file exporter: one batch per line, here up to three records per batch."""
    lines = []
    for i in range(0, len(rows), 3):
        records = []
        for row in rows[i : i + 3]:
            ns = int(_t(row).timestamp() * 1000) * 1_000_000
            attrs = [{"key": _OTEL_NAMES.get(k, k), "value": _any(v)} for k, v in _kv(row, job).items()]
            records.append(
                {
                    "timeUnixNano": str(ns),
                    "observedTimeUnixNano": str(ns + 1_200_000),
                    "severityNumber": 13 if _level(row) == "WARN" else 9,
                    "severityText": _level(row),
                    "body": {"stringValue": row.get("message", "")},
                    "attributes": attrs,
                    "traceId": "",
                    "spanId": "",
                }
            )
        resource = {
            "attributes": [
                {"key": "service.name", "value": {"stringValue": "report-worker"}},
                {"key": "k8s.pod.name", "value": {"stringValue": pod}},
                {"key": "k8s.namespace.name", "value": {"stringValue": "reports"}},
            ]
        }
        lines.append(
            _dumps(
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


def _flat_app(row: Row, pod: str, job: str, *, with_ts: bool = True, with_pod: bool = True) -> Row:
    rec: Row = {}
    if with_ts:
        rec["ts"] = row["ts"]
    if with_pod:
        rec["pod"] = pod
    rec.update({k: v for k, v in row.items() if k in ("level", "logger", "message")})
    rec.update(_kv(row, job))
    return rec


def docker(row: Row, pod: str, job: str) -> list[str]:
    app = _dumps(_flat_app(row, pod, job)) + "\n"
    t = _iso(_t(row) + timedelta(microseconds=180), 9)
    if row.get("level") == "WARN":  # a long line: Docker splits it into 16 KiB chunks
        big = _dumps({**_flat_app(row, pod, job), "detail": "x" * 20_000}) + "\n"
        return [
            _dumps({"log": big[:16384], "stream": "stdout", "time": t}),
            _dumps({"log": big[16384:], "stream": "stdout", "time": t}),
        ]
    return [json.dumps({"log": app, "stream": "stdout", "time": t}, separators=(",", ":"))]


def kubectl(row: Row, pod: str, job: str) -> list[str]:
    """The app logs no time and no pod: the kubectl prefix gives the time, the file name the pod."""
    lines = [f"{_iso(_t(row), 9)} {_dumps(_flat_app(row, pod, job, with_ts=False, with_pod=False))}"]
    if row.get("level") == "WARN":
        lines.append(f"{_iso(_t(row), 9)} \tat com.acme.db.Pool.borrow(Pool.java:118)")
    return lines


def cri(row: Row, pod: str, job: str) -> list[str]:
    t = _iso(_t(row) + timedelta(microseconds=250), 9)
    app = _dumps(_flat_app(row, pod, job))
    if row.get("event") == "lock_acquired":  # a long line the runtime wrote in parts
        third = len(app) // 3
        return [
            f"{t} stdout P {app[:third]}",
            f"{t} stdout P {app[third : 2 * third]}",
            f"{t} stdout F {app[2 * third :]}",
        ]
    return [f"{t} stdout F {app}"]


def _kube(pod: str) -> Row:
    return {
        "pod_name": pod,
        "namespace_name": "reports",
        "pod_id": "0b7e",
        "host": "node-3",
        "container_name": "report-worker",
        "labels": {"app": "report-worker"},
    }


def fluentbit_merged(row: Row, pod: str, job: str) -> list[str]:
    app = _flat_app(row, pod, job, with_pod=False)
    rec = {
        "time": _iso(_t(row), 9),
        "stream": "stdout",
        "_p": "F",
        "log": _dumps(app),
        **app,
        "kubernetes": _kube(pod),
    }
    return [_dumps(rec)]


def fluentbit_key(row: Row, pod: str, job: str) -> list[str]:
    app = _flat_app(row, pod, job, with_pod=False)
    rec = {
        "time": _iso(_t(row), 9),
        "stream": "stdout",
        "log": _dumps(app),
        "app": app,
        "kubernetes": _kube(pod),
    }
    return [_dumps(rec)]


def fluentbit_log(row: Row, pod: str, job: str) -> list[str]:
    app = _flat_app(row, pod, job, with_pod=False)
    rec = {"time": _iso(_t(row), 9), "stream": "stdout", "log": _dumps(app) + "\n", "kubernetes": _kube(pod)}
    return [_dumps(rec)]


def logfmt(row: Row, pod: str, job: str) -> list[str]:
    rec = _flat_app(row, pod, job)
    parts = []
    for k, v in rec.items():
        s = str(v).lower() if isinstance(v, bool) else str(v)
        parts.append(f'{k}="{s}"' if (" " in s or not s) else f"{k}={s}")
    return [" ".join(parts)]


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
    """kv() writes `key=value`; a value with a blank (or a quote, or empty) is quoted so it reads back."""
    if s and not any(c in s for c in ' ",]}'):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def spring_console(row: Row, pod: str, job: str) -> list[str]:
    """Spring Boot 3.5's default console pattern with `spring.application.name` set; the lease fields
    as logstash-logback-encoder's `kv()` renders them in the message (`key=value`), the pod from the
    file name; a stack trace under the WARN line. (The banner heads each file: `render_shape`.)"""
    kv = " ".join(f"{k}={_kv_value(_s(v))}" for k, v in _kv(row, job).items())
    msg = " ".join(x for x in (str(row.get("message", "")), kv) if x)
    thread = "scheduling-1" if "jobId" in row else "main"
    line = f"{_iso(_t(row))} {_level(row):>5} 1 --- [report-service] [{thread:>15}] {_logger(row):<40.40} : {msg}"
    if row.get("level") == "WARN":
        return [
            line,
            "java.lang.IllegalStateException: pool exhausted",
            "\tat com.acme.db.Pool.borrow(Pool.java:118)",
            "\t... 12 more",
        ]
    return [line]


def loki_export(pods: dict[str, list[Row]], job: str) -> list[str]:
    """`logcli query --output=jsonl '{app="report-worker"}'`: both pods in one file, newest first
    (logcli's default direction is backward); the line is the app's JSON, the pod a label."""
    rows = [(r, pod) for pod, rs in pods.items() for r in rs]
    rows.sort(key=lambda rp: (_t(rp[0]), rp[1]), reverse=True)
    out = []
    for row, pod in rows:
        labels = {"app": "report-worker", "container": "report-worker", "namespace": "reports", "pod": pod}
        line = _dumps(_flat_app(row, pod, job, with_pod=False))
        out.append(
            json.dumps(
                {"labels": labels, "line": line, "timestamp": _iso(_t(row), 9)},
                separators=(",", ":"),
                sort_keys=True,
            )
        )
    return out


# shape -> (encoder per row, or a batch encoder; file suffix; pod names as files)
SHAPES: dict[str, tuple[Encoder | None, str]] = {
    "ecs-3.4": (ecs_34, ".json"),
    "ecs-3.5": (ecs_35, ".json"),
    "ecs-java": (ecs_java, ".json"),
    "logstash": (logstash, ".json"),
    "logstash-epoch": (logstash_epoch, ".json"),
    "gelf": (gelf, ".json"),
    "otlp": (None, ".jsonl"),
    "docker": (docker, "-json.log"),
    "kubectl": (kubectl, ".log"),
    "cri": (cri, ".log"),
    "fluentbit-merged": (fluentbit_merged, ".jsonl"),
    "fluentbit-key": (fluentbit_key, ".jsonl"),
    "fluentbit-log": (fluentbit_log, ".jsonl"),
    "logfmt": (logfmt, ".logfmt"),
    "loki": (None, ".jsonl"),
    "spring-console": (spring_console, ".log"),
}

# the format each shape's files must be detected as
DETECTED = {
    "ecs-3.4": "ecs",
    "ecs-3.5": "ecs",
    "ecs-java": "ecs",
    "logstash": "logstash",
    "logstash-epoch": "logstash",
    "gelf": "gelf",
    "otlp": "otlp",
    "docker": "docker",
    "kubectl": "kubectl",
    "cri": "cri",
    "fluentbit-merged": "fluentbit",
    "fluentbit-key": "fluentbit",
    "fluentbit-log": "fluentbit",
    "logfmt": "logfmt",
    "loki": "loki",
    "spring-console": "spring-console",
}


def render_shape(shape: str) -> dict[str, str]:
    """file name -> content, for one shape."""
    encoder, suffix = SHAPES[shape]
    job = f"report-42-{shape}"
    if shape == "loki":
        return {f"report-worker{suffix}": "".join(f"{x}\n" for x in loki_export(story(), job))}
    files = {}
    for pod, rows in story().items():
        lines = (
            otlp_batches(rows, pod, job)
            if encoder is None
            else [x for r in rows for x in encoder(r, pod, job)]
        )
        if shape == "spring-console":
            lines = [*SPRING_BANNER, *lines]
        files[f"{pod}{suffix}"] = "".join(f"{x}\n" for x in lines)
    return files


# ---------------------------------------------------------------- custom names + leaselog.toml

CUSTOM_TOML = """\
# The report service logs its own names. Analyze with:
#   leaselog analyze sample_logs/formats/custom/ --config sample_logs/formats/custom/leaselog.toml
# Without this file none of its lines carries a job id leaselog knows, so they are all ignored.

[fields]
jobId = ["report_request_id"]
executionId = "run"
pod = "k8s.pod"
leaseMs = "lock_ttl_millis"
event = "what"
released = "lock_deleted"

[events]
lock_acquired = ["LOCK_OK"]
job_started = ["WORK_BEGIN"]
job_finished = ["WORK_END"]

# Some moments exist only as prose.
[[rules]]
event = "lock_released"
message_regex = 'Released lease for (?P<jobId>\\S+) run=(?P<executionId>\\S+) deleted=(?P<released>true|false)'

[[rules]]
event = "job_triggered"
message_regex = 'Picked up (?P<jobId>\\S+) from (?P<topic>\\S+)/(?P<partition>\\d+)@(?P<offset>\\d+) run=(?P<executionId>\\S+)'
fields = { trigger = "kafka" }
"""

_CUSTOM_EVENTS = {"lock_acquired": "LOCK_OK", "job_started": "WORK_BEGIN", "job_finished": "WORK_END"}


def custom(row: Row, pod: str, job: str) -> list[str]:
    rec: Row = {"time": row["ts"], "k8s.pod": pod, "severity": _level(row)}
    ev = row.get("event")
    if "jobId" in row:
        rec["report_request_id"] = job
        rec["run"] = row["executionId"]
    if ev == "lock_released":
        rec["message"] = (
            f"Released lease for {job} run={row['executionId']} deleted={str(row['released']).lower()}"
        )
        del rec["report_request_id"], rec["run"]
    elif ev == "job_triggered":
        rec["message"] = (
            f"Picked up {job} from {row['kafka.topic']}/{row['kafka.partition']}@{row['kafka.offset']}"
            f" run={row['executionId']}"
        )
        del rec["report_request_id"], rec["run"]
    elif ev is not None:
        rec["what"] = _CUSTOM_EVENTS[ev]
        rec["message"] = row.get("message", "")
        if "leaseMs" in row:
            rec["lock_ttl_millis"] = row["leaseMs"]
        if "status" in row:
            rec["outcome_text"] = row["status"]
    else:
        rec["message"] = row.get("message", "")
    return [_dumps(rec)]


def render_custom() -> dict[str, str]:
    files = {
        f"{pod}.jsonl": "".join(f"{x}\n" for r in rows for x in custom(r, pod, "report-42-custom"))
        for pod, rows in story().items()
    }
    files["leaselog.toml"] = CUSTOM_TOML
    return files


def all_samples() -> dict[str, dict[str, str]]:
    out = {shape: render_shape(shape) for shape in SHAPES}
    out["custom"] = render_custom()
    return out


def write_all(root: Path = OUT) -> None:
    for shape, files in all_samples().items():
        d = root / shape
        d.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (d / name).write_text(content, encoding="utf-8")


if __name__ == "__main__":
    write_all()
    print(f"wrote {OUT}")
