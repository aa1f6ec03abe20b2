"""Never lose a line, never die: whatever bytes arrive, in whatever format, used + ignored + malformed ==
lines, per file, and the analysis finishes."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import shapes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import leaselog
from leaselog.reading.formats import FORMATS

FORMAT_CHOICES = [None, *FORMATS]  # None: auto-detect
# LEASELOG_HYPOTHESIS_EXAMPLES=1000 for a longer hunt; the suite keeps it short (a shared 2-core box)
SETTINGS = settings(
    max_examples=int(os.environ.get("LEASELOG_HYPOTHESIS_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# real lines of every shape, to truncate, splice and mangle
SAMPLE_LINES: list[bytes] = [
    line.encode()
    for files in shapes.all_samples().values()
    for name, content in files.items()
    if not name.endswith(".toml")
    for line in content.splitlines()
]


def check(lines: list[bytes], fmt: str | None = None, name: str = "x.log") -> leaselog.Analysis:
    """Analyze these physical lines; the counts must add up to exactly their number."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(b"".join(line + b"\n" for line in lines))
        a = leaselog.analyze(p, format=fmt)
    (r,) = a.input_reports
    assert r.used + r.ignored + r.malformed == r.lines, (r, fmt)
    # a file that is one JSON document counts its records: each is one line of evidence
    assert r.lines == len(lines) if r.document is None else r.document <= len(lines), (r, fmt)
    assert a.malformed.height <= r.malformed
    return a


no_newline = st.binary(max_size=300).map(lambda b: b.replace(b"\n", b" "))


@SETTINGS
@given(st.lists(no_newline, max_size=30), st.sampled_from(FORMAT_CHOICES))
def test_random_bytes(lines: list[bytes], fmt: str | None) -> None:
    check(lines, fmt)


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from(SAMPLE_LINES), st.floats(0, 1)), min_size=1, max_size=20),
    st.sampled_from(FORMAT_CHOICES),
)
def test_truncated_lines_of_every_shape(cuts: list[tuple[bytes, float]], fmt: str | None) -> None:
    check([line[: int(len(line) * f)] for line, f in cuts], fmt)


@SETTINGS
@given(st.lists(st.sampled_from(SAMPLE_LINES), min_size=1, max_size=25), st.sampled_from(FORMAT_CHOICES))
def test_shapes_mixed_in_one_file(lines: list[bytes], fmt: str | None) -> None:
    check(lines, fmt)


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=20,
)
KEYS = [
    "jobId",
    "executionId",
    "event",
    "ts",
    "pod",
    "leaseMs",
    "released",
    "fencingToken",
    "renewalOutcome",
    "elapsedMs",
    "kafka",
    "log",
    "stream",
    "time",
    "kubernetes",
    "resourceLogs",
    "version",
    "short_message",
    "@timestamp",
    "@version",
    "logger_name",
    "ecs",
]


@SETTINGS
@given(
    st.lists(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=8), min_size=1, max_size=15),
    st.sampled_from(FORMAT_CHOICES),
)
def test_wrong_types_in_every_known_field(rows: list[dict[str, Any]], fmt: str | None) -> None:
    """jobId as a list, ts as an object, resourceLogs as a number, kubernetes as a string: no crash."""
    check([json.dumps(r).encode() for r in rows], fmt)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.text(max_size=40), st.sampled_from(["utf-8", "latin-1", "utf-16", "cp1252", "utf-32"])),
        min_size=1,
        max_size=15,
    )
)
def test_mixed_encodings(parts: list[tuple[str, str]]) -> None:
    lines = []
    for text, enc in parts:
        rec = json.dumps(
            {"ts": "2026-01-01T00:00:00Z", "jobId": "j", "event": "job_started", "message": text},
            ensure_ascii=False,
        )
        lines.append(rec.encode(enc, errors="replace").replace(b"\n", b" "))
    check(lines)


