"""Records exported from log stores, each unwrapped to the application's own record.

One record is one line of a JSON-lines export (`jq -c '.[]'`, elasticdump, `journalctl -o json`,
Splunk's export endpoint) or one record of a whole JSON document (`reading.documents`: gcloud's array,
the AWS CLI's `events`, Elasticsearch's `hits.hits`, Datadog's `data`). The store's own fields go under
a prefix of their own (`gcloud.*`, `cloudwatch.*`, `journald.*`, `es.*`, `datadog.*`, `splunk.*`) and
its time under `wrapper.time`, the time of last resort, so they never shadow what the application logged.
A pod the store names goes where its precedence says: Kubernetes metadata as `kubernetes.pod_name` (as
good as Fluent Bit's), a container, stream or host name below the application's own `pod` field.

Where each shape comes from:

- **gcloud** — Cloud Logging's `LogEntry` (cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry):
  `jsonPayload` (the container's JSON line, parsed by the GKE agent) or `textPayload`, `timestamp`,
  `receiveTimestamp`, `severity`, `insertId`, `logName`, `labels`, `resource.labels.pod_name`,
  `container_name`, `namespace_name` (monitored resource `k8s_container`); `gcloud logging read
  --format=json` writes them as one array, newest first.
- **cloudwatch** — CloudWatch Logs `FilteredLogEvent` (`filter-log-events`: `logStreamName`,
  `timestamp` and `ingestionTime` in ms, `message`, `eventId`) and `OutputLogEvent` (`get-log-events`:
  `timestamp`, `message`, `ingestionTime`), under `events` (docs.aws.amazon.com/AmazonCloudWatchLogs/
  latest/APIReference/API_FilteredLogEvent.html, API_OutputLogEvent.html); Logs Insights rows
  (`get-query-results`: `@timestamp` as `yyyy-mm-dd hh:mm:ss.mmm` UTC, `@message`, `@logStream`). The
  pod from the stream's name: Fluent Bit's `cloudwatch_logs` output appends the tag to
  `log_stream_prefix` (`kube.var.log.containers.POD_NAMESPACE_CONTAINER-ID.log`, the CloudWatch
  agent's `HOST-application.var.log.containers...`), else the last part of a `PREFIX/.../NAME`.
- **journald** — `journalctl -o json` (systemd's JSON export format, systemd.io/JOURNAL_EXPORT_FORMATS:
  every field a string, `__REALTIME_TIMESTAMP` µs since the epoch, a non-UTF-8 value as an array of
  bytes): `MESSAGE` read again; Docker's journald driver adds `CONTAINER_NAME`, `CONTAINER_ID_FULL`
  (docs.docker.com/engine/logging/drivers/journald), which under the kubelet's dockershim is
  `k8s_CONTAINER_POD_NAMESPACE_UID_ATTEMPT` (kubernetes pkg/kubelet/dockershim/naming.go); then
  `_HOSTNAME`.
- **elasticsearch** — a `_search` hit (Elasticsearch and OpenSearch reference, "Search API", response
  body `hits.hits`: `_index`, `_id`, `_source`, `fields` whose values are arrays), also one per line as
  elasticdump writes them; a `_source` that is a Fluent Bit record is read as one; Filebeat's
  `kubernetes.pod.name` names the pod.
- **datadog** — Logs API v2 `GET /api/v2/logs/events` (docs.datadoghq.com/api/latest/logs/): `data[]`
  of `{"id", "type": "log", "attributes": {"timestamp", "message", "host", "service", "status", "tags",
  "attributes": {...}}}`; the inner `attributes` are the app's parsed JSON; the pod from the Agent's
  `pod_name:` tag.
- **splunk** — the `search/jobs/export` endpoint with `output_mode=json` (help.splunk.com, "Export data
  using the Splunk REST API"): one `{"preview": false, "offset": n, "result": {"_raw", "_time", "host",
  "source", "sourcetype", ...}}` per line; `_raw` is the app's line; a `source` under
  /var/log/containers names the pod.
"""

from __future__ import annotations

import re
from typing import Any

from leaselog.reading.formats._common import (
    WRAPPER_TIME,
    Malformed,
    Record,
    flatten_object,
    load_object,
    pod_from_path,
)
from leaselog.reading.formats.containers import app_records, fluentbit_records, is_fluentbit
from leaselog.reading.formats.json_shapes import object_records

Obj = dict[str, Any] | None
POD = "kubernetes.pod_name"  # the pod as Kubernetes metadata names it (first precedence)
POD_LOW = "pod_name"  # a name that stands for the pod below the app's own `pod` field


def _wrap(records: list[Record], extra: dict[str, Any]) -> list[Record]:
    for r in records:
        for k, v in extra.items():
            if v is not None and v != "":
                r.setdefault(k, v)
    return records


