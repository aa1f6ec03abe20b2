"""Findings built without validation (Finding.of, Evidence.known) and the polars duration phrasing."""

from __future__ import annotations

import random

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from leaselog.checks.phrasing import durations
from leaselog.durations import format_duration
from leaselog.findings import Evidence, Finding


def _pair() -> tuple[Finding, Finding]:
    ev = Evidence.known(("a.jsonl", 3, "lease acquired"), (None, None, None), ("b.jsonl", 4, None))
    fast = Finding.of(
        kind="lease_outlived",
        code="LL102",
        severity="error",
        message="m",
        job_id="j",
        duration_ms=5,
        evidence=ev,
    )
    slow = Finding(
        kind="lease_outlived",
        code="LL102",
        severity="error",
        message="m",
        jobId="j",
        durationMs=5,
        evidence=(Evidence(file="a.jsonl", line=3, note="lease acquired"), Evidence(file="b.jsonl", line=4)),
    )
    return fast, slow


def test_of_builds_the_record_the_constructor_builds() -> None:
    fast, slow = _pair()
    assert fast == slow
    assert fast.duration_ms == 5.0 and isinstance(fast.duration_ms, float)
    assert fast.to_json_dict() == slow.to_json_dict()
    assert [e.note for e in fast.evidence] == ["lease acquired", None]


def test_model_copy_with_update_leaves_the_shared_fields_set_alone() -> None:
    fast, _ = _pair()
    other, _ = _pair()
    before = set(other.model_fields_set)
    copied = fast.model_copy(update={"message": "changed"})
    assert copied.message == "changed" and fast.message == "m"
    assert other.model_fields_set == before
    e = fast.evidence[0].model_copy(update={"note": "x"})
    assert e.note == "x" and fast.evidence[0].note == "lease acquired"


SPECIAL = [
    0.0,
    -0.0,
    0.4,
    0.5,
    1.5,
    999.4,
    999.5,
    999.9999,
    1000,
    1049.9999,
    1050,
    59949.99,
    59950,
    59999.99,
    60000,
    60050,
    119999.9999,
    3599949.9,
    3599999.99,
    3600000,
    7199999.9999999,
    1e9,
    1e14,
    12.5,
]


def test_durations_column_equals_format_duration_near_every_unit_boundary() -> None:
    rng = random.Random(7)
    vals: list[float | None] = [None, *SPECIAL]
    for _ in range(20_000):
        base = rng.choice([0.5, 50.0, 500.0, 1000.0, 60_000.0, 3_600_000.0]) * rng.randint(0, 200)
        vals.append(base + rng.choice([0.0, 1e-9, -1e-9, 1e-7, -1e-7, 0.05, -0.05]))
        vals.append(-rng.uniform(0, 100_000))
    s = pl.Series("x", vals, dtype=pl.Float64)
    assert durations(s).to_list() == [format_duration(v) for v in vals]


@given(st.lists(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), max_size=50))
def test_durations_column_equals_format_duration(vals: list[float]) -> None:
    s = pl.Series("x", vals, dtype=pl.Float64)
    assert durations(s).to_list() == [format_duration(v) for v in vals]


def test_durations_of_integers_and_of_nothing() -> None:
    ints = pl.Series("i", [None, 5000, 30000, 600000, 86400000, -3], dtype=pl.Int64)
    assert durations(ints).to_list() == [format_duration(v) for v in ints.to_list()]
    assert durations(pl.Series("e", [], dtype=pl.Float64)).to_list() == []


def test_format_columns_fills_a_template_as_str_format_does() -> None:
    from leaselog.checks.phrasing import format_columns

    template = " {a} then {b}{a}."
    df = pl.DataFrame({"a": ["x", "yy"], "b": ["1", ""]})
    got = df.select(format_columns(template, a=pl.col("a"), b=pl.col("b"))).to_series().to_list()
    assert got == [template.format(a=a, b=b) for a, b in df.iter_rows()]
