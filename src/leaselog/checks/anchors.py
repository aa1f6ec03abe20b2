"""Facts that order two pods' events whatever their clocks say, and the clock offsets they prove.

Besides a release that deleted the key (`leaselog.checks.causal`), the logs hold these orderings:
- **a denial**: a worker turned away by the lock at t (`lock_denied`) proves someone held the key at t.
  The holder is the lease the clocks put around t (a denial naming the holder's owner, as client-go's
  "lock is held by X" does, is a `named` fact below instead). When no
  lease's span holds t by the clocks, the nearest one is taken (the order needing the smaller clock
  error): then the holder's acquisition came before the denial (`held`), or the denial before the
  holder's lease ended (`freed`: its deleting release, else its expiry). Only a denial between two
  logged acquisitions counts (or before an acquisition with fencing token 1: no one held the key before
  the counter's first token), and only where fencing tokens, when both leases have one, show no lease
  between them: a holder whose logs are not in the input (logs that start or end mid-way, a pod left
  out) would explain it as well. A denial naming an owner that no acquisition has, where they name
  theirs, is such a holder: it orders nothing;
- **a line naming the holder**: a renewal rejected, or ownership lost, on a line naming an owner another
  execution acquired the key with (on another pod): that acquisition came first (`named`);
- **fencing tokens** that increase: the acquisition with the next larger token of a job came after the
  one before it (`token`), unless a token of the job was handed out twice (a failover took the counter
  back: tokens order nothing there);
- **a stream redelivery** (`leaselog.checks.redeliveries`): a message claimed from its previous consumer
  once it had been idle `idleMs` came at least that long after that consumer last reset it
  (`redelivered`): its `gap_ms` is `then_at - first_at - idleMs`.

Each fact is a pair `first` (on one pod) before `then` (on another): `gap_ms` is `then_at - first_at` by
the clocks, negative where they contradict the fact. `then_pod`'s clock then runs at least `-gap_ms`
behind `first_pod`'s (`leaselog.checks.offsets`): a figure that compares a moment of `first_pod` before
one of `then_pod` is too large by at least that much. `contradicted` gives the facts the clocks
contradict beyond the clock-skew bound (`clock_contradiction` states them).
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext, derived
from leaselog.checks.frames import steps_of
from leaselog.checks.phrasing import durations, text
from leaselog.checks.redeliveries import redelivered
from leaselog.checks.resolution import with_resolution_ms

FACT_COLUMNS: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "fact": pl.String(),
    "first_id": pl.String(),
    "first_pod": pl.String(),
    "first_at": pl.Datetime("us", "UTC"),
    "first_file": pl.String(),
    "first_line": pl.Int64(),
    "first_what": pl.String(),
    "then_id": pl.String(),
    "then_pod": pl.String(),
    "then_at": pl.Datetime("us", "UTC"),
    "then_file": pl.String(),
    "then_line": pl.Int64(),
    "then_what": pl.String(),
    "gap_ms": pl.Float64(),
}


def _ms(delta: pl.Expr) -> pl.Expr:
    return delta.dt.total_microseconds() / 1000


def _side(
    side: str, execution_id: str, pod: str, at: str, file: str, line: str, what: pl.Expr | None = None
) -> list[pl.Expr]:
    """One side of a fact (`first` or `then`): the columns of the line it stands on, named `<side>_*`."""
    cols = [
        pl.col(execution_id).alias(f"{side}_id"),
        pl.col(pod).alias(f"{side}_pod"),
        pl.col(at).alias(f"{side}_at"),
        pl.col(file).alias(f"{side}_file"),
        pl.col(line).alias(f"{side}_line"),
    ]
    return cols if what is None else [*cols, what.alias(f"{side}_what")]


def _leases(ex: pl.DataFrame, acq_owner: pl.DataFrame) -> pl.DataFrame:
    """Wall-clock leases of each job, in acquisition order, with the latest end of any lease acquired so far
    (`until_max`: null while one of them has no known end)."""
    deleting = pl.col("release_deleted").fill_null(False) & pl.col("released_at").is_not_null()
    return (
        ex.lazy()
        .filter(
            (pl.col("clock") == "wall") & pl.col("acquired_at").is_not_null() & pl.col("pod").is_not_null()
        )
        .select(
            "job_id",
            "execution_id",
            "pod",
            "acquired_at",
            "acquired_file",
            "acquired_line",
            "fencing_token",
            "valid_until",
            # where the lease's end is logged: its deleting release, else (an expiry) its acquisition
            pl.when(deleting)
            .then(pl.col("released_file"))
            .otherwise(pl.col("acquired_file"))
            .alias("end_file"),
            pl.when(deleting)
            .then(pl.col("released_line"))
            .otherwise(pl.col("acquired_line"))
            .alias("end_line"),
            pl.when(deleting)
            .then(pl.lit("releases the key, deleting it"))
            .otherwise(
                pl.lit(
                    "loses its lease (its expiry by its own clock, from this acquisition and its renewals)"
                )
            )
            .alias("end_what"),
        )
        .collect()
        .join(acq_owner, on=["job_id", "execution_id"], how="left")
        .sort("job_id", "acquired_at")
    )


def _acquisition_owners(ctx: CheckContext) -> pl.DataFrame:
    ev = ctx.events.lazy().filter((pl.col("event") == "lock_acquired") & pl.col("owner").is_not_null())
    return ev.group_by("job_id", "execution_id").agg(pl.col("owner").first().alias("owner")).collect()


def _denials(ctx: CheckContext, leases: pl.DataFrame) -> pl.DataFrame:
    """`held` and `freed` facts of the denials whose holder the owner they name, or the clocks, show."""
    d = (
        ctx.events.lazy()
        .filter(
            (pl.col("event") == "lock_denied")
            & (pl.col("clock") == "wall")
            & pl.col("pod").is_not_null()
            & pl.col("t").is_not_null()
        )
        .select(
            "job_id",
            pl.col("execution_id").alias("d_id"),
            pl.col("pod").alias("d_pod"),
            pl.col("t").alias("d_at"),
            pl.col("file").alias("d_file"),
            pl.col("line").alias("d_line"),
            pl.col("owner").alias("d_owner"),
        )
        .sort("job_id", "d_at")
        .collect()
    )
    if not d.height or not leases.height:
        return pl.DataFrame(schema=FACT_COLUMNS)
    # a denial naming its holder's owner (on another pod) is a `named` fact: no holder to guess
    owners = leases.filter(pl.col("owner").is_not_null()).select(
        "job_id", pl.col("owner").alias("d_owner"), pl.col("pod").alias("_holder_pod")
    )
    named = d.join(owners, on=["job_id", "d_owner"], how="inner").filter(
        pl.col("_holder_pod") != pl.col("d_pod")
    )
    d = d.join(
        named.select("job_id", "d_file", "d_line").unique(), on=["job_id", "d_file", "d_line"], how="anti"
    )
    # a denial naming an owner that no acquisition of the job has, where its acquisitions name theirs: the
    # holder's lines are not in the input (a lock taken elsewhere, a key left over), no holder to guess
    known = owners.select("job_id", "d_owner", pl.lit(True).alias("_known")).unique()
    d = (
        d.join(known, on=["job_id", "d_owner"], how="left")
        .join(
            owners.select("job_id").unique().with_columns(pl.lit(True).alias("_owned")),
            on="job_id",
            how="left",
        )
        .filter(pl.col("d_owner").is_null() | pl.col("_known").is_not_null() | pl.col("_owned").is_null())
        .drop("_known", "_owned")
    )
    lz = leases.with_columns(
        # a lease with no known end (unknown TTL) holds every moment after its acquisition
        pl.col("valid_until").fill_null(pl.datetime(9999, 1, 1, time_zone="UTC")).alias("_until")
    ).with_columns(pl.col("_until").cum_max().over("job_id").alias("_until_max"))
    keep = [
        "execution_id",
        "pod",
        "acquired_at",
        "acquired_file",
        "acquired_line",
        "fencing_token",
        "_until",
        "_until_max",
        "end_file",
        "end_line",
        "end_what",
    ]
    prev = lz.select("job_id", *keep).rename({c: f"p_{c}" for c in keep})
    nxt = lz.select("job_id", *keep[:6]).rename({c: f"n_{c}" for c in keep[:6]})
    x = d.join_asof(
        prev,
        left_on="d_at",
        right_on="p_acquired_at",
        by="job_id",
        strategy="backward",
        check_sortedness=False,
    ).join_asof(
        nxt,
        left_on="d_at",
        right_on="n_acquired_at",
        by="job_id",
        strategy="forward",
        check_sortedness=False,
        allow_exact_matches=False,
    )
    # the next acquisition at all shows the logs go on; the denied attempt's own (it waited and got the key)
    # is no holder of the key it was denied
    x = x.with_columns(
        pl.col("n_acquired_at").alias("_any_at"),
        pl.col("n_fencing_token").alias("_any_token"),
    ).with_columns(
        pl.when(pl.col("n_execution_id").ne_missing(pl.col("d_id"))).then(pl.col(f"n_{c}")).alias(f"n_{c}")
        for c in keep[:6]
    )
    # the holders around a denial are all logged: it lies between two logged acquisitions (or before the
    # first token a counter hands out), with no lease missing between them by their fencing tokens
    consecutive = (
        pl.col("p_fencing_token").is_null()
        | pl.col("_any_token").is_null()
        | (pl.col("_any_token") - pl.col("p_fencing_token") <= 1)
    )
    complete = (pl.col("p_execution_id").is_not_null() & pl.col("_any_at").is_not_null() & consecutive) | (
        pl.col("p_execution_id").is_null() & (pl.col("n_fencing_token") == 1)
    )
    # held by some lease the clocks put around the denial: no contradiction
    contained = (pl.col("p__until_max") >= pl.col("d_at")).fill_null(False)
    c_prev = _ms(pl.col("d_at") - pl.col("p__until"))
    c_next = _ms(pl.col("n_acquired_at") - pl.col("d_at"))
    gaps = x.filter(~contained & complete).with_columns(
        (c_next.is_not_null() & (c_prev.is_null() | (c_next < c_prev))).alias("_next")
    )
    held = gaps.filter("_next").select(
        "job_id",
        pl.lit("held").alias("fact"),
        *_side(
            "first",
            "n_execution_id",
            "n_pod",
            "n_acquired_at",
            "n_acquired_file",
            "n_acquired_line",
            pl.lit("acquires the key"),
        ),
        *_side("then", "d_id", "d_pod", "d_at", "d_file", "d_line", pl.lit("is turned away by the lock")),
    )
    # (the lease acquired last before the denial is the one that ended last: else the clocks overlap them)
    freed = gaps.filter(~pl.col("_next") & (pl.col("p__until") == pl.col("p__until_max"))).select(
        "job_id",
        pl.lit("freed").alias("fact"),
        *_side("first", "d_id", "d_pod", "d_at", "d_file", "d_line", pl.lit("is turned away by the lock")),
        *_side(
            "then", "p_execution_id", "p_pod", "p__until", "p_end_file", "p_end_line", pl.col("p_end_what")
        ),
    )
    return pl.concat([held, freed])


def _named(ctx: CheckContext, leases: pl.DataFrame) -> pl.DataFrame:
    """`named` facts: a denial, a rejected renewal or an ownership loss naming another pod's acquisition owner."""
    lines = (
        ctx.events.lazy()
        .filter(
            pl.col("owner").is_not_null()
            & (pl.col("clock") == "wall")
            & pl.col("pod").is_not_null()
            & (
                (pl.col("event") == "lock_denied")
                | (pl.col("event") == "ownership_lost")
                | ((pl.col("event") == "lease_renewal") & (pl.col("renewal_outcome") == "rejected"))
            )
        )
        .select(
            "job_id",
            *_side("then", "execution_id", "pod", "t", "file", "line"),
            pl.when(pl.col("event") == "lock_denied")
            .then(pl.lit("is turned away by the lock, which names that owner"))
            .otherwise(pl.lit("learns the key has another owner, which the line names"))
            .alias("then_what"),
            "owner",
        )
        .collect()
    )
    if not lines.height:
        return pl.DataFrame(schema=FACT_COLUMNS)
    owners = leases.filter(pl.col("owner").is_not_null()).select(
        "job_id",
        "owner",
        *_side("first", "execution_id", "pod", "acquired_at", "acquired_file", "acquired_line"),
    )
    return (
        lines.join(owners, on=["job_id", "owner"], how="inner")
        .filter(pl.col("first_pod") != pl.col("then_pod"))
        .select(
            "job_id",
            pl.lit("named").alias("fact"),
            "first_id",
            "first_pod",
            "first_at",
            "first_file",
            "first_line",
            pl.lit("acquires the key").alias("first_what"),
            "then_id",
            "then_pod",
            "then_at",
            "then_file",
            "then_line",
            "then_what",
        )
    )


