"""Typed values out of the raw strings a log line gave: timestamps, durations, counts; and why one is unusable.

Every reading here is a polars expression over a whole column (the lease events of every input at once).
A value that is present but cannot be what its field means (a `ts` of `NaN`, a `leaseMs` of
`9223372036854775807` or `-600000`, a `latencyMs` of `1e308`, a `fencingToken` of `true`) gives its line a
reason to be malformed (`why_*`): the line is then located and counted like any other malformed line,
never half-read.
"""

from __future__ import annotations

import polars as pl

# Limits of what a log value can plausibly mean.
MAX_LEASE_MS = 30 * 86_400_000  # a lease over 30 days is not a lease but a unit mistake
MAX_MS = 10 * 365 * 86_400_000  # an elapsed time or a latency over ten years
# epoch times leaselog reads: 1970 to 2200 (the range every later computation stays exact in)
MAX_EPOCH_US = 7_258_118_400 * 1_000_000

_UTC_Z = "%Y-%m-%dT%H:%M:%S%.fZ"
# shapes with a zone, tried in order on what the fast paths could not read
_ZONED = (
    "%Y-%m-%dT%H:%M:%S%.f%#z",
    "%Y-%m-%dT%H:%M:%S%#z",
    "%a, %d %b %Y %H:%M:%S %z",  # RFC 2822 (`Mon, 02 Nov 2026 10:00:00 +0000`)
    "%d %b %Y %H:%M:%S %z",  # RFC 2822 without the weekday
    "%d/%b/%Y:%H:%M:%S %z",  # common log format (`02/Nov/2026:10:00:00 +0000`)
)
_NAIVE = ("%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M")

TIME_SHAPES = (
    "ISO 8601 / RFC 3339 (`2026-11-02T10:00:00.123Z`, an offset, a space for T, a comma for the "
    "fraction as log4j writes it), RFC 2822 (`Mon, 02 Nov 2026 10:00:00 +0000`), common log format, "
    "epoch seconds/ms/us/ns (numbers or strings)"
)


def fast_utc(ts: pl.Expr) -> pl.Expr:
    """The common case, UTC written with a `Z`: a fixed format polars parses ~7x faster than chrono's `%+`."""
    return ts.str.to_datetime(_UTC_Z, time_unit="us", time_zone="UTC", strict=False)


def iso_zoned(ts: pl.Expr) -> pl.Expr:
    """Any ISO 8601 time with a zone (chrono's `%+`)."""
    return ts.str.to_datetime("%+", time_unit="us", time_zone="UTC", strict=False)


def _normalised(ts: pl.Expr) -> pl.Expr:
    """The usual variations brought to one spelling: a space for `T`, log4j's `,123` fraction, `GMT`/`UTC`
    as a zone name, a space before the offset."""
    s = ts.str.strip_chars()
    s = s.str.replace(r"^(\d{4}-\d{2}-\d{2}) ", "${1}T")
    s = s.str.replace(r"(T\d{2}:\d{2}:\d{2}),(\d)", "${1}.${2}")
    s = s.str.replace(r"(?i)\s*(?:GMT|UTC|UT)$", " +0000")
    return s.str.replace(r"(T\d{2}:\d{2}:\d{2}(?:\.\d+)?) ([+-]\d{2}:?\d{2})$", "${1}${2}")


def epoch_time(ts: pl.Expr) -> pl.Expr:
    """An epoch number (or numeric string) in s/ms/us/ns by magnitude; null unless finite and 1970-2200."""
    num = ts.cast(pl.Float64, strict=False)
    epoch_us = (
        pl.when(num.abs() < 1e11)
        .then(num * 1e6)
        .when(num.abs() < 1e14)
        .then(num * 1e3)
        .when(num.abs() < 1e17)
        .then(num)
        .otherwise(num / 1e3)
    )
    ok = num.is_finite() & (epoch_us >= 0) & (epoch_us <= MAX_EPOCH_US)
    return (
        pl.when(ok)
        .then(epoch_us)
        .otherwise(None)
        .round(0)
        .cast(pl.Int64, strict=False)
        .cast(pl.Datetime("us", "UTC"))
    )


