"""What a lock library leaves unlogged about its leases, and what bounds it anyway.

- **Unlogged renewals.** client-go's leader election logs a successful renewal only at `-v=5`, and
  Redisson's watchdog logs only its failures. Below that, a lease read from such a library's lines was
  renewed, or not, unseen: it lasted at least its length past the last renewal seen (or the acquisition),
  and at most until another holder acquired the key, which the lock grants only once the lease has lapsed
  or been released. An execution's lease is *unlogged* when a dialect with unlogged renewals
  (`Dialect.silent_renewals`) read one of its lines and no successful renewal of its job is logged on its
  pod; its expiry is then that upper bound (`expires_at`), or unknown when nobody acquired the key after
  it, and its `lease_end` is `renewals_unlogged`. A zombie measured against it is a lower bound.
- **Holders that act until they lose.** A leader (`Dialect.holds_until_lost`) acts until it logs the loss
  of its lease or exits; its other lines (the controller's work) are not lease events. A run of such a
  dialect that its lines never end is the holder's, as far as the job's logs go: its end is the job's last
  logged moment on the wall clock.

Both are no-ops, and cheap, when no such dialect read a line.
"""

from __future__ import annotations

import polars as pl

from leaselog.reading.dialects import HOLDS_UNTIL_LOST, SILENT_RENEWALS, labelled

__all__ = ["UNLOGGED", "bound_expiry", "library_leases", "run_to_job_end"]

EXEC_KEYS = ["job_id", "execution_id"]
UNLOGGED = "renewals_unlogged"  # the `lease_end` of a lease whose renewals went unlogged


def _read_by(ev: pl.DataFrame, prefixes: tuple[str, ...]) -> pl.Expr:
    if not prefixes:
        return pl.lit(False)
    return labelled(ev, lambda raw: pl.any_horizontal(*(raw.str.starts_with(p) for p in prefixes)))


def library_leases(ev: pl.DataFrame) -> pl.DataFrame | None:
    """Per execution a dialect of either kind read: `unlogged` (its lease's renewals went unlogged) and
    `holds` (a holder that acts until it loses). None when no such dialect read a line."""
    prefixes = SILENT_RENEWALS + HOLDS_UNTIL_LOST
    if not prefixes or "raw_event" not in ev.columns:
        return None
    lib = ev.lazy().filter(_read_by(ev, prefixes)).select(*EXEC_KEYS, "pod").unique().collect()
    if not lib.height:
        return None
    flags = (
        ev.lazy()
        .join(lib.lazy().select(EXEC_KEYS), on=EXEC_KEYS, how="semi")
        .group_by(EXEC_KEYS)
        .agg(
            _read_by(ev, SILENT_RENEWALS).any().alias("_silent"),
            _read_by(ev, HOLDS_UNTIL_LOST).any().alias("holds"),
            pl.col("pod").first(),
        )
    )
    # a successful renewal of the job logged on the pod: its renewals are logged (-v=5, or the app's own)
    renewed = (
        ev.lazy()
        .filter((pl.col("event") == "lease_renewal") & (pl.col("renewal_outcome") == "success"))
        .select("job_id", "pod", pl.lit(True).alias("_renewed"))
        .unique()
    )
    return (
        flags.join(renewed, on=["job_id", "pod"], how="left", nulls_equal=True)
        .select(*EXEC_KEYS, (pl.col("_silent") & pl.col("_renewed").is_null()).alias("unlogged"), "holds")
        .collect()
    )


def run_to_job_end(ex: pl.DataFrame, ev: pl.DataFrame, flags: pl.DataFrame | None) -> pl.DataFrame:
    """`ex` with the `end` of each open run of a holder that acts until it loses moved to its job's last
    logged moment (wall clock only), or to the next other acquisition of the job if that comes first: once
    another holder has the key, nothing says this one still acts (a crashed leader logs nothing more)."""
    if flags is None or not flags["holds"].any():
        return ex
    last = (
        ev.lazy()
        .filter(pl.col("clock") == "wall")
        .group_by("job_id")
        .agg(pl.col("t").max().alias("_job_end"))
    )
    holds = flags.lazy().filter("holds").select(*EXEC_KEYS, pl.lit(True).alias("_holds"))
    following = next_acquisition(ex.select("job_id", "acquired_at"))
    extended = (
        ex.lazy()
        .select(*EXEC_KEYS, "end", "end_kind", "clock")
        .with_columns(following)
        .join(holds, on=EXEC_KEYS, how="left", nulls_equal=True, maintain_order="left")
        .join(last, on="job_id", how="left", nulls_equal=True, maintain_order="left")
        .select(
            pl.when(
                pl.col("_holds").fill_null(False)
                & (pl.col("end_kind") == "open")
                & (pl.col("clock") == "wall")
            )
            .then(pl.max_horizontal("end", pl.min_horizontal("_job_end", "_next_at")))
            .otherwise(pl.col("end"))
            .alias("end")
        )
        .collect()
    )
    return ex.with_columns(extended["end"])


def next_acquisition(acquisitions: pl.DataFrame) -> pl.Series:
    """For each row (`job_id`, `acquired_at`), the first other acquisition of the job after it (null: none),
    in the rows' order, as `_next_at`."""
    order = acquisitions.with_row_index("_i").sort("job_id", "acquired_at", "_i", nulls_last=True)
    return order.select("_i", pl.col("acquired_at").shift(-1).over("job_id").alias("_next_at")).sort("_i")[
        "_next_at"
    ]


def bound_expiry(leases: pl.DataFrame, flags: pl.DataFrame | None) -> pl.DataFrame:
    """`leases` (with `expires_at` = last confirmed + TTL) gaining `unlogged`: true where the lease's
    renewals went unlogged and its expiry is bounded by the next holder's acquisition instead (then
    `expires_at` is that acquisition, or null when nobody acquired the key after it)."""
    if flags is None or not flags["unlogged"].any():
        return leases.with_columns(pl.lit(False).alias("unlogged"))
    # the first other acquisition of the key after each lease's own
    following = next_acquisition(leases.select("job_id", "acquired_at"))
    lower = pl.col("expires_at")
    with_next = leases.with_columns(following.alias("_next_at")).join(
        flags.select(*EXEC_KEYS, pl.col("unlogged").alias("_silent")),
        on=EXEC_KEYS,
        how="left",
        nulls_equal=True,
        maintain_order="left",
    )
    bounded = (
        pl.col("_silent").fill_null(False)
        & pl.col("ttl_ms").is_not_null()
        & (pl.col("_next_at").is_null() | (pl.col("_next_at") > lower))
    )
    return with_next.with_columns(
        pl.when(bounded).then(pl.col("_next_at")).otherwise(lower).alias("expires_at"),
        bounded.alias("unlogged"),
    ).drop("_next_at", "_silent")
