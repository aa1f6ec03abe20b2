"""Which events make one execution: its job, its id and its pod.

An execution is identified by its pod and id: ids are often counted per pod (`1` on every pod), and `1`
and `1.0` are the same number. A stage of `leaselog.pipeline` once the values are typed, so the
reconstruction and the checks see one execution per pod.
"""

from __future__ import annotations

import polars as pl

from leaselog.execution_runs import ID, ID_POD, POD
from leaselog.values import ENDS, STARTS, ends_before_start, line_position

MAX_NOTES = 5  # notes of one kind listed one by one; the rest are counted


def execution_gate(df: pl.DataFrame, kept: pl.Expr) -> tuple[bool, bool]:
    """(some execution id appears on two pods, some execution's end may be timed before its start): one
    group-by on a hash of the execution key, so the row-level work of either runs only when needed
    (a million events: a quarter second instead of seconds). A hash collision can only cause that work."""
    event = pl.col("event")
    start, end = event.is_in(STARTS) & kept, event.is_in(ENDS) & kept
    pod = pl.when(pl.col("pod").is_not_null()).then(pl.col("pod").hash())
    no_clock = pl.col("t_wall").is_null() & pl.col("elapsed_ms").is_null()
    got = (
        df.lazy()
        .select(
            pl.struct("job_id", "execution_id").hash().alias("k"),
            pod.alias("p"),
            pl.when(start).then(pl.col("t_wall")).alias("st"),
            pl.when(end).then(pl.col("t_wall")).alias("et"),
            pl.when(start).then(pl.col("elapsed_ms")).alias("se"),
            pl.when(end).then(pl.col("elapsed_ms")).alias("ee"),
            pl.when(start & no_clock).then(line_position()).alias("sp"),
            pl.when(end & no_clock).then(line_position()).alias("ep"),
        )
        .group_by("k")
        .agg(
            (pl.col("p").min() != pl.col("p").max()).alias("shared"),
            (
                (pl.col("et").min() < pl.col("st").min())
                | (pl.col("ee").min() < pl.col("se").min())
                | (pl.col("ep").min() < pl.col("sp").min())
            ).alias("early"),
        )
        .select(pl.col("shared").any(), pl.col("early").any())
        .collect()
        .row(0)
    )
    return bool(got[0]), bool(got[1])


def execution_keys(df: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """An execution is identified by its pod and id: an id logged on two pods (ids counted per pod, `1`
    vs `1.0`) is two executions, each id then suffixed `@pod`."""
    pods = pl.col("pod").drop_nulls().n_unique()
    shared = (
        df.lazy()
        .group_by("job_id", "execution_id")
        .agg(pods.alias("n"), pl.col("pod").drop_nulls().unique().sort().alias("pods"))
        .filter(pl.col("n") > 1)
        .sort("job_id", "execution_id")
        .collect()
    )
    if not shared.height:
        return df, []
    notes = [
        f"job {job}: execution id {ex} appears on pods {', '.join(p)}: read as one execution per pod "
        f"({ex}@POD), as an execution is identified by its pod and id"
        for job, ex, _, p in shared.head(MAX_NOTES).iter_rows()
    ]
    if shared.height > MAX_NOTES:
        notes.append(f"{shared.height - MAX_NOTES} more execution ids appear on more than one pod (the same)")
    hit = shared.select("job_id", "execution_id", pl.lit(True).alias("_shared"))
    df = (
        df.join(hit, on=["job_id", "execution_id"], how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("_shared") & pl.col("pod").is_not_null())
            .then(pl.format("{}@{}", pl.col("execution_id"), pl.col("pod")))
            .otherwise(pl.col("execution_id"))
            .alias("execution_id"),
            pl.when(pl.col("_shared") & pl.col("pod").is_not_null() & (pl.col("identity") == ID))
            .then(pl.lit(ID_POD, pl.Int8))
            .otherwise(pl.col("identity"))
            .alias("identity"),
        )
        .drop("_shared")
    )
    return df, notes


def execution_identity(df: pl.DataFrame, timezone: str) -> tuple[pl.DataFrame, list[str]]:
    """Stage: each line's execution key, and how it was identified (`identity`); an id logged on two pods
    is one execution per pod (with a note). A line without an execution id is held as its job and pod's
    until the runs are cut out of them (leaselog.execution_runs, once every event of the job is at hand).
    An execution whose end is timed before its start has its lines' `_why` say so."""
    notes: list[str] = []
    if df["execution_id"].null_count():  # (formatting a million ids only to keep none of them costs)
        df = df.with_columns(
            pl.when(pl.col("execution_id").is_null())
            .then(pl.lit(POD, pl.Int8))
            .otherwise(pl.lit(ID, pl.Int8))
            .alias("identity"),
            pl.col("execution_id").fill_null(pl.format("{}@{}", pl.col("job_id"), pl.col("pod"))),
        )
    else:
        df = df.with_columns(pl.lit(ID, pl.Int8).alias("identity"))
    shared, early = execution_gate(df, kept=pl.col("_why") == "")
    if shared:
        df, notes = execution_keys(df)
    if early or shared:
        back = ends_before_start(timezone, kept=pl.col("_why") == "")
        df = df.with_columns(
            pl.when(pl.col("_why") == "").then(back.fill_null("")).otherwise(pl.col("_why")).alias("_why")
        )
        # (a rejected line is no start to end before: the check sees only the kept ones)
    return df, notes
