"""What a check is and what it receives: `CheckContext`, the `Check` record, and the detected-rows contract.

A check is two functions. `detect(ctx)` returns one row per finding, every figure a typed column (the
columns of `DETECTED` below, plus any evidence or figure columns its `explain` reads); `explain(rows, ctx)`
turns those rows into prose, one message per row, reading columns by name. Detection never phrases and
phrasing never decides what fires, so the rows can be tested exactly, computed anywhere (one process,
one partition of a fleet, a live window) and phrased only when someone reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from leaselog.config import Settings
from leaselog.findings import Severity
from leaselog.fleet import FleetContext

Scope = Literal["job", "fleet"]

_T = pl.Datetime("us", "UTC")
EVIDENCE = pl.List(pl.Struct({"file": pl.String(), "line": pl.Int64(), "note": pl.String()}))

# The columns of a check's detected rows that become the finding (the rest are the check's own). Only
# `job_id`, `execution_ids` and `message`-free figures are required; a missing optional column takes its
# default: `certainty` "certain", `severity` the check's, `trigger`/`details` null, `evidence` empty.
DETECTED: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "execution_ids": pl.List(pl.String()),
    "pods": pl.List(pl.String()),
    "start": _T,
    "end": _T,
    "duration_ms": pl.Float64(),
    "certainty": pl.String(),
    "severity": pl.String(),
    "trigger": pl.String(),
    "evidence": EVIDENCE,
    # the finding's details as a JSON object (null: none); a check writes them as it likes
    "details": pl.String(),
}


@dataclass(frozen=True)
class CheckContext:
    events: pl.DataFrame
    executions: pl.DataFrame
    leases: pl.DataFrame
    renewals: pl.DataFrame
    settings: Settings
    # the whole input's facts (`leaselog.fleet`) when these frames are one part of it; None: these frames
    # are the whole input, and the facts are computed from them (`fleet_of`)
    fleet: FleetContext | None = None
    # frames several checks derive the same way (e.g. `completions`),
    # derived once per analysis
    derived: dict[str, pl.DataFrame] = field(default_factory=dict, compare=False, repr=False)
    # the facts of `leaselog.facts` derived so far (fact -> its frame)
    facts: dict[Callable[..., Any], pl.DataFrame] = field(default_factory=dict, compare=False, repr=False)


Detect = Callable[[CheckContext], pl.DataFrame]
Explain = Callable[[pl.DataFrame, CheckContext], pl.Series]
# a fleet check's part of one split of the jobs (named frames), and how parts become its detected rows
Partial = dict[str, pl.DataFrame]
PartialFn = Callable[[CheckContext], Partial]
MergeFn = Callable[[Sequence[Partial], Settings], pl.DataFrame]


@dataclass(frozen=True)
class Check:
    """One check: its code, kind and default severity, how it detects and how it explains.

    `scope` says what a check needs to see: "job" checks give the same rows for a job whatever other jobs
    are analysed with it (the engine may run them on any split of whole jobs); "fleet" checks read across
    jobs: `partial(ctx)` gives what one split of the jobs contributes, `merge(partials, settings)` the
    detected rows of all of them (exactly `detect` on the whole input). `doc` is the check module's docstring (summary, anti-pattern,
    best practice), filled in by the registry.
    """

    code: str
    kind: str
    severity: Severity
    detect: Detect
    explain: Explain
    scope: Scope = "job"
    doc: str = ""
    partial: PartialFn | None = None
    merge: MergeFn | None = None


def fleet_of(ctx: CheckContext) -> FleetContext:
    """The whole input's facts: given with the context, or (the context holds the whole input) its own."""
    if ctx.fleet is not None:
        return ctx.fleet
    return FleetContext(derived(ctx, "fleet:log_ends", lambda: FleetContext.of(ctx.events).log_ends))


def failovers_of(ctx: CheckContext) -> pl.DataFrame:
    """The lock's Redis failing over (`leaselog.failovers.FAILOVER_SCHEMA`): read with the whole input and
    handed over with its facts; none when the context holds the whole input and nothing else was read."""
    return fleet_of(ctx).failovers


def derived(ctx: CheckContext, name: str, make: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """The frame `make()` gives, made once per analysis however many checks ask for it by `name`."""
    if name not in ctx.derived:
        ctx.derived[name] = make()
    return ctx.derived[name]


def as_findings(check: Check, rows: pl.DataFrame, ctx: CheckContext) -> pl.DataFrame:
    """A check's detected rows as findings: the `DETECTED` columns (defaults filled in), its kind and
    code, and the message `explain` gives. Columns in the order of `leaselog.findings.FINDING_SCHEMA`."""
    from leaselog.findings import FINDING_SCHEMA

    message = check.explain(rows, ctx) if rows.height else pl.Series("message", [], pl.String())
    have = set(rows.columns)
    defaults: dict[str, pl.Expr] = {
        "certainty": pl.lit("certain"),
        "severity": pl.lit(check.severity),
        "evidence": pl.lit([], dtype=EVIDENCE),
    }
    cols: list[pl.Expr] = []
    for name, dtype in FINDING_SCHEMA.items():
        if name == "kind":
            expr = pl.lit(check.kind)
        elif name == "code":
            expr = pl.lit(check.code)
        elif name in have and name != "message":
            expr = pl.col(name)
        else:
            expr = defaults.get(name, pl.lit(None))
        cols.append(expr.cast(dtype).alias(name))
    return rows.select(cols).with_columns(message.cast(pl.String).alias("message"))
