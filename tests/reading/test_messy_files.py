"""Issue 13: real files are messy. A file's shape is a first guess; each line that does not fit it is read
in its own shape, noise is ignored, and nothing on top of a file changes how the rest of it is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import leaselog
from leaselog.config import Settings
from leaselog.reading.fields import FieldMapper
from leaselog.reading.formats import detect_format, is_noise, line_format
from leaselog.reading.formats.console import console_record
from leaselog.reading.reader import Reader, ReadResult
from leaselog.reading.sources import Source
from leaselog.reproduce.shapes import SPRING_BANNER

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "sample_logs" / "article-demo"
INCIDENT = ROOT / "sample_logs" / "article-incident"

JVM = [
    "Picked up JAVA_TOOL_OPTIONS: -XX:MaxRAMPercentage=75.0 -Dfile.encoding=UTF-8",
    "Picked up _JAVA_OPTIONS: -Xss512k",
    "OpenJDK 64-Bit Server VM warning: Sharing is only supported for boot loader classes because "
    "bootstrap classpath has been appended",
    "WARNING: A terminally deprecated method in sun.misc.Unsafe has been called",
    "WARNING: sun.misc.Unsafe::objectFieldOffset has been called by io.netty.util.internal.PlatformDependent0",
    "WARNING: Please consider reporting this to the maintainers of class io.netty.util.internal.PlatformDependent0",
    "WARNING: sun.misc.Unsafe::objectFieldOffset will be removed in a future release",
    "SLF4J(W): No SLF4J providers were found.",
    "10:00:00,123 |-INFO in ch.qos.logback.classic.LoggerContext[default] - This is logback-classic version 1.5.6",
    "10:00:00,130 |-INFO in ch.qos.logback.classic.util.ContextInitializer@5f2108b5 - No custom configurators",
    "Listening for transport dt_socket at address: 5005",
    "OpenJDK 64-Bit Server VM warning: Options -Xverify:none and -noverify were deprecated in JDK 13",
]
NESTED = '{"jobId":"x","a":' + "[" * 1100 + "]" * 1100 + "}"


def _summary(a: leaselog.Analysis) -> list[tuple[Any, ...]]:
    """Findings as what must not change: kind, job, executions, figures, certainty (not line numbers)."""
    return sorted(
        (f.kind, f.job_id, tuple(f.execution_ids), f.duration_ms, f.certainty, f.start, f.end)
        for f in a.finding_list
    )


def _read(path: Path, **settings: Any) -> ReadResult:
    s = Settings(**settings)
    return Reader(FieldMapper(s), forced_format=s.format).read([Source(str(path))])


# ---------------------------------------------------------------- the article's demo, as the terminals showed it


def test_two_terminal_capture_gives_the_demo_findings_with_all_six_lines() -> None:
    a = leaselog.analyze(DEMO, lease_ttl_ms="5s")
    assert sorted(p.name for p in DEMO.iterdir()) == ["terminal-a.log", "terminal-b.log"]
    for r in a.input_reports:
        text = Path(r.path).read_text()
        assert ":: Spring Boot ::" in text and "  INFO " in text  # the banner and the console lines are there
        assert r.format == "spring-console"
        # the three printf lease lines, and Spring Boot's `Started ... (process running for ...)`
        assert (r.used, r.malformed) == (4, 0)
        assert r.dialects == {"spring-boot": 1}
        assert r.ignored == r.lines - 4
        assert r.other_shapes == {"logfmt": 3}  # the printf lines: said under the Inputs table
    assert a.events.height == 6
    kinds = {f.kind: f for f in a.finding_list}
    assert {"lease_outlived", "stale_release", "overlapping_executions"} <= set(kinds)
    assert kinds["overlapping_executions"].certainty == "uncertain"
    assert kinds["lease_outlived"].duration_ms == pytest.approx(112)  # A: acquired at 212, released at 5324


# ---------------------------------------------------------------- heads on top of a JSON file


def _long_json() -> list[str]:
    """The incident's pod-a file grown past the sniffed head (the columnar path reads it)."""
    lines = (INCIDENT / "pod-a.jsonl").read_text().splitlines()
    noise = [
        json.dumps(
            {"ts": f"2026-11-02T10:13:{i % 60:02d}.{i:03d}Z", "pod": "pod-a", "message": f"GET /x/{i} 200"}
        )
        for i in range(300)
    ]
    return [*lines, *noise]


