"""Values a log field cannot hold make their line malformed (located, with why); the run goes on.

Also the shapes of timestamps people write, durations written as strings, an execution id reused on two
pods, and zone-less local times (issue 14).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import leaselog
from leaselog.analysis import Analysis
from leaselog.durations import format_duration

ARTICLE = Path(__file__).parent.parent / "sample_logs" / "article-incident"


def _line(**kw: Any) -> str:
    rec = {"ts": "2026-11-02T10:00:00Z", "pod": "pod-a", "jobId": "j", "executionId": "e", **kw}
    return json.dumps(rec)


def _run(tmp_path: Path, lines: list[str], name: str = "w.jsonl", **options: Any) -> Analysis:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return leaselog.analyze(p, **options)


def _accounted(a: Analysis) -> None:
    for r in a.input_reports:
        assert r.used + r.ignored + r.malformed == r.lines
        assert min(r.used, r.ignored, r.malformed, r.events) >= 0


def _reasons(a: Analysis) -> dict[int, str]:
    return dict(zip(a.malformed["line"].to_list(), a.malformed["reason"].to_list(), strict=True))


GOOD = _line(event="lock_acquired", leaseMs=600000)


@pytest.mark.parametrize(
    ("ts", "why"),
    [
        (1e30, "no epoch time"),
        ("NaN", "no epoch time"),
        ("Infinity", "no epoch time"),
        ("1e400", "no epoch time"),
        (-5, "no epoch time"),
        (True, "in no shape"),
        ("garbage", "in no shape"),
        ([1, 2], "in no shape"),
    ],
)
def test_a_timestamp_that_is_no_time_makes_its_line_malformed(tmp_path: Path, ts: Any, why: str) -> None:
    a = _run(tmp_path, [GOOD, _line(ts=ts, event="job_started")])
    _accounted(a)
    assert (a.input_reports[0].used, a.input_reports[0].malformed) == (1, 1)
    assert why in _reasons(a)[2]
    assert a.events.height == 1


@pytest.mark.parametrize("latency", ["NaN", 1e308, "Infinity", -5, "fast"])
def test_a_renewal_latency_that_is_no_duration_is_malformed(tmp_path: Path, latency: Any) -> None:
    lines = [GOOD, _line(event="lease_renewal", renewalOutcome="timeout", latencyMs=latency)]
    a = _run(tmp_path, lines)
    _accounted(a)
    assert "latencyMs" in _reasons(a)[2]
    # the run went on to the checks, and every duration they print is a real one
    for f in a.finding_list:
        assert "nan" not in f.message.lower() and "inf" not in format_duration(f.duration_ms)


@pytest.mark.parametrize("elapsed", ["NaN", "inf", "1e300", "-3"])
def test_logfmt_elapsed_that_is_no_number_is_malformed(tmp_path: Path, elapsed: str) -> None:
    lines = [
        "pod=pod-b jobId=j executionId=x event=lock_acquired leaseMs=5000 elapsedMs=10",
        f"pod=pod-b jobId=j executionId=x event=job_started elapsedMs={elapsed}",
        "pod=pod-b jobId=j executionId=x event=job_finished elapsedMs=30",
    ]
    a = _run(tmp_path, lines, name="w.log")
    _accounted(a)
    assert a.input_reports[0].format == "logfmt"
    assert set(_reasons(a)) == {2}
    assert "elapsedMs" in _reasons(a)[2]
    assert a.executions["runtime_ms"].to_list() == [20.0]


@pytest.mark.parametrize(
    ("lease", "why"),
    [
        (9223372036854775807, "beyond any plausible value"),
        (-600000, "negative"),
        ("NaN", "not a finite number"),
        (1e19, "beyond any plausible value"),
        (0, "longer than 0"),
        ("ten minutes", "neither a number of ms nor a duration"),
        (True, "neither a number of ms nor a duration"),
    ],
)
def test_impossible_lease_is_malformed(tmp_path: Path, lease: Any, why: str) -> None:
    a = _run(tmp_path, [GOOD, _line(ts="2026-11-02T10:00:01Z", event="lock_acquired", leaseMs=lease)])
    _accounted(a)
    assert why in _reasons(a)[2]
    assert a.leases["ttl_ms"].to_list() == [600000]


@pytest.mark.parametrize(
    ("lease", "ms"),
    [("10m", 600000), ("30s", 30000), ("1500ms", 1500), ("PT10M", 600000), ("1h30m", 5400000)],
)
def test_lease_written_as_a_duration_is_read(tmp_path: Path, lease: str, ms: int) -> None:
    a = _run(tmp_path, [_line(event="lock_acquired", leaseMs=lease)])
    assert a.malformed.height == 0
    assert a.events["lease_ms"].to_list() == [ms]


def _article_with(tmp_path: Path, stamp: Any) -> Path:
    """The article's incident with every `ts` rewritten by `stamp` (a datetime -> value)."""
    from datetime import datetime

    out = tmp_path / "article"
    out.mkdir()
    for f in ARTICLE.glob("*.jsonl"):
        recs = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        for r in recs:
            r["ts"] = stamp(datetime.fromisoformat(r["ts"].replace("Z", "+00:00")))
        (out / f.name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    return out


def _overlap(a: Analysis) -> tuple[float, str]:
    (f,) = [f for f in a.finding_list if f.code == "LL101"]
    assert f.duration_ms is not None
    return f.duration_ms, f.certainty


@pytest.mark.parametrize(
    "stamp",
    [
        lambda t: t.strftime("%a, %d %b %Y %H:%M:%S +0000"),  # RFC 2822
        lambda t: t.strftime("%a, %d %b %Y %H:%M:%S GMT"),
        lambda t: t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}",  # log4j
        lambda t: t.astimezone().strftime("%Y-%m-%dT%H:%M:%S.%f%z"),  # an offset
        lambda t: str(t.timestamp()),  # epoch seconds as a string
        lambda t: int(t.timestamp() * 1_000_000),  # epoch microseconds
        lambda t: str(int(t.timestamp() * 1_000_000_000)),  # epoch nanoseconds as a string
    ],
)
def test_the_article_overlap_survives_every_timestamp_shape(tmp_path: Path, stamp: Any) -> None:
    a = leaselog.analyze(_article_with(tmp_path, stamp))
    assert a.malformed.height == 0
    ms, certainty = _overlap(a)
    assert abs(ms - 151_500) <= 1000 and certainty == "certain"
    assert (a.events["clock"] == "wall").all()


