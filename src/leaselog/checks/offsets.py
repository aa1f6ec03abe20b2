"""The clock offsets between pods that the ordering facts prove, and where a pod's offset changes.

Each ordering fact (`leaselog.checks.anchors`: a deleting release before the next acquisition, a denial
inside a holder's lease, a line naming the owner, fencing tokens, a redelivery after its idle time) with
`first` on one pod and `then` on another bounds the difference of their clocks: `then_pod`'s clock runs
behind `first_pod`'s by more than `-gap_ms` (a bound only where the clocks contradict the fact). The largest such contradiction of a job is
how far the one pod's clock is proven behind the other's (`clock_behind`): a moment of the first pod
compared with a later one of the second is too late by at least that much.

That holds while the two clocks keep their offset. Facts that bound it from both sides can show it
changed: one puts the second pod's clock at most u ahead, a later (or earlier) one at least l ahead, with
l beyond u by more than the clock-skew bound. Then one of the two clocks stepped between those two facts,
by at least l - u (`offset_steps`): a step no line of a pod without elapsedMs can show. No offset is
proven for such a pair of pods (`clock_behind` leaves it out): which side of the step a figure is on
decides it.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.anchors import facts
from leaselog.checks.causal import handoffs
from leaselog.checks.contract import CheckContext, derived
from leaselog.checks.phrasing import durations, text


def _ordering_facts(ctx: CheckContext) -> pl.DataFrame:
    """Every ordering fact between two pods of a job: the anchors' (`facts`), then each release that
    deleted the key before the next acquisition (`fact` "release")."""
    released = (
        handoffs(ctx)
        .filter("y_after")
        .select(
            "job_id",
            pl.col("pod").alias("first_pod"),
            pl.col("pod_y").alias("then_pod"),
            (-pl.col("contradiction_ms")).alias("gap_ms"),
            pl.lit("release").alias("fact"),
            pl.col("released_at").alias("first_at"),
            pl.col("acquired_at_y").alias("then_at"),
            pl.col("released_file").alias("first_file"),
            pl.col("released_line").alias("first_line"),
            pl.col("acquired_file_y").alias("then_file"),
            pl.col("acquired_line_y").alias("then_line"),
            pl.col("execution_id").alias("first_id"),
            pl.col("execution_id_y").alias("then_id"),
        )
    )
    f = facts(ctx).select(released.columns)
    return pl.concat([f, released.cast(f.schema)])


def _behind(ctx: CheckContext) -> pl.DataFrame:
    both = _ordering_facts(ctx).select(
        "job_id",
        "first_pod",
        "then_pod",
        "gap_ms",
        "fact",
        "first_file",
        "first_line",
        "then_file",
        "then_line",
    )
    # a pair whose offset changed has no one offset
    changed = offset_steps(ctx)
    if changed.height:
        both = both.join(
            pl.concat(
                [
                    changed.select("job_id", pl.col("a").alias("first_pod"), pl.col("b").alias("then_pod")),
                    changed.select("job_id", pl.col("b").alias("first_pod"), pl.col("a").alias("then_pod")),
                ]
            ),
            on=["job_id", "first_pod", "then_pod"],
            how="anti",
        )
    return (
        both.filter(
            pl.col("first_pod").is_not_null()
            & pl.col("then_pod").is_not_null()
            & (pl.col("first_pod") != pl.col("then_pod"))
            & (pl.col("gap_ms") < 0)
        )
        .sort("gap_ms")
        .group_by("job_id", "first_pod", "then_pod", maintain_order=True)
        .agg(
            (-pl.col("gap_ms").first()).alias("behind_ms"),
            *(
                pl.col(c).first().alias(f"behind_{c}")
                for c in ("fact", "first_file", "first_line", "then_file", "then_line")
            ),
        )
    )


BEHIND_COLUMNS = [
    "behind_ms",
    "behind_fact",
    "behind_first_file",
    "behind_first_line",
    "behind_then_file",
    "behind_then_line",
]


def clock_behind(ctx: CheckContext) -> pl.DataFrame:
    """(job_id, first_pod, then_pod, `BEHIND_COLUMNS`): `then_pod`'s clock runs at least `behind_ms` behind
    `first_pod`'s, by the largest contradiction of the job's ordering facts (deleting releases included);
    the kind of fact that shows it and its two lines."""
    return derived(ctx, "anchors:behind", lambda: _behind(ctx))


def behind_columns(ctx: CheckContext, rows: pl.DataFrame, pod: str, pod_b: str) -> pl.DataFrame:
    """`rows` plus `BEHIND_COLUMNS`: how far the facts prove `pod_b`'s clock runs behind `pod`'s (null:
    they prove nothing). A moment of `pod` compared with a later one of `pod_b` is too late by it."""
    b = clock_behind(ctx).rename({"first_pod": pod, "then_pod": pod_b})
    return rows.join(b, on=["job_id", pod, pod_b], how="left", maintain_order="left")


def behind_note(rows: pl.DataFrame, pod: str, pod_b: str, left_ms: str, doubt: str) -> pl.Series:
    """For rows of `behind_columns`: the sentence naming the proven offset and what is left of the figure
    (`left_ms`) once it is taken off, and (where `doubt`) that this is within the clock-skew bound ("" where
    no offset is proven)."""
    what = pl.col("behind_fact").replace_strict(FACT_TEXT, default="an ordering fact")
    return (
        rows.with_columns(durations(rows["behind_ms"]).alias("_b"), durations(rows[left_ms]).alias("_l"))
        .select(
            pl.when(pl.col("behind_ms").is_null())
            .then(pl.lit(""))
            .otherwise(
                pl.format(
                    " The logs prove {}'s clock runs at least {} behind {}'s ({}: {}:{} before {}:{}, whatever the "
                    "clocks say; see clock_contradiction): taken off, at most {} of this is left{}.",
                    text(pod_b),
                    "_b",
                    text(pod),
                    what,
                    text("behind_first_file"),
                    text("behind_first_line"),
                    text("behind_then_file"),
                    text("behind_then_line"),
                    "_l",
                    pl.when(pl.col(doubt))
                    .then(pl.lit(", within the clock-skew bound: it is not proven"))
                    .otherwise(pl.lit("")),
                )
            )
            .alias("behind_note")
        )
        .to_series()
    )


def with_behind(details_json: pl.Expr) -> pl.Expr:
    """A finding's details (a JSON object) plus `clockBehindMs` where `behind_ms` is known."""
    added = pl.concat_str(
        details_json.str.strip_suffix("}"),
        pl.when(details_json == "{}").then(pl.lit("")).otherwise(pl.lit(",")),
        pl.lit('"clockBehindMs":'),
        pl.col("behind_ms").cast(pl.String),
        pl.lit("}"),
    )
    return pl.when(pl.col("behind_ms").is_null()).then(details_json).otherwise(added)


