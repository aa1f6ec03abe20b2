"""What the way executions were identified does to the findings about them.

A finding about an execution the logs did not name says how each of its executions was identified
(`details.executionFrom`, beside `executionIds`). One about runs the logs cannot tell apart (no execution
id, no thread, their lines interleaved: leaselog.execution_runs) is uncertain, whatever its check
concluded: its figures rest on which line belongs to which run, which the logs do not say. The
exceptions are what two such runs (and no third on that job and pod) decide whichever end is whose: their
overlap (both lived from the later one's begin to the first of the two ends that follow) and the second
attempt (which began first, and that the first was still going on); and a clock step seen in the pod's
own lines on an elapsedMs that keeps one origin across the runs (`details.elapsedOneOrigin`, set by the
check: its clock's, whichever run wrote the lines on either side of it).
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from leaselog.execution_runs import ID, IDENTITIES, UNTOLD_NAMES

_UNTOLD = (
    " The logs cannot tell {names} from another run of the job on {pods}: no distinct execution id and no "
    "thread, and their lines interleave, so which line is whose is a guess; this finding is uncertain (log "
    "an execution id per run, or the thread)."
)

# what two runs not told apart decide, per finding kind (the rest hangs on which end is whose)
_DECIDED = {
    "overlapping_executions": (
        " The logs cannot tell {names} apart on {pods} (no distinct execution id, no thread): which end is "
        "whose is a guess, but both lived at once, as the later one began while the other was going on and "
        "two ends follow, so the overlap holds whichever end is whose (log an execution id per run, or the "
        "thread, to tell the rest)."
    ),
    "second_attempt": (
        " The logs cannot tell {names} apart on {pods} (no distinct execution id, no thread): which end is "
        "whose is a guess, but not which began first, nor that the first was still going on when the second "
        "acquired (two ends follow), so this attempt's order and trigger hold (log an execution id per run, "
        "or the thread, to tell the rest)."
    ),
}

# a step of the pod's clock, seen between two of its lines in the order it wrote them, on an elapsedMs that
# keeps one origin across the runs (the process's): whichever run wrote each (a step the ordering facts
# show across pods hangs on whose release or acquisition each is; an elapsedMs that starts again on the
# pod may count each run from its own start, and then the lines compared must be one run's)
_POD_CLOCK = (
    " The logs cannot tell the job's runs on {pods} apart ({names}: no distinct execution id, no thread): "
    "which line is whose is a guess, but not this step: it is the pod's clock's, seen between two of its "
    "lines in the order it wrote them, on an elapsedMs that counts from one origin across the runs (it "
    "never goes back), whichever run wrote each (log an execution id per run, or the thread, to tell the "
    "rest)."
)


def identity_caveats(findings: pl.DataFrame, executions: pl.DataFrame) -> pl.DataFrame:
    """`findings` (FINDING_SCHEMA) with each finding about an inferred execution saying so."""
    if not findings.height or not executions.height:
        return findings
    inferred = executions.filter(pl.col("execution_from") != IDENTITIES[ID]).select(
        "job_id", "execution_id", "execution_from"
    )
    if not inferred.height:
        return findings
    per = (
        findings.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_i"), "job_id", "execution_ids")
        .explode("execution_ids")
        .rename({"execution_ids": "execution_id"})
        .join(inferred, on=["job_id", "execution_id"], how="left", maintain_order="left")
        .group_by("_i", maintain_order=True)
        .agg(
            pl.col("execution_from").fill_null(IDENTITIES[ID]).alias("from"),
            pl.col("execution_id").filter(pl.col("execution_from").is_in(UNTOLD_NAMES)).alias("untold"),
            pl.col("execution_from").is_not_null().any().alias("inferred"),
        )
        .filter("inferred")
    )
    if not per.height:
        return findings
    rows = per["_i"].to_list()
    # two runs not told apart on a job and pod, and no third: their overlap is decided (both lived from the
    # later one's begin to the first of the two ends, whichever end is whose)
    pairs = {
        (job, pod)
        for job, pod, n in executions.filter(pl.col("execution_from").is_in(UNTOLD_NAMES))
        .group_by("job_id", "pod")
        .len()
        .iter_rows()
        if n == 2
    }
    kinds, jobs = findings["kind"].to_list(), findings["job_id"].to_list()
    details, certainty, message = (findings[c].to_list() for c in ("details", "certainty", "message"))
    pods = findings["pods"].to_list()
    for i, how, untold in zip(rows, per["from"].to_list(), per["untold"].to_list(), strict=True):
        d: dict[str, Any] = orjson.loads(details[i]) if details[i] else {}
        d["executionFrom"] = how
        details[i] = orjson.dumps(d).decode()
        where = ", ".join(pods[i] or []) or "its pod"
        decided = (
            kinds[i] in _DECIDED
            and len(untold) == 2
            and len(pods[i] or []) == 1
            and (jobs[i], (pods[i] or [None])[0]) in pairs
        )
        pod_clock = kinds[i] == "clock_step" and d.get("elapsedOneOrigin") is True
        if decided:
            message[i] += _DECIDED[kinds[i]].format(names=" and ".join(untold), pods=where)
        elif untold and pod_clock:
            message[i] += _POD_CLOCK.format(names=" and ".join(untold), pods=where)
        elif untold:
            certainty[i] = "uncertain"
            message[i] += _UNTOLD.format(names=", ".join(untold), pods=where)
    return findings.with_columns(
        pl.Series("details", details, dtype=pl.String),
        pl.Series("certainty", certainty, dtype=pl.String),
        pl.Series("message", message, dtype=pl.String),
    )
