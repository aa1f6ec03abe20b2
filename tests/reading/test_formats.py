"""Each shape's quirks, one small readable case at a time: detection, names, pods, times, wrappers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import leaselog
from leaselog.reading.formats import DETECTION_ORDER, FORMATS, Malformed, detect_format
from leaselog.reading.formats.containers import join_cri, join_docker
from leaselog.reading.formats.otlp import parse_otlp

JOB = {"jobId": "j1", "executionId": "e1", "event": "lock_acquired", "leaseMs": 1000}


def write(tmp_path: Path, name: str, lines: list[str | bytes]) -> Path:
    p = tmp_path / name
    p.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return p


def read(tmp_path: Path, name: str, lines: list[str | bytes], **opts: Any) -> leaselog.Analysis:
    a = leaselog.analyze(write(tmp_path, name, lines), **opts)
    for r in a.input_reports:
        assert r.used + r.ignored + r.malformed == r.lines == len(lines)
    return a


def one_event(a: leaselog.Analysis) -> dict[str, Any]:
    assert a.events.height == 1, a.events
    return a.events.row(0, named=True)


def iso(a: leaselog.Analysis) -> str:
    return str(one_event(a)["t"].isoformat())


def dumps(o: Any) -> str:
    return json.dumps(o, separators=(",", ":"))


# ---------------------------------------------------------------- registry and detection


def test_registry_is_complete_and_ordered() -> None:
    assert set(DETECTION_ORDER) == set(FORMATS) - {"text"}
    for f in FORMATS.values():
        assert f.description and f.maps, f.name
    # wrappers first (docs/FORMATS.md); a console line starts with a time too, so it is told apart before kubectl
    assert DETECTION_ORDER[:3] == ["cri", "spring-console", "kubectl"]
    assert DETECTION_ORDER[-2:] == ["flat", "logfmt"]


def test_detect_nothing_in_empty_or_blank_sample() -> None:
    assert detect_format([]) is None
    assert detect_format([b"", b"   "]) is None
    assert detect_format([b"hello world", b"\x00\x01"]) is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('2016-10-06T00:17:09.669794202Z stdout F {"a":1}', "cri"),
        ('2016-10-06T00:17:09.669794202Z {"a":1}', "kubectl"),
        ('[pod/w-1/app] 2016-10-06T00:17:09.669794202Z {"a":1}', "kubectl"),
        ('{"resourceLogs":[]}', "otlp"),
        ('{"kubernetes":{"pod_name":"p"},"log":"x"}', "fluentbit"),
        ('{"log":"x\\n","stream":"stdout","time":"2016-10-06T00:17:09Z"}', "docker"),
        ('{"version":"1.1","short_message":"x","host":"h","timestamp":1.5}', "gelf"),
        ('{"@timestamp":"x","@version":"1","logger_name":"l","message":"m"}', "logstash"),
        ('{"@timestamp":"x","ecs.version":"8.11","message":"m"}', "ecs"),
        ('{"@timestamp":"x","ecs":{"version":"8.11"},"message":"m"}', "ecs"),
        ('{"ts":"x","message":"m"}', "flat"),
        ("a=1 b=2", "logfmt"),
    ],
)
def test_detection_order(line: str, expected: str) -> None:
    assert detect_format([line.encode()]) == expected


def test_detection_takes_the_first_shape_reading_half_the_sample() -> None:
    ecs = b'{"@timestamp":"x","ecs.version":"8.11"}'
    flat = b'{"ts":"x"}'
    assert detect_format([ecs, ecs, flat]) == "ecs"
    assert detect_format([ecs, flat, flat, flat]) == "flat"  # ECS lines are valid flat JSON too
    assert detect_format([b"Spring banner", ecs, ecs]) == "ecs"


# ---------------------------------------------------------------- Spring Boot ECS / Logstash / GELF


def test_ecs_34_dotted_and_35_nested_mix_in_one_file(tmp_path: Path) -> None:
    lines = [
        dumps(
            {
                "@timestamp": "2025-06-12T09:14:03.512874Z",
                "service.node.name": "pod-x",
                "ecs.version": "8.11",
                "kafka.topic": "t1",
                **JOB,
            }
        ),
        dumps(
            {
                "@timestamp": "2025-06-12T09:14:04Z",
                "service": {"node": {"name": "pod-x"}},
                "ecs": {"version": "8.11"},
                "kafka": {"topic": "t1"},
                **JOB,
                "event": "job_started",
            }
        ),
    ]
    a = read(tmp_path, "w.json", lines)
    assert a.input_reports[0].format == "ecs"
    assert a.events["pod"].to_list() == ["pod-x", "pod-x"]
    assert a.events["topic"].to_list() == ["t1", "t1"]
    assert [t.isoformat() for t in a.events["t"]] == [
        "2025-06-12T09:14:03.512874+00:00",
        "2025-06-12T09:14:04+00:00",
    ]


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        ("2025-06-12T11:14:03.512+02:00", "2025-06-12T09:14:03.512000+00:00"),
        (1749719643512, "2025-06-12T09:14:03.512000+00:00"),  # epoch millis number
        ("1749719643512", "2025-06-12T09:14:03.512000+00:00"),  # ... or string
    ],
)
def test_logstash_times(tmp_path: Path, ts: Any, expected: str) -> None:
    line = dumps(
        {
            "@timestamp": ts,
            "@version": "1",
            "logger_name": "l",
            "level_value": 20000,
            "HOSTNAME": "pod-h",
            **JOB,
        }
    )
    a = read(tmp_path, "w.json", [line])
    assert a.input_reports[0].format == "logstash"
    assert iso(a) == expected
    assert one_event(a)["pod"] == "pod-h"


def test_logstash_mdc_under_a_sub_object(tmp_path: Path) -> None:
    line = dumps(
        {
            "@timestamp": "2025-06-12T09:14:03Z",
            "@version": "1",
            "logger": "l",
            "levelVal": 1,
            "mdc": {k: str(v) for k, v in JOB.items()},
        }
    )
    ev = one_event(read(tmp_path, "w.json", [line]))
    assert (ev["job_id"], ev["lease_ms"]) == ("j1", 1000)


def test_gelf_underscores_stripped_and_host_is_the_pod_of_last_resort(tmp_path: Path) -> None:
    base = {
        "version": "1.1",
        "short_message": "acquired",
        "timestamp": 1749719643.512,
        "level": 6,
        "host": "report-worker",
        **{f"_{k}": v for k, v in JOB.items()},
    }
    a = read(tmp_path, "w.json", [dumps(base), dumps({**base, "_HOSTNAME": "pod-7", "_executionId": "e2"})])
    assert a.input_reports[0].format == "gelf"
    assert a.events.sort("execution_id")["pod"].to_list() == ["report-worker", "pod-7"]
    assert a.events["t"][0].isoformat() == "2025-06-12T09:14:03.512000+00:00"
    assert a.events["message"][0] == "acquired"


def test_gelf_host_loses_to_every_pod_field() -> None:
    from leaselog.vocabulary import FIELD_ALIASES

    assert FIELD_ALIASES["pod"][-1] == "gelf.host"
    assert FIELD_ALIASES["pod"][:3] == ["kubernetes.pod_name", "k8s.pod.name", "service.node.name"]


# ---------------------------------------------------------------- OTLP


def _otlp(records: list[dict[str, Any]], pod: str | None = "pod-o") -> str:
    res = [{"key": "service.name", "value": {"stringValue": "svc"}}]
    if pod:
        res.append({"key": "k8s.pod.name", "value": {"stringValue": pod}})
    return dumps(
        {
            "resourceLogs": [
                {
                    "resource": {"attributes": res},
                    "scopeLogs": [{"scope": {"name": "s"}, "logRecords": records}],
                }
            ]
        }
    )


def _attrs(**kv: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in kv.items()]


def test_otlp_batch_many_records_typed_values(tmp_path: Path) -> None:
    recs = [
        {
            "timeUnixNano": "1749719643512874201",
            "body": {"stringValue": "acquired"},
            "attributes": _attrs(
                jobId={"stringValue": "j1"},
                executionId={"stringValue": "e1"},
                event={"stringValue": "lock_acquired"},
                leaseMs={"intValue": "600000"},
                fencingToken={"intValue": "9007199254740993"},
            ),
        },
        {
            "timeUnixNano": 1749719644000000000,
            "attributes": _attrs(
                jobId={"stringValue": "j1"},
                executionId={"stringValue": "e1"},
                event={"stringValue": "lock_released"},
                released={"boolValue": False},
                latencyMs={"doubleValue": 1.5},
            ),
        },
        {
            "timeUnixNano": "0",
            "observedTimeUnixNano": "1749719645000000000",
            "attributes": _attrs(
                jobId={"stringValue": "j1"},
                executionId={"stringValue": "e1"},
                event={"stringValue": "job_started"},
            ),
        },
        {"timeUnixNano": "1749719646000000000", "body": {"stringValue": "unrelated"}},
    ]
    a = read(tmp_path, "o.jsonl", [_otlp(recs)])
    r = a.input_reports[0]
    assert (r.format, r.used, r.events) == ("otlp", 1, 3)
    ev = a.events.sort("t")
    assert ev["event"].to_list() == ["lock_acquired", "lock_released", "job_started"]
    assert ev["pod"].unique().to_list() == ["pod-o"]
    assert ev["t"][0].isoformat() == "2025-06-12T09:14:03.512874+00:00"
    assert ev["t"][2].isoformat() == "2025-06-12T09:14:05+00:00"  # observedTime when time is 0
    assert ev["lease_ms"][0] == 600000
    assert ev["fencing_token"][0] == 9007199254740993  # int64 beyond float precision kept exact
    assert ev["released"][1] is False
    assert ev["message"][0] == "acquired"


def test_otlp_kvlist_body_and_record_attributes_win_over_resource() -> None:
    rec = {
        "timeUnixNano": "1",
        "body": {"kvlistValue": {"values": [{"key": "jobId", "value": {"stringValue": "j"}}]}},
        "attributes": _attrs(
            **{
                "k8s.pod.name": {"stringValue": "from-record"},
                "tags": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "x"}]}},
            }
        ),
    }
    (r,) = parse_otlp(_otlp([rec]).encode())
    assert r["jobId"] == "j"
    assert r["k8s.pod.name"] == "from-record"
    assert r["tags"] == ["1", "x"]


@pytest.mark.parametrize(
    "line",
    [
        '{"resourceLogs": 5}',
        '{"resourceLogs": [1]}',
        '{"resourceLogs": [{"scopeLogs": {"a": 1}}]}',
        '{"no": "batch"}',
    ],
)
def test_otlp_wrong_types_are_malformed_not_a_crash(line: str) -> None:
    with pytest.raises(Malformed):
        parse_otlp(line.encode())


# ---------------------------------------------------------------- Docker, kubectl, CRI, Fluent Bit


def test_docker_log_string_read_again_and_time_is_only_a_fallback(tmp_path: Path) -> None:
    app_with_ts = dumps({"ts": "2025-06-12T09:00:00Z", "pod": "p", **JOB}) + "\n"
    app_without = dumps({"pod": "p", **JOB, "executionId": "e2"}) + "\n"
    lines = [
        dumps({"log": app_with_ts, "stream": "stdout", "time": "2025-06-12T09:00:00.700000000Z"}),
        dumps({"log": app_without, "stream": "stdout", "time": "2025-06-12T09:00:01.250000000Z"}),
        dumps({"log": "plain text banner <b>\n", "stream": "stderr", "time": "2025-06-12T09:00:02Z"}),
    ]
    a = read(tmp_path, "c-json.log", lines)
    assert a.input_reports[0].format == "docker"
    ev = a.events.sort("execution_id")
    assert [t.isoformat() for t in ev["t"]] == [
        "2025-06-12T09:00:00+00:00",
        "2025-06-12T09:00:01.250000+00:00",
    ]
    assert a.input_reports[0].ignored == 1
    assert ev["topic"].null_count() == 2  # Docker's `stream` is not a message stream


def test_docker_16k_chunks_are_joined_and_counted() -> None:
    app = dumps({**JOB, "pad": "x" * 40_000}) + "\n"
    chunks = [app[i : i + 16384] for i in range(0, len(app), 16384)]
    lines = [dumps({"log": c, "stream": "stdout", "time": "t"}).encode() for c in chunks]
    out = list(join_docker([b"{}", *lines, b"{}"]))
    assert len(out) == len(lines) + 2  # one line out per line in
    assert out[0] == b"{}" and out[-1] == b"{}"
    assert json.loads(out[1])["log"] == app
    assert out[2:-1] == [b""] * (len(lines) - 1)


def test_kubectl_prefix_time_pod_and_prose(tmp_path: Path) -> None:
    lines = [
        f"2025-06-12T09:14:03.512874201Z {dumps(JOB)}",
        f"[pod/worker-7/app] 2025-06-12T09:14:04.000000000Z {dumps({**JOB, 'event': 'job_started'})}",
        "2025-06-12T09:14:05.000000000Z Started ReportWorkerApplication",
        "2025-06-12T09:14:05.000000000Z \tat com.acme.Foo(Foo.java:1)",
        "2025-06-12T09:14:06.000000000Z ",
        "no prefix at all",
    ]
    a = read(tmp_path, "worker-3.log", lines)
    r = a.input_reports[0]
    assert (r.format, r.used, r.ignored, r.malformed) == ("kubectl", 2, 3, 1)
    ev = a.events.sort("t")
    assert ev["t"][0].isoformat() == "2025-06-12T09:14:03.512874+00:00"
    assert ev["pod"].to_list() == ["worker-3", "worker-7"]  # file name, then the --prefix pod


def test_cri_partial_lines_joined_with_their_full_line(tmp_path: Path) -> None:
    app = dumps({"ts": "2025-06-12T09:14:03Z", **JOB})
    lines = [
        "2025-06-12T09:14:03.1Z stdout F hello",
        f"2025-06-12T09:14:03.2Z stdout P {app[:10]}",
        f"2025-06-12T09:14:03.2Z stdout P {app[10:20]}",
        f"2025-06-12T09:14:03.2Z stdout F {app[20:]}",
        "2025-06-12T09:14:03.3Z stderr F",
        f"2025-06-12T09:14:04Z stdout P {app[:-5]}",  # never completed: read as it is
    ]
    a = read(tmp_path, "0.log", lines)
    r = a.input_reports[0]
    assert r.format == "cri"
    assert (r.used, r.ignored, r.malformed) == (1, 4, 1)
    assert one_event(a)["line"] == 2  # where the joined line started
    assert a.malformed["line"].to_list() == [6]


def test_cri_join_is_one_line_out_per_line_in() -> None:
    p = b"2025-06-12T09:14:03Z stdout P "
    out = list(join_cri([p + b"a", p + b"b", b"garbage", p + b"c"]))
    assert out == [b"2025-06-12T09:14:03Z stdout F ab", b"", b"garbage", b"2025-06-12T09:14:03Z stdout F c"]


@pytest.mark.parametrize("form", ["merged", "under_key", "log_only"])
def test_fluentbit_envelopes(tmp_path: Path, form: str) -> None:
    app = {"ts": "2025-06-12T09:14:03Z", "pod": "app-says", **JOB}
    kube = {"pod_name": "pod-k", "namespace_name": "ns", "host": "node-1"}
    env: dict[str, Any] = {"time": "2025-06-12T09:14:09Z", "stream": "stdout", "kubernetes": kube}
    if form == "merged":
        env.update({**app, "log": dumps(app)})
    elif form == "under_key":
        env.update({"app": app, "log": dumps(app)})
    else:
        env["log"] = dumps(app) + "\n"
    a = read(tmp_path, "f.jsonl", [dumps(env)])
    assert a.input_reports[0].format == "fluentbit"
    ev = one_event(a)
    assert ev["pod"] == "pod-k"  # kubernetes.pod_name first, over what the app says
    assert ev["t"].isoformat() == "2025-06-12T09:14:03+00:00"
    assert ev["lease_ms"] == 1000


# ---------------------------------------------------------------- stack traces, logfmt, text, timestamps


def test_stack_trace_lines_are_ignored_and_attached_to_the_event_before(tmp_path: Path) -> None:
    lines = [
        dumps(
            {
                "ts": "2025-06-12T09:14:03Z",
                "message": "lease renewal failed",
                **JOB,
                "event": "lease_renewal",
                "renewalOutcome": "error",
            }
        ),
        "java.net.SocketTimeoutException: Read timed out",
        "\tat io.lettuce.core.RedisClient.renew(RedisClient.java:42)",
        "Caused by: java.io.IOException: boom",
        "\t... 3 more",
        dumps({"ts": "2025-06-12T09:14:04Z", "message": "unrelated"}),
        "\tat com.acme.Other(Other.java:1)",
    ]
    a = read(tmp_path, "w.jsonl", lines)
    r = a.input_reports[0]
    assert (r.used, r.ignored, r.malformed) == (1, 6, 0)
    msg = one_event(a)["message"]
    assert msg.startswith("lease renewal failed\njava.net.SocketTimeoutException")
    assert "Caused by: java.io.IOException" in msg
    assert "Other.java" not in msg  # belongs to the unrelated line, not to the lease event


def test_logfmt_with_wall_clock_and_stack_trace(tmp_path: Path) -> None:
    lines = [
        'ts=2025-06-12T09:14:03.5+02:00 jobId=j1 executionId=e1 event=acquired leaseMs=1000 msg="got it"',
        "\tat com.acme.X(X.java:1)",
    ]
    a = read(tmp_path, "w.logfmt", lines)
    ev = one_event(a)
    assert (ev["event"], ev["lease_ms"], ev["t"].isoformat()) == (
        "lock_acquired",
        1000,
        "2025-06-12T07:14:03.500000+00:00",
    )
    assert a.input_reports[0].ignored == 1


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        ("2025-06-12T09:14:03Z", "2025-06-12T09:14:03+00:00"),
        ("2025-06-12T09:14:03.512874201Z", "2025-06-12T09:14:03.512874+00:00"),
        ("2025-06-12T11:14:03.512+02:00", "2025-06-12T09:14:03.512000+00:00"),
        (1749719643, "2025-06-12T09:14:03+00:00"),
        (1749719643.512, "2025-06-12T09:14:03.512000+00:00"),
        ("1749719643512", "2025-06-12T09:14:03.512000+00:00"),
        (1749719643512874, "2025-06-12T09:14:03.512874+00:00"),
        ("1749719643512874201", "2025-06-12T09:14:03.512874+00:00"),
    ],
)
def test_time_zones_and_precisions(tmp_path: Path, ts: Any, expected: str) -> None:
    assert iso(read(tmp_path, "w.jsonl", [dumps({"ts": ts, **JOB})])) == expected


def test_text_format_only_with_rules(tmp_path: Path) -> None:
    lines = [
        "2025-06-12 09:14:03.512 INFO Acquired lease for j9 as run-1 ttl=600000",
        "2025-06-12 09:14:04.000 INFO nothing to see",
    ]
    plain = read(tmp_path, "app.txt", lines)
    assert plain.input_reports[0].format == "unknown" and plain.line_totals()["malformed"] == 2
    cfg = tmp_path / "leaselog.toml"
    cfg.write_text(
        '[[rules]]\nevent = "lock_acquired"\n'
        "message_regex = '(?P<ts>\\S+ \\S+) INFO Acquired lease for (?P<jobId>\\S+) as (?P<executionId>\\S+) "
        "ttl=(?P<leaseMs>\\d+)'\n"
    )
    a = read(tmp_path, "app.txt", lines, config=cfg)
    assert a.input_reports[0].format == "text"
    ev = one_event(a)
    assert (ev["job_id"], ev["execution_id"], ev["lease_ms"]) == ("j9", "run-1", 600000)
    assert ev["t"].isoformat() == "2025-06-12T09:14:03.512000+00:00"


def test_user_event_names_match_event_values_and_whole_messages(tmp_path: Path) -> None:
    cfg = tmp_path / "leaselog.toml"
    cfg.write_text('[events]\nlock_acquired = ["LOCK_OK", "Acquired the report lock"]\n')
    lines = [
        dumps({"ts": "2025-06-12T09:14:03Z", "jobId": "j", "event": "LOCK_OK"}),
        dumps({"ts": "2025-06-12T09:14:04Z", "jobId": "j", "message": "Acquired the report lock"}),
        dumps({"ts": "2025-06-12T09:14:05Z", "jobId": "j", "event": "WHATEVER"}),
    ]
    a = read(tmp_path, "w.jsonl", lines, config=cfg)
    assert a.events["event"].to_list() == ["lock_acquired", "lock_acquired"]
    assert dict(a.input_reports[0].unmapped_events) == {"WHATEVER": 1}


def test_forced_format_reads_every_line_as_that_format(tmp_path: Path) -> None:
    lines = [dumps({"ts": "2025-06-12T09:14:03Z", **JOB}), "a=1 b=2"]
    a = read(tmp_path, "w.log", lines, format="logfmt")
    assert a.input_reports[0].format == "logfmt"
    assert a.events.height == 0 and a.line_totals()["malformed"] == 1  # JSON is not logfmt


def test_unknown_forced_format_is_a_clear_error() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="unknown format 'nope'"):
        leaselog.analyze("sample_logs/clean", format="nope")


def test_events_frame_schema_is_unchanged_by_shapes(tmp_path: Path) -> None:
    a = read(tmp_path, "w.jsonl", [dumps({"ts": "2025-06-12T09:14:03Z", **JOB})])
    assert a.events.schema["t"] == pl.Datetime("us", "UTC")


def test_loki_logcli_jsonl(tmp_path: Path) -> None:
    app = {"jobId": "j1", "executionId": "e1", "event": "job_started"}
    lines = [
        dumps(
            {
                "labels": {"pod": "pod-l", "namespace": "ns"},
                "line": dumps(app),
                "timestamp": "2025-06-12T11:14:03.5+02:00",
            }
        ),
        dumps(
            {"line": dumps({**app, "executionId": "e2"}), "timestamp": "2025-06-12T09:14:04Z"}
        ),  # --no-labels
        dumps({"labels": {"pod": "pod-l"}, "line": "plain text", "timestamp": "2025-06-12T09:14:05Z"}),
    ]
    a = read(tmp_path, "export.jsonl", lines)
    assert a.input_reports[0].format == "loki"
    ev = a.events.sort("execution_id")
    assert ev["pod"].to_list() == ["pod-l", "export"]  # the label, else the file name
    assert [t.isoformat() for t in ev["t"]] == [
        "2025-06-12T09:14:03.500000+00:00",
        "2025-06-12T09:14:04+00:00",
    ]
    assert detect_format([lines[0].encode()]) == "loki"
    assert detect_format([dumps({"line": "x", "timestamp": 1, "other": 2}).encode()]) == "flat"


def test_pod_from_node_log_paths(tmp_path: Path) -> None:
    from leaselog.reading.formats import pod_from_path

    uid = "0b7e1c2d-1111-2222-3333-444455556666"
    assert pod_from_path(f"/var/log/pods/reports_worker-7d9f-x2k9p_{uid}/app/0.log") == "worker-7d9f-x2k9p"
    assert (
        pod_from_path(f"/var/log/containers/worker-7d9f-x2k9p_reports_app-{'a' * 64}.log")
        == "worker-7d9f-x2k9p"
    )
    assert pod_from_path(f"/var/lib/docker/containers/{'b' * 64}/{'b' * 64}-json.log") == "b" * 12
    assert pod_from_path("logs/pod-a.jsonl.gz") == "pod-a"
    assert pod_from_path("<stdin>") == "<stdin>"
    # end to end: a CRI file whose lines name no pod takes it from the kubelet folder
    d = tmp_path / f"reports_worker-1_{uid}" / "app"
    d.mkdir(parents=True)
    ev = one_event(read(d, "0.log", [f"2025-06-12T09:14:03Z stdout F {dumps(JOB)}"]))
    assert ev["pod"] == "worker-1"
