"""The checks: one module per anomaly, named by its code. `REGISTRY` lists them in code order.

A check module has CODE, KIND, SEVERITY (the default), a docstring (first line: summary; then
"Anti-pattern:" and "Best practice:" paragraphs) and `check(ctx) -> list[Finding]`.

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
from collections.abc import Callable
from types import ModuleType

from leaselog.checks.base import CheckContext
from leaselog.findings import Finding, enforce_invariants, gc_paused

# Every `llNNN_<kind>.py` module in this package, in code order (tests keep codes, kinds, docstrings and
# fixtures complete, so a new check only has to be dropped in here).
REGISTRY: tuple[ModuleType, ...] = tuple(
    importlib.import_module(f"{__name__}.{m.name}")
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if re.fullmatch(r"ll\d{3}_\w+", m.name)
)

CheckFn = Callable[[CheckContext], list[Finding]]


def run_checks(ctx: CheckContext) -> list[Finding]:
    """Every check's findings, in registry order, with `enforce_invariants` applied: no two findings
    alike (kind, executions, start, end), and nothing uncertain at error severity."""
    out: list[Finding] = []
    with gc_paused():
        for mod in REGISTRY:
            out.extend(mod.check(ctx))
        return enforce_invariants(out)


__all__ = ["REGISTRY", "CheckContext", "run_checks"]
