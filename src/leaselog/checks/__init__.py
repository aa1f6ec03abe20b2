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
    ll103_concurrent_leases,
    ll201_renewal_failed,
    ll202_renewal_gap,
    ll203_ownership_loss_unhandled,
    ll204_stop_delayed,
    ll205_stop_unconfirmed,
    ll301_stale_release,
    ll302_release_failed,
    ll401_second_attempt,
    ll501_duplicate_effect,
    ll502_stale_write_accepted,
    ll503_completion_rejected,
    ll601_crash_takeover,
    ll701_lease_settings,
)
from leaselog.checks.base import CheckContext
from leaselog.findings import Finding

REGISTRY: tuple[ModuleType, ...] = (
    ll101_overlapping_executions,
    ll102_lease_outlived,
    ll103_concurrent_leases,
    ll201_renewal_failed,
    ll202_renewal_gap,
    ll203_ownership_loss_unhandled,
    ll204_stop_delayed,
    ll205_stop_unconfirmed,
    ll301_stale_release,
    ll302_release_failed,
    ll401_second_attempt,
    ll501_duplicate_effect,
    ll502_stale_write_accepted,
    ll503_completion_rejected,
    ll601_crash_takeover,
    ll701_lease_settings,
)

CheckFn = Callable[[CheckContext], list[Finding]]


def run_checks(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for mod in REGISTRY:
        out.extend(mod.check(ctx))
    return out


__all__ = ["REGISTRY", "CheckContext", "run_checks"]