FACT_TEXT = {
    "release": "a release that deleted the key came before the next acquisition",
    "held": "a worker turned away by the lock came after the holder's acquisition",
    "freed": "a worker turned away by the lock came before the holder's lease ended",
    "named": "a line naming the key's owner came after that owner's acquisition",
    "token": "fencing tokens order the acquisitions",
    "redelivered": "a message was claimed from its previous owner only once idle since that owner reset it",
}


def _pair_bounds(ctx: CheckContext) -> pl.DataFrame:
    """Every ordering fact between two pods of a job (deleting releases included) as a bound on the
    offset `d` of pod `b`'s clock against pod `a`'s (a < b by name): `upper` (d < upper) or `lower`
    (d > lower), in the order of the facts' moments (`at`), with the lines of both pods."""
    both = _ordering_facts(ctx).filter(
        pl.col("first_pod").is_not_null()
        & pl.col("then_pod").is_not_null()
        & (pl.col("first_pod") != pl.col("then_pod"))
    )
    forward = pl.col("first_pod") < pl.col("then_pod")
    return both.select(
        "job_id",
        pl.when(forward).then(pl.col("first_pod")).otherwise(pl.col("then_pod")).alias("a"),
        pl.when(forward).then(pl.col("then_pod")).otherwise(pl.col("first_pod")).alias("b"),
        pl.when(forward).then(pl.col("gap_ms")).alias("upper"),
        pl.when(~forward).then(-pl.col("gap_ms")).alias("lower"),
        pl.min_horizontal("first_at", "then_at").alias("at"),
        *(
            pl.when(forward).then(pl.col(f"{x}_{c}")).otherwise(pl.col(f"{y}_{c}")).alias(f"a_{c}")
            for c in ("file", "line", "id", "at")
            for x, y in [("first", "then")]
        ),
        *(
            pl.when(forward).then(pl.col(f"{y}_{c}")).otherwise(pl.col(f"{x}_{c}")).alias(f"b_{c}")
            for c in ("file", "line", "id", "at")
            for x, y in [("first", "then")]
        ),
    ).sort("job_id", "a", "b", "at")


