"""The checks: one module per anomaly, named by its code. `REGISTRY` lists them in code order.

A check module has CODE, KIND, SEVERITY (the default), a docstring (first line: summary; then
"Anti-pattern:" and "Best practice:" paragraphs) and `check(ctx) -> list[Finding]`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from leaselog.checks import (
    ll101_overlapping_executions,
    ll102_lease_outlived,
    ll301_stale_release,
)
from leaselog.checks.base import CheckContext
from leaselog.findings import Finding

REGISTRY: tuple[ModuleType, ...] = (
    ll101_overlapping_executions,
    ll102_lease_outlived,
    ll301_stale_release,
)

CheckFn = Callable[[CheckContext], list[Finding]]


def run_checks(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for mod in REGISTRY:
        out.extend(mod.check(ctx))
    return out


__all__ = ["REGISTRY", "CheckContext", "run_checks"]
