"""events.compact: the frame handed to reconstruction is one chunk per column and otherwise the same."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from leaselog.events import compact


def _chunked() -> pl.DataFrame:
    part = pl.DataFrame(
        {"a": [1, None], "s": ["x", None], "none": [None, None]},
        schema={"a": pl.Int64, "s": pl.String, "none": pl.String},
    )
    return pl.concat([part, part, part], rechunk=False)


def test_compact_is_one_chunk_and_equal() -> None:
    frame = _chunked()
    assert frame.n_chunks() == 3
    out = compact(frame)
    assert out.n_chunks() == 1
    assert_frame_equal(out, frame)
    assert out["none"].null_count() == 6


def test_compact_of_empty_keeps_the_schema() -> None:
    empty = _chunked().clear()
    out = compact(empty)
    assert out.schema == empty.schema and out.height == 0