def _tokens(leases: pl.DataFrame) -> pl.DataFrame:
    """`token` facts: each acquisition before the next larger fencing token's, in a job whose tokens are unique."""
    t = leases.filter(pl.col("fencing_token").is_not_null())
    twice = t.group_by("job_id", "fencing_token").len().filter(pl.col("len") > 1).select("job_id").unique()
    t = t.join(twice, on="job_id", how="anti").sort("job_id", "fencing_token")
    same = pl.col("job_id") == pl.col("job_id").shift(1)
    return (
        t.with_columns(
            *(
                pl.when(same).then(pl.col(c).shift(1)).alias(f"_p_{c}")
                for c in (
                    "execution_id",
                    "pod",
                    "acquired_at",
                    "acquired_file",
                    "acquired_line",
                    "fencing_token",
                )
            )
        )
        .filter(pl.col("_p_execution_id").is_not_null())
        .select(
            "job_id",
            pl.lit("token").alias("fact"),
            *_side(
                "first", "_p_execution_id", "_p_pod", "_p_acquired_at", "_p_acquired_file", "_p_acquired_line"
            ),
            pl.concat_str(
                pl.lit("acquires the key with fencing token "), pl.col("_p_fencing_token").cast(pl.String)
            ).alias("first_what"),
            *_side("then", "execution_id", "pod", "acquired_at", "acquired_file", "acquired_line"),
            pl.concat_str(
                pl.lit("acquires it with the next token, "), pl.col("fencing_token").cast(pl.String)
            ).alias("then_what"),
        )
    )


