"""Issue 2's reading edge cases: each gives a clear message, the run goes on, and no line goes missing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import leaselog
from leaselog.cli import main

GOOD = [
    {
        "ts": "2026-01-01T00:00:00Z",
        "jobId": "j",
        "executionId": "e",
        "pod": "p",
        "event": "lock_acquired",
        "leaseMs": 1000,
    },
    {"ts": "2026-01-01T00:00:00.5Z", "jobId": "j", "executionId": "e", "pod": "p", "event": "job_started"},
]


def good_file(d: Path) -> Path:
    p = d / "good.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in GOOD))
    return p


def accounted(a: leaselog.Analysis) -> None:
    for r in a.input_reports:
        assert r.used + r.ignored + r.malformed == r.lines, r


def report(a: leaselog.Analysis, name: str) -> Any:
    (r,) = [r for r in a.input_reports if r.path.endswith(name)]
    return r


def reasons(a: leaselog.Analysis, name: str) -> list[str]:
    return a.malformed.filter(pl.col("file").str.ends_with(name))["reason"].to_list()


def test_garbage_file_is_malformed_line_by_line_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "garbage.log").write_text("lorem ipsum\n%%%% ### @@@\n<html>\n")
    a = leaselog.analyze([good_file(tmp_path), tmp_path / "garbage.log"])
    accounted(a)
    r = report(a, "garbage.log")
    assert (r.format, r.lines, r.malformed) == ("unknown", 3, 3)
    assert a.malformed.filter(pl.col("file").str.ends_with("garbage.log"))["line"].to_list() == [1, 2, 3]
    assert all("no known log format" in why for why in reasons(a, "garbage.log"))
    assert a.events.height == 2  # the good file still counts


def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    a = leaselog.analyze([good_file(tmp_path), tmp_path / "empty.jsonl"])
    accounted(a)
    r = report(a, "empty.jsonl")
    assert (r.lines, r.used, r.ignored, r.malformed, r.error) == (0, 0, 0, 0, None)


def test_only_an_empty_file_is_no_error_either(tmp_path: Path) -> None:
    """Not an input error (2), and not "no findings" (0) either: nothing was there to judge (3)."""
    (tmp_path / "empty.jsonl").write_bytes(b"")
    assert main(["analyze", str(tmp_path / "empty.jsonl"), "-q"]) == 3


def test_binary_file(tmp_path: Path) -> None:
    blob = bytes(range(256)) * 40 + b"\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\n"
    (tmp_path / "image.log").write_bytes(blob)
    a = leaselog.analyze([good_file(tmp_path), tmp_path / "image.log"])
    accounted(a)
    r = report(a, "image.log")
    assert r.malformed >= 1 and r.used == 0
    assert any("binary" in why or "UTF-8" in why or "no known" in why for why in reasons(a, "image.log"))


def test_a_5mb_line_is_read_whole(tmp_path: Path) -> None:
    big = {**GOOD[1], "message": "x" * (5 * 1024 * 1024)}
    junk = "{" + "y" * (5 * 1024 * 1024)  # 5 MB of broken JSON naming a job
    p = tmp_path / "big.jsonl"
    p.write_text(json.dumps(GOOD[0]) + "\n" + json.dumps(big) + "\n" + junk + ' "jobId"\n')
    a = leaselog.analyze(p)
    accounted(a)
    r = report(a, "big.jsonl")
    assert (r.lines, r.used, r.malformed) == (3, 2, 1)
    assert a.events.filter(pl.col("event") == "job_started")["message"].str.len_bytes()[0] == 5 * 1024 * 1024
    assert a.malformed["line"].to_list() == [3]
    assert "invalid JSON" in a.malformed["reason"][0]


def test_invalid_utf8_is_located_not_fatal(tmp_path: Path) -> None:
    p = tmp_path / "latin1.jsonl"
    bad = (
        json.dumps({**GOOD[1], "message": "Zeitüberschreitung"}, ensure_ascii=False)
        .encode("utf-8")
        .replace("ü".encode(), "ü".encode("latin-1"))
    )
    p.write_bytes(json.dumps(GOOD[0]).encode() + b"\n" + bad + b"\n")
    a = leaselog.analyze(p)
    accounted(a)
    assert a.malformed.rows() == [(str(p), 2, "invalid UTF-8")]
    assert a.events.height == 1


def test_invalid_utf8_in_logfmt(tmp_path: Path) -> None:
    p = tmp_path / "demo.logfmt"
    p.write_bytes(
        b"jobId=j executionId=e event=acquired elapsedMs=1\njobId=j executionId=e event=finished msg=\xff\xfe\n"
    )
    a = leaselog.analyze(p)
    accounted(a)
    assert a.malformed["reason"].to_list() == ["invalid UTF-8"]


def test_missing_timestamp_is_malformed_where_the_file_has_wall_clock(tmp_path: Path) -> None:
    rows = [GOOD[0], {k: v for k, v in GOOD[1].items() if k != "ts"}]
    p = tmp_path / "w.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    a = leaselog.analyze(p)
    accounted(a)
    r = report(a, "w.jsonl")
    assert (r.used, r.malformed) == (1, 1)
    assert a.malformed["line"].to_list() == [2]
    assert "without a parseable timestamp" in a.malformed["reason"][0]


def test_job_id_number_on_one_line_string_on_another(tmp_path: Path) -> None:
    rows = [
        {**GOOD[0], "jobId": 42},
        {**GOOD[1], "jobId": "42"},
        {**GOOD[1], "jobId": 42.0, "event": "job_finished"},
    ]
    p = tmp_path / "w.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    a = leaselog.analyze(p)
    accounted(a)
    assert a.events["job_id"].to_list() == ["42", "42", "42"]
    assert a.executions.height == 1


def test_a_field_first_appearing_after_line_100000_is_read(tmp_path: Path) -> None:
    p = tmp_path / "long.jsonl"
    filler = json.dumps({"ts": "2026-01-01T00:00:00Z", "message": "health ok"}) + "\n"
    late = {**GOOD[0], "executionId": "late", "fencingToken": 77, "owner": "o-1", "kafka.topic": "reports"}
    with p.open("w") as fh:
        fh.write(json.dumps(GOOD[0]) + "\n")
        fh.write(filler * 100_000)
        fh.write(json.dumps(late) + "\n")
    a = leaselog.analyze(p)
    accounted(a)
    row = a.events.filter(pl.col("execution_id") == "late").row(0, named=True)
    assert (row["fencing_token"], row["owner"], row["topic"], row["line"]) == (77, "o-1", "reports", 100_002)
    assert report(a, "long.jsonl").lines == 100_002


def test_truncated_gzip_reads_what_it_can(tmp_path: Path) -> None:
    # distinct lines (an exact repeat of a line would be dropped as a shipper's retry)
    text = "".join(json.dumps({**r, "jobId": f"j{i}"}) + "\n" for i in range(2000) for r in GOOD)
    data = gzip.compress(text.encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(data[: len(data) // 2])
    a = leaselog.analyze([good_file(tmp_path), tmp_path / "cut.jsonl.gz"])
    accounted(a)
    r = report(a, "cut.jsonl.gz")
    assert r.error is not None and "read stopped" in r.error
    assert r.malformed >= 1


def test_cli_reports_malformed_lines_and_exits_0(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "garbage.log").write_text("lorem ipsum\n")
    code = main(
        [
            "analyze",
            str(good_file(tmp_path)),
            str(tmp_path / "garbage.log"),
            "--json",
            str(tmp_path / "o.json"),
        ]
    )
    assert code == 0
    out = json.loads((tmp_path / "o.json").read_text())
    assert out["lines"] == {"total": 3, "used": 2, "ignored": 0, "malformed": 1}
    assert out["malformed"][0]["line"] == 1


def test_truncated_gzip_keeps_the_lines_before_the_cut(tmp_path: Path) -> None:
    # distinct lines (an exact repeat of a line would be dropped as a shipper's retry)
    text = "".join(json.dumps({**r, "jobId": f"j{i}"}) + "\n" for i in range(2000) for r in GOOD)
    data = gzip.compress(text.encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(data[: len(data) // 2])
    a = leaselog.analyze(tmp_path / "cut.jsonl.gz")  # the only input: still no InputError, lines were read
    accounted(a)
    r = report(a, "cut.jsonl.gz")
    assert r.used > 1000 and r.error is not None
    assert a.malformed["reason"][-1].startswith("unreadable from here on")


@pytest.mark.parametrize(
    "data",
    [
        b"\x1f\x8b",
        b'\x1f\x8b\x08\x00garbage\n{"a":1}\n',
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 64,
    ],
    ids=["magic-only", "magic-then-text", "corrupt-deflate"],
)
def test_gzip_magic_without_gzip_is_read_as_bytes(tmp_path: Path, data: bytes) -> None:
    # Not one line of gzip behind the magic bytes: the file is read as it is, every line accounted.
    p = tmp_path / "x.log"
    p.write_bytes(data)
    a = leaselog.analyze(p)
    t = a.line_totals()
    assert t["total"] >= 1 and t["used"] + t["ignored"] + t["malformed"] == t["total"]
    assert t["malformed"] >= 1 and a.malformed.height >= 1


def test_corrupt_gzip_after_good_lines_keeps_them(tmp_path: Path) -> None:
    body = b"".join(
        b'{"ts":"2026-01-01T00:00:%02dZ","jobId":"j","executionId":"e","event":"job_started"}\n' % (i % 60)
        for i in range(3000)
    )
    packed = gzip.compress(body)
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(packed[: len(packed) // 2])
    a = leaselog.analyze(p)
    t = a.line_totals()
    assert 0 < t["used"] < 3000
    assert t["used"] + t["ignored"] + t["malformed"] == t["total"]
    assert "read stopped" in (a.input_reports[0].error or "")
