"""A completion was accepted with a fencing token lower than one already accepted: a stale write.

Anti-pattern: attaching a fencing token without the destination enforcing it. A worker that paused,
lost its lease and resumed sent its write with the old token after the new owner's write with a higher
token had been accepted, and the destination took it: the stale result overwrote (or joined) the new one.

Best practice: fencing uses an increasing ownership sequence, and the destination atomically rejects a
token older than the highest it has accepted. A random UUID identifies an owner but supplies no order.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.certainty import certainty_for
from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import completions, ev, ms_expr
from leaselog.checks.phrasing import when
from leaselog.findings import Finding

CODE = "LL502"
KIND = "stale_write_accepted"
SEVERITY = "error"


def stale(ctx: CheckContext) -> pl.DataFrame:
    acc = (
        completions(ctx)
        .filter((pl.col("outcome") == "accepted") & pl.col("token").is_not_null())
        .sort("t", "seq")
    )
    acc = acc.with_columns(
        pl.col("token").cum_max().shift(1).over("job_id", "timeline").alias("max_before"),
    )
    s = acc.filter(pl.col("token") < pl.col("max_before"))
    if s.height == 0:
        return s
    # the accepted completion that set the higher token (the first one to reach it)
    hi = acc.select(
        "job_id",
        "timeline",
        pl.col("token").alias("max_before"),
        pl.col("execution_id").alias("hi_execution_id"),
        pl.col("pod").alias("hi_pod"),
        pl.col("t").alias("hi_t"),
        pl.col("file").alias("hi_file"),
        pl.col("line").alias("hi_line"),
        pl.col("clock").alias("hi_clock"),
    ).unique(["job_id", "timeline", "max_before"], keep="first", maintain_order=True)
    return s.join(hi, on=["job_id", "timeline", "max_before"], how="left").with_columns(
        ms_expr("hi_t", "t").alias("after_ms")
    )


def check(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for r in stale(ctx).iter_rows(named=True):
        ck = r["clock"]
        certainty, caveat = certainty_for(
            r["after_ms"], [r["pod"], r["hi_pod"]], [ck, r["hi_clock"]], ctx.settings
        )
        message = (
            f"{r['execution_id']} ({r['pod']})'s completion of {r['job_id']} with fencing token {r['token']} was "
            f"accepted at {when(r['t'], ck)}, although {r['hi_execution_id']} ({r['hi_pod']}) had already had "
            f"token {r['max_before']} accepted at {when(r['hi_t'], r['hi_clock'])}: a stale write from an "
            "owner that had lost its lease. The destination must atomically reject a token older than the "
            f"highest it has accepted; attaching a number alone does nothing.{caveat}"
        )
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                # what the logs cannot prove is never an error
                severity=SEVERITY if certainty == "certain" else "warning",
                certainty=certainty,
                job_id=r["job_id"],
                execution_ids=(r["execution_id"], r["hi_execution_id"]),
                pods=tuple(dict.fromkeys([r["pod"], r["hi_pod"]])),
                start=r["hi_t"],
                end=r["t"],
                duration_ms=r["after_ms"],
                message=message,
                evidence=(
                    *ev(r["hi_file"], r["hi_line"], f"token {r['max_before']} accepted"),
                    *ev(r["file"], r["line"], f"older token {r['token']} accepted"),
                ),
                details={"token": r["token"], "highestAcceptedBefore": r["max_before"]},
            )
        )
    return out
