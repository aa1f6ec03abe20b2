"""The executions that outlived their lease (lease_outlived, LL102; the lease statistics of LL701 count
them too)."""

from __future__ import annotations

import polars as pl

from leaselog.facts import Frames, fact
from leaselog.reconstruct import elapsed_bounds
from leaselog.unlogged_renewals import UNLOGGED

__all__ = ["zombies"]


@fact
def zombies(frames: Frames) -> pl.DataFrame:
    """Executions whose last moment alive lies after their lease's expiry (not after a release). A lease
    whose renewals went unlogged expired by the next holder's acquisition at the latest (`expires_at`):
    the zombie measured from there is a lower bound."""
    executions, events = frames.executions, frames.events
    return (
        executions.filter(
            pl.col("expires_at").is_not_null() & pl.col("lease_end").is_in(["expired", UNLOGGED])
        )
        # (elapsed_bounds reads only the events without a wall clock: picked out by the lazy engine, which
        # scans the event frame several times faster than an eager filter)
        .join(
            elapsed_bounds(events.lazy().filter(pl.col("clock") != "wall").collect()),
            on=["job_id", "execution_id"],
            how="left",
        )
        .with_columns(
            # without a wall clock, measure on the pod's own elapsedMs: end - acquire - lease length
            pl.when(
                (pl.col("clock") != "wall")
                & pl.col("end_elapsed_ms").is_not_null()
                & pl.col("acquired_elapsed_ms").is_not_null()
            )
            .then(
                pl.col("end_elapsed_ms")
                - pl.col("acquired_elapsed_ms")
                - (pl.col("expires_at") - pl.col("acquired_at")).dt.total_microseconds() / 1000
            )
            .otherwise((pl.col("end") - pl.col("expires_at")).dt.total_microseconds() / 1000)
            .alias("zombie_ms")
        )
        .filter(pl.col("zombie_ms") > 0)
        .sort("job_id", "expires_at")
    )