def parse_time(ts: pl.Expr, timezone: str = "UTC") -> tuple[pl.Expr, pl.Expr]:
    """(UTC time, whether it was written without a zone) for every shape leaselog reads (TIME_SHAPES).

    A time without a zone is read in `timezone`; in the hour a fall-back repeats, the earlier reading
    (see `resolve_ambiguous` for the later one). Null when unreadable, or a local time that never
    existed (a spring-forward gap).
    """
    s = _normalised(ts)
    zoned = pl.coalesce(
        *(s.str.to_datetime(f, time_unit="us", time_zone="UTC", strict=False) for f in _ZONED)
    )
    naive = pl.coalesce(*(s.str.to_datetime(f, time_unit="us", strict=False) for f in _NAIVE))
    local = naive.dt.replace_time_zone(
        timezone, ambiguous="earliest", non_existent="null"
    ).dt.convert_time_zone("UTC")
    epoch = epoch_time(ts)
    t = pl.coalesce(epoch, zoned, local)
    is_naive = epoch.is_null() & zoned.is_null() & naive.is_not_null()
    return t, is_naive


def later_reading(ts: pl.Expr, timezone: str) -> pl.Expr:
    """The later of the two UTC readings of a zone-less time in a fall-back's repeated hour."""
    s = _normalised(ts)
    naive = pl.coalesce(*(s.str.to_datetime(f, time_unit="us", strict=False) for f in _NAIVE))
    return naive.dt.replace_time_zone(timezone, ambiguous="latest", non_existent="null").dt.convert_time_zone(
        "UTC"
    )


# -- durations and numbers ----------------------------------------------------------------------------------

_UNIT_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}
_HUMAN = r"^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$"
_ISO = r"^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$"


def duration_ms(raw: pl.Expr) -> pl.Expr:
    """Milliseconds from a number (ms) or a duration string people write: `10m`, `30s`, `1500ms`, `1h30m`,
    ISO 8601 `PT10M`. Null when it is neither; not checked for range (see `why_duration`)."""
    num = raw.cast(pl.Float64, strict=False)
    s = raw.str.strip_chars().str.to_lowercase().str.replace_all(" ", "", literal=True)
    parts = s.str.extract_all(r"\d+(?:\.\d+)?(?:ms|s|m|h|d)")
    human = (
        parts.list.eval(
            pl.element().str.extract(r"^([\d.]+)", 1).cast(pl.Float64)
            * pl.element().str.extract(r"(ms|s|m|h|d)$", 1).replace_strict(_UNIT_MS, return_dtype=pl.Float64)
        )
        .list.sum()
        .cast(pl.Float64)
    )
    u = raw.str.strip_chars().str.to_uppercase()
    iso = sum(
        (
            u.str.extract(_ISO, i).cast(pl.Float64).fill_null(0.0) * unit
            for i, unit in ((1, 86_400_000.0), (2, 3_600_000.0), (3, 60_000.0), (4, 1000.0))
        ),
        start=pl.lit(0.0),
    )
    return (
        pl.when(num.is_not_null())
        .then(num)
        .when(s.str.contains(_HUMAN))
        .then(human)
        .when(u.str.contains(_ISO) & (u != "P") & (u != "PT"))
        .then(iso)
        .otherwise(None)
    )


def why_duration(raw: pl.Expr, value: pl.Expr, name: str, *, maximum: float, positive: bool) -> pl.Expr:
    """Why a present duration value is unusable, or null."""
    shown = raw.str.slice(0, 40)
    return (
        pl.when(raw.is_null())
        .then(None)
        .when(value.is_null())
        .then(pl.format(f"{name} `{{}}` is neither a number of ms nor a duration (10m, 30s, PT10M)", shown))
        .when(~value.is_finite())
        .then(pl.format(f"{name} `{{}}` is not a finite number", shown))
        .when(value < 0)
        .then(pl.format(f"{name} `{{}}` is negative", shown))
        .when(pl.lit(positive) & (value == 0))
        .then(pl.format(f"{name} `{{}}`: a lease must last longer than 0", shown))
        .when(value > maximum)
        .then(pl.format(f"{name} `{{}}` is beyond any plausible value (over {_human(maximum)})", shown))
        .otherwise(None)
    )