def test_a_file_whose_timestamps_are_all_unreadable_is_no_line_order_fallback(tmp_path: Path) -> None:
    a = leaselog.analyze(_article_with(tmp_path, lambda t: t.strftime("%d.%m.%Y um %H:%M")))
    _accounted(a)
    assert a.events.height == 0  # nothing read in line order as if it had no times
    assert a.line_totals()["malformed"] == 9
    assert any("none of its" in p and "timestamps could be read" in p for p in a.problems)
    assert not a.finding_list


def test_same_execution_id_on_two_pods_is_two_executions(tmp_path: Path) -> None:
    lines = [
        _line(ts="2026-11-02T10:00:00Z", pod="pod-a", executionId=1, event="lock_acquired", leaseMs=60000),
        _line(ts="2026-11-02T10:00:00.1Z", pod="pod-a", executionId=1, event="job_started"),
        _line(
            ts="2026-11-02T10:01:00.5Z", pod="pod-b", executionId=1.0, event="lock_acquired", leaseMs=60000
        ),
        _line(ts="2026-11-02T10:01:00.6Z", pod="pod-b", executionId=1.0, event="job_started"),
        _line(ts="2026-11-02T10:01:30Z", pod="pod-a", executionId=1, event="job_finished"),
        _line(ts="2026-11-02T10:01:40Z", pod="pod-b", executionId=1.0, event="job_finished"),
    ]
    a = _run(tmp_path, lines)
    assert sorted(a.executions["execution_id"].to_list()) == ["1@pod-a", "1@pod-b"]
    assert any("appears on pods pod-a, pod-b" in p for p in a.problems)
    assert "LL101" in {f.code for f in a.finding_list}


