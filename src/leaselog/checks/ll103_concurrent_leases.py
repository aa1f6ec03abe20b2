"""Two leases for one key were valid at the same moment: the lock itself failed.

Anti-pattern: Redis granted a second worker the key while the first worker's lease (acquire or last
confirmed renewal + TTL) was still valid. With one healthy Redis and an owner-checked lock this cannot
happen; it takes a failover that lost the key (asynchronous replication), clocks that disagree more
than the logs assume, or a bug in the lock. It is the sharp opposite of the article's incident, where
the leases belonged to different periods and only the *executions* overlapped (overlapping_executions).

Best practice: know the lock's failover behaviour and topology (a replica promoted without the key hands
it out again), protect writes with fencing tokens the destination enforces, and keep pod clocks
synchronised so the logs can tell a lock failure from clock skew.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.certainty import certainty_for
from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import ev, ms_expr, pairs_of
from leaselog.checks.phrasing import when
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL103"
KIND = "concurrent_leases"
SEVERITY = "error"

_COLS = [
    "execution_id",
    "pod",
    "clock",
    "acquired_at",
    "valid_until",
    "expires_at",
    "last_confirmed_at",
    "ttl_ms",
    "acquired_file",
    "acquired_line",
    "fencing_token",
    "first_seq",
]


def pairs(executions: pl.DataFrame, leases: pl.DataFrame) -> pl.DataFrame:
    """Pairs (a acquired first, b later) of one job's leases where b was acquired before a's lease ended."""
    lz = leases.select(
        "job_id", "execution_id", "last_confirmed_file", "last_confirmed_line", "confirm_latency_ms"
    )
    x = executions.filter(pl.col("acquired_at").is_not_null() & pl.col("valid_until").is_not_null()).select(
        "job_id", "timeline", *_COLS
    )

    def choose(p: pl.DataFrame) -> pl.DataFrame:
        p = p.filter(
            (pl.col("acquired_at") < pl.col("acquired_at_b"))
            | (
                (pl.col("acquired_at") == pl.col("acquired_at_b"))
                & (pl.col("first_seq") < pl.col("first_seq_b"))
            )
        )
        p = p.filter(pl.col("acquired_at_b") < pl.col("valid_until")).with_columns(
            ms_expr("acquired_at_b", pl.min_horizontal("valid_until", "valid_until_b")).alias("size_ms"),
            pl.min_horizontal("valid_until", "valid_until_b").alias("both_until"),
        )
        return p.filter(pl.col("size_ms") > 0).sort("job_id", "acquired_at_b")

    # a's lease's last confirmation (an execution has at most one lease), looked up for the pairs only
    return pairs_of(
        x, ["job_id", "timeline"], ["acquired_at", "first_seq", "valid_until"], choose, "_b"
    ).join(lz, on=["job_id", "execution_id"], how="left", maintain_order="left")


def check(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for r in pairs(ctx.executions, ctx.leases).iter_rows(named=True):
        a, b = r["execution_id"], r["execution_id_b"]
        ck_a, ck_b = r["clock"], r["clock_b"]
        size = r["size_ms"]
        lat = r["confirm_latency_ms"] or 0.0
        # Redis started A's TTL somewhere inside the confirming call: the logged expiry is late by up to
        # that latency, so only the part beyond skew + latency is proven.
        certainty, caveat = certainty_for(size - lat, [r["pod"], r["pod_b"]], [ck_a, ck_b], ctx.settings)
        confirmed = (
            f"acquired at {when(r['acquired_at'], ck_a)}"
            if r["last_confirmed_at"] == r["acquired_at"]
            else f"last renewed at {when(r['last_confirmed_at'], ck_a)}"
        )
        message = (
            f"{b} ({r['pod_b']}) acquired {r['job_id']} at {when(r['acquired_at_b'], ck_b)} while {a}'s lease "
            f"({r['pod']}, {confirmed} with a {format_duration(r['ttl_ms'])} TTL) was valid until "
            f"{when(r['valid_until'], ck_a)}: two valid leases for one key for {format_duration(size)}. "
            "Redis should never allow that: it takes a failover that lost the key, clocks that disagree, or "
            "a bug in the lock. Unlike overlapping executions with disjoint leases, here the lock itself failed."
        )
        if (
            certainty == "uncertain"
            and r["pod"] != r["pod_b"]
            and ck_a == "wall"
            and ck_b == "wall"
            and size - lat > 0
        ):
            message += (
                f" If Redis behaved, {r['pod']}'s clock runs at least {format_duration(size - lat)} ahead of "
                f"{r['pod_b']}'s."
            )
        message += caveat
        evidence = [
            *ev(r["acquired_file"], r["acquired_line"], f"{a} acquires"),
            *(
                ev(r["last_confirmed_file"], r["last_confirmed_line"], f"{a}'s lease last confirmed")
                if (r["last_confirmed_file"], r["last_confirmed_line"])
                != (r["acquired_file"], r["acquired_line"])
                else []
            ),
            *ev(r["acquired_file_b"], r["acquired_line_b"], f"{b} acquires while {a}'s lease is valid"),
        ]
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                # what the logs cannot prove is never an error
                severity=SEVERITY if certainty == "certain" else "warning",
                certainty=certainty,
                job_id=r["job_id"],
                execution_ids=(a, b),
                pods=tuple(dict.fromkeys([r["pod"], r["pod_b"]])),
                start=r["acquired_at_b"],
                end=r["both_until"],
                duration_ms=size,
                message=message,
                evidence=tuple(evidence),
                details={
                    "confirmLatencyMs": r["confirm_latency_ms"],
                    "fencingTokens": [r["fencing_token"], r["fencing_token_b"]],
                },
            )
        )
    return out