def _offset_steps(ctx: CheckContext) -> pl.DataFrame:
    bounds = _pair_bounds(ctx).with_row_index("_i")
    if not bounds.height:
        return pl.DataFrame()
    pair = ["job_id", "a", "b"]
    skew = ctx.settings.max_skew_ms
    run = bounds.with_columns(
        pl.col("upper").cum_min().forward_fill().over(pair).alias("_umin"),
        pl.col("lower").cum_max().forward_fill().over(pair).alias("_lmax"),
    ).with_columns(
        # the fact that set the running extreme so far
        pl.when(pl.col("upper") == pl.col("_umin")).then(pl.col("_i")).forward_fill().over(pair).alias("_ui"),
        pl.when(pl.col("lower") == pl.col("_lmax")).then(pl.col("_i")).forward_fill().over(pair).alias("_li"),
        pl.col("_umin").shift(1).over(pair).alias("_umin_before"),
        pl.col("_lmax").shift(1).over(pair).alias("_lmax_before"),
    )
    # a fact that bounds the offset beyond what an earlier one allowed, by more than the skew bound
    up = (pl.col("lower") - pl.col("_umin_before") > skew).fill_null(False)
    down = (pl.col("_lmax_before") - pl.col("upper") > skew).fill_null(False)
    run = run.with_columns(
        pl.col("_ui").shift(1).over(pair).alias("_ui_before"),
        pl.col("_li").shift(1).over(pair).alias("_li_before"),
    )
    hit = (
        run.filter(up | down)
        .with_columns(
            up.alias("_up"),
            pl.when(up)
            .then(pl.col("lower") - pl.col("_umin_before"))
            .otherwise(pl.col("_lmax_before") - pl.col("upper"))
            .alias("size_ms"),
            pl.when(up).then(pl.col("_ui_before")).otherwise(pl.col("_li_before")).alias("_prev_i"),
        )
        .unique(pair, keep="first", maintain_order=True)
    )
    prev = bounds.select(
        pl.col("_i").alias("_prev_i"),
        *(pl.col(c).alias(f"prev_{c}") for c in bounds.columns if c.startswith(("a_", "b_"))),
    )
    return hit.join(prev, on="_prev_i", how="left")


def offset_steps(ctx: CheckContext) -> pl.DataFrame:
    """Per job and pair of pods (`a`, `b`) whose offset the ordering facts show changing: the first fact
    that shows it (`a_*`/`b_*`: each pod's line, id and moment in it), the earlier fact it contradicts
    (`prev_a_*`/`prev_b_*`), `size_ms` (the least the offset changed by) and `_up` (b's clock went ahead
    against a's: b stepped forward or a back)."""
    return derived(ctx, "offsets:steps", lambda: _offset_steps(ctx))


