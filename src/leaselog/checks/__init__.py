"""The checks: one module per anomaly, named by its code. `REGISTRY` lists them in code order.

A check module has CODE, KIND, SEVERITY (the default), a docstring (first line: summary; then
"Anti-pattern:" and "Best practice:" paragraphs) and `check(ctx) -> list[Finding]`.

Clock skew, honestly. Per-pod `--clock-offset`s are applied when events are built. A finding whose size
compares two pods' clocks (an overlap, two leases at once, a takeover, the time since a lease expiry,
the order of two accepted writes) is `uncertain` when that size is within `--max-skew`, or when the logs
have no wall clock at all, and its message says why. Where Redis itself proves an order (it handed the
key to B only after A's lease had expired in Redis's time), the finding reports the bound that order puts
on the two pods' relative skew (`details.skewBoundMs`): B's clock is at most gap + latency of A's last
confirming call ahead of A's.
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
from leaselog.findings import Finding, gc_paused

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
    with gc_paused():
        for mod in REGISTRY:
            out.extend(mod.check(ctx))
    return out


__all__ = ["REGISTRY", "CheckContext", "run_checks"]
