"""Failovers of the lock's Redis, as its own logs tell them (a Sentinel's `+switch-master`, a replica's
`MASTER MODE enabled`, a Redis Cluster replica's `Failover election won`:
leaselog.reading.dialects.redis_server): facts of the whole fleet, no job's.

The pipeline's failovers stage (`split_failovers`) takes the `lock_failover` rows out of the events (they
belong to no job or execution) into a frame of their own (`FAILOVER_SCHEMA`), which reaches the checks with
the fleet's other facts (`leaselog.fleet.FleetContext.failovers`): `concurrent_leases` cites the one between
two leases.
"""

from __future__ import annotations

import polars as pl

from leaselog.vocabulary import LOCK_FAILOVER

__all__ = ["FAILOVER_SCHEMA", "REJECTED_SCHEMA", "empty_failovers", "split_failovers"]

FAILOVER_SCHEMA: dict[str, pl.DataType] = {
    "t": pl.Datetime("us", "UTC"),
    "pod": pl.String(),
    # the dialect's rule (`redis-server/switch-master`, `redis-server/master-mode`, ...)
    "rule": pl.String(),
    # the monitored master's name, the primary before and after (`ip:port`), where the line names them
    "master": pl.String(),
    "previous_primary": pl.String(),
    "primary": pl.String(),
    "message": pl.String(),
    "file": pl.String(),
    "line": pl.Int64(),
}


REJECTED_SCHEMA: dict[str, pl.DataType] = {"file": pl.String(), "line": pl.Int64(), "reason": pl.String()}


# (master name, previous primary, new primary) in each message that names them (`ip port` pairs), as the
# redis-server dialect reads them (leaselog.reading.dialects.redis_server cites the messages)
_SWITCH = r"^\+switch-master (\S+) (\S+) (\d+) (\S+) (\d+)$"
_PROMOTED = r"^\+promoted-slave slave \S+ (\S+) (\d+) @ (\S+) (\S+) (\d+)$"
_END = r"^\+failover-end master (\S+) (\S+) (\d+)$"


def failover_addresses(message: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """The master's name, the previous primary and the new one (`ip:port`) a failover line names (null
    where it names none: a replica's `MASTER MODE enabled` is about the server that logs it)."""

    def addr(pattern: str, ip: int, port: int) -> pl.Expr:
        return pl.concat_str(
            message.str.extract(pattern, ip), pl.lit(":"), message.str.extract(pattern, port)
        )

    master = pl.coalesce(
        message.str.extract(_SWITCH, 1), message.str.extract(_PROMOTED, 3), message.str.extract(_END, 1)
    )
    previous = pl.coalesce(addr(_SWITCH, 2, 3), addr(_PROMOTED, 4, 5), addr(_END, 2, 3))
    primary = pl.coalesce(addr(_SWITCH, 4, 5), addr(_PROMOTED, 1, 2))
    return master, previous, primary


def empty_failovers() -> pl.DataFrame:
    return pl.DataFrame(schema=FAILOVER_SCHEMA)


def split_failovers(
    df: pl.DataFrame, offsets_ms: dict[str, float] | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """`df` (the typed events: `t_wall` read, clock steps undone) without its `lock_failover` rows; those
    rows as FAILOVER_SCHEMA (in time order, a pod's clock offset taken off as for every event); and the
    ones without a readable time as rejected (`file`, `line`, `reason`)."""
    mine = pl.col("event") == LOCK_FAILOVER
    if not df.select(mine.any()).item():
        return (
            df,
            empty_failovers(),
            pl.DataFrame(schema={"file": pl.String, "line": pl.Int64, "reason": pl.String}),
        )
    rows = df.filter(mine)
    rest = df.filter(~mine)
    t = pl.col("t_wall")
    if offsets_ms:
        off = pl.col("pod").replace_strict(offsets_ms, default=0.0, return_dtype=pl.Float64)
        t = t - pl.duration(microseconds=(off * 1000).round(0).cast(pl.Int64))
    master, previous, primary = failover_addresses(pl.col("message"))
    facts = (
        rows.filter(pl.col("t_wall").is_not_null())
        .select(
            t.alias("t"),
            "pod",
            pl.col("raw_event").cast(pl.String).alias("rule"),
            master.alias("master"),
            previous.alias("previous_primary"),
            primary.alias("primary"),
            "message",
            "file",
            "line",
        )
        .select([pl.col(c).cast(d) for c, d in FAILOVER_SCHEMA.items()])
        .sort("t", "file", "line")
    )
    rejected = rows.filter(pl.col("t_wall").is_null()).select(
        "file",
        pl.col("line").cast(pl.Int64),
        pl.format(
            "lease event `{}`: without a parseable timestamp: `{}` is in no shape leaselog reads",
            pl.col("raw_event").cast(pl.String),
            pl.col("ts").str.slice(0, 60),
        ).alias("reason"),
    )
    return rest, facts, rejected
