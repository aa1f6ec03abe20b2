"""Causal order over clocks: facts in the logs that order two executions whatever their pods' clocks say.

A release that deleted the key (`released=true`) while its own lease still held by its own clock (before
the lease's logged expiry) proves the key held that execution's value from its acquisition until that
release: Redis handed the key to no one else in between. (After its own lease's expiry the key may have
expired and been taken: such a release orders nothing.) So another execution's acquisition of the same key logged between the two came, in truth,
after the release (or before the acquisition); the clocks that put it inside are wrong by at least the
difference. Fencing tokens that increase decide which of the two it was (the later token acquired
later); without tokens, the order that needs the smaller clock error is taken (where the other execution's own
release deleted the key inside its lease too, its order before the first needs that release before the
first's acquisition).

What follows from such a handoff (`handoffs`):
- the two leases were never valid at once (no `concurrent_leases` from the clock order);
- when the later execution acquired after the release and the earlier one ended before its own release
  (its own clock), the executions did not overlap either (no `overlapping_executions`); the same when the
  execution logged second came first in truth (fencing tokens, or the smaller clock error), its own release
  deleted the key inside its lease and it had ended before that release;
- the contradiction itself is stated: by the step that explains it (`clock_step`), or on its own
  (`clock_contradiction`) when it is beyond the clock-skew bound.

Figures of findings about an execution whose own log shows a clock step (`clock_steps`) may be off by up
to the step: `step_columns` says so and bounds them.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext, derived
from leaselog.checks.frames import steps_of
from leaselog.checks.phrasing import durations, moments, text
from leaselog.checks.resolution import with_resolution_ms
from leaselog.clocks.steps import execution_steps

_KEYS = ["job_id", "execution_id"]


def _handoffs(ex: pl.DataFrame) -> pl.DataFrame:
    cols = [
        "execution_id",
        "pod",
        "acquired_at",
        "released_at",
        "release_deleted",
        "expires_at",
        "end",
        "fencing_token",
        "acquired_file",
        "acquired_line",
        "released_file",
        "released_line",
    ]
    # a release is an anchor only while its own lease still held by its own clock: then the key was its
    # own at the release (no one can SET NX a key that exists), whether the delete checked the owner or
    # deleted by name (ShedLock's unlock). A deleting release after its own lease's logged expiry orders
    # nothing: the key may have expired and been taken, and a delete by name then deletes the next
    # holder's key (lease_outlived states the contradiction of an owner-checked one)
    held = (
        pl.col("release_deleted").fill_null(False)
        & pl.col("released_at").is_not_null()
        & (pl.col("expires_at").is_null() | (pl.col("released_at") <= pl.col("expires_at")))
    )
    wall = (
        ex.filter((pl.col("clock") == "wall") & pl.col("acquired_at").is_not_null())
        .select("job_id", *cols)
        .with_columns(held.alias("held"))
    )
    x = wall.filter("held")
    y = wall.rename({c: f"{c}_y" for c in [*cols, "held"]})
    pairs = x.join(y, on="job_id", how="inner").filter(
        (pl.col("execution_id") != pl.col("execution_id_y"))
        & (pl.col("acquired_at_y") >= pl.col("acquired_at"))
        & (pl.col("acquired_at_y") < pl.col("released_at"))
    )
    c = (pl.col("released_at") - pl.col("acquired_at_y")).dt.total_microseconds() / 1000
    # y before x: y's key was gone before x acquired. Where y's own release deleted the key inside its
    # own lease, y held it unbroken until that release, so that release (not y's acquisition) had to
    # come before x's acquisition: the clock error that order needs runs to it
    y_until = pl.when(pl.col("held_y")).then(pl.col("released_at_y")).otherwise(pl.col("acquired_at_y"))
    alt = (y_until - pl.col("acquired_at")).dt.total_microseconds() / 1000
    # (where both orders need the same error, as for a lease logged inside the other, the logs cannot
    # tell, and y is placed by its acquisition alone, as for a y whose release proves nothing)
    alt_acq = (pl.col("acquired_at_y") - pl.col("acquired_at")).dt.total_microseconds() / 1000
    tokens = pl.col("fencing_token").is_not_null() & pl.col("fencing_token_y").is_not_null()
    differ = tokens & (pl.col("fencing_token") != pl.col("fencing_token_y"))
    return (
        pairs.with_columns(c.alias("contradiction_ms"), alt.alias("_alt_ms"), alt_acq.alias("_alt_acq_ms"))
        .with_columns(
            pl.when(differ)
            .then(pl.col("fencing_token_y") > pl.col("fencing_token"))
            .when(pl.col("contradiction_ms") != pl.col("_alt_ms"))
            .then(pl.col("contradiction_ms") < pl.col("_alt_ms"))
            .otherwise(pl.col("contradiction_ms") <= pl.col("_alt_acq_ms"))
            .alias("y_after"),
            differ.alias("by_tokens"),
        )
        .with_columns(
            # the clock error the order taken needs (y before x: to y's deleting release, else to its
            # acquisition)
            pl.when(pl.col("y_after"))
            .then(pl.col("contradiction_ms"))
            .otherwise(pl.col("_alt_ms"))
            .alias("contradiction_ms"),
            # y after x: x had ended before its release, and y acquired after it; y before x: y's own
            # deleting release inside its lease came before x's acquisition, and y had ended before it
            pl.when(pl.col("y_after"))
            .then(pl.col("end") <= pl.col("released_at"))
            .otherwise(pl.col("held_y") & (pl.col("end_y") <= pl.col("released_at_y")))
            .fill_null(False)
            .alias("no_overlap"),
        )
        .drop("_alt_ms", "_alt_acq_ms", "held", "held_y")
        .sort("job_id", "acquired_at_y")
    )


def handoffs(ctx: CheckContext) -> pl.DataFrame:
    """Pairs of one job's executions, x (whose release deleted the key) and y (another execution whose
    acquisition is logged after x's acquisition and before that release): columns of both (`*_y` for y),
    `contradiction_ms` (how far y's acquisition is logged before x's release), `y_after` (y acquired after
    the release in truth: by fencing tokens where they differ, else the order needing the smaller clock
    error), `by_tokens`, `no_overlap` (the executions did not overlap either). Wall-clock logs only."""
    return derived(ctx, "causal:handoffs", lambda: _handoffs(ctx.executions))


def refuted_leases(ctx: CheckContext) -> pl.DataFrame:
    """(job_id, execution_id, execution_id_b, y_after): pairs whose leases a deleting release proves
    disjoint, and whether b acquired after a's release (else before a's acquisition)."""
    return (
        handoffs(ctx)
        .select("job_id", "execution_id", pl.col("execution_id_y").alias("execution_id_b"), "y_after")
        .unique(["job_id", "execution_id", "execution_id_b"], keep="first", maintain_order=True)
    )


def refuted_overlaps(ctx: CheckContext) -> pl.DataFrame:
    """(job_id, execution_id, execution_id_b), both orders: pairs whose executions a handoff proves
    disjoint (the later one acquired after the release, the earlier one had ended before it)."""
    h = handoffs(ctx).filter("no_overlap")
    a = h.select("job_id", "execution_id", pl.col("execution_id_y").alias("execution_id_b"))
    b = h.select(
        "job_id",
        pl.col("execution_id_y").alias("execution_id"),
        pl.col("execution_id").alias("execution_id_b"),
    )
    return pl.concat([a, b]).unique()


def contradiction_text(rows: pl.DataFrame) -> pl.Series:
    """The sentence stating a handoff's contradiction, for rows of `handoffs`."""
    rows = rows.with_columns(
        durations(rows["contradiction_ms"]).alias("_c"),
        moments(rows.with_columns(pl.lit("wall").alias("_w")), "acquired_at_y", "_w").alias("_ya"),
        moments(rows.with_columns(pl.lit("wall").alias("_w")), "released_at", "_w").alias("_xr"),
    )
    tokens = (
        pl.when(pl.col("by_tokens"))
        .then(
            pl.format(
                " (and the fencing tokens, {} then {}, agree)",
                pl.when(pl.col("y_after")).then(text("fencing_token")).otherwise(text("fencing_token_y")),
                pl.when(pl.col("y_after")).then(text("fencing_token_y")).otherwise(text("fencing_token")),
            )
        )
        .otherwise(pl.lit(""))
    )
    apart = (
        pl.when(pl.col("no_overlap") & pl.col("y_after"))
        .then(
            pl.format(
                ", and {} had ended before its release: the executions did not overlap", text("execution_id")
            )
        )
        .when(pl.col("no_overlap"))
        .then(
            pl.format(
                ", and {} had ended before its own release: the executions did not overlap",
                text("execution_id_y"),
            )
        )
        .otherwise(pl.lit(""))
    )
    return rows.select(
        pl.when(pl.col("y_after"))
        .then(
            pl.format(
                "The clocks put {}'s acquisition of {} ({}, {}) {} before the release by {} ({}, {}) that "
                "deleted the key, but Redis hands a key out only once it is free: the release came first{}, so "
                "at least one clock or one line is wrong. No two leases were valid at once{}.",
                text("execution_id_y"),
                text("job_id"),
                text("pod_y"),
                "_ya",
                "_c",
                text("execution_id"),
                text("pod"),
                "_xr",
                tokens,
                apart,
            )
        )
        .otherwise(
            pl.format(
                "The clocks put {}'s acquisition of {} ({}, {}) inside {}'s lease ({}), which its release at {} "
                "deleting the key proves unbroken, but Redis hands a key out only once it is free: {}'s lease "
                "came before {}'s acquisition{}, so at least one clock or one line is wrong, by {} or more. No "
                "two leases were valid at once{}.",
                text("execution_id_y"),
                text("job_id"),
                text("pod_y"),
                "_ya",
                text("execution_id"),
                text("pod"),
                "_xr",
                text("execution_id_y"),
                text("execution_id"),
                tokens,
                "_c",
                apart,
            )
        )
        .alias("contradiction_text")
    ).to_series()