@pytest.mark.parametrize("depth", [10, 100, 1000, 1023, 1025, 10_000])
@pytest.mark.parametrize("fmt", [None, "flat", "otlp", "docker", "gelf", "kubectl", "cri", "fluentbit"])
def test_deep_nesting(depth: int, fmt: str | None) -> None:
    """orjson refuses more than 1024 levels; below that, flattening must not recurse without bound."""
    deep_obj = '{"a":' * depth + "1" + "}" * depth
    deep_list = "[" * depth + "]" * depth
    lines = [
        f'{{"ts":"2026-01-01T00:00:00Z","jobId":"j","executionId":"e","event":"job_started","x":{deep_obj}}}',
        f'{{"ts":"2026-01-01T00:00:00Z","jobId":"j","executionId":"e","event":"job_started","message":{deep_list}}}',
        f'{{"jobId":{deep_list},"event":"job_started"}}',
        '{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[{"key":"jobId","value":'
        + '{"kvlistValue":{"values":[{"key":"k","value":' * min(depth, 300)
        + '{"stringValue":"x"}'
        + "}]}}" * min(depth, 300)
        + "}]}]}]}]}",
        json.dumps(
            {
                "log": f'{{"jobId":"j","event":"job_started","x":{deep_obj}}}\n',
                "stream": "stdout",
                "time": "2026-01-01T00:00:00Z",
            }
        ),
        f"2026-01-01T00:00:00Z stdout F {deep_list} jobId",
    ]
    a = check([x.encode() for x in lines], fmt)
    if fmt in (None, "flat"):
        first = a.events.filter(pl.col("line") == 1)
        if depth < 1024:  # orjson reads up to 1024 levels: an event, its deep value kept as a string
            assert first.height == 1
        else:
            assert first.height == 0
            why = a.malformed.filter(pl.col("line") == 1)["reason"][0]
            # auto-detection finds no format when every sample line is too deep to read
            assert "nested deeper than 1024" in why or (fmt is None and "no known log format" in why)


@pytest.mark.parametrize("fmt", [None, "flat", "logfmt", "kubectl", "cri", "docker", "text"])
def test_huge_lines(fmt: str | None) -> None:
    big = "z" * (3 * 1024 * 1024)
    lines = [
        json.dumps({"ts": "2026-01-01T00:00:00Z", "jobId": "j", "event": "job_started", "message": big}),
        f"2026-01-01T00:00:00Z stdout P {big} jobId",
        "jobId=j event=started msg=" + big,
        big + " jobId",
    ]
    check([x.encode() for x in lines], fmt)


def test_a_valid_sample_line_survives_every_forced_format() -> None:
    for fmt in FORMAT_CHOICES:
        check(SAMPLE_LINES[:50], fmt)


MESSY_LINES: list[bytes] = [
    b"",
    b"   ",
    b" :: Spring Boot ::                (v3.5.0)",
    b"  .   ____          _            __ _ _",
    b"Picked up JAVA_TOOL_OPTIONS: -Xmx1g",
    b"WARNING: A terminally deprecated method in sun.misc.Unsafe has been called",
    b"\tat com.acme.db.Pool.borrow(Pool.java:118)",
    b"org.springframework.dao.QueryTimeoutException: Redis command timed out",
    b'\xef\xbb\xbf{"ts":"2026-11-02T10:00:00.000Z","jobId":"b","executionId":"e","event":"job_started"}',
    b'{"ts":"2026-11-02T10:00:01.000Z","jobId":"a","event":"job_started","jobId":"d","event":"job_finished"}',
    b"2026-11-02T10:00:02.000Z  INFO 1 --- [main] c.a.J : x jobId=c executionId=e event=job_finished",
    b"10:00:03.000 [main] INFO  c.a.J - y jobId=c executionId=e event=lock_released released=true",
    b"jobId=l executionId=e pod=p event=acquired elapsedMs=5",
    b'{"jobId":"x","a":' + b"[" * 1100 + b"]" * 1100 + b"}",
]


@SETTINGS
@given(st.lists(st.sampled_from(SAMPLE_LINES + MESSY_LINES), min_size=25, max_size=80))
def test_columnar_and_per_line_paths_agree_on_any_mix(lines: list[bytes]) -> None:
    """The fast path is never a different reading: any mix of shapes, noise, BOMs and duplicate keys gives
    the same rows and counts read in bulk or one line at a time."""
    from leaselog.config import Settings
    from leaselog.reading.fields import FieldMapper
    from leaselog.reading.reader import Reader
    from leaselog.reading.sources import Source

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(b"".join(line + b"\n" for line in lines))
        got = [
            Reader(FieldMapper(Settings()), columnar=columnar).read([Source(str(p))])
            for columnar in (True, False)
        ]
    cols = [c for c in got[0].raw.columns if c != "fields"]
    assert got[0].raw.select(cols).sort("line").to_dicts() == got[1].raw.select(cols).sort("line").to_dicts()
    assert [r.as_dict() for r in got[0].inputs] == [r.as_dict() for r in got[1].inputs]
    assert sorted(got[0].malformed) == sorted(got[1].malformed)