def _facts(ctx: CheckContext) -> pl.DataFrame:
    leases = _leases(ctx.executions, _acquisition_owners(ctx))
    if not leases.height:
        return pl.DataFrame(schema=FACT_COLUMNS)
    parts = [_denials(ctx, leases), _named(ctx, leases), _tokens(leases), redelivered(ctx)]
    columns = {**FACT_COLUMNS, "least_ms": pl.Float64()}
    return (
        pl.concat(
            [
                pl.DataFrame(schema=columns),
                *(p.cast(pl.Schema({c: columns[c] for c in p.columns})) for p in parts if p.width),
            ],
            how="diagonal",
        )
        # the least time the fact puts between its two moments (a redelivery's idle time; else none)
        .with_columns(
            (_ms(pl.col("then_at") - pl.col("first_at")) - pl.col("least_ms").fill_null(0)).alias("gap_ms")
        )
        .select(list(FACT_COLUMNS))
        .sort("job_id", "first_at", "then_at")
    )


def facts(ctx: CheckContext) -> pl.DataFrame:
    """Every ordering fact of the logs but the deleting releases (`FACT_COLUMNS`)."""
    return derived(ctx, "anchors:facts", lambda: _facts(ctx))


def contradicted(ctx: CheckContext) -> pl.DataFrame:
    """The facts whose clocks contradict them beyond the clock-skew bound, across two pods, that no clock
    step in either execution's log explains: the largest per job, kind of fact and pair of pods, with
    `contradiction_ms`, `facts_contradicted` (how many of that kind the pair's clocks contradict) and
    `contradiction_text`."""
    # (the skew bound with the two executions' time resolution added: whole-second times may each lie up
    # to a second after what is written)
    f = (
        with_resolution_ms(ctx, facts(ctx), ("first_id", "then_id"))
        .filter(
            (pl.col("first_pod") != pl.col("then_pod"))
            & (-pl.col("gap_ms") > ctx.settings.max_skew_ms + pl.col("resolution_ms").fill_null(0.0))
        )
        .drop("resolution_ms")
    )
    if not f.height:
        return f.with_columns(
            pl.lit(None, dtype=pl.Float64).alias("contradiction_ms"),
            pl.lit(None, dtype=pl.UInt32).alias("facts_contradicted"),
            pl.lit(None, dtype=pl.String).alias("contradiction_text"),
        )
    steps = steps_of(ctx)
    stepped = (
        pl.concat(
            [
                steps.select("job_id", "execution_id"),
                steps.select("job_id", pl.col("prev_execution_id").alias("execution_id")),
            ]
        )
        .drop_nulls()
        .unique()
    )
    f = (
        f.join(stepped.rename({"execution_id": "first_id"}), on=["job_id", "first_id"], how="anti")
        .join(stepped.rename({"execution_id": "then_id"}), on=["job_id", "then_id"], how="anti")
        .with_columns((-pl.col("gap_ms")).alias("contradiction_ms"))
        .sort("gap_ms")
    )
    keys = ["job_id", "fact", "first_pod", "then_pod"]
    f = (
        f.with_columns(pl.len().over(keys).cast(pl.UInt32).alias("facts_contradicted"))
        .unique(keys, keep="first", maintain_order=True)
        .sort("job_id", "first_at")
    )
    return f.with_columns(_contradiction_text(f))