def _explained(ctx: CheckContext) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per step: the first handoff contradiction it explains; the handoffs no step explains)."""
    h = handoffs(ctx).filter(pl.col("contradiction_ms") > 0).with_row_index("_h")
    steps = steps_of(ctx)
    # a step explains a contradiction when it is in the log of one of the two executions
    at = (
        pl.concat(
            [
                steps.select("job_id", "execution_id", "file", "line"),
                steps.select("job_id", pl.col("prev_execution_id").alias("execution_id"), "file", "line"),
            ]
        )
        .drop_nulls("execution_id")
        .unique()
    )
    hx = h.select("_h", "job_id", "execution_id")
    hy = h.select("_h", "job_id", pl.col("execution_id_y").alias("execution_id"))
    hit = pl.concat([hx, hy]).join(at, on=_KEYS, how="inner").sort("_h", "file", "line")
    h = h.with_columns(contradiction_text(h))
    per_step = (
        hit.unique(["job_id", "file", "line"], keep="first", maintain_order=True)
        .join(h.select("_h", "contradiction_text", pl.col("execution_id_y").alias("contradicts")), on="_h")
        .select("job_id", "file", "line", "contradicts", "contradiction_text")
    )
    alone = h.join(hit.select("_h").unique(), on="_h", how="anti").drop("_h")
    return per_step, alone


def explained_by_steps(ctx: CheckContext) -> pl.DataFrame:
    """Per step (job_id, file, line) that explains a handoff's contradiction: `contradicts` (the later
    execution) and `contradiction_text`."""
    return derived(ctx, "causal:per_step", lambda: _explained(ctx)[0])


def unexplained(ctx: CheckContext) -> pl.DataFrame:
    """The handoffs (with `contradiction_text`) whose contradiction no clock step in either execution's
    log explains, beyond the clock-skew bound."""
    # (the skew bound with the two executions' time resolution added)
    alone = derived(ctx, "causal:alone", lambda: _explained(ctx)[1])
    return (
        with_resolution_ms(ctx, alone, ("execution_id", "execution_id_y"))
        .filter(
            pl.col("contradiction_ms") > ctx.settings.max_skew_ms + pl.col("resolution_ms").fill_null(0.0)
        )
        .drop("resolution_ms")
    )


def step_columns(ctx: CheckContext, rows: pl.DataFrame, ids: tuple[str, ...]) -> pl.DataFrame:
    """`rows` (with `job_id` and the execution id columns `ids`) plus the largest clock step in those
    executions' logs: `step_abs_ms` (null: none; `step_open_ms`: the largest not undone), `step_pod`,
    `step_file`, `step_line` (the first one)."""
    per = execution_steps(steps_of(ctx))
    out = rows.with_columns(
        pl.lit(None, dtype=pl.Float64).alias("step_abs_ms"),
        pl.lit(None, dtype=pl.Float64).alias("step_open_ms"),
        pl.lit(None, dtype=pl.String).alias("step_pod"),
        pl.lit(None, dtype=pl.String).alias("step_file"),
        pl.lit(None, dtype=pl.Int64).alias("step_line"),
    )
    if not per.height or not rows.height:
        return out
    for col in ids:
        got = out.join(
            per.rename({"execution_id": col}).rename(
                {
                    "step_abs_ms": "_s",
                    "step_pod": "_p",
                    "step_file": "_f",
                    "step_line": "_l",
                    "step_open_ms": "step_open_ms_r",
                }
            ),
            on=["job_id", col],
            how="left",
            maintain_order="left",
        ).drop("first_step_ms")
        got = got.with_columns(
            pl.max_horizontal("step_open_ms", "step_open_ms_r").alias("step_open_ms")
        ).drop("step_open_ms_r")
        bigger = pl.col("_s").is_not_null() & (
            pl.col("step_abs_ms").is_null() | (pl.col("_s") > pl.col("step_abs_ms"))
        )
        out = got.with_columns(
            pl.when(bigger).then(pl.col("_s")).otherwise(pl.col("step_abs_ms")).alias("step_abs_ms"),
            pl.when(bigger).then(pl.col("_p")).otherwise(pl.col("step_pod")).alias("step_pod"),
            pl.when(bigger).then(pl.col("_f")).otherwise(pl.col("step_file")).alias("step_file"),
            pl.when(bigger).then(pl.col("_l")).otherwise(pl.col("step_line")).alias("step_line"),
        ).drop("_s", "_p", "_f", "_l")
    return out


def step_note(rows: pl.DataFrame) -> pl.Series:
    """For rows of `step_columns`: the sentence naming the step a figure spans ("" where none)."""
    size = durations(rows["step_abs_ms"])
    return (
        rows.with_columns(size.alias("_size"))
        .select(
            pl.when(pl.col("step_abs_ms").is_null())
            .then(pl.lit(""))
            .otherwise(
                pl.format(
                    " {}'s clock stepped by {} at {}:{} (see clock_step){}: this figure may be off by up to {}.",
                    text("step_pod"),
                    "_size",
                    text("step_file"),
                    text("step_line"),
                    pl.when(pl.col("step_open_ms").is_null())
                    .then(
                        pl.lit(
                            "; its lines after it are read with the step undone, but against another pod's clock"
                        )
                    )
                    .otherwise(pl.lit("")),
                    "_size",
                )
            )
            .alias("step_note")
        )
        .to_series()
    )


def with_step(details_json: pl.Expr) -> pl.Expr:
    """A finding's details (a JSON object) plus `clockStepMs` where `step_abs_ms` is known."""
    step = pl.col("step_abs_ms")
    added = pl.concat_str(
        details_json.str.strip_suffix("}"),
        pl.when(details_json == "{}").then(pl.lit("")).otherwise(pl.lit(",")),
        pl.lit('"clockStepMs":'),
        step.cast(pl.String),
        pl.lit("}"),
    )
    return pl.when(step.is_null()).then(details_json).otherwise(added)


def step_certainty(figure: pl.Expr, max_skew_ms: float) -> pl.Expr:
    """`certainty` once a figure may be off by a step in its executions' logs that elapsedMs did not size
    (and so was not undone): uncertain when what is left of it after the step is within the clock-skew
    bound (the logs then cannot prove it). A step undone keeps the certainty: the figure names it."""
    doubtful = (
        pl.col("step_open_ms").is_not_null() & (figure - pl.col("step_open_ms") <= max_skew_ms)
    ).fill_null(False)
    return pl.when(doubtful).then(pl.lit("uncertain")).otherwise(pl.col("certainty"))
