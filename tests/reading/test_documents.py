"""Files that are one JSON document: records found and located by their line, streamed, broken records
counted where they are with their neighbours read as before, in every export sample's shape."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import shapes

import leaselog
from leaselog.reading import documents
from leaselog.reading.documents import Document, is_document

JOB = {"ts": "2026-11-02T10:00:00.000Z", "jobId": "j1", "executionId": "e1", "event": "lock_acquired"}


def records(
    text: str | bytes, chunk: int = 1 << 20, monkeypatch: pytest.MonkeyPatch | None = None
) -> list[tuple[int, bytes]]:
    if monkeypatch is not None:
        monkeypatch.setattr(documents, "CHUNK", chunk)
    data = text.encode() if isinstance(text, str) else text
    return list(Document(io.BytesIO(data), b"").records())


def analyze(tmp_path: Path, name: str, content: str | bytes) -> leaselog.Analysis:
    p = tmp_path / name
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    a = leaselog.analyze(p)
    for r in a.input_reports:
        assert r.used + r.ignored + r.malformed == r.lines
    return a


# ---------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ([b"["], True),
        ([b'[{"a": 1},'], True),
        ([b"[]"], True),
        ([b"{", b'  "events": ['], True),
        ([b'{"events": [{"message": "m", "timestamp": 1}]}'], True),  # one line: an envelope
        ([b'{"data": {"result": []}, "status": "success"}'], True),
        ([b'{"hits": {"hits": []}}'], True),
        ([b'{ "insertId": "x",', b'  "jsonPayload": {'], True),
        # JSON lines, console lines with brackets, nothing
        ([b'{"ts": "t", "jobId": "j"}', b'{"ts": "t2"}'], False),
        ([b'{"ts": "t", "jobId": ', b'{"ts": "t2"}'], False),  # a broken line among JSON lines
        ([b"[pod/pod-a/app] 2026-11-02T10:00:00Z hello"], False),
        ([b"[2026-11-02 10:00:00,000: INFO/MainProcess] hello"], False),
        ([b'{"data": [1, 2]}'], False),  # an app record with a list in it
        ([], False),
        ([b"", b"  "], False),
    ],
)
def test_which_files_are_documents(head: list[bytes], expected: bool) -> None:
    assert is_document(head) is expected


# ---------------------------------------------------------------- the scan


def test_records_of_a_pretty_array_start_on_their_own_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps([{"a": 1}, {"b": [1, {"c": "]}[{"}]}, {"d": '\\"}'}], indent=2)
    got = records(text)
    assert [n for n, _ in got] == [2, 5, 13]
    assert [json.loads(r) for _, r in got] == [{"a": 1}, {"b": [1, {"c": "]}[{"}]}, {"d": '\\"}'}]
    # read a few bytes at a time, it is the same
    assert records(text, chunk=3, monkeypatch=monkeypatch) == got


def test_envelopes_give_their_records(monkeypatch: pytest.MonkeyPatch) -> None:
    cw = {"events": [{"message": "m1", "timestamp": 1}, {"message": "m2", "timestamp": 2}], "nextToken": "n"}
    assert [json.loads(r)["message"] for _, r in records(json.dumps(cw, indent=4))] == ["m1", "m2"]
    es = {"took": 1, "hits": {"total": {"value": 1}, "hits": [{"_index": "i", "_source": {"x": 1}}]}}
    assert [json.loads(r)["_source"] for _, r in records(json.dumps(es))] == [{"x": 1}]
    # Loki: values take their stream's labels, also when the labels come after them
    loki = {
        "status": "success",
        "data": {
            "resultType": "streams",
            "result": [
                {"stream": {"pod": "a"}, "values": [["2", "l2"], ["1", "l1"]]},
                {"values": [["3", "l3"]], "stream": {"pod": "b"}},
            ],
        },
    }
    for chunk in (1 << 20, 5):
        got = [json.loads(r) for _, r in records(json.dumps(loki), chunk, monkeypatch)]
        assert got == [
            {"labels": {"pod": "a"}, "line": "l2", "timestamp": "2"},
            {"labels": {"pod": "a"}, "line": "l1", "timestamp": "1"},
            {"labels": {"pod": "b"}, "line": "l3", "timestamp": "3"},
        ]
    insights = {
        "results": [[{"field": "@timestamp", "value": "t"}, {"field": "@message", "value": "m"}]],
        "status": "Complete",
    }
    assert [json.loads(r) for _, r in records(json.dumps(insights))] == [{"@timestamp": "t", "@message": "m"}]


def test_an_object_that_is_no_envelope_is_one_record() -> None:
    rec = {**JOB, "data": [{"q": 1}], "events": ["x"]}
    got = records(json.dumps(rec, indent=2))
    assert [(n, json.loads(r)) for n, r in got] == [(1, rec)]
    # a run of pretty-printed objects (`jq .`, `journalctl -o json-pretty`)
    two = json.dumps({"a": 1}, indent=2) + "\n" + json.dumps({"b": 2}, indent=2) + "\n"
    assert [(n, json.loads(r)) for n, r in records(two)] == [(1, {"a": 1}), (4, {"b": 2})]


def test_broken_records_are_handed_on_where_they_are() -> None:
    got = records('[\n {"a": 1},\n {"b": ,},\n 42,\n {"c": 3}\n]\n')
    assert got == [(2, b'{"a": 1}'), (3, b'{"b": ,}'), (4, b"42"), (5, b'{"c": 3}')]
    # a wrong bracket ends the record; the array goes on
    assert records('[\n {"a": 1},\n {"b": 2\n]\n') == [(2, b'{"a": 1}'), (3, b'{"b": 2\n')]
    # cut short inside a record: the rest is one broken record at its line
    assert records('[\n {"a": 1},\n {"b": "x') == [(2, b'{"a": 1}'), (3, b'{"b": "x')]
    assert records("") == []
    assert records("[]") == []
    assert records("{}") == [(1, b"{}")]


# ---------------------------------------------------------------- through the reader


def test_a_pretty_array_of_app_records_is_read_and_located(tmp_path: Path) -> None:
    rows = [
        JOB,
        {"ts": "2026-11-02T10:00:01.000Z", "message": "GET /health 200"},
        {**JOB, "ts": "2026-11-02T10:00:02.000Z", "event": "lock_released"},
    ]
    a = analyze(tmp_path, "export.json", json.dumps(rows, indent=2))
    (r,) = a.input_reports
    assert (r.format, r.lines, r.used, r.ignored, r.malformed) == ("flat", 3, 2, 1, 0)
    assert a.events["line"].to_list() == [2, 12]
    assert a.events["event"].to_list() == ["lock_acquired", "lock_released"]


def test_empty_and_blank_documents_are_quiet(tmp_path: Path) -> None:
    for name, content in [("empty.json", ""), ("array.json", "[]\n"), ("obj.json", "{\n}\n")]:
        a = analyze(tmp_path, name, content)
        assert a.events.height == 0
        assert a.line_totals()["malformed"] == 0


def test_a_document_cut_short_keeps_what_came_before(tmp_path: Path) -> None:
    rows = [JOB, {**JOB, "event": "job_started", "ts": "2026-11-02T10:00:01.000Z"}]
    text = json.dumps(rows, indent=2)
    a = analyze(tmp_path, "cut.json", text[: text.rindex('"job_started"') + 5])
    (r,) = a.input_reports
    assert (r.used, r.malformed) == (1, 1)
    assert a.malformed.select("file", "line").rows() == [(str(tmp_path / "cut.json"), 8)]


# ---------------------------------------------------------------- every export sample, broken once

# where a record starts in each sample's files (the line holding its first bracket)
_RECORD_START = {
    "gcloud": "  {",
    "cloudwatch": "        {",
    "cloudwatch-stream": "        {",
    "elasticsearch": "      {",
    "loki-api": "          [",
    "journald-pretty": "{",
}
EXPORTS = [s for s in shapes.SHAPES if shapes.SHAPES[s].render.__module__.endswith("export_shapes")]


def _summary(a: leaselog.Analysis) -> list[tuple[Any, ...]]:
    return sorted(
        (e["file"].rsplit("/", 1)[-1], e["line"], e["event"], e["pod"])
        for e in a.events.iter_rows(named=True)
    )


@pytest.mark.parametrize("shape", EXPORTS)
def test_a_broken_record_is_located_and_its_neighbours_read_as_before(tmp_path: Path, shape: str) -> None:
    """A control character in the record of the job's `lock_released` of pod-b (never valid in a JSON
    string): that record is malformed at the line it starts on, every other one reads as before."""
    intact = leaselog.analyze(shapes.OUT / shape)
    target = intact.events.filter(
        (leaselog_col("event") == "lock_released") & (leaselog_col("pod") == "pod-b")
    ).row(0, named=True)
    name = target["file"].rsplit("/", 1)[-1]
    lines = (shapes.OUT / shape / name).read_text().split("\n")
    # the line of the record holding `release_deleted_1` (pod-b's release message)
    at = next(i for i, s in enumerate(lines) if "release_deleted_1" in s)
    lines[at] = lines[at].replace("release_deleted_1", "release_deleted_1\x01", 1)
    d = tmp_path / shape
    d.mkdir()
    for f in (shapes.OUT / shape).iterdir():
        (d / f.name).write_text(f.read_text())
    (d / name).write_text("\n".join(lines))
    broken = leaselog.analyze(d)
    marker = _RECORD_START.get(shape)
    start = at + 1 if marker is None else max(i for i in range(at + 1) if lines[i] == marker) + 1
    assert target["line"] == start
    assert [(f.rsplit("/", 1)[-1], n) for f, n in broken.malformed.select("file", "line").rows()] == [
        (name, start)
    ]
    assert sum(r.malformed for r in broken.input_reports) == 1
    expected = _summary(intact)
    expected.remove((name, start, "lock_released", "pod-b"))
    assert _summary(broken) == expected


def leaselog_col(name: str) -> Any:
    import polars as pl

    return pl.col(name)


ONE_LINE = Path(__file__).parent.parent / "fixtures" / "documents" / "datadog-one-line-no-ids"


def test_a_one_line_response_newest_first_is_read_in_the_order_it_was_written(tmp_path: Path) -> None:
    """A real lab run (one pod, its id reused by two attempts that overlapped) as Datadog's Logs API
    returns it: one line, newest first, no execution ids. Lines of one millisecond are put back in the
    order they were written by the place each record was read at (they share a line): two executions,
    as the same response pretty-printed (a record per line) gives; the records' one line once split each
    attempt in two and overlapped them with themselves."""
    one_line = leaselog.analyze(ONE_LINE)
    doc = json.loads((ONE_LINE / "report-worker.json").read_text(encoding="utf-8"))
    (tmp_path / "report-worker.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
    pretty = leaselog.analyze(tmp_path)

    def story(a: Any) -> list[tuple[Any, ...]]:
        return [(f.kind, f.severity, f.certainty, f.execution_ids, f.duration_ms) for f in a.finding_list]

    assert one_line.executions.height == pretty.executions.height == 2
    assert story(one_line) == story(pretty)
    overlap = [f for f in one_line.finding_list if f.kind == "overlapping_executions"]
    assert [(len(set(f.execution_ids)), f.duration_ms, f.certainty) for f in overlap] == [
        (2, 401.0, "certain")
    ]
