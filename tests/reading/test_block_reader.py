"""The columnar path's learning of field names, block by block (read ahead in a second thread): a field
first seen late is read however its key is written, and names are matched literally."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from leaselog.config import Settings
from leaselog.reading import reader as reader_mod
from leaselog.reading.columnar import any_literal
from leaselog.reading.fields import FieldMapper
from leaselog.reading.reader import Reader, ReadResult
from leaselog.reading.sources import Source


def _event(i: int, **extra: object) -> str:
    row = {"ts": f"2026-11-02T08:00:{i % 60:02d}.000Z", "jobId": f"job-{i}", "event": "job_started", **extra}
    return json.dumps(row, separators=(",", ":"))


def _noise(i: int) -> str:
    return json.dumps({"ts": "2026-11-02T08:00:00.000Z", "url.path": f"/x/{i}", "status": 200})


def _read(path: Path, *, columnar: bool, settings: Settings | None = None) -> ReadResult:
    return Reader(FieldMapper(settings or Settings()), columnar=columnar).read([Source(str(path))])


def _same(a: ReadResult, b: ReadResult) -> None:
    cols = [c for c in a.raw.columns if c != "fields"]
    assert a.raw.select(cols).sort("line").to_dicts() == b.raw.select(cols).sort("line").to_dicts()
    assert [r.as_dict() for r in a.inputs] == [r.as_dict() for r in b.inputs]


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", 4096)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize(
    "late",
    [
        '{"ts":"2026-11-02T08:01:00.000Z","jobId":"late","event":"lock_acquired","ownerId":"w-9"}',
        # whitespace around the key, as pretty-printing loggers write it
        '{"ts": "2026-11-02T08:01:00.000Z", "jobId": "late", "event": "lock_acquired",\t"ownerId" : "w-9"}',
        '{ "ownerId":"w-9","ts":"2026-11-02T08:01:00.000Z","jobId":"late","event":"lock_acquired"}',
    ],
)
def test_field_first_seen_in_a_late_block_is_read(tmp_path: Path, late: str) -> None:
    # the name occurs early as a value only (not a field), then as a field many blocks later
    lines = [_event(0, reason="ownerId")] + [_event(i) if i % 7 == 0 else _noise(i) for i in range(1, 3000)]
    lines.append(late)
    p = tmp_path / "pod-a.jsonl"
    p.write_text("\n".join(lines) + "\n")
    got = _read(p, columnar=True)
    assert got.raw.filter(pl.col("job_id") == "late")["owner"].to_list() == ["w-9"]
    _same(got, _read(p, columnar=False))


@pytest.mark.usefixtures("small_blocks")
def test_field_names_with_regex_characters_are_matched_literally(tmp_path: Path) -> None:
    s = Settings(fields={"owner": ["own(er)+", "lock.owner"], "job_id": ["job[id]"]})
    lines = [_noise(i) for i in range(400)]
    lines += [
        '{"job[id]":"j-1","event":"lock_acquired","own(er)+":"w-1"}',
        '{"jobXid":"j-2","event":"lock_acquired","owner":"w-2"}',  # `[id]` is not a character class
        '{"job[id]":"j-3","event":"lock_acquired","ownerr":"w-3"}',  # nor `(er)+` a repetition
    ]
    p = tmp_path / "pod-a.jsonl"
    p.write_text("\n".join(lines) + "\n")
    got = _read(p, columnar=True, settings=s)
    assert got.raw.sort("line").select("job_id", "owner").rows() == [("j-1", "w-1"), ("j-3", None)]
    _same(got, _read(p, columnar=False, settings=s))


def test_any_literal_escapes_everything_but_word_characters() -> None:
    words = ["kafka.topic", "a b", "x-y", "é", "[x]", "\\", 'a"b', "(?:", "$^*+?{}|"]
    pattern = any_literal(words)
    hay = pl.Series([f"..{w}.." for w in words] + ["kafkaXtopic", "a  b", "xy", "x", "ab"])
    assert hay.str.contains(pattern).to_list() == [True] * len(words) + [False] * 5


@pytest.mark.parametrize("block_bytes", [64, 97, 256, 1000])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_block_edges_anywhere_read_the_same_both_ways(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int, newline: str
) -> None:
    # blocks cut inside multi-byte characters, right after or before a newline, inside lines longer
    # than a block: the columnar path splits a chunk as read and mends its edges, or falls back
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", block_bytes)
    lines = []
    for i in range(120):
        lines.append(_event(i, reason="café ☕ 𝄞" * (i % 4), pod=f"pod-{i % 3}"))
        lines.append(_noise(i) if i % 5 else "")
        if i % 17 == 0:
            lines.append(_event(i, message="x" * 1500))  # longer than the small blocks
    p = tmp_path / "pod-a.jsonl"
    p.write_bytes(newline.join(lines).encode() + (b"" if block_bytes == 97 else newline.encode()))
    col, ref = _read(p, columnar=True), _read(p, columnar=False)
    _same(col, ref)
    assert col.inputs[0].lines == len(lines)
    assert col.raw.height == 120 + len(range(0, 120, 17))


@pytest.mark.usefixtures("small_blocks")
def test_job_id_names_only_as_values_read_the_same_both_ways(tmp_path: Path) -> None:
    # candidates by their text, but no field name ever written as a key: nothing to learn, nothing used
    lines = [
        _noise(i) if i % 3 else json.dumps({"msg": "jobId", "note": f'"job_id" {i}'}) for i in range(300)
    ]
    lines.append(_event(1))
    p = tmp_path / "pod-a.jsonl"
    p.write_text("\n".join(lines) + "\n")
    col, ref = _read(p, columnar=True), _read(p, columnar=False)
    _same(col, ref)
    assert col.raw["job_id"].to_list() == ["job-1"]


@pytest.mark.usefixtures("small_blocks")
def test_a_field_name_first_seen_as_a_value_reads_the_same_both_ways(tmp_path: Path) -> None:
    # a block's lines show `"ownerId"` only as a value (and `"leaseMs"` in a message): the names are
    # learned from what the lines hold, the columns stay empty until a later block writes them as keys
    lines = [_event(i, msg="ownerId", note='"leaseMs": soon') for i in range(60)]
    lines += [_noise(i) for i in range(400)]
    lines.append(_event(99, event="lock_acquired", ownerId="w-9", leaseMs=30000))
    p = tmp_path / "pod-a.jsonl"
    p.write_text("\n".join(lines) + "\n")
    col, ref = _read(p, columnar=True), _read(p, columnar=False)
    _same(col, ref)
    owners = col.raw.sort("line")["owner"].to_list()
    assert owners == [None] * 60 + ["w-9"]
    assert col.raw.filter(pl.col("job_id") == "job-99")["lease_ms"].to_list() == ["30000"]  # (raw text)