def integer(raw: pl.Expr) -> pl.Expr:
    """An exact int64 (a fencing token beyond 2**53 survives), or via float for `600000.0`; null when
    it is not a whole finite number within int64."""
    as_float = raw.cast(pl.Float64, strict=False)
    whole = as_float.is_finite() & (as_float == as_float.round(0)) & (as_float.abs() < 9.2e18)
    return pl.coalesce(
        raw.cast(pl.Int64, strict=False),
        pl.when(whole).then(as_float).otherwise(None).cast(pl.Int64, strict=False),
    )


def why_integer(raw: pl.Expr, value: pl.Expr, name: str) -> pl.Expr:
    shown = raw.str.slice(0, 40)
    return (
        pl.when(raw.is_null())
        .then(None)
        .when(value.is_null())
        .then(pl.format(f"{name} `{{}}` is not a whole number", shown))
        .when(value < 0)
        .then(pl.format(f"{name} `{{}}` is negative", shown))
        .otherwise(None)
    )


# -- a frame's columns ---------------------------------------------------------------------------------------

_RELEASED = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def typed_values(
    df: pl.DataFrame, float_fields: tuple[str, ...], int_fields: tuple[str, ...]
) -> tuple[pl.DataFrame, list[pl.Expr]]:
    """Type the numeric and boolean columns; (frame, reasons a present value is unusable, one expression a
    field). The full readings (duration strings, range checks) only run on the fields where a cheap cast
    found something other than a plain number in range."""
    col = pl.col
    plain: dict[str, pl.Expr] = {}
    for c in float_fields:
        plain[c] = col(c).cast(pl.Float64, strict=False).is_between(0, MAX_MS)
    plain["lease_ms"] = col("lease_ms").cast(pl.Float64, strict=False).is_between(1, MAX_LEASE_MS)
    for c in int_fields:
        if c != "lease_ms":
            plain[c] = col(c).cast(pl.Int64, strict=False) >= 0
    plain["released"] = col("released").str.to_lowercase().is_in(list(_RELEASED))
    suspect = df.select(
        *((col(c).is_not_null() & ~ok.fill_null(False)).any().alias(c) for c, ok in plain.items())
    ).row(0, named=True)
    typed: list[pl.Expr] = []
    reasons: list[pl.Expr] = []

    def keep(value: pl.Expr, why: pl.Expr, name: str) -> None:
        typed.append(pl.when(why.is_null()).then(value).otherwise(None).alias(name))
        typed.append(why.alias(f"_why_{name}"))  # from the raw string, as every expression here
        reasons.append(pl.col(f"_why_{name}"))

    for c in (*float_fields, "lease_ms"):
        lease = c == "lease_ms"
        if not suspect[c]:
            value = col(c).cast(pl.Float64, strict=False)
            typed.append((value.round(0).cast(pl.Int64) if lease else value).alias(c))
            continue
        value = duration_ms(col(c))
        why = why_duration(
            col(c),
            value,
            _SPELLING[c],
            maximum=MAX_LEASE_MS if lease else MAX_MS,
            positive=lease,
        )
        keep(value.round(0).cast(pl.Int64, strict=False) if lease else value, why, c)
    for c in int_fields:
        if c == "lease_ms":
            continue
        if not suspect[c]:
            typed.append(col(c).cast(pl.Int64, strict=False))
            continue
        value = integer(col(c))
        keep(value, why_integer(col(c), value, _SPELLING[c]), c)
    released = (
        col("released").str.to_lowercase().replace_strict(_RELEASED, default=None, return_dtype=pl.Boolean)  # type: ignore[arg-type]
    )
    if suspect["released"]:
        why = (
            pl.when(col("released").is_not_null() & released.is_null())
            .then(pl.format("released `{}` is not true/false", col("released").str.slice(0, 40)))
            .otherwise(None)
        )
        keep(released, why, "released")
    else:
        typed.append(released.alias("released"))
    return df.with_columns(typed), reasons


_SPELLING = {
    "elapsed_ms": "elapsedMs",
    "latency_ms": "latencyMs",
    "lease_ms": "leaseMs",
    "fencing_token": "fencingToken",
    "partition": "partition",
    "offset": "offset",
    "delivery_count": "deliveryCount",
    "idle_ms": "idleMs",
    "attempt": "attempt",
}


