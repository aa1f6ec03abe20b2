"""Phrasing shared by checks: moments, durations and sentences, for one value or a whole column."""

from __future__ import annotations

import re
from datetime import datetime

import polars as pl

from leaselog.durations import format_duration
from leaselog.timebase import PSEUDO_EPOCH


def when(t: datetime | None, clock: str | None = "wall") -> str:
    """A moment as a responder reads it: `10:10:00.4` (wall clock) or `+5.1s` (no wall clock in the log)."""
    if t is None:
        return "?"
    if clock not in (None, "wall"):
        return f"+{format_duration((t - PSEUDO_EPOCH).total_seconds() * 1000)}"
    # the same as strftime("%H:%M:%S.") + milliseconds, at a third of the cost (called per finding)
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{t.microsecond // 1000:03d}"


def moments(df: pl.DataFrame, t: str, clock: str) -> pl.Series:
    """`when(t, clock)` for every row of `df` at once: polars formats the wall-clock moments, Python the rest."""
    wall = pl.col(clock).is_null() | (pl.col(clock) == "wall")
    out = df.select(
        pl.when(pl.col(t).is_null())
        .then(pl.lit("?"))
        .when(wall)
        .then(pl.col(t).dt.strftime("%H:%M:%S%.3f"))  # %.3f truncates to milliseconds, as `when` does
        .alias(f"{t}_when")
    ).to_series()
    # moments on a pod's own elapsed clock (no wall clock in the log) are rare: phrased one by one
    other = df.select(pl.arg_where(pl.col(t).is_not_null() & ~wall)).to_series()
    if other.len():
        sub = df[other]
        out = out.scatter(other, [when(x, c) for x, c in zip(sub[t], sub[clock], strict=True)])
    return out


def _nearest(y: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """`y` rounded to the nearest integer, and whether `y` is clear of a tie (x.5) by far more than the
    error of computing it in floating point: only then is that integer the one `.0f`/`.1f` would print."""
    return (y + 0.5).floor().cast(pl.Int64), ((y - y.floor()) - 0.5).abs() > 1e-6


def _tenths(k: pl.Expr) -> pl.Expr:
    """A whole number of tenths as `.1f` prints it: 42 -> `4.2`."""
    return pl.format("{}.{}", (k // 10).cast(pl.String), (k % 10).cast(pl.String))


def durations(values: pl.Series) -> pl.Series:
    """`format_duration` for every value of a column (null: `?`), computed by polars.

    The same branches, each computed in floating point as `format_duration` computes it (an exact
    divmod, then `.0f` or `.1f`); a value within a hair of a rounding tie, or not finite, is left to
    `format_duration` itself, so every string is the one it gives (checked on 300 000 values).
    """
    ms = pl.col("ms")
    a = ms.abs()
    k_ms, clear_ms = _nearest(a)  # under a second: `850ms`
    k_s, clear_s = _nearest(a / 1000 * 10)  # under a minute: `4.2s`
    # under an hour: `2m31.5s`, `2m` (divmod: `minutes * 60 000` and `a - it` are exact in floating point)
    minutes = (a / 60_000).floor()
    rest = a - minutes * 60_000
    k_m, clear_m = _nearest(rest / 1000 * 10)
    carry = k_m == 600  # rounds up to the next whole minute: `10m`, not `9m60s`
    k_m = pl.when(carry).then(0).otherwise(k_m)
    minutes = minutes + carry.cast(pl.Float64)
    secs = pl.when(k_m % 10 == 0).then((k_m // 10).cast(pl.String)).otherwise(_tenths(k_m))
    m = minutes.cast(pl.Int64).cast(pl.String)
    # longer: `1h02m`
    hours = (a / 3_600_000).floor()
    rest_h = a - hours * 3_600_000
    minutes_h = (rest_h / 60_000).floor()
    rest_m = rest_h - minutes_h * 60_000
    out = (
        pl.when((a < 1000) & (k_ms < 1000))
        .then(pl.struct(pl.format("{}ms", k_ms.cast(pl.String)).alias("text"), clear_ms.alias("exact")))
        .when((a < 1000) & (k_ms == 1000))
        .then(pl.struct(pl.lit("1.0s").alias("text"), clear_ms.alias("exact")))
        .when((a < 60_000) & (k_s < 600))
        .then(pl.struct(pl.format("{}s", _tenths(k_s)).alias("text"), clear_s.alias("exact")))
        .when(a < 60_000)
        .then(pl.struct(pl.lit("1m").alias("text"), clear_s.alias("exact")))
        .when(a < 3_600_000)
        .then(
            pl.struct(
                pl.when(minutes == 60)
                .then(pl.lit("1h00m"))
                .when(k_m == 0)
                .then(pl.format("{}m", m))
                .otherwise(pl.format("{}m{}s", m, secs))
                .alias("text"),
                (clear_m & (rest >= 0) & (rest < 60_000)).alias("exact"),
            )
        )
        .otherwise(
            pl.struct(
                pl.format(
                    "{}h{}m",
                    hours.cast(pl.Int64).cast(pl.String),
                    minutes_h.cast(pl.Int64).cast(pl.String).str.zfill(2),
                ).alias("text"),
                ((rest_h >= 0) & (rest_h < 3_600_000) & (rest_m >= 0) & (rest_m < 60_000) & (a < 1e15)).alias(
                    "exact"
                ),
            )
        )
    )
    text, exact = out.struct.field("text"), out.struct.field("exact")
    done = (
        pl.DataFrame({"ms": values.cast(pl.Float64)})
        .select(
            pl.when(ms.is_null())
            .then(pl.lit("?"))
            .when(exact & ms.is_finite())
            .then(pl.when(ms < 0).then(pl.lit("-")).otherwise(pl.lit("")) + text)
            .alias(values.name)
        )
        .to_series()
    )
    left = done.is_null().arg_true()  # the rare value polars cannot round as Python does
    if left.len():
        done = done.scatter(left, [format_duration(x) for x in values[left].to_list()])
    return done


def text(name: str) -> pl.Expr:
    """A column as an f-string shows it: strings and integers as they are, null as `None`."""
    return pl.col(name).cast(pl.String).fill_null("None")


def format_columns(template: str, **columns: pl.Expr) -> pl.Expr:
    """`template.format(**values)` for every row, each `{name}` filled from the expression given for it."""
    parts = re.split(r"\{(\w+)\}", template)  # literal, name, literal, name, ..., literal
    return pl.concat_str([columns[p] if i % 2 else pl.lit(p) for i, p in enumerate(parts)])


def nice_ceil_ms(ms: float) -> float:
    """Round a suggested duration up to a value people configure: whole seconds, then 5 s, 30 s, minutes."""
    import math

    for limit, step in ((60_000, 1_000), (600_000, 5_000), (3_600_000, 30_000), (float("inf"), 60_000)):
        if ms <= limit:
            return max(step, math.ceil(ms / step) * step)
    return ms  # pragma: no cover - the last limit is infinite


def renewal_phrase(outcome: str | None, late: bool = False) -> str:
    if late:
        return "a renewal whose success arrived after the lease deadline"
    return {
        "rejected": "a rejected renewal",
        "timeout": "a renewal that timed out",
        "error": "a renewal that failed with an error",
    }.get(outcome or "", f"a renewal with outcome {outcome}")


def renewal_phrases(outcome: pl.Expr, late: pl.Expr) -> pl.Expr:
    """`renewal_phrase(outcome, late)` for every row at once (a null outcome reads `None`)."""
    out = pl.format("a renewal with outcome {}", outcome.cast(pl.String).fill_null("None"))
    for o in ("error", "timeout", "rejected"):
        out = pl.when(outcome == o).then(pl.lit(renewal_phrase(o))).otherwise(out)
    return pl.when(late.fill_null(False)).then(pl.lit(renewal_phrase(None, True))).otherwise(out)


def resolution_words(resolution_ms: pl.Series) -> pl.Series:
    """How finely a file writes its timestamps, as words (`whole seconds`, `tenths of a second`, ...), for
    a resolution in ms; null where it is 1 ms or finer (the figures are exact to their ms)."""
    words = {1000.0: "whole seconds", 100.0: "tenths of a second", 10.0: "hundredths of a second"}
    named = resolution_ms.replace_strict(words, default=None, return_dtype=pl.String)
    other = (
        pl.Series(["steps of "] * resolution_ms.len(), dtype=pl.String)
        + resolution_ms.cast(pl.String)
        + " ms"
    )
    return pl.select(
        pl.when(resolution_ms.fill_null(0.0) > 1.0).then(pl.coalesce(named, other)).otherwise(None).alias("w")
    ).to_series()
