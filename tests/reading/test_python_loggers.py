"""The real Python loggers (the standard library's `logging`, python-json-logger, loguru) writing the article's
incident and a clean fleet: read with no leaselog.toml, they tell the flat JSON's story with its exact
figures, a clean fleet stays quiet, an empty file is no error, and a malformed line is located by
file:line without changing how its neighbours are read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import python_loggers as real
import shapes

import leaselog

# the format each layout's files are detected as
DETECTED = {
    "stdlib-console": "python-logging",
    "stdlib-basic": "python-logging",
    "stdlib-cookbook": "python-logging",
    "stdlib-json-format": "flat",
    "stdlib-default": "python-basic",
    "python-json-logger": "flat",
    "python-json-logger-timestamp": "flat",
    "loguru": "loguru",
    "loguru-flat": "flat",
}
TIMED = sorted(n for n in real.WRITERS if n != "stdlib-default")
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
    return summary(leaselog.analyze(shapes.FLAT))


def test_every_layout_is_one_the_tests_expect() -> None:
    assert set(DETECTED) == set(real.WRITERS)


@pytest.mark.parametrize("layout", TIMED)
def test_real_logger_tells_the_incident_exactly(
    layout: str, tmp_path: Path, flat: list[tuple[Any, ...]]
) -> None:
    real.write(layout, shapes.story(), tmp_path)
    a = leaselog.analyze(tmp_path)
    assert {r.format for r in a.input_reports} == {DETECTED[layout]}
    t = a.line_totals()
    assert t["malformed"] == 0 and t["total"] == 19
    # every lease line read, every other line (startup, health checks, progress) unrelated, not malformed
    assert t["used"] == 9 and t["ignored"] == 10
    assert summary(a) == flat
    by_kind = {f.kind: f.to_json_dict() for f in a.finding_list}
    assert by_kind["overlapping_executions"]["durationMs"] == 151_498
    assert by_kind["lease_outlived"]["durationMs"] == 151_900
    assert by_kind["overlapping_executions"]["certainty"] == "certain"
    assert by_kind["lease_outlived"]["certainty"] == "certain"
    assert set(a.events["pod"].unique()) == {"pod-a", "pod-b"}


def test_python_json_logger_asctime_is_the_time(tmp_path: Path) -> None:
    """`asctime` (`2026-11-02 10:12:31,900`, local time without a zone) is the line's time: read as UTC,
    or in --timezone."""
    real.write("python-json-logger", shapes.story(), tmp_path)
    first = json.loads((tmp_path / "pod-a.log").read_text().splitlines()[1])
    assert first["asctime"] == "2026-11-02 10:00:00,000" and "ts" not in first
    a = leaselog.analyze(tmp_path)
    finished = a.events.filter(a.events["event"] == "job_finished").sort("t")
    assert finished["t"][0].isoformat() == "2026-11-02T10:12:31.900000+00:00"
    berlin = leaselog.analyze(tmp_path, timezone="Europe/Berlin")
    t = berlin.events.filter(berlin.events["event"] == "job_finished").sort("t")["t"][0]
    assert t.isoformat() == "2026-11-02T09:12:31.900000+00:00"


def test_loguru_record_is_unwrapped(tmp_path: Path) -> None:
    real.write("loguru", shapes.story(), tmp_path)
    line = json.loads((tmp_path / "pod-a.log").read_text().splitlines()[2])
    assert set(line) == {"text", "record"} and line["record"]["extra"]["jobId"] == "report-42"
    a = leaselog.analyze(tmp_path)
    acquired = a.events.filter(a.events["event"] == "lock_acquired").sort("t").row(0, named=True)
    assert (acquired["pod"], acquired["execution_id"], acquired["lease_ms"]) == (
        "pod-a",
        "attempt-a",
        600_000,
    )
    assert acquired["t"].isoformat() == "2026-11-02T10:00:00+00:00"


def test_python_basic_layout_says_it_has_no_time(tmp_path: Path) -> None:
    """BASIC_FORMAT writes no time: its lines are read, the order is their line order, and the Inputs
    table says why under each file."""
    real.write("stdlib-default", shapes.story(), tmp_path)
    assert (tmp_path / "pod-a.log").read_text().startswith("INFO:report.worker:Started ")
    a = leaselog.analyze(tmp_path)
    assert {r.format for r in a.input_reports} == {"python-basic"}
    assert a.line_totals()["malformed"] == 0 and a.line_totals()["used"] == 9
    for r in a.input_reports:
        assert any("writes no time" in n for n in r.notes()), r.notes()
    assert "wall" not in set(a.events["clock"].cast(str))  # no line has a wall-clock time
    # what needs no time (a release that deleted nothing) is found; no duration is claimed as measured
    kinds = {f.kind: f.to_json_dict() for f in a.finding_list}
    assert "stale_release" in kinds
    for kind in ("overlapping_executions", "lease_outlived"):
        assert kind not in kinds or kinds[kind]["certainty"] != "certain"


@pytest.mark.parametrize("layout", sorted(real.WRITERS))
def test_clean_fleet_stays_quiet(layout: str, tmp_path: Path) -> None:
    pods = {
        f.stem: [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        for f in sorted(CLEAN.glob("*.jsonl"))
    }
    real.write(layout, pods, tmp_path)
    a = leaselog.analyze(tmp_path)
    assert a.line_totals()["malformed"] == 0
    assert a.events.height > 0
    if layout == "stdlib-default":
        return  # no time: what line order cannot order is no finding's business here
    assert [f.kind for f in a.finding_list] == [f.kind for f in leaselog.analyze(CLEAN).finding_list]


@pytest.mark.parametrize("fmt", ["python-logging", "python-basic", "loguru"])
def test_empty_file(fmt: str, tmp_path: Path) -> None:
    p = tmp_path / "pod-a.log"
    p.write_text("")
    for opts in ({}, {"format": fmt}):
        a = leaselog.analyze(p, **opts)
        assert a.events.height == 0 and a.finding_list == []
        assert a.line_totals()["malformed"] == 0


@pytest.mark.parametrize(
    ("layout", "bad"),
    [
        ("stdlib-console", b"2026-11-02 10:00:00,000 INFO [report.worker] acquired jobId=report-42 \xff\xfe"),
        ("stdlib-console", b"2026-11-02 10:0"),
        ("stdlib-default", b"INFO:report.worker jobId=report-42"),
        ("loguru", b'{"text": "x", "record": {"extra": {"jobId": "report-42"}, "time": '),
        ("python-json-logger", b'{"asctime": "2026-11-02 10:00:00,000", "jobId": "report-42", '),
    ],
)
def test_malformed_line_is_located_and_neighbours_read(layout: str, bad: bytes, tmp_path: Path) -> None:
    real.write(layout, shapes.story(), tmp_path)
    before = summary(leaselog.analyze(tmp_path))
    p = tmp_path / "pod-a.log"
    lines = p.read_bytes().splitlines(keepends=True)
    p.write_bytes(b"".join([*lines[:3], bad + b"\n", *lines[3:]]))
    a = leaselog.analyze(tmp_path)
    assert a.line_totals()["malformed"] == 1
    assert a.malformed.select("file", "line").rows() == [(str(p), 4)]
    assert a.line_totals()["used"] == 9
    assert summary(a) == before


def _volatile(line: str) -> Any:
    """A loguru line without what depends on where and when the test ran (caller, elapsed, ids)."""
    obj = json.loads(line)
    rec = obj["record"]
    for key in ("elapsed", "file", "function", "line", "module", "name"):
        rec.pop(key)
    rec["process"].pop("id")
    rec["thread"].pop("id")
    head, _, tail = obj["text"].partition(" - ")
    obj["text"] = (head.rsplit(" | ", 1)[0], tail)
    return obj


@pytest.mark.parametrize(
    ("shape", "layout"),
    [
        ("python-logging", "stdlib-console"),
        ("python-json-logger", "python-json-logger"),
        ("loguru", "loguru"),
    ],
)
def test_sample_renderer_writes_what_the_library_writes(shape: str, layout: str, tmp_path: Path) -> None:
    """sample_logs/formats/<shape>/ comes from leaselog.reproduce.python_shapes: line for line the real
    library's output for the same rows (loguru's caller, elapsed time and ids aside)."""
    job = f"report-42-{shape}"
    rendered = shapes.render_shape(shape)
    for pod, path in real.write(layout, shapes.story(), tmp_path, job).items():
        got = path.read_text(encoding="utf-8").splitlines()
        want = rendered[f"{pod}.log"].splitlines()
        if shape == "loguru":
            assert [_volatile(x) for x in got] == [_volatile(x) for x in want]
        else:
            assert got == want


# ---------------------------------------------------------------- the shapes one line at a time

PAIRS = "jobId=j1 executionId=e1 event=lock_acquired leaseMs=1000"


@pytest.mark.parametrize(
    ("line", "level", "logger", "message"),
    [
        (
            f"2026-12-03 11:10:54,365 INFO [report.worker] acquired {PAIRS}",
            "INFO",
            "report.worker",
            "acquired",
        ),
        (
            f"2026-12-03 11:10:54,365 - report.worker - WARNING - acquired {PAIRS}",
            "WARNING",
            "report.worker",
            "acquired",
        ),
        (
            f"2026-12-03 11:10:54,365 [ERROR] report.worker: acquired {PAIRS}",
            "ERROR",
            "report.worker",
            "acquired",
        ),
        (
            f"2026-12-03 11:10:54,365 DEBUG:report.worker:acquired {PAIRS}",
            "DEBUG",
            "report.worker",
            "acquired",
        ),
        (f"2026-12-03 11:10:54,365 Level 5 acquired {PAIRS}", "Level 5", None, "acquired"),
        (f"2026-12-03 11:10:54,365 acquired {PAIRS}", None, None, "acquired"),
    ],
)
def test_python_logging_layouts(line: str, level: str | None, logger: str | None, message: str) -> None:
    from leaselog.reading.formats import line_format
    from leaselog.reading.formats.python_logging import parse_python

    fmt = line_format(line.encode())
    assert fmt is not None and fmt.name == "python-logging"
    (rec,) = parse_python(line.encode())
    assert rec["asctime"] == "2026-12-03 11:10:54,365"
    assert (rec.get("level"), rec.get("logger")) == (level, logger)
    assert rec["message"].startswith(message)
    assert (rec["jobId"], rec["executionId"], rec["event"], rec["leaseMs"]) == (
        "j1",
        "e1",
        "lock_acquired",
        "1000",
    )


def test_python_lines_are_not_logfmt() -> None:
    from leaselog.reading.formats import FORMATS, Malformed

    for line in (f"2026-12-03 11:10:54,365 INFO [w] {PAIRS}", f"INFO:w:{PAIRS}"):
        with pytest.raises(Malformed, match="Python logging"):
            FORMATS["logfmt"].parse(line.encode())


def test_a_pair_repeated_in_a_line_last_wins(tmp_path: Path) -> None:
    p = tmp_path / "pod-a.log"
    p.write_text(f"2026-12-03 11:10:54,365 INFO [w] acquired {PAIRS} executionId=e2\n")
    a = leaselog.analyze(p)
    assert a.events["execution_id"].to_list() == ["e2"]
    assert a.events["t"][0].isoformat() == "2026-12-03T11:10:54.365000+00:00"


def test_message_pairs_never_override_the_json_record(tmp_path: Path) -> None:
    """A JSON line's own keys win over its message's pairs; a line that has a job-id key reads no pairs."""
    p = tmp_path / "pod-a.log"
    lines = [
        {"time": "2026-12-03 11:10:54,365", "pod": "pod-x", "message": f"acquired pod=pod-y {PAIRS}"},
        {
            "time": "2026-12-03 11:10:55,000",
            "jobId": "j1",
            "executionId": "e1",
            "event": "job_started",
            "pod": "pod-x",
            "message": "started pod=pod-z jobId=j9 executionId=e9",
        },
    ]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    a = leaselog.analyze(p)
    assert a.events.select("pod", "job_id", "execution_id", "event").rows() == [
        ("pod-x", "j1", "e1", "lock_acquired"),
        ("pod-x", "j1", "e1", "job_started"),
    ]


def test_json_format_string_with_a_quote_in_the_message_is_malformed(tmp_path: Path) -> None:
    """A JSON-looking format string does not escape `%(message)s`: such a line is malformed, located."""
    fmt = real.STDLIB["json-format"]
    p = tmp_path / "pod-a.log"
    rows = [
        {
            "ts": "2026-12-03T11:10:54.365Z",
            "jobId": "j1",
            "executionId": "e1",
            "event": "lock_acquired",
            "message": "ok",
        },
        {
            "ts": "2026-12-03T11:10:55.000Z",
            "jobId": "j1",
            "executionId": "e1",
            "event": "job_started",
            "message": 'report "q4" started',
        },
        {
            "ts": "2026-12-03T11:10:56.000Z",
            "jobId": "j1",
            "executionId": "e1",
            "event": "job_finished",
            "message": "done",
        },
    ]
    p.write_text(real.stdlib_lines(fmt, rows, None, "pod-a"))
    a = leaselog.analyze(p)
    assert a.malformed.select("file", "line").rows() == [(str(p), 2)]
    assert a.events["event"].cast(str).to_list() == ["lock_acquired", "job_finished"]


def test_loguru_line_inside_docker_is_unwrapped(tmp_path: Path) -> None:
    real.write("loguru", shapes.story(), tmp_path / "app")
    line = (tmp_path / "app" / "pod-a.log").read_text().splitlines()[2]
    p = tmp_path / "pod-a.log"
    p.write_text(
        json.dumps({"log": line + "\n", "stream": "stdout", "time": "2026-11-02T10:00:00.5Z"}) + "\n"
    )
    a = leaselog.analyze(p)
    assert {r.format for r in a.input_reports} == {"docker"}
    row = a.events.row(0, named=True)
    assert (row["event"], row["lease_ms"], row["t"].isoformat()) == (
        "lock_acquired",
        600_000,
        "2026-11-02T10:00:00+00:00",
    )


def test_loguru_without_its_record_is_malformed() -> None:
    from leaselog.reading.formats import FORMATS, Malformed

    with pytest.raises(Malformed, match="record"):
        FORMATS["loguru"].parse(b'{"text": "x", "record": 3}')


@pytest.mark.parametrize(("name", "detected"), [("structlog", "flat"), ("ecs-logging", "ecs")])
def test_structlog_and_ecs_logging_lines_tell_the_incident(
    name: str, detected: str, flat: list[tuple[Any, ...]]
) -> None:
    """structlog's JSONRenderer and ecs-logging-python's StdlibFormatter, as the real libraries wrote the
    incident (tests/fixtures/python_loggers/<name>/, VERSION names the version): read as flat and ECS JSON."""
    folder = real.FIXTURE_DIR / name
    assert (folder / "VERSION").read_text().split()[0] == name
    a = leaselog.analyze(sorted(folder.glob("*.log")))
    assert {r.format for r in a.input_reports} == {detected}
    assert a.line_totals()["malformed"] == 0
    assert summary(a) == flat


def test_loguru_time_is_the_records_and_its_timestamp_serves_without_repr(tmp_path: Path) -> None:
    """`record.time.repr` is the time even when a bound field is named `ts`; `record.time.timestamp`
    (epoch seconds) when `repr` is absent."""
    extra = {"jobId": "j1", "executionId": "e1", "event": "lock_acquired", "leaseMs": 1000, "ts": "yesterday"}

    def line(time: dict[str, Any]) -> str:
        record = {"extra": extra, "time": time, "level": {"name": "INFO"}, "message": "acquired"}
        return json.dumps({"text": "acquired\n", "record": record})

    p = tmp_path / "pod-a.log"
    p.write_text(
        line({"repr": "2026-12-03 12:10:54.365000+01:00", "timestamp": 0})
        + "\n"
        + line({"timestamp": 1796296254.366})
        + "\n"
    )
    a = leaselog.analyze(p)
    assert [t.isoformat() for t in a.events.sort("line")["t"]] == [
        "2026-12-03T11:10:54.365000+00:00",
        "2026-12-03T11:10:54.366000+00:00",
    ]
