"""Every dialect reads every one of its samples (a lock library's line in a framework's layout) as the
event it declares, through the real reader; its sources are cited; lines no dialect reads stay unrelated."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from leaselog.config import Settings
from leaselog.reading.dialects import DIALECTS, Dialect, Sample, match_message
from leaselog.reading.fields import FieldMapper
from leaselog.reading.formats import line_format
from leaselog.reading.reader import Reader
from leaselog.reading.sources import expand_sources

CASES = [(d, s) for d in DIALECTS for s in d.samples]


def _message(sample: Sample) -> str:
    """The message of a sample line: a JSON layout's `message`, a console line's (Spring Boot's, Logback's
    or slf4j-simple's), a Celery, klog or Redis line's message as its format reads it."""
    if sample.line.startswith("{"):
        obj = json.loads(sample.line)
        return str(obj.get("message", obj.get("msg")))
    fmt = line_format(sample.line.encode())
    if fmt is not None and fmt.name in ("celery", "klog", "redis", "spring-console", "python-logging"):
        return str(fmt.parse(sample.line.encode())[0]["message"])
    return sample.line.split(" : ", 1)[-1]


def _record(sample: Sample) -> dict[str, object] | None:
    """The fields beside the message (a structured logger's `lock=`), for `Rule.keys`."""
    if sample.line.startswith("{"):
        return dict(json.loads(sample.line))
    fmt = line_format(sample.line.encode())
    if fmt is not None and fmt.name in ("celery", "klog", "redis", "spring-console", "python-logging"):
        return dict(fmt.parse(sample.line.encode())[0])
    return None


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
    hit = match_message(_message(sample), _record(sample))
    also = hit.rule.also if hit is not None else ()
    # the line's own event, after any the same line also says (a ShedLock tick: job_triggered)
    assert mine["event"].to_list() == [*also, sample.event], raw
    row = mine.row(-1, named=True)
    assert row["event"] == sample.event and row["dialect"] == dialect.name
    assert row["raw_event"].startswith(f"{dialect.name}/")
    for key, value in sample.fields.items():
        assert row[key] == value, (key, row)


@pytest.mark.parametrize("dialect", DIALECTS, ids=[d.name for d in DIALECTS])
def test_each_dialect_cites_its_source_and_says_how_to_turn_it_on(dialect: Dialect) -> None:
    assert dialect.sources and all(
        any(x in s for x in (".java", ".py", ".go", ".c ", ".js", ".ts", ".lua", ".md"))
        for s in dialect.sources
    )
    assert dialect.needles and dialect.samples and dialect.enable and dialect.cannot_measure
    # every rule is shown by a sample (read through the reader above)
    shown = set()
    for sample in dialect.samples:
        hit = match_message(_message(sample), _record(sample))
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
    assert raw.height == 32 and report.malformed == 0  # type: ignore[attr-defined]  (Locked: a tick too)
    lib = raw.filter(pl.col("dialect") == "shedlock").row(-1, named=True)
    assert (
        lib["job_id"] == "report" and lib["line"] == 11 and lib["lease_until"] == "2026-11-29T10:05:10.500Z"
    )


def test_inspect_says_which_dialect_read_which_lines() -> None:
    from leaselog.inspection import inspect_file

    sample = Path(__file__).resolve().parents[2] / "sample_logs" / "dialects" / "shedlock" / "pod-b.log"
    ins = inspect_file(sample)
    assert list(ins.dialect_lines) == ["shedlock"]
    assert ins.dialect_lines["shedlock"][:3] == [7, 8, 9]  # after the banner and the start-up line
    assert ins.to_dict()["dialects"]["shedlock"]["events"] == ins.report.dialects["shedlock"] > 0


def test_formats_lists_the_dialects() -> None:
    import io

    from rich.console import Console

    from leaselog.render.formats import render_formats

    out = io.StringIO()
    render_formats(Console(file=out, width=200))
    text = out.getvalue()
    assert all(d.name in text for d in DIALECTS)


def test_a_library_line_with_the_apps_mdc_job_id_takes_the_lock_name(tmp_path: Path) -> None:
    """The app's MDC (`jobId`) rides on the library's line too: the line is still the library's event, and
    its job is the lock's name (on the columnar path, as a candidate with no event name)."""
    app = '{"ts":"2026-11-29T10:00:%02d.000Z","jobId":"sync-%d","event":"lock_acquired","leaseMs":30000}'
    lines = [app % (i, i) for i in range(25)]
    lines.append(
        '{"ts":"2026-11-29T10:00:30.000Z","jobId":"report-run-9","thread":"scheduling-1",'
        '"message":"Not executing \'report\'. It\'s locked."}'
    )
    raw, report = _read(tmp_path, lines, "pod-a.jsonl")
    lib = raw.filter(pl.col("dialect") == "shedlock")
    assert lib["event"].to_list() == ["job_triggered", "lock_denied"]
    assert set(lib["job_id"].to_list()) == {"report"} and report.malformed == 0  # type: ignore[attr-defined]
