"""Reader(keep_fields=False): the `fields` column (each event's line or record as JSON) is left null, and
nothing else changes, on both paths (columnar and per-line)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from leaselog.config import Settings
from leaselog.reading import reader as reader_mod
from leaselog.reading.fields import FieldMapper
from leaselog.reading.reader import Reader, ReadResult
from leaselog.reading.sources import Source, expand_sources

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"


def _read(paths: list[str], *, keep_fields: bool, columnar: bool = True) -> ReadResult:
    sources, problems = expand_sources(paths)
    assert sources and not problems
    return Reader(FieldMapper(Settings()), columnar=columnar, keep_fields=keep_fields).read(sources)


@pytest.mark.parametrize("columnar", [True, False])
@pytest.mark.parametrize(
    "sample",
    [
        "article-incident",  # flat JSON: the columnar path
        "scenarios",
        "formats/ecs-3.5",
        "formats/logfmt",  # per-line formats
        "formats/cri",
        "formats/loki",
    ],
)
def test_fields_left_null_and_nothing_else_changes(sample: str, columnar: bool) -> None:
    path = str(SAMPLES / sample)
    kept = _read([path], keep_fields=True, columnar=columnar)
    dropped = _read([path], keep_fields=False, columnar=columnar)
    assert kept.raw.height > 0
    assert kept.raw["fields"].null_count() == 0
    assert dropped.raw["fields"].null_count() == dropped.raw.height
    assert dropped.raw.schema == kept.raw.schema
    assert dropped.raw.drop("fields").equals(kept.raw.drop("fields"))
    assert [r.as_dict() for r in dropped.inputs] == [r.as_dict() for r in kept.inputs]
    assert dropped.malformed == kept.malformed


def test_fields_left_null_across_many_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", 2048)  # ~20 blocks, read ahead while others are decoded
    text = "".join(p.read_text() for p in sorted((SAMPLES / "article-incident").glob("*.jsonl")))
    p = tmp_path / "pod-a.jsonl"
    p.write_text(text * 3)
    kept = Reader(FieldMapper(Settings())).read([Source(str(p))])
    dropped = Reader(FieldMapper(Settings()), keep_fields=False).read([Source(str(p))])
    assert kept.raw.height > 0 and kept.raw["fields"].null_count() == 0
    assert dropped.raw["fields"].null_count() == dropped.raw.height
    assert dropped.raw.drop("fields").equals(kept.raw.drop("fields"))
    assert dropped.raw.select(pl.col("line").is_sorted()).item()
