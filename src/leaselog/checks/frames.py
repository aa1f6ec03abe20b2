"""Frames checks derive from the analysis: pairs of rows, filtered events, completions, evidence columns."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import polars.selectors as cs

from leaselog.checks.contract import CheckContext, derived
from leaselog.clocks.steps import clock_steps
from leaselog.findings import Evidence

# `job_finished` statuses that say the job stopped rather than ran to its end (a stop honoured)
STOP_STATUSES = ("stopped", "cancelled", "canceled", "aborted", "interrupted", "killed", "terminated")


def ev(file: str | None, line: int | None, note: str | None = None) -> list[Evidence]:
    """Evidence for one line, or nothing when the line is unknown."""
    if file is None or line is None:
        return []
    return [Evidence.of(file, int(line), note)]


def at_file(*names: str, suffix: str = "") -> pl.Expr:
    """The file of `pl.coalesce(*[f"{n}_line{suffix}" for n in names])`: `<name>_file` of the first known line.

    An execution's lines can be spread over files (log rotation, stdout and stderr), so a line number is
    only ever paired with the file column computed from the same event.
    """
    expr: pl.Expr = pl.lit(None, dtype=pl.String)
    for name in reversed(names):
        expr = (
            pl.when(pl.col(f"{name}_line{suffix}").is_not_null())
            .then(pl.col(f"{name}_file{suffix}"))
            .otherwise(expr)
        )
    return expr


def pairs_of(
    x: pl.DataFrame,
    on: list[str],
    decide: list[str],
    choose: Callable[[pl.DataFrame], pl.DataFrame],
    suffix: str,
) -> pl.DataFrame:
    """`choose(x.join(x, on=on, suffix=suffix))`, each chosen pair with every column of both rows.

    A job with n rows makes n² pairs, and carrying every column through them was most of a check's
    time: the join and `choose` see only `on` and the `decide` columns (whatever `choose` reads), and
    the pairs it keeps then fetch the rest of both rows. Columns `choose` adds come last.
    """
    x = x.with_row_index("_row")
    # a row alone in its group pairs with nobody but itself: most rows, left out of the join
    narrow = x.select("_row", *on, *decide).filter(pl.len().over(on) > 1)
    chosen = choose(narrow.join(narrow, on=on, suffix=suffix))
    joined = {*narrow.columns, *(f"{c}{suffix}" for c in narrow.columns)}
    wide = x.drop("_row", *on)
    return pl.concat(
        [
            chosen.select(on),
            wide[chosen["_row"]],
            wide[chosen[f"_row{suffix}"]].rename(lambda c: f"{c}{suffix}"),
            chosen.select([c for c in chosen.columns if c not in joined]),
        ],
        how="horizontal",
    )


def events_where(ctx: CheckContext, predicate: pl.Expr, columns: list[str] | None = None) -> pl.DataFrame:
    """`ctx.events.filter(predicate)` (only `columns` of it, if given), through the lazy engine.

    Taking only the columns a check reads is what saves time: on 1.15 M events (one chunk per column),
    a filter keeping 18 k rows took 0.018 s with every column and 0.005 s with five. (While the events
    still came in the reader's 53 chunks, the lazy engine was also 2.5x faster than an eager filter;
    since `events.compact` the two are even.)
    """
    found = ctx.events.lazy().filter(predicate)
    # (the events' few-valued columns are Categorical: a check's rows hold strings, as the executions do)
    return (
        (found if columns is None else found.select(columns))
        .with_columns(cs.categorical().cast(pl.String))
        .collect()
    )


def completions(ctx: CheckContext) -> pl.DataFrame:
    """Completion attempts with their outcome and fencing token (the event's, else the execution's lease's)."""
    if "completions" not in ctx.derived:
        ctx.derived["completions"] = _completions(ctx)
    return ctx.derived["completions"]


def _completions(ctx: CheckContext) -> pl.DataFrame:
    ex = ctx.executions.select(
        "job_id", "execution_id", "timeline", pl.col("fencing_token").alias("lease_token")
    )
    return (
        events_where(ctx, pl.col("event") == "completion")
        .join(ex, on=["job_id", "execution_id"], how="left")
        .with_columns(
            pl.coalesce("fencing_token", "lease_token").alias("token"),
            pl.col("outcome").fill_null("unknown"),
        )
        .sort("seq")
    )


def evidence(*lines: tuple[pl.Expr, pl.Expr, pl.Expr | str | None]) -> pl.Expr:
    """A finding's evidence column: for each `(file, line, note)` whose file and line are known, a
    `{file, line, note}` record, in the order given (`DETECTED["evidence"]`)."""
    records = [
        pl.struct(
            file.cast(pl.String).alias("file"),
            line.cast(pl.Int64).alias("line"),
            (note if isinstance(note, pl.Expr) else pl.lit(note, dtype=pl.String)).alias("note"),
        )
        for file, line, note in lines
    ]
    known = pl.element().struct.field("file").is_not_null() & pl.element().struct.field("line").is_not_null()
    return pl.concat_list(records).list.eval(pl.element().filter(known))


def details(**fields: pl.Expr) -> pl.Expr:
    """A finding's details column: the fields as a JSON object, in the order given (nulls as null)."""
    return pl.struct([e.alias(name) for name, e in fields.items()]).struct.json_encode()


def skew_details(bound: pl.Expr, **fields: pl.Expr) -> pl.Expr:
    """`details(**fields)` plus a handover's skew bound, with no negative figure: `skewBoundMs` (how far
    the later pod's clock can be ahead) when the handover proves one (null: it proves nothing), else
    `skewBoundMs: null` and `clockDisagreementMs` (how far the earlier pod's clock must be ahead, if Redis
    behaved) when the later pod acquired "too early"."""
    proves = details(**fields, skewBoundMs=bound)
    contradicts = details(**fields, skewBoundMs=pl.lit(None, dtype=pl.Float64), clockDisagreementMs=-bound)
    return pl.when(bound.is_null() | (bound >= 0)).then(proves).otherwise(contradicts)


def one_or_two(a: str, b: str) -> pl.Expr:
    """`[a]` when the two columns hold the same value (nulls alike), else `[a, b]`: a finding's pods."""
    return pl.when(pl.col(a).eq_missing(pl.col(b))).then(pl.concat_list(a)).otherwise(pl.concat_list(a, b))


def timedelta_ms(delta: pl.Expr) -> pl.Expr:
    """A duration in milliseconds exactly as Python's `timedelta.total_seconds() * 1000` gives it.

    polars' own float division can differ from IEEE division in the last bit (`28751000 / 1e6 * 1000` is
    28750.999999999996 in polars 2.1, 28751.0 in Python): where a figure used to be computed in Python and
    reaches the output, numpy's true division keeps it the same.
    """
    return delta.dt.total_microseconds().map_batches(
        lambda s: pl.Series(s.name, s.cast(pl.Float64).to_numpy() / 1_000_000 * 1000).fill_nan(None),
        return_dtype=pl.Float64,
    )


def isoformat(e: pl.Expr) -> pl.Expr:
    """`datetime.isoformat()` of a UTC moment, as the JSON details of a finding carry one: seconds, then
    microseconds only when there are any, then `+00:00` (null stays null)."""
    return (
        pl.when(e.dt.microsecond() == 0)
        .then(e.dt.strftime("%Y-%m-%dT%H:%M:%S+00:00"))
        .otherwise(e.dt.strftime("%Y-%m-%dT%H:%M:%S%.6f+00:00"))
    )


def json_value(e: pl.Expr) -> pl.Expr:
    """`e`'s value as JSON text (a string quoted and escaped, a list as an array), as `details()` writes it."""
    return pl.struct(e.alias("v")).struct.json_encode().str.strip_prefix('{"v":').str.strip_suffix("}")


def json_object(**texts: pl.Expr) -> pl.Expr:
    """A JSON object from fields that are already JSON text (`json_value`, or an object built from data,
    whose keys `details()` cannot type), in the order given."""
    parts: list[pl.Expr] = []
    for i, (name, text) in enumerate(texts.items()):
        parts += [pl.lit(("{" if i == 0 else ",") + f'"{name}":'), text]
    return pl.concat_str([*parts, pl.lit("}")]) if parts else pl.lit("{}")


def evidence_record(file: pl.Expr, line: pl.Expr, note: pl.Expr | str | None) -> pl.Expr:
    """One `{file, line, note}` evidence record per row: aggregate them into a finding's list (per group),
    then keep the known ones with `known_evidence`."""
    return pl.struct(
        file.cast(pl.String).alias("file"),
        line.cast(pl.Int64).alias("line"),
        (note if isinstance(note, pl.Expr) else pl.lit(note, dtype=pl.String)).alias("note"),
    )


def known_evidence(records: pl.Expr) -> pl.Expr:
    """A list of evidence records without those whose file or line is unknown, in order."""
    field = pl.element().struct.field
    return records.list.eval(pl.element().filter(field("file").is_not_null() & field("line").is_not_null()))


def steps_of(ctx: CheckContext) -> pl.DataFrame:
    """The context's `clock_steps` frame (`leaselog.clocks.steps`), computed once per analysis."""
    return derived(ctx, "clock_steps", lambda: clock_steps(ctx.events, ctx.settings.clock_jitter_ms))
