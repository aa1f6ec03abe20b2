"""The order a pod wrote its lines in (leaselog.write_order), for files that hold them in another order."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import polars as pl

from leaselog.write_order import write_positions

T0 = datetime(2026, 11, 3, 9, 0, 0, tzinfo=UTC)
JITTER = 100.0

# one process (elapsedMs from its start at T0), a worker thread and a renewal thread; its clock steps back
# 1.5 s after the first renewal: (event, thread, elapsedMs, step)
WRITTEN = [
    ("job_triggered", "worker-1", 300, 0),
    ("lock_acquired", "worker-1", 305, 0),
    ("job_started", "worker-1", 306, 0),
    ("lease_renewal", "renewal-1", 1305, 0),
    ("lease_renewal", "renewal-1", 2305, -1500),
    ("lease_renewal", "renewal-1", 3305, -1500),
    ("job_finished", "worker-1", 3800, -1500),
    ("lock_released", "worker-1", 3805, -1500),
]


def _frame(rows: list[tuple[str, str, float | None, int]], pod: str = "pod-a") -> pl.DataFrame:
    """Rows in file order: (event, thread, elapsedMs, ms the logged time is off by)."""
    return pl.DataFrame(
        {
            "_f": [pod] * len(rows),
            "_pos": list(range(len(rows))),
            "t": [T0 + timedelta(milliseconds=(el or 0) + off) for _e, _th, el, off in rows],
            "elapsed_ms": [el for _e, _th, el, _off in rows],
            "event": [e for e, _th, _el, _off in rows],
            "thread": [th for _e, th, _el, _off in rows],
        },
        schema_overrides={
            "_f": pl.String,
            "_pos": pl.Int64,
            "t": pl.Datetime("us", "UTC"),
            "elapsed_ms": pl.Float64,
            "event": pl.String,
            "thread": pl.String,
        },
    )


def _written(df: pl.DataFrame) -> list[float | None]:
    """The rows' elapsedMs in the order write_positions gives."""
    return df.sort("_w")["elapsed_ms"].to_list()


def _by_time(rows: list[tuple[str, str, float | None, int]]) -> list[tuple[str, str, float | None, int]]:
    return sorted(rows, key=lambda r: (r[2] or 0) + r[3])


def test_lines_sorted_by_time_are_read_in_the_order_they_were_written() -> None:
    by_time = _by_time(WRITTEN)
    assert [r[2] for r in by_time] != [r[2] for r in WRITTEN]  # the step moved lines
    got = write_positions(_frame(by_time), JITTER)
    assert got["_sorted"].all()
    assert _written(got) == [r[2] for r in WRITTEN]
    # newest first (a Loki export): the same
    assert _written(write_positions(_frame(by_time[::-1]), JITTER)) == [r[2] for r in WRITTEN]


def test_a_group_after_a_step_whose_lines_share_one_elapsed_is_moved_too() -> None:
    """The lines after a step back all logged in one millisecond (a completion, the finish, the release):
    their group begins and ends at one elapsedMs, and is still read after the group it continues."""
    written = [
        ("job_triggered", "poll-1", 1408, 0),
        ("lock_acquired", "poll-1", 1414, 0),
        ("job_started", "poll-1", 1415, 0),
        ("job_finished", "poll-1", 2556, -2080),
        ("lock_released", "poll-1", 2556, -2080),
    ]
    by_time = _by_time(written)
    assert [r[2] for r in by_time] == [2556, 2556, 1408, 1414, 1415]
    assert _written(write_positions(_frame(by_time), JITTER)) == [r[2] for r in written]


def test_a_file_written_in_order_is_read_in_line_order() -> None:
    got = write_positions(_frame(WRITTEN), JITTER)
    assert not got["_sorted"].any()  # its times go back at the step
    assert got.sort("_pos")["_w"].is_sorted()
    # nor does a file without a step move: its time order is its line order
    plain = write_positions(_frame([(e, th, el, 0) for e, th, el, _ in WRITTEN]), JITTER)
    assert plain["_sorted"].all() and plain.sort("_pos")["_w"].is_sorted()


def test_shuffled_lines_stay_in_line_order() -> None:
    rows = list(WRITTEN)
    random.Random(5).shuffle(rows)
    got = write_positions(_frame(rows), JITTER)
    assert not got["_sorted"].any()
    assert got.sort("_pos")["_w"].is_sorted()


def test_a_restart_is_no_step_and_moves_nothing() -> None:
    # the process is killed after its first renewal and restarts at T0 + 3 s: elapsedMs from zero again
    restarted = [(e, th, el, 3000) for e, th, el, _ in WRITTEN[:3]]
    rows = _by_time(WRITTEN[:4] + [(e, th, float(el), off) for e, th, el, off in restarted])
    for ordered in (rows, rows[::-1]):
        got = write_positions(_frame(ordered), JITTER)
        want = sorted(range(len(ordered)), key=lambda i: i if ordered is rows else -i)
        assert got.sort("_w")["_pos"].to_list() == want


def test_lines_without_elapsed_and_odd_lines_do_not_move_their_neighbours() -> None:
    by_time = _by_time(WRITTEN)
    plain = _written(write_positions(_frame(by_time), JITTER))
    # a line without elapsedMs, and a line whose elapsedMs is far off (a typo, another counter), among them
    bare = ("lease_renewal", "renewal-1", None, 1400)
    typo = ("lease_renewal", "renewal-1", 9_999_999.0, -9_999_999 + 350)
    odd = _by_time([*WRITTEN, bare, typo])
    got = write_positions(_frame(odd), JITTER)
    assert got["_sorted"].all()
    assert [x for x in _written(got) if x is not None and x < 9_999_999] == plain
    # the line without elapsedMs stays at its time: after the lines written before it, before those after
    w = dict(zip(got["_pos"].to_list(), got["_w"].to_list(), strict=True))
    at = {r: w[i] for i, r in enumerate(odd)}
    assert at[WRITTEN[3]] < at[bare] < at[WRITTEN[6]]
    # and the odd line stays where its time put it, between the two lines logged around it
    assert at[WRITTEN[2]] < at[typo] < at[WRITTEN[4]]


def test_two_pods_in_one_file_are_read_apart() -> None:
    a = _frame(_by_time(WRITTEN), "pod-a")
    b = _frame([(e, th, el, 40) for e, th, el, _ in WRITTEN], "pod-b")
    both = pl.concat([a, b]).sort("t").with_columns(pl.int_range(pl.len()).alias("_pos"))
    got = write_positions(both, JITTER)
    assert _written(got.filter(pl.col("_f") == "pod-a")) == [r[2] for r in WRITTEN]
    assert _written(got.filter(pl.col("_f") == "pod-b")) == [r[2] for r in WRITTEN]


def test_no_lines() -> None:
    got = write_positions(_frame([]), JITTER)
    assert got.height == 0 and "_w" in got.columns
