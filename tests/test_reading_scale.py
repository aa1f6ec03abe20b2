"""Correctness at scale: the columnar reader reads exactly what the per-line reader reads.

Small inputs with the awkward things big files have (blank and padded lines, CRLF, NUL bytes, invalid
UTF-8, nested objects, stack traces, junk, a field first seen after line 100 000, gzip), read with
tiny blocks so every block boundary case happens. No timing here: speed is `bench/`'s job.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import leaselog
from leaselog.config import Settings
from leaselog.events import build_events
from leaselog.pipeline import events_of
from leaselog.reading import reader as reader_mod
from leaselog.reading.fields import FieldMapper
from leaselog.reading.reader import Reader, ReadResult
from leaselog.reading.sources import Source


def _event(i: int, job: str, event: str, **extra: Any) -> bytes:
    row = {
        "ts": f"2026-11-02T08:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
        "jobId": job,
        "executionId": f"{job}-a",
        "pod": "pod-a",
        "event": event,
        **extra,
    }
    return json.dumps(row, separators=(",", ":")).encode()


def _noise(i: int) -> bytes:
    return json.dumps(
        {"ts": "2026-11-02T08:00:00.000Z", "http.method": "GET", "url.path": f"/x/{i}", "status": 200}
    ).encode()


def _read(paths: list[Path], *, columnar: bool, settings: Settings | None = None) -> ReadResult:
    mapper = FieldMapper(settings or Settings())
    return Reader(mapper, columnar=columnar).read([Source(str(p)) for p in paths])


def _same(a: ReadResult, b: ReadResult) -> None:
    """Both readers give the same events (fields aside: raw line vs re-serialised record), counts, malformed."""
    cols = [c for c in a.raw.columns if c != "fields"]
    left = a.raw.select(cols).sort("file_index", "line")
    right = b.raw.select(cols).sort("file_index", "line")
    assert left.to_dicts() == right.to_dicts()
    assert [r.as_dict() for r in a.inputs] == [r.as_dict() for r in b.inputs]
    assert sorted(a.malformed) == sorted(b.malformed)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", 2048)


AWKWARD: list[bytes] = [
    _event(1, "job-1", "job_triggered", trigger="kafka", **{"kafka.topic": "t", "kafka.offset": 5}),
    _event(2, "job-1", "lock_acquired", leaseMs=600000, fencingToken=7),
    b"",
    b"   \t ",
    _noise(1) + b"\r",  # CRLF
    b"  " + _noise(2) + b"  ",  # padded object: still a valid unrelated line
    _event(3, "job-1", "job_started"),
    b"java.lang.IllegalStateException: boom",  # a stack trace after a lease event: attached to it
    b"\tat com.example.Job.run(Job.java:42)",
    _event(4, "job-1", "lease_renewal", renewalOutcome="timeout", latencyMs=4200.0),
    b'{"ts":"2026-11-02T08:00:05.000Z","jobId":"job-1","executionId":"job-1-a","event":"lease_renewed"}',
    b'{"ts":"2026-11-02T08:00:06.000Z","jobId":"job-1","executionId":"job-1-a","event":"release_deleted_0"}',
    b'{"ts":"2026-11-02T08:00:07.000Z","jobId":"job-1","event":"made_up_event"}',  # unmapped name
    b'{"ts":"2026-11-02T08:00:07.500Z","jobId":"","event":"job_started"}',  # empty job id: unrelated
    b'{"ts":"2026-11-02T08:00:08.000Z","job":{"id":"job-2"},"executionId":"job-2-b","event":"job_started",'
    b'"kafka":{"topic":"t2"}}',  # nested: flattened
    b'{"ts":"2026-11-02T08:00:09.000Z","jobId":"job-2","executionId":"job-2-b","event":"job_finished",'
    b'"status":"ok","tags":["a","b"]}',
    b'{"jobId":"job-3", "event": "job_started", broken',  # malformed candidate
    b"this is not json at all",  # junk
    b'{"msg":"bad \x00 byte","jobId":"x"}',  # NUL
    b'{"msg":"caf\xe9"}',  # invalid UTF-8, unrelated
    b"  at com.example.Other.run(Other.java:1)",  # continuation after noise: ignored
    b'["jobId", "an array"]',
    b'{"ts":1762070410.5,"jobId":42,"executionId":"n-1","event":"Lock Acquired","leaseMs":"30000"}',
    b'{"ts":"2026-11-02T08:00:11.000Z","jobId":"job-4","executionId":"job-4-a","event":"job_started","ok":true}',
]


def _write(path: Path, lines: list[bytes], *, final_newline: bool = True) -> Path:
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    return path


def test_empty_file_reads_nothing(tmp_path: Path) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    got = _read([p], columnar=True)
    assert got.raw.height == 0
    assert got.inputs[0].lines == 0


@pytest.mark.parametrize("final_newline", [True, False])
@pytest.mark.usefixtures("small_blocks")
def test_awkward_lines_read_the_same_both_ways(tmp_path: Path, final_newline: bool) -> None:
    # padding with noise pushes the awkward lines across many 2 KiB blocks, at every offset
    lines = [_noise(i) for i in range(30)] + AWKWARD * 6 + [_noise(i) for i in range(30)] + AWKWARD
    p = _write(tmp_path / "pod-a.jsonl", lines, final_newline=final_newline)
    col, ref = _read([p], columnar=True), _read([p], columnar=False)
    _same(col, ref)
    r = col.inputs[0]
    assert r.lines == len(lines)
    assert r.used + r.ignored + r.malformed == r.lines
    assert r.malformed >= 3 * 7  # broken candidate, junk, NUL ... in every copy
    assert r.unmapped_events["made_up_event"] == 7
    reasons = {why for _, _, why in col.malformed}
    assert "not a JSON object" in reasons and "binary data (NUL byte)" in reasons
    # the stack trace is attached to the job_started event logged right before it
    started = col.raw.filter((pl.col("event") == "job_started") & (pl.col("job_id") == "job-1"))
    assert started["message"].str.contains("IllegalStateException").all()
    # nested objects were flattened; implied fields were filled
    assert col.raw.filter(pl.col("job_id") == "job-2")["topic"].to_list()[0] == "t2"
    assert set(col.raw.filter(pl.col("raw_event") == "release_deleted_0")["released"]) == {"false"}


def test_field_first_seen_after_line_100000_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", 256 * 1024)  # ~40 blocks: the field is in the last one
    lines = [_event(i, f"job-{i}", "job_started") if i % 10 == 0 else _noise(i) for i in range(100_050)]
    lines.append(_event(1, "late-job", "lock_acquired", fencingToken=99, ownerId="worker-9"))
    p = _write(tmp_path / "pod-a.jsonl", lines)
    got = _read([p], columnar=True)
    late = got.raw.filter(pl.col("job_id") == "late-job")
    assert late["fencing_token"].to_list() == ["99"]
    assert late["owner"].to_list() == ["worker-9"]
    assert late["line"].to_list() == [len(lines)]
    r = got.inputs[0]
    assert (r.lines, r.used, r.malformed) == (len(lines), 10_006, 0)


@pytest.mark.usefixtures("small_blocks")
def test_gzip_reads_like_plain(tmp_path: Path) -> None:
    lines = [_noise(i) for i in range(200)] + AWKWARD * 3
    plain = _write(tmp_path / "pod-a.jsonl", lines)
    gz = tmp_path / "gz" / "pod-a.jsonl.gz"  # same name: the pod falls back to the file name
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    a = _read([plain], columnar=True)
    b = _read([gz], columnar=True)
    assert a.raw.drop("file").to_dicts() == b.raw.drop("file").to_dicts()
    pa, pb = a.inputs[0].as_dict(), b.inputs[0].as_dict()
    pa.pop("path"), pb.pop("path")
    assert pa == pb


@pytest.mark.usefixtures("small_blocks")
def test_user_event_names_and_field_aliases_read_the_same_both_ways(tmp_path: Path) -> None:
    s = Settings(fields={"job_id": ["task.key"]}, events={"lock_acquired": ["Got the lock"]})
    lines = [
        b'{"ts":"2026-11-02T08:00:00Z","task.key":"t-1","executionId":"e1","message":"Got the lock"}',
        b'{"ts":"2026-11-02T08:00:01Z","task":{"key":"t-1"},"executionId":"e1","event":"job_started"}',
        *[_noise(i) for i in range(100)],
        b'{"ts":"2026-11-02T08:00:02Z","task.key":"t-1","executionId":"e1","event":"got_the_lock"}',
    ]
    p = _write(tmp_path / "w.jsonl", lines)
    col, ref = _read([p], columnar=True, settings=s), _read([p], columnar=False, settings=s)
    _same(col, ref)
    assert col.raw.sort("line")["event"].to_list() == ["lock_acquired", "job_started", "lock_acquired"]


def test_many_files_keep_their_own_lines_and_pods(tmp_path: Path) -> None:
    paths = []
    for k in range(3):
        lines = [_noise(i) for i in range(50)] + [_event(i, f"job-{k}", "job_started") for i in range(5)]
        paths.append(_write(tmp_path / f"worker-{k}.jsonl", lines))
    got = _read(paths, columnar=True)
    assert got.raw.group_by("file_index").len().sort("file_index")["len"].to_list() == [5, 5, 5]
    assert got.raw.filter(pl.col("file_index") == 2)["line"].to_list() == list(range(51, 56))
    built = events_of(build_events(got.raw, None, Settings()), Settings())
    assert built.events.height == 15


def test_analysis_totals_add_up_and_match_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", 4096)
    lines = [_noise(i) for i in range(500)]
    for j in range(40):
        lines[j * 12 + 3] = _event(j * 12, f"job-{j}", "lock_acquired", leaseMs=600000)
        lines[j * 12 + 4] = _event(j * 12 + 1, f"job-{j}", "job_started")
    p = _write(tmp_path / "pod-a.jsonl", lines)
    a = leaselog.analyze(p)
    totals = leaselog.document(a)["lines"]
    assert totals == {"total": 500, "used": 80, "ignored": 420, "malformed": 0}
    assert a.executions.height == 40


@pytest.mark.parametrize("compressed", [False, True])
@pytest.mark.parametrize("shape", ["json", "logfmt"])
def test_progress_counts_the_bytes_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compressed: bool, shape: str
) -> None:
    # the bar's total is the files' size on disk (compressed for .gz): progress must add up to exactly that
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", 4096)
    if shape == "json":
        lines = [_noise(i) for i in range(3000)] + [_event(1, "job-1", "job_started")]
    else:
        lines = [b"ts=2026-11-02T08:00:00Z pod=p msg=hello n=%d" % i for i in range(70_000)]
    p = _write(tmp_path / "pod-a.log", lines)
    if compressed:
        gz = tmp_path / "pod-a.log.gz"
        gz.write_bytes(gzip.compress(p.read_bytes()))
        p.unlink()
        p = gz
    seen: list[int] = []
    a = leaselog.analyze(p, progress=seen.append)
    assert leaselog.document(a)["lines"]["total"] == len(lines)
    assert sum(seen) == p.stat().st_size
    assert len(seen) > 1 and all(n > 0 for n in seen)


def test_no_progress_bar_when_not_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.delenv("CI", raising=False)
    from rich.console import Console

    from leaselog.cli.analyze import progress_reader

    p = _write(tmp_path / "pod-a.jsonl", [_noise(i) for i in range(10)])
    assert progress_reader([str(p)], Console(file=io.StringIO())) == (None, None)
    callback, bar = progress_reader([str(p)], Console(file=io.StringIO(), force_terminal=True))
    assert callback is not None and bar is not None
    with bar:
        callback(100)  # under a second: the bar stays hidden, and closing it is still fine


def test_quiet_shows_no_progress_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import leaselog.cli as cli
    import leaselog.cli.analyze as analyze_command

    asked: list[list[str]] = []
    real = analyze_command.progress_reader

    def spy(paths: list[str], console: object) -> tuple[object, object]:
        asked.append(paths)
        return real(paths, console)  # type: ignore[arg-type]

    monkeypatch.setattr(analyze_command, "progress_reader", spy)
    p = _write(tmp_path / "pod-a.jsonl", [_noise(i) for i in range(10)])
    assert cli.main(["analyze", str(p), "--quiet"]) == 3  # read, no lease event: nothing to judge
    assert asked == []
    assert cli.main(["analyze", str(p)]) == 3
    assert asked == [[str(p)]]
