"""The checks: one module per anomaly, named by its code. `REGISTRY` lists them in code order.

A check module has a docstring (first line: summary; then "Anti-pattern:" and "Best practice:"
paragraphs) and `CHECK = Check(code, kind, severity, detect, explain)` (`contract.py`): `detect(ctx)` gives
one typed row per finding, `explain(rows, ctx)` the message of each row.

Clock skew, honestly. Per-pod `--clock-offset`s are applied when events are built. A finding whose size
compares two pods' clocks (an overlap, two leases at once, a takeover, the time since a lease expiry,
the order of two accepted writes) is `uncertain` when that size is within `--max-skew`, or when the logs
have no wall clock at all, and its message says why; an uncertain finding is never an error (the logs
cannot prove it), so it is at most a warning. Where Redis itself proves an order (it handed the
key to B only after A's lease had expired in Redis's time), the finding reports the bound that order puts
on the two pods' relative skew (`details.skewBoundMs`): B's clock is at most gap + latency of A's last
confirming call ahead of A's.

Attempts that never ran (denied the lock, or triggered and nothing more: `end_kind` `denied` or
`no_outcome`, no interval) are no execution in any check; `attempts_not_run` (LL402) speaks for them.
`run_checks` keeps the invariants every output relies on (`findings.enforce_invariants`).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import replace
from types import ModuleType

import polars as pl

from leaselog.checks.contract import Check, CheckContext, as_findings
from leaselog.findings import empty_findings, gc_paused


def _check_of(mod: ModuleType) -> Check:
    check = getattr(mod, "CHECK", None)
    if not isinstance(check, Check):
        raise TypeError(
            f"{mod.__name__}: a check module defines CHECK = Check(code, kind, severity, detect, explain)"
        )
    return replace(check, doc=mod.__doc__ or "")


# Every `llNNN_<kind>.py` module in this package, in code order (tests keep codes, kinds, docstrings and
# fixtures complete, so a new check only has to be dropped in here).
MODULES: tuple[ModuleType, ...] = tuple(
    importlib.import_module(f"{__name__}.{m.name}")
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if re.fullmatch(r"ll\d{3}_\w+", m.name)
)
REGISTRY: tuple[Check, ...] = tuple(_check_of(m) for m in MODULES)
BY_CODE: dict[str, Check] = {c.code: c for c in REGISTRY}


def findings_of(check: Check, ctx: CheckContext) -> pl.DataFrame:
    """One check's findings (`leaselog.findings.FINDING_SCHEMA`), not yet finalised.

    The detected rows (wide: every figure the message is phrased from) are dropped as soon as they are
    findings; what several checks read is shared through `leaselog.facts` (or `contract.derived`) instead."""
    return as_findings(check, check.detect(ctx), ctx)


def run_checks(ctx: CheckContext, checks: tuple[Check, ...] = REGISTRY) -> pl.DataFrame:
    """Every check's findings as one frame (`leaselog.findings.FINDING_SCHEMA`), in registry order.

    Not yet finalised: `leaselog.findings.finalize` makes the invariants true and sorts.
    """
    with gc_paused():
        parts = [findings_of(c, ctx) for c in checks]
    parts = [p for p in parts if p.height]
    return pl.concat(parts) if parts else empty_findings()


__all__ = ["BY_CODE", "MODULES", "REGISTRY", "Check", "CheckContext", "findings_of", "run_checks"]