def test_distinct_execution_ids_get_no_note(tmp_path: Path) -> None:
    lines = [_line(pod="pod-a", executionId="a", event="lock_acquired", leaseMs=1000)]
    lines.append(_line(pod="pod-b", executionId="b", event="lock_acquired", leaseMs=1000))
    a = _run(tmp_path, lines)
    assert sorted(a.executions["execution_id"].to_list()) == ["a", "b"]
    assert not a.problems


# Europe/Berlin falls back on 2026-10-25 at 03:00 CEST to 02:00 CET: local times 02:00-02:59 repeat.
DST = [
    ("2026-10-25 02:40:00", "lock_acquired"),
    ("2026-10-25 02:40:01", "job_started"),
    ("2026-10-25 02:10:00", "job_finished"),  # 30 minutes later, in the repeated hour
]


def _dst(tmp_path: Path, **options: Any) -> Analysis:
    lines = [_line(ts=ts, event=ev, leaseMs=7_200_000) for ts, ev in DST]
    return _run(tmp_path, lines, **options)


def test_local_times_across_a_fall_back_never_give_a_negative_runtime(tmp_path: Path) -> None:
    a = _dst(tmp_path)  # zone-less times read as UTC: the finish goes back 30 minutes
    _accounted(a)
    assert "goes back" not in "".join(a.problems)
    why = _reasons(a)[3]
    assert "job_finished at `2026-10-25 02:10:00` is 1800000.0 ms before the start of execution e" in why
    assert "--timezone" in why
    assert (a.executions["runtime_ms"].drop_nulls() >= 0).all()
    assert [(Path(f).name, z) for f, z in a.local_time_files.items()] == [("w.jsonl", "UTC")]
    assert any("w.jsonl: timestamps without a zone" in p and "read as UTC time" in p for p in a.problems)


def test_timezone_reads_local_times_across_a_fall_back(tmp_path: Path) -> None:
    a = _dst(tmp_path, timezone="Europe/Berlin")
    _accounted(a)
    assert a.malformed.height == 0
    assert a.executions["runtime_ms"].to_list() == [pytest.approx(30 * 60_000 - 1000)]
    assert list(a.local_time_files.values()) == ["Europe/Berlin"]
    assert leaselog.document(a)["settings"]["timezone"] == "Europe/Berlin"


def test_unknown_timezone_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        leaselog.analyze(ARTICLE, timezone="Mars/Olympus")


def test_zoned_times_get_no_local_time_note() -> None:
    a = leaselog.analyze(ARTICLE)
    assert a.local_time_files == {} and not a.problems


def test_out_of_range_settings_are_refused() -> None:
    for bad in ({"clock_offsets": {"pod-a": "1000000000000h"}}, {"lease_ttl": 1e300}, {"max_skew": -1}):
        with pytest.raises(ValueError, match=re.compile("out of range|negative")):
            leaselog.analyze(ARTICLE, **bad)


def test_format_duration_of_no_number() -> None:
    assert format_duration(float("nan")) == "?" and format_duration(float("inf")) == "?"


def test_a_million_bad_values_stay_a_count(tmp_path: Path) -> None:
    """Bad values are located like the reader's malformed lines: the first 1000 of a file, all counted."""
    lines = [
        _line(ts=f"2026-11-02T10:00:{i % 60:02d}Z", event="lock_acquired", leaseMs=-i - 1)
        for i in range(1500)
    ]
    a = _run(tmp_path, lines)
    _accounted(a)
    assert a.input_reports[0].malformed == 1500 and a.malformed.height == 1000
    d = leaselog.document(a)
    assert d["malformedLocated"] == 1000 and d["malformedTruncated"] is True


def test_an_end_before_the_start_in_a_log_without_times_is_malformed(tmp_path: Path) -> None:
    """No time, no elapsedMs: line order is the timeline, and a stop logged before the acquire would give
    a negative runtime."""
    lines = [
        json.dumps({"pod": "pod-a", "jobId": "j", "executionId": "e", "event": ev})
        for ev in ("job_stopped", "lock_acquired", "job_started", "job_finished")
    ]
    a = _run(tmp_path, lines, lease_ttl="5s")
    _accounted(a)
    assert list(_reasons(a)) == [1] and "comes before the start of execution e" in _reasons(a)[1]
    assert (a.executions["runtime_ms"] >= 0).all() and a.executions["runtime_ms"].to_list() == [1.0]
