"""Facts about the whole input that per-job checks need, computed apart so no check depends on a split.

A per-job check must give the same rows for a job whatever other jobs are analysed with it: the engine
may run the checks on any split of whole jobs (one process, or the partitions of a Spark job). The few
facts that belong to the input as a whole are computed in a pre-pass over all events, merged exactly,
and handed to every partition (`CheckContext.fleet`):

- `log_ends`: the last moment logged per clock kind and file. Where the logs end tells a crashed
  execution that was never taken over (the logs go on past its lease expiry) from one the log window
  simply cut off (crash_takeover, LL601). Parts merge by taking the latest moment per (clock, file).
- `failovers`: the lock's Redis failing over, as its own logs say (`leaselog.failovers`): no job's, so
  read apart from the events, and handed to every part whole. `concurrent_leases` (LL103) cites the one
  between two leases. Parts merge by concatenation, in time order.

Renewal spacing needs no fleet fact: renewal_gap (LL202) holds each execution to its own schedule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

import polars as pl

from leaselog.failovers import FAILOVER_SCHEMA, empty_failovers

LOG_ENDS_SCHEMA: dict[str, pl.DataType] = {
    "clock": pl.String(),
    "file": pl.String(),
    "t": pl.Datetime("us", "UTC"),
}


def log_ends(events: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """The last moment per (clock, file) of these events (the lazy engine: one pass over two columns)."""
    return (
        events.lazy()
        .group_by("clock", "file")
        .agg(pl.col("t").max())
        .select([pl.col(c).cast(dt) for c, dt in LOG_ENDS_SCHEMA.items()])
        .sort("clock", "file")
        .collect()
    )


@dataclass(frozen=True)
class FleetContext:
    """The whole input's facts a per-job check reads (see the module doc)."""

    log_ends: pl.DataFrame  # LOG_ENDS_SCHEMA
    failovers: pl.DataFrame = field(default_factory=empty_failovers)  # FAILOVER_SCHEMA

    @classmethod
    def of(cls, events: pl.DataFrame | pl.LazyFrame, failovers: pl.DataFrame | None = None) -> FleetContext:
        """The facts of these events (all of them: a single-machine run, or one input file of many) and of
        the failovers read with them."""
        return cls(log_ends(events), empty_failovers() if failovers is None else failovers)

    @classmethod
    def merge(cls, parts: Iterable[FleetContext]) -> FleetContext:
        """The facts of the union of the parts' events, exactly."""
        parts = list(parts)
        frames = [p.log_ends for p in parts]
        if not frames:
            return cls(pl.DataFrame(schema=LOG_ENDS_SCHEMA))
        failovers = [p.failovers for p in parts if p.failovers.height]
        merged = (
            pl.concat(failovers).sort("t", "file", "line", maintain_order=True)
            if failovers
            else pl.DataFrame(schema=FAILOVER_SCHEMA)
        )
        return cls(log_ends(pl.concat(frames)), merged)

    def timeline_ends(self) -> pl.DataFrame:
        """(timeline, log_end): where each timeline's logs end. The wall clock is one timeline shared by
        every file; a file without wall-clock times is a timeline of its own."""
        return (
            self.log_ends.lazy()
            .group_by(
                pl.when(pl.col("clock") == "wall")
                .then(pl.lit("wall"))
                .otherwise(pl.col("file"))
                .alias("timeline")
            )
            .agg(pl.col("t").max().alias("log_end"))
            .collect()
        )


@dataclass(frozen=True)
class Totals:
    """The whole input's counts the JSON document states, kept when its frames are not all in one place
    (a cluster run keeps events and executions on the workers): events, wall-clock events and their
    range, jobs, executions. Parts (inputs, partitions of whole jobs) merge by sums, min and max."""

    events: int = 0
    wall_events: int = 0
    wall_start: datetime | None = None
    wall_end: datetime | None = None
    jobs: int = 0
    executions: int = 0

    @classmethod
    def of_events(cls, events: pl.DataFrame) -> Totals:
        """The event counts and wall-clock range of these events (jobs and executions left at 0)."""
        lo, hi, n_wall = (
            events.lazy()
            .filter(pl.col("clock") == "wall")
            .select(pl.col("t").min(), pl.col("t").max().alias("hi"), pl.len())
            .collect()
            .row(0)
        )
        return cls(events.height, int(n_wall), lo, hi)

    @classmethod
    def merge(cls, parts: Iterable[Totals]) -> Totals:
        parts = list(parts)
        starts = [p.wall_start for p in parts if p.wall_start is not None]
        ends = [p.wall_end for p in parts if p.wall_end is not None]
        return cls(
            sum(p.events for p in parts),
            sum(p.wall_events for p in parts),
            min(starts) if starts else None,
            max(ends) if ends else None,
            sum(p.jobs for p in parts),
            sum(p.executions for p in parts),
        )

    def with_jobs(self, jobs: int, executions: int) -> Totals:
        """These totals with the jobs and executions counted (whole jobs per partition: counts add up)."""
        return replace(self, jobs=jobs, executions=executions)