def _contradiction_text(f: pl.DataFrame) -> pl.Series:
    rows = f.with_columns(
        durations(f["contradiction_ms"]).alias("_c"),
        pl.col("fact").replace_strict(_WHY, default="").alias("_why"),
    )
    # how far apart the clocks put the two moments (the contradiction itself, but for a fact that puts time
    # between them: a redelivery)
    apart = _ms(pl.col("then_at") - pl.col("first_at"))
    rows = rows.with_columns(durations(rows.select(apart.abs()).to_series()).alias("_apart"))
    more = pl.col("facts_contradicted") - 1
    return rows.select(
        pl.format(
            "The clocks put the moment {} ({}) {} ({}:{}) {} the moment {} ({}) {} ({}:{}), but {}: at least one "
            "clock is off by {} or more, or a line's time is wrong{}.",
            text("then_id"),
            text("then_pod"),
            text("then_what"),
            text("then_file"),
            text("then_line"),
            pl.when(apart < 0)
            .then(pl.format("{} before", "_apart"))
            .otherwise(pl.format("only {} after", "_apart")),
            text("first_id"),
            text("first_pod"),
            text("first_what"),
            text("first_file"),
            text("first_line"),
            "_why",
            "_c",
            pl.when(more > 0)
            .then(pl.format(" ({} more such lines of these two pods disagree as well, by less)", more))
            .otherwise(pl.lit("")),
        ).alias("contradiction_text")
    ).to_series()


