"""How long each execution took to stop once asked to (or once it lost ownership): stop_delayed (LL204)
reads the slow ones, the lease statistics of LL701 every confirmed one."""

from __future__ import annotations

import polars as pl

from leaselog.facts import Frames, fact
from leaselog.timebase import ms_expr

__all__ = ["stop_delays"]


@fact
def stop_delays(frames: Frames) -> pl.DataFrame:
    """Every execution with a stop request or explicit ownership loss, with the delay until it ended.

    `confirmed` says whether a job_stopped/job_finished after the request ends the delay; otherwise the
    delay runs to the last work line seen after the request (a lower bound).
    """
    x = frames.executions.with_columns(
        pl.coalesce("stop_requested_at", "ownership_lost_at").alias("stop_from"),
        pl.when(pl.col("stop_requested_at").is_not_null())
        .then(pl.col("stop_requested_line"))
        .otherwise(pl.col("ownership_lost_line"))
        .alias("stop_from_line"),
        pl.when(pl.col("stop_requested_at").is_not_null())
        .then(pl.col("stop_requested_file"))
        .otherwise(pl.col("ownership_lost_file"))
        .alias("stop_from_file"),
        pl.when(pl.col("stop_requested_at").is_not_null())
        .then(pl.lit("stop request"))
        .otherwise(pl.lit("ownership loss"))
        .alias("stop_from_kind"),
    ).filter(pl.col("stop_from").is_not_null())
    confirmed = pl.col("ended_at").is_not_null() & (pl.col("ended_at") >= pl.col("stop_from"))
    return x.with_columns(
        confirmed.alias("confirmed"),
        pl.when(confirmed).then(pl.col("ended_at")).otherwise(pl.col("last_work_at")).alias("stop_to"),
        pl.when(confirmed)
        .then(pl.col("ended_line"))
        .otherwise(pl.col("last_work_line"))
        .alias("stop_to_line"),
        pl.when(confirmed)
        .then(pl.col("ended_file"))
        .otherwise(pl.col("last_work_file"))
        .alias("stop_to_file"),
    ).with_columns(ms_expr("stop_from", "stop_to").alias("stop_delay_ms"))