HEADS = {
    "banner": SPRING_BANNER,
    "blank": [""] * 25,
    "jvm": JVM,
    "nested": [NESTED] * 4,
}


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
@pytest.mark.parametrize("head", sorted(HEADS))
def test_json_with_a_head_gives_the_findings_of_the_file_without_it(
    tmp_path: Path, head: str, long: bool
) -> None:
    body = _long_json() if long else (INCIDENT / "pod-a.jsonl").read_text().splitlines()
    pod_b = (INCIDENT / "pod-b.jsonl").read_text()
    (tmp_path / "plain").mkdir()
    (tmp_path / "headed").mkdir()
    (tmp_path / "plain" / "pod-a.jsonl").write_text("\n".join(body) + "\n")
    (tmp_path / "headed" / "pod-a.jsonl").write_text("\n".join([*HEADS[head], *body]) + "\n")
    for d in ("plain", "headed"):
        (tmp_path / d / "pod-b.jsonl").write_text(pod_b)
    plain = leaselog.analyze(tmp_path / "plain")
    headed = leaselog.analyze(tmp_path / "headed")
    assert _summary(plain) and _summary(headed) == _summary(plain)
    rep = next(r for r in headed.input_reports if r.path.endswith("pod-a.jsonl"))
    base = next(r for r in plain.input_reports if r.path.endswith("pod-a.jsonl"))
    assert rep.format == "flat" and rep.used == base.used
    # the head is ignored (banner, blanks, JVM lines) or malformed line by line (JSON nested too deep)
    assert rep.malformed == (4 if head == "nested" else 0)
    assert rep.lines == base.lines + len(HEADS[head])


def test_seven_lines_starting_with_over_nested_json_keep_their_lease_lines(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in (INCIDENT / "pod-a.jsonl").read_text().splitlines() if '"event"' in x][:3]
    p = tmp_path / "w.jsonl"
    p.write_text("\n".join([NESTED] * 4 + [json.dumps(r) for r in rows]) + "\n")
    r = _read(p)
    assert r.inputs[0].used == 3 and r.inputs[0].malformed == 4
    assert r.raw["event"].to_list() == [x["event"] for x in rows]


def test_a_file_switching_from_console_to_json_mid_way_loses_nothing(tmp_path: Path) -> None:
    console = [
        "2026-11-02T10:00:00.000Z  INFO 1 --- [report-service] [   scheduling-1] c.a.ReportJob : acquired "
        "jobId=report-42 executionId=a pod=pod-a event=lock_acquired leaseMs=600000",
        "2026-11-02T10:00:00.005Z  INFO 1 --- [report-service] [   scheduling-1] c.a.ReportJob : started "
        "jobId=report-42 executionId=a pod=pod-a event=job_started",
    ]
    as_json = [
        json.dumps(
            {
                "@timestamp": f"2026-11-02T10:0{i}:00.000Z",
                "message": "m",
                "jobId": "report-42",
                "executionId": "a",
                "pod": "pod-a",
                "event": "lease_renewal",
                "renewalOutcome": "ok",
            }
        )
        for i in range(1, 9)
    ]
    p = tmp_path / "pod-a.log"
    p.write_text("\n".join([*console, *SPRING_BANNER, *as_json]) + "\n")
    r = _read(p)
    assert r.inputs[0].used == 10 and r.inputs[0].malformed == 0
    assert r.raw["event"].to_list()[:2] == ["lock_acquired", "job_started"]


# ---------------------------------------------------------------- the same content at any length