_WHY = {
    "held": "a worker is turned away only while someone holds the key: the holder's acquisition came first",
    "freed": "a worker is turned away only while someone holds the key: the holder's lease ended after it",
    "named": "the line names the owner the key held then: that owner's acquisition came first",
    "token": "fencing tokens grow with each acquisition: the smaller token's acquisition came first",
    "redelivered": "a message is claimed from its consumer only once idle that long: the claim came at least "
    "that much after the reset",
}


def _gone(ctx: CheckContext) -> pl.DataFrame:
    ev = (
        ctx.events.lazy()
        .filter(
            (pl.col("clock") == "wall")
            & (
                ((pl.col("event") == "lease_renewal") & (pl.col("renewal_outcome") == "rejected"))
                | (
                    (pl.col("event") == "lock_released")
                    & (pl.col("released") == False)  # noqa: E712 (a null: not logged)
                    & ~pl.col("release_outcome").is_in(["timeout", "error"]).fill_null(False)
                )
            )
        )
        .select("job_id", "execution_id", "t", "file", "line", "event")
        .sort("t")
        .group_by("job_id", "execution_id", maintain_order=True)
        .first()
        .collect()
    )
    return ev.select(
        "job_id",
        "execution_id",
        pl.col("t").alias("gone_at"),
        pl.col("file").alias("gone_file"),
        pl.col("line").alias("gone_line"),
        pl.when(pl.col("event") == "lease_renewal")
        .then(pl.lit("its renewal was rejected"))
        .otherwise(pl.lit("its release deleted nothing"))
        .alias("gone_what"),
    )


def gone(ctx: CheckContext) -> pl.DataFrame:
    """(job_id, execution_id, gone_at, gone_file, gone_line, gone_what): the first line where an execution's
    lock found the key no longer its own (a renewal rejected, a release that deleted nothing): the key was
    gone by then, expired (a renewal whose call took long extended the lease from somewhere inside the
    call, not from its logged time, so its logged expiry is late by up to that latency) or lost (a
    failover): which, the logged expiry and the latency tell."""
    return derived(ctx, "anchors:gone", lambda: _gone(ctx))
