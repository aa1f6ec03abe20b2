"""`leaselog formats` and `leaselog inspect FILE`: what a user reads to debug a mapping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import shapes

from leaselog.cli import main
from leaselog.config import Settings, load_config_file
from leaselog.inspection import describe_formats, inspect_file
from leaselog.reading.formats import FORMATS

CUSTOM = shapes.OUT / "custom"


def test_describe_formats_lists_every_format_in_detection_order() -> None:
    rows = describe_formats()
    assert [r["name"] for r in rows] == list(FORMATS)
    assert [r["detection"] for r in rows if r["detection"]] == list(range(1, len(FORMATS)))
    assert next(r for r in rows if r["name"] == "text")["detection"] is None


def test_cli_formats(capsys: Any) -> None:
    assert main(["formats"]) == 0
    out = capsys.readouterr().out
    for name in FORMATS:
        assert name in out
    assert "gelf.host" in out and "Pod precedence" in out


def test_inspect_a_detected_shape() -> None:
    r = inspect_file(shapes.OUT / "otlp" / "pod-a.jsonl")
    assert (r.format, r.forced) == ("otlp", False)
    assert r.votes["otlp"] >= 1
    assert r.event_count == 5 and r.events.height == 5
    assert r.events["event"].to_list()[:2] == ["job_triggered", "lock_acquired"]
    keys = {k.key: k.field for k in r.keys}
    assert keys["k8s.pod.name"] == "pod" and keys["messaging.kafka.message.offset"] == "offset"
    assert keys["service.name"] is None


def test_inspect_shows_a_shadowed_key(tmp_path: Path) -> None:
    """An app's own `pod` inside a Fluent Bit envelope: kubernetes.pod_name wins, and inspect says so."""
    p = tmp_path / "f.jsonl"
    p.write_text(
        json.dumps(
            {
                "kubernetes": {"pod_name": "pod-k"},
                "pod": "app-says",
                "jobId": "j",
                "event": "job_started",
                "ts": "2026-01-01T00:00:00Z",
                "log": "x",
            }
        )
        + "\n"
    )
    r = inspect_file(p)
    seen = {k.key: k for k in r.keys}
    assert seen["pod"].field == "pod" and seen["pod"].shadowed_by == "kubernetes.pod_name"
    assert seen["kubernetes.pod_name"].shadowed_by is None
    assert r.events["pod"].to_list() == ["pod-k"]


def test_inspect_custom_names_without_and_with_config() -> None:
    bare = inspect_file(CUSTOM / "pod-a.jsonl")
    assert bare.event_count == 0
    assert {k.key: k.field for k in bare.keys}["report_request_id"] is None  # the hint to map it
    mapped = inspect_file(
        CUSTOM / "pod-a.jsonl", settings=Settings(**load_config_file(CUSTOM / "leaselog.toml"))
    )
    assert mapped.event_count == 5
    assert {k.key: k.field for k in mapped.keys}["report_request_id"] == "job_id"
    assert mapped.events["event"].to_list()[0] == "job_triggered"


def test_inspect_lists_unmapped_event_names(tmp_path: Path) -> None:
    p = tmp_path / "w.jsonl"
    p.write_text(
        "".join(
            json.dumps({"ts": "2026-01-01T00:00:00Z", "jobId": "j", "event": e}) + "\n"
            for e in ["lock_acquired", "LEASE_GRABBED", "LEASE_GRABBED", "job_started"]
        )
    )
    r = inspect_file(p)
    assert r.unmapped_events == {"LEASE_GRABBED": 2}
    assert r.event_count == 2


def test_cli_inspect_text_and_json(tmp_path: Path, capsys: Any) -> None:
    assert main(["inspect", str(shapes.OUT / "gelf" / "pod-a.json"), "--events", "2"]) == 0
    out = capsys.readouterr().out
    assert "format gelf" in out and "First 2 of 5 events" in out and "lock_acquired" in out
    assert (
        main(["inspect", str(CUSTOM / "pod-b.jsonl"), "--config", str(CUSTOM / "leaselog.toml"), "--json"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "flat" and data["eventCount"] == 4
    assert (
        data["lines"]["lines"]
        == data["lines"]["used"] + data["lines"]["ignored"] + data["lines"]["malformed"]
    )


def test_cli_inspect_forced_format_and_errors(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # rich must not fold the long temporary path
    assert main(["inspect", str(shapes.OUT / "ecs-3.4" / "pod-a.json"), "--format", "flat", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["format"], data["forced"]) == ("flat", True)
    assert main(["inspect", str(tmp_path / "missing.log")]) == 2
    assert "no such file" in " ".join(capsys.readouterr().err.split())
    assert main(["inspect", str(shapes.OUT / "gelf" / "pod-a.json"), "--format", "xml"]) == 2
    assert "unknown format 'xml'" in " ".join(capsys.readouterr().err.split())


def test_cli_inspect_says_when_nothing_maps(capsys: Any) -> None:
    assert main(["inspect", str(CUSTOM / "pod-a.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "No lease events" in out and "report_request_id" in out
