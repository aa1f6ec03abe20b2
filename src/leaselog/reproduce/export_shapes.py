"""The fleet's rows as log stores export them (leaselog.reading.formats.exports cites each shape's source):
registered into `leaselog.reproduce.shapes.SHAPES` on import. The app's line inside is its own JSON line
without a pod (the store names the pod, as it does for a real fleet's containers).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta

from leaselog.reproduce.rows import Pods, Row, dumps, iso, level, process_starts, row_time
from leaselog.reproduce.shapes import APP, CONTAINER_SHAPES, flat_app, fleet_shape

NAMESPACE = "reports"
NODE = "gke-prod-pool-1-node-3"


def _fleet(pods: Pods, newest_first: bool = False) -> list[tuple[datetime, str, Row]]:
    """The fleet's rows in the order they were written (by time, then pod, then place in the pod's
    file); newest first reverses it whole (lines of one millisecond too)."""
    rows = sorted(
        ((row_time(r), pod, i, r) for pod, rs in pods.items() for i, r in enumerate(rs)),
        key=lambda x: (x[0], x[1], x[2]),
    )
    out = [(t, pod, r) for t, pod, _i, r in rows]
    return out[::-1] if newest_first else out


def _container_id(pod: str) -> str:
    return hashlib.sha256(f"{pod}/{APP}".encode()).hexdigest()


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _app_line(row: Row, job: str | None) -> str:
    return dumps(flat_app(row, "", job, with_pod=False))


@fleet_shape("gcloud", "gcloud")
def gcloud(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`gcloud logging read 'resource.type="k8s_container"' --format=json`: one array of LogEntries,
    newest first, keys sorted and indented by two as gcloud prints them; the app's JSON line parsed into
    jsonPayload, the pod in resource.labels."""
    entries = []
    for n, (t, pod, row) in enumerate(_fleet(pods, newest_first=True)):
        entries.append(
            {
                "insertId": hashlib.sha1(f"{pod}{n}".encode()).hexdigest()[:16],
                "jsonPayload": flat_app(row, pod, job, with_pod=False),
                "labels": {"compute.googleapis.com/resource_name": NODE, "k8s-pod/app": APP},
                "logName": "projects/acme-prod/logs/stdout",
                "receiveTimestamp": iso(t + timedelta(milliseconds=1800), 9),
                "resource": {
                    "labels": {
                        "cluster_name": "prod",
                        "container_name": APP,
                        "location": "europe-west1",
                        "namespace_name": NAMESPACE,
                        "pod_name": pod,
                        "project_id": "acme-prod",
                    },
                    "type": "k8s_container",
                },
                "severity": {"WARN": "WARNING"}.get(level(row), level(row)),
                "timestamp": iso(t, 9),
            }
        )
    return {f"{APP}.json": json.dumps(entries, indent=2, sort_keys=True).split("\n")}


@fleet_shape("cloudwatch", "cloudwatch")
def cloudwatch(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`aws logs filter-log-events --log-group-name /eks/prod/application`: the AWS CLI's JSON (indented
    by four) of `events` in time order across streams; Fluent Bit's cloudwatch_logs output names each
    stream `log_stream_prefix` + its tag (`from-fluent-bit-kube.var.log.containers.POD_NS_C-ID.log`)."""
    events = []
    for n, (t, pod, row) in enumerate(_fleet(pods)):
        stream = f"from-fluent-bit-kube.var.log.containers.{pod}_{NAMESPACE}_{APP}-{_container_id(pod)}.log"
        events.append(
            {
                "logStreamName": stream,
                "timestamp": _ms(t),
                "message": _app_line(row, job),
                "ingestionTime": _ms(t) + 1312,
                "eventId": f"3{_ms(t):021d}{n:04d}",
            }
        )
    doc = {"events": events, "searchedLogStreams": []}
    return {f"{APP}.json": json.dumps(doc, indent=4).split("\n")}


@fleet_shape("cloudwatch-stream", "cloudwatch")
def cloudwatch_stream(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`aws logs get-log-events --log-stream-name ...`, one file per stream (named after its pod): the
    events carry no stream name, and the app's line no time: `timestamp` (ms) is the time."""
    files = {}
    for pod, rows in pods.items():
        events = []
        for row in rows:
            t = row_time(row)
            line = dumps(flat_app(row, pod, job, with_ts=False, with_pod=False))
            events.append({"timestamp": _ms(t), "message": line, "ingestionTime": _ms(t) + 904})
        doc = {"events": events, "nextForwardToken": "f/3" + "0" * 55, "nextBackwardToken": "b/3" + "0" * 55}
        files[f"{pod}.json"] = json.dumps(doc, indent=4).split("\n")
    return files