def _unit(i: int) -> list[str]:
    """Five lines of one messy file: a BOM and duplicate keys, a plain JSON line, JVM noise, a console
    line with kv pairs, JSON nested too deep (with a job id: it is looked at, and malformed)."""
    t = f"2026-11-02T10:{i // 60 % 60:02d}:{i % 60:02d}"
    dup = (
        f'\ufeff{{"ts":"{t}.000Z","jobId":"stale","event":"job_started","executionId":"e{i}","pod":"p",'
        f'"jobId":"job-{i}","event":"lock_acquired","leaseMs":1000}}'
    )
    plain = json.dumps(
        {"ts": f"{t}.100Z", "jobId": f"job-{i}", "executionId": f"e{i}", "pod": "p", "event": "job_started"}
    )
    console = (
        f"{t}.200Z  INFO 1 --- [           main] c.a.Job                                  : done "
        f"jobId=job-{i} executionId=e{i} pod=p event=job_finished status=ok"
    )
    return [dup, plain, JVM[0], console, NESTED]


@pytest.mark.parametrize("units", [1, 10, 10_000], ids=["5-lines", "50-lines", "50000-lines"])
def test_a_files_result_does_not_depend_on_its_length(tmp_path: Path, units: int) -> None:
    p = tmp_path / "mixed.log"
    p.write_text("".join(line + "\n" for i in range(units) for line in _unit(i)), encoding="utf-8")
    r = _read(p)
    rep = r.inputs[0]
    assert rep.format == "flat"
    assert (rep.lines, rep.used, rep.ignored, rep.malformed) == (5 * units, 3 * units, units, units)
    raw = r.raw.sort("line")
    assert raw.height == 3 * units
    # every unit reads as the first one does: duplicate keys last-wins, the BOM gone, the console line read
    first = raw.head(3).select("job_id", "event", "ts", "pod", "lease_ms", "status").rows()
    assert first == [
        ("job-0", "lock_acquired", "2026-11-02T10:00:00.000Z", "p", "1000", None),
        ("job-0", "job_started", "2026-11-02T10:00:00.100Z", "p", None, None),
        ("job-0", "job_finished", "2026-11-02T10:00:00.200Z", "p", None, "ok"),
    ]
    assert raw["event"].to_list() == ["lock_acquired", "job_started", "job_finished"] * units
    assert raw["job_id"].to_list() == [f"job-{i}" for i in range(units) for _ in range(3)]
    assert sorted({why for _, _, why in r.malformed}) == ["JSON nested deeper than 1024 levels"]


# ---------------------------------------------------------------- BOM and duplicate keys


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
def test_bom_at_the_start_and_where_files_were_concatenated(tmp_path: Path, long: bool) -> None:
    body = _long_json() if long else (INCIDENT / "pod-a.jsonl").read_text().splitlines()
    text = "\ufeff" + "\n".join(body) + "\n"
    p = tmp_path / "pod-a.jsonl"
    p.write_text(text + "\ufeff" + text.replace("report-42", "report-43")[1:], encoding="utf-8")
    r = _read(p)
    assert r.inputs[0].malformed == 0
    assert sorted(set(r.raw["job_id"].to_list())) == ["report-42", "report-43"]
    assert r.raw.filter(r.raw["line"] == 2)["event"].to_list() == [
        "job_triggered"
    ]  # line 1 is a console line


@pytest.mark.parametrize("lines", [3, 5000])
def test_duplicate_keys_resolve_last_wins_at_any_length(tmp_path: Path, lines: int) -> None:
    rows = [
        f'{{"ts":"2026-11-02T10:00:00.{i % 1000:03d}Z","jobId":"first","executionId":"e{i}","jobId":"last-{i}",'
        f'"event":"job_started","event":"job_finished"}}'
        for i in range(lines)
    ]
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(rows) + "\n")
    for columnar in (True, False):
        r = Reader(FieldMapper(Settings()), columnar=columnar).read([Source(str(p))])
        assert r.raw.height == lines
        assert set(r.raw["event"].to_list()) == {"job_finished"}
        assert r.raw.sort("line")["job_id"].to_list() == [f"last-{i}" for i in range(lines)]


