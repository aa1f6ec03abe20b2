"""Memory: events.compact (one chunk per column, nulls kept cheap), timebase.gathered (a sort that holds the
frame once) and the allocator default."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from leaselog.timebase import compact, gathered


def _chunked() -> pl.DataFrame:
    part = pl.DataFrame(
        {"a": [1, None], "s": ["x", None], "none": [None, None]},
        schema={"a": pl.Int64, "s": pl.String, "none": pl.String},
    )
    return pl.concat([part, part, part], rechunk=False)


def test_compact_is_one_chunk_and_equal() -> None:
    frame = _chunked()
    assert frame.n_chunks() == 3
    columns = frame.get_columns()
    out = compact(columns)
    assert columns == []  # taken: each chunked column is dropped once copied
    assert out.n_chunks() == 1
    assert_frame_equal(out, frame)
    assert out["none"].null_count() == 6


def test_compact_of_empty_keeps_the_schema() -> None:
    empty = _chunked().clear()
    out = compact(empty.get_columns())
    assert out.schema == empty.schema and out.height == 0


def test_gathered_is_the_stable_sort_and_takes_the_columns() -> None:
    frame = pl.concat(
        [
            pl.DataFrame(
                {"k": [2, 1, 2, None], "s": ["a", "b", "c", "d"], "none": [None] * 4},
                schema={"k": pl.Int64, "s": pl.String, "none": pl.String},
            )
        ]
        * 2,
        rechunk=False,
    )
    order = frame.select(pl.arg_sort_by("k", maintain_order=True)).to_series()
    columns = frame.get_columns()
    out = gathered(columns, order)
    assert columns == []  # taken: each column is dropped once gathered
    # equal keys keep their order; nulls first, as `sort` puts them
    assert_frame_equal(out, frame.sort("k", maintain_order=True))
    assert out["s"].to_list() == ["d", "d", "b", "b", "a", "c", "a", "c"]
    assert out.schema == frame.schema and out["none"].null_count() == 8


def test_allocator_setting_is_a_default_a_user_can_override() -> None:
    import os
    import subprocess
    import sys

    code = "import leaselog, os; print(os.environ['_RJEM_MALLOC_CONF'])"
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    ours = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    # polars puts its own defaults first; ours come after them, so they win
    assert ours.stdout.strip().endswith("background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0")
    env["_RJEM_MALLOC_CONF"] = "dirty_decay_ms:5000"
    theirs = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert theirs.stdout.strip().endswith(",dirty_decay_ms:5000") and "200" not in theirs.stdout