def times(df: pl.DataFrame, timezone: str) -> pl.DataFrame:
    """`t_wall` (UTC) and `naive` (written without a zone) from the raw `ts`.

    One parse covers the common case: UTC written with a `Z`. Only when some timestamp is not of that
    kind is it read as any ISO 8601 with a zone, and only when one is not that either does every other
    shape get tried (a dozen parses of a million strings: seconds).
    """
    df = df.with_columns(fast_utc(pl.col("ts")).alias("t_wall"), pl.lit(False).alias("naive"))
    unparsed = (pl.col("t_wall").is_null() & pl.col("ts").is_not_null()).any()
    if not df.select(unparsed).item():
        return df
    df = df.with_columns(pl.coalesce("t_wall", iso_zoned(pl.col("ts"))).alias("t_wall"))
    if not df.select(unparsed).item():
        return df
    t, naive = parse_time(pl.col("ts"), timezone)
    return df.with_columns(
        pl.coalesce("t_wall", t).alias("t_wall"), (pl.col("t_wall").is_null() & naive).alias("naive")
    )


def fall_back(df: pl.DataFrame, timezone: str) -> pl.DataFrame:
    """Zone-less times in the hour a fall-back repeats: the later reading once a file has gone past it
    (a file's lines are in time order), so the second pass of that hour does not go back in time."""
    later = later_reading(pl.col("ts"), timezone)
    seen = pl.col("t_wall").cum_max().forward_fill().shift(1).over("file_index")
    return df.with_columns(
        pl.when(pl.col("naive") & (pl.col("t_wall") < seen) & (later > pl.col("t_wall")))
        .then(later)
        .otherwise(pl.col("t_wall"))
        .alias("t_wall")
    )


STARTS = ("lock_acquired", "job_started")
ENDS = ("job_finished", "job_stopped", "lock_released")


def ends_before_start(timezone: str, kept: pl.Expr) -> pl.Expr:
    """Why an execution's end (finished, stopped, released) is timed before its start (acquired, started).
    Line order says nothing (Loki exports newest first); an end before the start would give a negative
    runtime, so that end is not taken. Only the rows `kept` count as starts."""
    keys = ["job_id", "execution_id"]
    event = pl.col("event")
    start = event.is_in(STARTS) & kept
    start_t = pl.col("t_wall").filter(start).min().over(keys)
    start_e = pl.col("elapsed_ms").filter(start).min().over(keys)
    early_ms = (start_t - pl.col("t_wall")).dt.total_microseconds() / 1000
    # without a time or an elapsedMs, line order is the timeline (one step per line)
    no_clock = pl.col("t_wall").is_null() & pl.col("elapsed_ms").is_null()
    start_pos = line_position().filter(start & no_clock).min().over(keys)
    zone = f"read in {timezone}" if timezone != "UTC" else "read as UTC"
    return (
        pl.when(~event.is_in(ENDS))
        .then(None)
        .when(early_ms > 0)
        .then(
            pl.format(
                "{} at `{}` is {} ms before the start of execution {} (its {}): an execution never ends "
                "before it starts{}",
                event,
                pl.col("ts"),
                early_ms.round(3),
                pl.col("execution_id"),
                pl.lit(" or ".join(STARTS)),
                pl.when(pl.col("naive"))
                .then(
                    pl.lit(f" (a time without a zone, {zone}: local times across a clock change? --timezone)")
                )
                .otherwise(pl.lit("")),
            )
        )
        .when(pl.col("t_wall").is_null() & (pl.col("elapsed_ms") < start_e))
        .then(
            pl.format(
                "{} at elapsedMs {} is before the start of execution {} (elapsedMs {}): an execution never "
                "ends before it starts",
                event,
                pl.col("elapsed_ms"),
                pl.col("execution_id"),
                start_e,
            )
        )
        .when(no_clock & (line_position() < start_pos))
        .then(
            pl.format(
                "{} comes before the start of execution {} in a log without times (line order is its "
                "timeline): an execution never ends before it starts",
                event,
                pl.col("execution_id"),
            )
        )
        .otherwise(None)
    )


def line_position() -> pl.Expr:
    """A row's place in file and line order, as one number (files before lines)."""
    return pl.col("file_index").cast(pl.Int64) * (1 << 32) + pl.col("line")


def _human(ms: float) -> str:
    days = ms / 86_400_000
    return f"{days:g} days" if days < 365 else f"{days / 365:g} years"