# ---------------------------------------------------------------- console shapes


SPRING3_APP = (
    "2026-11-29T10:00:00.101Z  INFO 4242 --- [report-service] [   scheduling-1] c.e.report.ReportWorker"
    "                  : lease acquired jobId=report-42 executionId=e-1 event=lock_acquired leaseMs=30000"
)
SPRING3 = (
    "2026-11-29T10:00:00.101+01:00  WARN 4242 --- [           main] c.e.report.ReportWorker : renewal "
    "failed jobId=report-42 executionId=e-1 event=lease_renewal renewalOutcome=timeout latencyMs=1500"
)
SPRING2 = (
    "2026-11-29 10:00:00.101  INFO 4242 --- [           main] c.e.report.ReportWorker                  : "
    "started jobId=report-42 executionId=e-1 event=job_started"
)
LOGBACK_MDC = (
    "10:00:01.250 [scheduling-1] INFO  c.e.report.ReportWorker - finished {jobId=report-42, executionId=e-1, "
    "event=job_finished, status=ok}"
)
LOG4J2_BRACKETS = (
    "10:00:01.300 [scheduling-1] INFO  c.e.report.ReportWorker - [jobId=report-42 executionId=e-1] "
    "released event=lock_released released=true"
)


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        (
            SPRING3_APP,
            {
                "@timestamp": "2026-11-29T10:00:00.101Z",
                "thread": "scheduling-1",
                "level": "INFO",
                "logger": "c.e.report.ReportWorker",
                "spring.application.name": "report-service",
                "jobId": "report-42",
                "event": "lock_acquired",
                "leaseMs": "30000",
            },
        ),
        (
            SPRING3,
            {
                "@timestamp": "2026-11-29T10:00:00.101+01:00",
                "thread": "main",
                "level": "WARN",
                "renewalOutcome": "timeout",
                "latencyMs": "1500",
            },
        ),
        (SPRING2, {"@timestamp": "2026-11-29T10:00:00.101", "thread": "main", "event": "job_started"}),
        (
            LOGBACK_MDC,
            {
                "console.time_of_day": "10:00:01.250",
                "thread": "scheduling-1",
                "jobId": "report-42",
                "executionId": "e-1",
                "event": "job_finished",
                "status": "ok",
            },
        ),
        (
            LOG4J2_BRACKETS,
            {
                "console.time_of_day": "10:00:01.300",
                "jobId": "report-42",
                "executionId": "e-1",
                "event": "lock_released",
                "released": "true",
            },
        ),
    ],
)
def test_console_patterns_are_read(line: str, expect: dict[str, str]) -> None:
    rec = console_record(line)
    assert rec is not None
    assert {k: rec.get(k) for k in expect} == expect
    fmt = line_format(line.encode())
    assert fmt is not None and fmt.name == "spring-console"


def test_console_file_reads_time_pod_and_keeps_stack_traces_attached(tmp_path: Path) -> None:
    p = tmp_path / "report-worker-7d9f-2026-11-29.log"  # the date for time-of-day lines, and the pod
    p.write_text(
        "\n".join(
            [
                *SPRING_BANNER,
                SPRING2.replace("2026-11-29 10:00:00.101", "2026-11-29 10:00:00.050").replace(
                    "event=job_started", "event=lock_acquired leaseMs=30000"
                ),
                LOGBACK_MDC.replace("event=job_finished", "event=job_started").replace(", status=ok", ""),
                "10:00:01.260 [scheduling-1] ERROR c.e.report.ReportWorker - renewal failed jobId=report-42 "
                "executionId=e-1 event=lease_renewal renewalOutcome=error",
                "org.springframework.dao.QueryTimeoutException: Redis command timed out",
                "\tat io.lettuce.core.internal.Exceptions.bubble(Exceptions.java:63)",
                "\t... 12 more",
                "Caused by: io.lettuce.core.RedisCommandTimeoutException: Command timed out after 1 second(s)",
                "\tat io.lettuce.core.internal.ExceptionFactory.createTimeoutException(ExceptionFactory.java:63)",
                LOGBACK_MDC,
            ]
        )
        + "\n"
    )
    r = _read(p)
    rep = r.inputs[0]
    assert rep.format == "spring-console"
    assert (rep.used, rep.malformed) == (4, 0)
    raw = r.raw.sort("line")
    assert raw["pod"].unique().to_list() == ["report-worker-7d9f-2026-11-29"]
    assert raw["ts"].to_list() == [
        "2026-11-29T10:00:00.050",
        "2026-11-29T10:00:01.250",
        "2026-11-29T10:00:01.260",
        "2026-11-29T10:00:01.250",
    ]
    failed = raw.filter(raw["event"] == "lease_renewal")["message"].item()
    assert "QueryTimeoutException" in failed and "Caused by: io.lettuce" in failed  # attached, not malformed