def _journal(pods: Pods, job: str | None) -> list[dict[str, str]]:
    entries = []
    # a process started again on the pod is another container (shapes.process_starts)
    starts = {id(r): n for rows in pods.values() for r, n in zip(rows, process_starts(rows), strict=True)}
    for n, (t, pod, row) in enumerate(_fleet(pods)):
        us = int(t.timestamp() * 1_000_000)
        again = starts[id(row)]
        cid = _container_id(pod) if not again else hashlib.sha256(f"{pod}/{APP}/{again}".encode()).hexdigest()
        entries.append(
            {
                "__CURSOR": f"s=8a3f;i={n + 1:x};b=0f25;m={us:x};t={us:x};x=ec4e",
                "__REALTIME_TIMESTAMP": str(us + 37),
                "__MONOTONIC_TIMESTAMP": str(900_000_000 + n),
                "_BOOT_ID": "0f256d6dc32a455f8b3b584124c5443b",
                "PRIORITY": "4" if level(row) == "WARN" else "6",
                "_TRANSPORT": "journal",
                "_HOSTNAME": NODE,
                "_COMM": "dockerd",
                "_SYSTEMD_UNIT": "docker.service",
                "CONTAINER_ID": cid[:12],
                "CONTAINER_ID_FULL": cid,
                "CONTAINER_NAME": f"k8s_{APP}_{pod}_{NAMESPACE}_0b7e41d2-9c1a-4f0e-8d7b-3a9e5c2f1d60_0",
                "CONTAINER_TAG": cid[:12],
                "SYSLOG_IDENTIFIER": cid[:12],
                "IMAGE_NAME": f"registry.acme.io/{APP}:1.4.2",
                "MESSAGE": _app_line(row, job),
                "_SOURCE_REALTIME_TIMESTAMP": str(us),
            }
        )
    return entries