def step_rows(ctx: CheckContext) -> pl.DataFrame:
    """`offset_steps` as clock steps of one pod (`leaselog.clocks.steps.STEP_COLUMNS`, plus
    `other_pod`, `size_ms` and the two facts' lines): the pod of the pair whose log has no elapsedMs in
    the job (a pod with it shows its own steps); with none on either, both are named (`other_pod` is
    the second). The step lies between the pod's lines in the two facts, which are in one file."""
    ch = offset_steps(ctx)
    if not ch.height:
        return pl.DataFrame()
    timed = (
        ctx.events.lazy()
        .filter(pl.col("elapsed_ms").is_not_null() & pl.col("pod").is_not_null())
        .select("job_id", "pod")
        .unique()
        .collect()
        .with_columns(pl.lit(True).alias("_timed"))
    )
    ch = (
        ch.join(timed.rename({"pod": "a", "_timed": "_a_timed"}), on=["job_id", "a"], how="left")
        .join(timed.rename({"pod": "b", "_timed": "_b_timed"}), on=["job_id", "b"], how="left")
        .with_columns(pl.col("_a_timed").fill_null(False), pl.col("_b_timed").fill_null(False))
        .filter(~(pl.col("_a_timed") & pl.col("_b_timed")))
    )
    # b's offset against a went up: b stepped forward, or a back
    on_b = ~pl.col("_b_timed")
    side = [("b", pl.col("_up")), ("a", ~pl.col("_up"))]
    rows = []
    for who, forward in side:
        other = "a" if who == "b" else "b"
        pick = ch.filter(on_b if who == "b" else pl.col("_b_timed"))
        rows.append(
            pick.select(
                "job_id",
                pl.col(who).alias("pod"),
                pl.when(pl.col(f"_{other}_timed"))
                .then(pl.lit(None, dtype=pl.String))
                .otherwise(pl.col(other))
                .alias("other_pod"),
                pl.col(f"{who}_file").alias("file"),
                pl.col(f"{who}_line").alias("line"),
                pl.col(f"prev_{who}_line").alias("prev_line"),
                pl.col(f"{who}_id").alias("execution_id"),
                pl.col(f"prev_{who}_id").alias("prev_execution_id"),
                pl.col(f"{who}_at").alias("at"),
                pl.col(f"prev_{who}_at").alias("prev_at"),
                pl.when(forward).then(pl.col("size_ms")).otherwise(-pl.col("size_ms")).alias("step_ms"),
                pl.col("size_ms"),
                pl.col(f"prev_{who}_file").alias("prev_file"),
            )
        )
    out = pl.concat(rows).filter(pl.col("file") == pl.col("prev_file")).drop("prev_file")
    # the step lies between the two lines, whichever comes first in the file
    swap = pl.col("line") < pl.col("prev_line")
    out = out.with_columns(
        *(
            pl.when(swap).then(pl.col(f"prev_{c}")).otherwise(pl.col(c)).alias(c)
            for c in ("line", "execution_id", "at")
        ),
        *(
            pl.when(swap).then(pl.col(c)).otherwise(pl.col(f"prev_{c}")).alias(f"prev_{c}")
            for c in ("line", "execution_id", "at")
        ),
    )
    return out.with_columns(
        pl.lit(False).alias("exact"),
        pl.lit(False).alias("undone"),
        pl.lit(None, dtype=pl.Float64).alias("back_ms"),
        pl.lit(None, dtype=pl.Float64).alias("elapsed_ms"),
        pl.lit(None, dtype=pl.Float64).alias("prev_elapsed_ms"),
        pl.lit(None, dtype=pl.Datetime("us", "UTC")).alias("restart_at"),
        pl.lit(0.0).alias("within_ms"),
    )