def test_time_of_day_takes_the_configured_date_and_rolls_over_midnight(tmp_path: Path) -> None:
    p = tmp_path / "worker.log"
    p.write_text(
        "23:59:59.900 [main] INFO  c.e.W - a jobId=j executionId=e event=job_started\n"
        "00:00:00.100 [main] INFO  c.e.W - b jobId=j executionId=e event=job_finished\n"
    )
    r = _read(p, log_date="2026-11-29")
    assert r.raw.sort("line")["ts"].to_list() == ["2026-11-29T23:59:59.900", "2026-11-30T00:00:00.100"]


def test_noise_is_recognised_and_never_a_shape() -> None:
    for line in [*JVM, *SPRING_BANNER]:
        if line.strip():
            assert is_noise(line.encode()), line
    assert not is_noise(SPRING3_APP.encode()) and not is_noise(b'{"jobId":"x"}') and not is_noise(b"a=1 b=2")
    # a banner and JVM warnings on top never decide the shape
    assert detect_format([*(x.encode() for x in JVM + SPRING_BANNER), b'{"ts":"x"}']) == "flat"


def test_a_broken_json_line_is_never_read_as_logfmt(tmp_path: Path) -> None:
    p = tmp_path / "w.log"
    p.write_text(
        'jobId=j executionId=e event=job_started ts=2026-11-02T10:00:00Z\n{"msg":"a=1 jobId=j event=x"\n'
    )
    r = _read(p)
    assert (r.inputs[0].used, r.inputs[0].malformed) == (1, 1)
    assert r.malformed[0][2].startswith("invalid JSON")


def test_forced_format_reads_no_other_shape(tmp_path: Path) -> None:
    p = tmp_path / "w.log"
    p.write_text(SPRING2 + '\n{"ts":"2026-11-02T10:00:00Z","jobId":"j","event":"job_started"}\n')
    r = _read(p, format="spring-console")
    assert (r.inputs[0].used, r.inputs[0].malformed) == (1, 1)


def test_inspect_shows_the_keys_of_lines_in_another_shape_than_the_first_guess() -> None:
    from leaselog.inspection import inspect_file

    ins = inspect_file(DEMO / "terminal-a.log")
    assert ins.format == "spring-console" and ins.report.used == 4  # (3 lease lines, 1 start-up line)
    fills = {k.key: k.field for k in ins.keys}
    assert fills["jobId"] == "job_id" and fills["elapsedMs"] == "elapsed_ms" and fills["thread"] == "thread"


def test_a_head_leaves_a_uniform_json_file_on_the_columnar_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the head's lines are read one by one: the rest of the file is decoded in bulk."""
    per_line: list[int] = []
    take = Reader._take_line

    def spy(self: Reader, st: Any, line_no: int, line: bytes) -> None:
        per_line.append(line_no)
        take(self, st, line_no, line)

    monkeypatch.setattr(Reader, "_take_line", spy)
    p = tmp_path / "pod-a.jsonl"
    head = [*SPRING_BANNER, *JVM]
    p.write_text("\n".join([*head, *_long_json()]) + "\n")
    r = _read(p)
    assert r.inputs[0].used == 5
    assert per_line and max(per_line) <= len(head)