@fleet_shape("journald", "journald")
def journald(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`journalctl -u docker -o json` on the node: Docker's journald log driver, every field a string,
    the pod in the kubelet's dockershim container name."""
    return {f"{NODE}.journal.json": [json.dumps(e, separators=(",", ":")) for e in _journal(pods, job)]}


@fleet_shape("journald-pretty", "journald")
def journald_pretty(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`journalctl -o json-pretty`: the same entries, each an object over many lines (a tab before each
    field, a blank before each colon), one after another."""
    lines = []
    for e in _journal(pods, job):
        fields = [f"\t{json.dumps(k)} : {json.dumps(v)}" for k, v in e.items()]
        lines += ["{", *(f"{x}," for x in fields[:-1]), fields[-1], "}"]
    return {f"{NODE}.journal.json": lines}


@fleet_shape("loki-api", "loki")
def loki_api(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`curl .../loki/api/v1/query_range?query={app="report-worker"} | jq .`: one stream per pod (labels
    as Promtail's Kubernetes discovery sets them), `values` `[ns, line]` newest first (the default
    direction is backward)."""
    result = []
    for pod, rows in pods.items():
        ordered = sorted(enumerate(rows), key=lambda ir: (row_time(ir[1]), ir[0]), reverse=True)
        values = [[str(_ms(row_time(r)) * 1_000_000), _app_line(r, job)] for _i, r in ordered]
        stream = {
            "app": APP,
            "container": APP,
            "job": f"{NAMESPACE}/{APP}",
            "namespace": NAMESPACE,
            "pod": pod,
        }
        result.append({"stream": stream, "values": values})
    doc = {"status": "success", "data": {"resultType": "streams", "result": result, "stats": {}}}
    return {f"{APP}.json": json.dumps(doc, indent=2).split("\n")}


def _hit(t: datetime, pod: str, row: Row, job: str | None, n: int) -> Row:
    """A Fluent Bit record (kubernetes filter, Merge_Log) as its es output indexes it."""
    app = flat_app(row, pod, job, with_pod=False)
    source = {
        "@timestamp": iso(t, 3),
        "stream": "stdout",
        "log": dumps(app),
        **app,
        "kubernetes": {"pod_name": pod, "namespace_name": NAMESPACE, "container_name": APP, "host": NODE},
    }
    return {
        "_index": "logs-2026.11.02",
        "_id": f"aZ{n:06d}",
        "_score": None,
        "_source": source,
        "sort": [_ms(t)],
    }


@fleet_shape("elasticsearch", "elasticsearch")
def elasticsearch(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`GET logs-*/_search?pretty` sorted by `@timestamp` descending, as Kibana asks: the documents
    Fluent Bit shipped, in `hits.hits[]._source`."""
    hits = [_hit(t, pod, r, job, n) for n, (t, pod, r) in enumerate(_fleet(pods, newest_first=True))]
    doc = {
        "took": 7,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": None, "hits": hits},
    }
    return {f"{APP}.json": json.dumps(doc, indent=2).split("\n")}


@fleet_shape("elasticdump", "elasticsearch")
def elasticdump(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`elasticdump --input=.../logs-2026.11.02 --output=out.json`: one hit per line, in index order."""
    return {
        f"{APP}.json": [json.dumps(_hit(t, pod, r, job, n)) for n, (t, pod, r) in enumerate(_fleet(pods))]
    }


@fleet_shape("datadog", "datadog")
def datadog(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`GET /api/v2/logs/events?sort=-timestamp` saved as it comes (one line): the app's JSON parsed into
    the inner `attributes`, the message beside it, the pod in the Agent's `pod_name:` tag."""
    data = []
    for n, (t, pod, row) in enumerate(_fleet(pods, newest_first=True)):
        app = flat_app(row, pod, job, with_pod=False)
        message = str(app.pop("message", ""))
        data.append(
            {
                "attributes": {
                    "attributes": app,
                    "host": NODE,
                    "message": message,
                    "service": APP,
                    "status": level(row).lower(),
                    "tags": [
                        f"pod_name:{pod}",
                        f"kube_namespace:{NAMESPACE}",
                        f"service:{APP}",
                        "source:java",
                    ],
                    "timestamp": iso(t, 3),
                },
                "id": f"AQAAAZ{n:010d}",
                "type": "log",
            }
        )
    doc = {"data": data, "links": {}, "meta": {"elapsed": 112, "request_id": "pddv1ChZ", "status": "done"}}
    return {f"{APP}.json": [json.dumps(doc, separators=(",", ":"))]}


@fleet_shape("splunk", "splunk")
def splunk(pods: Pods, job: str | None) -> dict[str, list[str]]:
    """`curl .../services/search/jobs/export -d search="search index=k8s" -d output_mode=json`: one result
    per line, newest first, `_raw` the app's line, `source` the container's log file."""
    lines = []
    fleet = _fleet(pods, newest_first=True)
    for n, (t, pod, row) in enumerate(fleet):
        res = {
            "_raw": _app_line(row, job),
            "_time": iso(t, 3).replace("Z", "+00:00"),
            "host": NODE,
            "index": "k8s",
            "linecount": "1",
            "source": f"/var/log/containers/{pod}_{NAMESPACE}_{APP}-{_container_id(pod)}.log",
            "sourcetype": f"kube:container:{APP}",
            "splunk_server": "idx-1",
        }
        out: Row = {"preview": False, "offset": n, "result": res}
        if n == len(fleet) - 1:
            out = {"preview": False, "offset": n, "lastrow": True, "result": res}
        lines.append(json.dumps(out, separators=(",", ":")))
    return {f"{APP}.json": lines}


CONTAINER_SHAPES.update(("journald", "journald-pretty"))