def inner_object(obj: dict[str, Any]) -> list[Record]:
    """The app's record an export holds as an object (a shipper's record is read as one)."""
    if is_fluentbit(obj):
        return fluentbit_records(obj)
    return object_records(obj)


def inner_text(text: str, where: str) -> list[Record]:
    """The app's line an export holds as a string, read again in any shape."""
    s = text.strip()
    if s[:1] == "{":
        try:
            obj = load_object(s)
        except Malformed as e:
            raise Malformed(f"{where}: app line: {e}") from e
        return inner_object(obj)
    return app_records(s, where)


# ---------------------------------------------------------------- Cloud Logging (gcloud)


def is_gcloud(obj: dict[str, Any]) -> bool:
    return ("insertId" in obj or "logName" in obj) and (
        "jsonPayload" in obj or "textPayload" in obj or "protoPayload" in obj
    )


def sniff_gcloud(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_gcloud(obj)


def parse_gcloud(line: bytes) -> list[Record]:
    obj = load_object(line)
    payload, text = obj.get("jsonPayload"), obj.get("textPayload")
    if isinstance(payload, dict):
        records = inner_object(payload)
    elif isinstance(text, str):
        records = inner_text(text, "gcloud textPayload")
    elif "protoPayload" in obj:
        records = [{}]  # an audit or request log: no app line
    else:
        raise Malformed("LogEntry without jsonPayload, textPayload or protoPayload")
    resource = obj.get("resource")
    res = resource.get("labels") if isinstance(resource, dict) else None
    res = res if isinstance(res, dict) else {}
    extra: dict[str, Any] = {
        WRAPPER_TIME: obj.get("timestamp") or obj.get("receiveTimestamp"),
        POD: res.get("pod_name"),
        "kubernetes.container_name": res.get("container_name"),
        "kubernetes.namespace_name": res.get("namespace_name"),
        "level": obj.get("severity"),
        "gcloud.severity": obj.get("severity"),
        "gcloud.insert_id": obj.get("insertId"),
        "gcloud.log_name": obj.get("logName"),
    }
    labels = obj.get("labels")
    if isinstance(labels, dict):
        extra.update({f"gcloud.labels.{k}": v for k, v in labels.items()})
    return _wrap(records, extra)


# ---------------------------------------------------------------- CloudWatch Logs

_STREAM_CONTAINER = re.compile(r"var\.log\.containers\.(?P<pod>[^_/]+)_[^_/]+_.+?(?:-[0-9a-f]{64})?\.log$")
_INSIGHTS_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?")


def pod_from_stream(stream: str) -> tuple[str, str]:
    """(key, pod) from a CloudWatch log stream's name: Fluent Bit's / the CloudWatch agent's container
    log tag names the pod as Kubernetes does; a `PREFIX/NAME` stream is named after what wrote it."""
    m = _STREAM_CONTAINER.search(stream)
    if m is not None:
        return POD, m.group("pod")
    return POD_LOW, stream.rsplit("/", 1)[-1]


def is_cloudwatch(obj: dict[str, Any]) -> bool:
    if isinstance(obj.get("message"), str) and isinstance(obj.get("timestamp"), int):
        return "ingestionTime" in obj or "logStreamName" in obj or "eventId" in obj
    return "@message" in obj and "@timestamp" in obj


def sniff_cloudwatch(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_cloudwatch(obj)


def parse_cloudwatch(line: bytes) -> list[Record]:
    obj = load_object(line)
    msg = obj.get("message", obj.get("@message"))
    if not isinstance(msg, str):
        raise Malformed("CloudWatch event without a `message` string")
    records = inner_text(msg, "cloudwatch message")
    t = obj.get("timestamp")
    if t is None:
        at = obj.get("@timestamp")
        # Logs Insights writes UTC without a zone: `2026-11-02 10:00:00.000`
        t = f"{at.replace(' ', 'T')}Z" if isinstance(at, str) and _INSIGHTS_TIME.fullmatch(at) else at
    stream = obj.get("logStreamName", obj.get("@logStream"))
    extra: dict[str, Any] = {
        WRAPPER_TIME: t,
        "cloudwatch.log_stream": stream,
        "cloudwatch.event_id": obj.get("eventId"),
    }
    if isinstance(stream, str) and stream:
        key, pod = pod_from_stream(stream)
        extra[key] = pod
    return _wrap(records, extra)


# ---------------------------------------------------------------- journald

_DOCKERSHIM = re.compile(r"k8s_[^_]+_(?P<pod>[^_]+)_[^_]+_[^_]+_\d+")


def _journal_str(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(b, int) and 0 <= b < 256 for b in v):
        return bytes(v).decode("utf-8", "replace")  # a value that is not UTF-8: an array of bytes
    return None


def is_journald(obj: dict[str, Any]) -> bool:
    return "__REALTIME_TIMESTAMP" in obj and ("MESSAGE" in obj or "__CURSOR" in obj)


def sniff_journald(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_journald(obj)


def parse_journald(line: bytes) -> list[Record]:
    obj = load_object(line)
    msg = _journal_str(obj.get("MESSAGE"))
    records = [{}] if msg is None else inner_text(msg, "journald MESSAGE")
    container = obj.get("CONTAINER_NAME")
    if isinstance(container, str) and (m := _DOCKERSHIM.fullmatch(container)) is not None:
        container = m.group("pod")
    extra = {
        WRAPPER_TIME: obj.get("__REALTIME_TIMESTAMP") or obj.get("_SOURCE_REALTIME_TIMESTAMP"),
        POD_LOW: container,
        "hostname": obj.get("_HOSTNAME"),
        "CONTAINER_ID_FULL": obj.get("CONTAINER_ID_FULL"),
        "journald.unit": obj.get("_SYSTEMD_UNIT"),
        "journald.identifier": obj.get("SYSLOG_IDENTIFIER"),
        "journald.priority": obj.get("PRIORITY"),
    }
    return _wrap(records, extra)


# ---------------------------------------------------------------- Elasticsearch / OpenSearch


def is_search_hit(obj: dict[str, Any]) -> bool:
    return "_index" in obj and (isinstance(obj.get("_source"), dict) or isinstance(obj.get("fields"), dict))


def sniff_search_hit(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_search_hit(obj)


def parse_search_hit(line: bytes) -> list[Record]:
    obj = load_object(line)
    source, fields = obj.get("_source"), obj.get("fields")
    # `fields` values are arrays (one value: the value itself)
    flat = (
        {k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in fields.items()}
        if isinstance(fields, dict)
        else {}
    )
    if isinstance(source, dict):
        records = inner_object(source)
    elif flat:
        records = [flatten_object(dict(flat))]
    else:
        raise Malformed("search hit without `_source` or `fields`")
    extra: dict[str, Any] = {"es.index": obj.get("_index"), "es.id": obj.get("_id"), **flat}
    records = _wrap(records, extra)
    for r in records:
        if "kubernetes.pod.name" in r:  # Filebeat's add_kubernetes_metadata
            r.setdefault(POD, r["kubernetes.pod.name"])
    return records


# ---------------------------------------------------------------- Datadog Logs API v2


def is_datadog(obj: dict[str, Any]) -> bool:
    return obj.get("type") == "log" and isinstance(obj.get("attributes"), dict)


def sniff_datadog(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_datadog(obj)


def parse_datadog(line: bytes) -> list[Record]:
    obj = load_object(line)
    attrs = obj.get("attributes")
    if not isinstance(attrs, dict):
        raise Malformed("Datadog log without `attributes`")
    custom, message = attrs.get("attributes"), attrs.get("message")
    if isinstance(custom, dict) and custom:
        records = inner_object(custom)
        if isinstance(message, str):
            _wrap(records, {"message": message})
    elif isinstance(message, str):
        records = inner_text(message, "datadog message")
    else:
        records = [{}]
    extra: dict[str, Any] = {
        WRAPPER_TIME: attrs.get("timestamp"),
        "hostname": attrs.get("host"),
        "datadog.service": attrs.get("service"),
        "datadog.status": attrs.get("status"),
        "datadog.id": obj.get("id"),
    }
    tags = attrs.get("tags")
    for tag in tags if isinstance(tags, list) else ():
        if isinstance(tag, str) and tag.startswith("pod_name:"):  # the Agent's Kubernetes tag
            extra[POD] = tag[len("pod_name:") :]
    return _wrap(records, extra)


# ---------------------------------------------------------------- Splunk export


def _splunk_result(obj: dict[str, Any]) -> dict[str, Any] | None:
    res = obj.get("result")
    if isinstance(res, dict):
        return res
    return obj if "_raw" in obj and "_time" in obj else None


def is_splunk(obj: dict[str, Any]) -> bool:
    res = _splunk_result(obj)
    return res is not None and ("_raw" in res or "_time" in res)


def sniff_splunk(line: bytes, obj: Obj) -> bool:
    return obj is not None and is_splunk(obj)


def parse_splunk(line: bytes) -> list[Record]:
    obj = load_object(line)
    res = _splunk_result(obj)
    if res is None:
        raise Malformed("Splunk export line without a `result`")
    raw = res.get("_raw")
    records = inner_text(raw, "splunk _raw") if isinstance(raw, str) else [{}]
    source = res.get("source")
    extra: dict[str, Any] = {
        WRAPPER_TIME: res.get("_time"),
        POD_LOW: res.get("pod"),  # Splunk Connect for Kubernetes' indexed field
        "hostname": res.get("host"),
        "splunk.source": source,
        "splunk.sourcetype": res.get("sourcetype"),
    }
    if isinstance(source, str) and ("/var/log/containers/" in source or "/var/log/pods/" in source):
        extra[POD] = pod_from_path(source)
    return _wrap(records, extra)
