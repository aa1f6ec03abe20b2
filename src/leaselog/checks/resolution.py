"""Figures between coarse timestamps: the range the truncated times allow, and whether they prove a kind.

A time written to whole seconds says the moment lies within that second (`leaselog.time_resolution`).
A figure measured between two such times (an overlap, a zombie time) is then known only to within the
resolution either way: the true value lies strictly between the figure less the resolution and the figure
plus it. A finding is certain only where that range proves its kind: above zero on one pod's clock, above
the clock-skew bound between two pods (the bound with the resolution added).
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext, derived
from leaselog.checks.phrasing import durations, resolution_words
from leaselog.time_resolution import execution_resolution

__all__ = [
    "resolution_certainty",
    "resolution_columns",
    "resolution_note",
    "with_resolution",
    "with_resolution_ms",
]


def with_resolution_ms(ctx: CheckContext, rows: pl.DataFrame, ids: tuple[str, ...]) -> pl.DataFrame:
    """`rows` (with `job_id` and the execution id columns `ids`) plus `resolution_ms`: the coarsest of
    those executions' time resolutions, where coarser than 1 ms (null: their times are exact to the ms)."""
    per = derived(ctx, "execution_resolution", lambda: execution_resolution(ctx.events))
    out = rows.with_columns(pl.lit(None, dtype=pl.Float64).alias("resolution_ms"))
    if per.height and rows.height:
        for col in ids:
            out = (
                out.join(
                    per.rename({"execution_id": col, "resolution_ms": "_r"}),
                    on=["job_id", col],
                    how="left",
                    maintain_order="left",
                )
                .with_columns(pl.max_horizontal("resolution_ms", "_r").alias("resolution_ms"))
                .drop("_r")
            )
    return out


def resolution_columns(
    ctx: CheckContext, rows: pl.DataFrame, ids: tuple[str, ...], figure: str
) -> pl.DataFrame:
    """`with_resolution_ms` plus the figure's range, `range_lo_ms` (never below 0) and `range_hi_ms` (null
    where `resolution_ms` is)."""
    out = with_resolution_ms(ctx, rows, ids)
    r = pl.col("resolution_ms")
    return out.with_columns(
        pl.when(r.is_not_null())
        .then(pl.max_horizontal(pl.col(figure) - r, pl.lit(0.0)))
        .alias("range_lo_ms"),
        pl.when(r.is_not_null()).then(pl.col(figure) + r).alias("range_hi_ms"),
    )


def resolution_certainty(figure: pl.Expr, two_pods: pl.Expr, max_skew_ms: float) -> pl.Expr:
    """`certainty` once the figure is known only to its resolution: uncertain where what the truncated
    times prove of it (the figure less the resolution) is below zero on one pod, or within the clock-skew
    bound between two."""
    least = figure - pl.col("resolution_ms")
    doubtful = (
        pl.col("resolution_ms").is_not_null()
        & pl.when(two_pods.fill_null(False)).then(least <= max_skew_ms).otherwise(least < 0)
    ).fill_null(False)
    return pl.when(doubtful).then(pl.lit("uncertain")).otherwise(pl.col("certainty"))


def resolution_note(rows: pl.DataFrame) -> pl.Series:
    """` Its timestamps are whole seconds: the figure is known to the second, between 1.0s and 3.0s.`
    where `resolution_ms` is set, else `""` (column `resolution_note`)."""
    words = resolution_words(rows["resolution_ms"])
    lo, hi = durations(rows["range_lo_ms"]), durations(rows["range_hi_ms"])
    unit = rows["resolution_ms"].replace_strict(
        {1000.0: "the second", 100.0: "a tenth of a second", 10.0: "a hundredth of a second"},
        default=None,
        return_dtype=pl.String,
    )
    return pl.select(
        pl.when(words.is_not_null())
        .then(
            pl.format(
                " Its timestamps are {}: the figure is known to {}, between {} and {}.",
                words,
                pl.coalesce(unit, durations(rows["resolution_ms"])),
                lo,
                hi,
            )
        )
        .otherwise(pl.lit(""))
        .alias("resolution_note")
    ).to_series()


def with_resolution(details_json: pl.Expr) -> pl.Expr:
    """A finding's details (a JSON object) plus `timeResolutionMs` and `durationRangeMs` ([least, most])
    where `resolution_ms` is set."""
    added = pl.concat_str(
        details_json.str.strip_suffix("}"),
        pl.when(details_json == "{}").then(pl.lit("")).otherwise(pl.lit(",")),
        pl.lit('"timeResolutionMs":'),
        pl.col("resolution_ms").cast(pl.String),
        pl.lit(',"durationRangeMs":['),
        pl.col("range_lo_ms").cast(pl.String),
        pl.lit(","),
        pl.col("range_hi_ms").cast(pl.String),
        pl.lit("]}"),
    )
    return pl.when(pl.col("resolution_ms").is_null()).then(details_json).otherwise(added)
