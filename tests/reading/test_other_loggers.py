"""The everyday Go (zap, zerolog, log/slog), .NET (Serilog's compact JSON, Microsoft.Extensions.Logging's
JSON console formatter) and Rust (tracing-subscriber's JSON) loggers writing the article's incident and a
clean fleet (tests/reading/other_loggers.py): read with no leaselog.toml, they tell the flat JSON's story
with its exact figures, a clean fleet stays quiet, an empty file is no error, and a malformed line is
located by file:line without changing how its neighbours are read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import other_loggers as other
import pytest
import shapes

import leaselog

DETECTED = {name: "logfmt" if name == "slog-text" else "flat" for name in other.WRITERS}
# zerolog's default `TimeFieldFormat` (time.RFC3339) writes whole seconds: the story, not its milliseconds
EXACT = sorted(n for n in other.WRITERS if n != "zerolog-default")
CLEAN = Path(__file__).resolve().parents[2] / "sample_logs" / "clean"


def summary(a: leaselog.Analysis) -> list[tuple[Any, ...]]:
    out = []
    for f in a.finding_list:
        d = f.to_json_dict()
        keys = ("kind", "code", "jobId", "durationMs", "executionIds", "certainty", "start", "end")
        out.append(tuple(tuple(d[k]) if k == "executionIds" else d[k] for k in keys))
    return sorted(out, key=repr)


@pytest.fixture(scope="module")
def flat() -> list[tuple[Any, ...]]:
    return summary(leaselog.analyze(shapes.FLAT, lease_ttl="5s"))


@pytest.mark.parametrize("logger", EXACT)
def test_logger_tells_the_incident_exactly(logger: str, tmp_path: Path, flat: list[tuple[Any, ...]]) -> None:
    other.write(logger, shapes.story(), tmp_path)
    a = leaselog.analyze(tmp_path, lease_ttl="5s")
    assert {r.format for r in a.input_reports} == {DETECTED[logger]}
    t = a.line_totals()
    assert t["malformed"] == 0 and t["total"] == 19
    assert t["used"] == 9 and t["ignored"] == 10
    assert summary(a) == flat
    by_kind = {f.kind: f.to_json_dict() for f in a.finding_list}
    assert by_kind["overlapping_executions"]["durationMs"] == 151_498
    assert by_kind["lease_outlived"]["durationMs"] == 151_900
    assert by_kind["overlapping_executions"]["certainty"] == "certain"
    assert set(a.events["pod"].unique()) == {"pod-a", "pod-b"}
    acquired = a.events.filter(a.events["event"] == "lock_acquired").sort("t").row(0, named=True)
    assert (acquired["execution_id"], acquired["lease_ms"]) == ("attempt-a", 600_000)
    assert acquired["t"].isoformat() == "2026-11-02T10:00:00+00:00"


def test_zerolog_whole_seconds_tell_the_story_to_the_second(tmp_path: Path) -> None:
    other.write("zerolog-default", shapes.story(), tmp_path)
    assert '"time":"2026-11-02T10:00:00Z"' in (tmp_path / "pod-a.log").read_text()
    a = leaselog.analyze(tmp_path, lease_ttl="5s")
    by_kind = {f.kind: f.to_json_dict() for f in a.finding_list}
    flat_kinds = {f.kind for f in leaselog.analyze(shapes.FLAT, lease_ttl="5s").finding_list}
    assert set(by_kind) == flat_kinds
    overlap = by_kind["overlapping_executions"]
    # known to the second, and said so: the true figure lies in the range the finding gives
    assert overlap["details"]["timeResolutionMs"] == 1000
    low, high = overlap["details"]["durationRangeMs"]
    assert low <= 151_498 <= high and high - low <= 2000
    assert abs(by_kind["lease_outlived"]["durationMs"] - 151_900) < 1000


def test_shapes_are_the_sources(tmp_path: Path) -> None:
    """The keys each renderer writes are the ones its library's source names (other_loggers' docstring)."""
    row = shapes.story()["pod-a"][2]
    zap = json.loads(other.zap(row, "pod-a"))
    assert list(zap)[:4] == ["level", "ts", "caller", "msg"] and zap["ts"] == 1793613600
    assert other.slog_text(row, "pod-a").startswith(
        'time=2026-11-02T10:00:00.000Z level=INFO msg="acquired report lock" pod=pod-a '
    )
    serilog = json.loads(other.serilog(row, "pod-a"))
    assert serilog["@t"] == "2026-11-02T10:00:00.0000000+00:00" and "@l" not in serilog
    mel = json.loads(other.mel_json(row, "pod-a"))
    assert mel["State"]["jobId"] == "report-42" and "jobId" not in mel
    scoped = json.loads(other.mel_scopes(row, "pod-a"))
    assert scoped["Scopes"][1]["jobId"] == "report-42" and "jobId" not in scoped["State"]
    tracing = json.loads(other.tracing(row, "pod-a"))
    assert tracing["fields"]["jobId"] == "report-42" and "jobId" not in tracing


@pytest.mark.parametrize("logger", sorted(other.WRITERS))
def test_clean_fleet_stays_quiet(logger: str, tmp_path: Path) -> None:
    pods = {
        f.stem: [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        for f in sorted(CLEAN.glob("*.jsonl"))
    }
    other.write(logger, pods, tmp_path)
    a = leaselog.analyze(tmp_path)
    assert a.line_totals()["malformed"] == 0
    assert a.events.height > 0
    assert [f.kind for f in a.finding_list] == [f.kind for f in leaselog.analyze(CLEAN).finding_list]


@pytest.mark.parametrize("fmt", [None, "flat", "logfmt"])
def test_empty_file(fmt: str | None, tmp_path: Path) -> None:
    p = tmp_path / "pod-a.log"
    p.write_text("")
    a = leaselog.analyze(p, **({} if fmt is None else {"format": fmt}))
    assert a.events.height == 0 and a.finding_list == []
    assert a.line_totals()["malformed"] == 0


@pytest.mark.parametrize(
    ("logger", "bad"),
    [
        ("zap", b'{"level":"info","ts":1793613600.0,"msg":"acquired","jobId":"report-42",'),
        ("zerolog", b'{"level":"info","jobId":"report-42","time":"2026-11-02T10:0'),
        ("slog-json", b'{"time":"2026-11-02T10:00:00Z","level":"INFO","jobId":"report-42" \xff'),
        ("slog-text", b"time=2026-11-02T10:0"),  # a cut line: one pair is no logfmt
        ("serilog-compact", b'{"@t":"2026-11-02T10:00:00.0000000+00:00","@mt":"x","jobId":"report-42"'),
        ("mel-json", b'{"Timestamp":"2026-11-02T10:00:00.000Z","State":{"jobId":"report-42"}'),
        ("tracing-json", b'{"timestamp":"2026-11-02T10:00:00.000000Z","fields":{"jobId":"report-42",'),
    ],
)
def test_malformed_line_is_located_and_neighbours_read(logger: str, bad: bytes, tmp_path: Path) -> None:
    other.write(logger, shapes.story(), tmp_path)
    before = summary(leaselog.analyze(tmp_path))
    p = tmp_path / "pod-a.log"
    lines = p.read_bytes().splitlines(keepends=True)
    p.write_bytes(b"".join([*lines[:3], bad + b"\n", *lines[3:]]))
    a = leaselog.analyze(tmp_path)
    assert a.line_totals()["malformed"] == 1
    assert a.malformed.select("file", "line").rows() == [(str(p), 4)]
    assert a.line_totals()["used"] == 9
    assert summary(a) == before
