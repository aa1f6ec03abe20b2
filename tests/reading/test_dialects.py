"""Every dialect reads every one of its samples (a lock library's line in a framework's layout) as the
event it declares, through the real reader; its sources are cited; lines no dialect reads stay unrelated."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from leaselog.config import Settings
from leaselog.events import FieldMapper
from leaselog.reading.dialects import DIALECTS, Dialect, Sample, match_message
from leaselog.reading.reader import Reader
from leaselog.reading.sources import expand_sources

CASES = [(d, s) for d in DIALECTS for s in d.samples]


def _read(tmp_path: Path, lines: list[str], name: str = "pod-a.log") -> tuple[pl.DataFrame, object]:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sources, _ = expand_sources([str(path)])
    got = Reader(FieldMapper(Settings())).read(sources)
    return got.raw, got.inputs[0]


@pytest.mark.parametrize(
    ("dialect", "sample"), CASES, ids=[f"{d.name}-{i}" for i, (d, _) in enumerate(CASES)]
)
def test_every_sample_reads_as_its_event(tmp_path: Path, dialect: Dialect, sample: Sample) -> None:
    raw, report = _read(tmp_path, [*sample.before, sample.line, *sample.after])
    line_no = len(sample.before) + 1
    mine = raw.filter(pl.col("line") == line_no)
    assert report.malformed == 0  # type: ignore[attr-defined]
    if sample.event is None:
        assert mine.is_empty()
        return
    assert mine.height == 1, raw
    row = mine.row(0, named=True)
    assert row["event"] == sample.event and row["dialect"] == dialect.name
    assert row["raw_event"].startswith(f"{dialect.name}/")
    for key, value in sample.fields.items():
        assert row[key] == value, (key, row)


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.name for d in DIALECTS])
def test_each_dialect_cites_its_source_and_says_how_to_turn_it_on(dialect: Dialect) -> None:
    assert dialect.sources and all(".java" in s or ".py" in s or ".go" in s for s in dialect.sources)
    assert dialect.needles and dialect.samples and dialect.enable and dialect.cannot_measure
    # every rule is shown by a sample (read through the reader above)
    shown = set()
    for sample in dialect.samples:
        message = sample.line.split(" : ", 1)[-1]
        if sample.line.startswith("{"):
            message = json.loads(sample.line)["message"]
        hit = match_message(message)
        if hit is not None and sample.event is not None:
            shown.add(hit.label)
    assert shown == {f"{dialect.name}/{r.name or r.event}" for r in dialect.rules}


def test_lines_no_dialect_reads_stay_unrelated(tmp_path: Path) -> None:
    raw, report = _read(
        tmp_path,
        [
            "2026-11-29T10:00:00.101Z  INFO 1 --- [report-service] [   scheduling-1] c.e.report.ReportJob"
            "                     : Locked out of the report folder, retrying",
            "2026-11-29T10:00:01.101Z  INFO 1 --- [report-service] [   scheduling-1] c.e.report.ReportJob"
            "                     : Task finished in 1s",
        ],
    )
    assert raw.is_empty() and report.ignored == 2  # type: ignore[attr-defined]


def test_empty_input_reads_nothing(tmp_path: Path) -> None:
    raw, report = _read(tmp_path, [])
    assert raw.is_empty() and report.malformed == 0  # type: ignore[attr-defined]


def test_dialects_off_reads_no_library_line(tmp_path: Path) -> None:
    sample = DIALECTS[0].samples[0]
    path = tmp_path / "pod-a.log"
    path.write_text(sample.line + "\n", encoding="utf-8")
    sources, _ = expand_sources([str(path)])
    got = Reader(FieldMapper(Settings(dialects=False))).read(sources)
    assert got.raw.is_empty()


def test_a_library_line_in_a_json_file_read_on_the_columnar_path(tmp_path: Path) -> None:
    """A JSON file of the app's own lease events, with ShedLock's ECS lines among them: both are read, the
    library's through the per-line path (the columnar path hands it over)."""
    app = (
        '{"@timestamp":"2026-11-29T10:00:%02d.000Z","jobId":"sync-%d","event":"lock_acquired","leaseMs":30000,'
        '"pod":"pod-a"}'
    )
    lines = [app % (i, i) for i in range(30)]
    lines.insert(
        10,
        '{"@timestamp":"2026-11-29T10:00:10.500Z","log.level":"DEBUG","process.thread.name":"scheduling-1",'
        '"log.logger":"net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor","message":"Locked \'report\', '
        'lock will be held at most until 2026-11-29T10:05:10.500Z","pod":"pod-a"}',
    )
    raw, report = _read(tmp_path, lines, "pod-a.jsonl")
    assert raw.height == 31 and report.malformed == 0  # type: ignore[attr-defined]
    lib = raw.filter(pl.col("dialect") == "shedlock").row(0, named=True)
    assert (
        lib["job_id"] == "report" and lib["line"] == 11 and lib["lease_until"] == "2026-11-29T10:05:10.500Z"
    )
