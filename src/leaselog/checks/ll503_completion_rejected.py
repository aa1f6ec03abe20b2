"""A completion was rejected or answered as a duplicate: the safeguard worked.

Anti-pattern: counting successful lock acquisitions as proof of result correctness (this finding is
the evidence that the destination did not rely on it). Here an execution that overlapped, or came second, tried to complete the job and the
destination's durable duplicate/stale-write policy turned it away, so the overlapping computation
cost load, not correctness. The finding is informational: it is evidence that repeated completion
attempts have a defined durable outcome.

Best practice: keep recording accepted, duplicate and rejected completion attempts separately, and
measure the wasted work of the rejected attempt, since increased load is still an impact.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import completions, ev
from leaselog.checks.phrasing import when
from leaselog.findings import Finding

CODE = "LL503"
KIND = "completion_rejected"
SEVERITY = "info"

REJECTED = ["duplicate", "rejected", "conflict", "stale", "fenced", "already_completed"]


def check(ctx: CheckContext) -> list[Finding]:
    comp = completions(ctx)
    rej = comp.filter(pl.col("outcome").is_in(REJECTED))
    if rej.height == 0:
        return []
    acc = (
        comp.filter(pl.col("outcome") == "accepted")
        .group_by("job_id", "timeline", maintain_order=True)
        .agg(
            pl.col("execution_id").alias("acc_ids"),
            pl.col("t").alias("acc_ts"),
            pl.col("token").alias("acc_tokens"),
            pl.col("file").alias("acc_files"),
            pl.col("line").alias("acc_lines"),
        )
    )
    rej = rej.join(acc, on=["job_id", "timeline"], how="left")
    out: list[Finding] = []
    for r in rej.iter_rows(named=True):
        ck = r["clock"]
        tok = f" (fencing token {r['token']})" if r["token"] is not None else ""
        verb = "answered as a duplicate" if r["outcome"] == "duplicate" else f"{r['outcome']}"
        message = (
            f"{r['execution_id']} ({r['pod']})'s completion of {r['job_id']} at {when(r['t'], ck)}{tok} was {verb}: "
            "the safeguard worked."
        )
        ids: tuple[str, ...] = (r["execution_id"],)
        evidence = list(ev(r["file"], r["line"], f"completion {r['outcome']}"))
        acc_ids = r["acc_ids"] or []
        if len(acc_ids) == 1:
            atok = f" with token {r['acc_tokens'][0]}" if r["acc_tokens"][0] is not None else ""
            message += (
                f" The one accepted result is {acc_ids[0]}'s, at {when(r['acc_ts'][0], ck)}{atok}: the overlapping "
                "computation was load, not corruption."
            )
            ids += (acc_ids[0],)
            evidence += ev(r["acc_files"][0], r["acc_lines"][0], "the accepted completion")
        elif len(acc_ids) > 1:
            message += f" But {len(acc_ids)} other completions were accepted (see duplicate_effect)."
        else:
            message += " No accepted completion for this job is in the logs."
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                severity=SEVERITY,
                job_id=r["job_id"],
                execution_ids=tuple(dict.fromkeys(ids)),
                pods=(r["pod"],),
                start=r["t"],
                end=r["t"],
                message=message,
                evidence=tuple(evidence),
                details={"outcome": r["outcome"], "token": r["token"], "acceptedBy": acc_ids},
            )
        )
    return out
