import polars as pl
import pytest

from leaselog.durations import format_duration, parse_duration_ms, parse_signed_duration_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("10m", 600_000),
        ("30s", 30_000),
        ("600000ms", 600_000),
        ("1h30m", 5_400_000),
        ("250", 250),
        ("1.5s", 1500),
    ],
)
def test_parse(text: str, ms: float) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("bad", ["", "ten minutes", "10x", "m10", "-5s", "10m junk"])
def test_parse_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_duration_ms(bad)


def test_signed() -> None:
    assert parse_signed_duration_ms("-120ms") == -120
    assert parse_signed_duration_ms("+1.5s") == 1500


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (850, "850ms"),
        (4200, "4.2s"),
        (151_498, "2m31.5s"),
        (600_000, "10m"),
        (3_720_000, "1h02m"),
        (None, "?"),
    ],
)
def test_format(ms: float | None, text: str) -> None:
    assert format_duration(ms) == text


def test_a_duration_that_rounds_up_is_written_in_the_next_unit() -> None:
    from leaselog.checks.phrasing import durations

    cases = {
        999.6: "1.0s",
        59_999.99: "1m",
        599_999: "10m",
        3_599_999: "1h00m",
        119_999.9999: "2m",
        999.4: "999ms",
    }
    assert {v: format_duration(v) for v in cases} == cases
    s = pl.Series("x", list(cases), dtype=pl.Float64)
    assert durations(s).to_list() == list(cases.values())
