"""The knobs of a reproduction (`leaselog reproduce --lease/--renewal/...`), shared by the scenarios that
run it and the truth that measures it."""

from __future__ import annotations

from dataclasses import dataclass

from leaselog.reproduce.server import ReproduceError


@dataclass(frozen=True)
class ReproduceOptions:
    """Knobs of a reproduction; durations in milliseconds. None means "derived from the lease"."""

    lease_ms: int = 5000
    renewal_ms: int = 1000
    max_runtime_ms: int = 20_000
    margin_ms: int | None = None  # local deadline = lease start + lease - margin (default lease/10)
    op_timeout_ms: int | None = None  # bound on every lease command (default min(renewal/2, 1s))
    unit_ms: int = 100  # one bounded unit of work between checkpoints
    stall_ms: int | None = None  # renewal-stall: how long CLIENT PAUSE stalls Redis (default: the lease)

    @property
    def margin(self) -> int:
        return self.margin_ms if self.margin_ms is not None else max(1, self.lease_ms // 10)

    @property
    def op_timeout(self) -> int:
        return (
            self.op_timeout_ms if self.op_timeout_ms is not None else max(50, min(self.renewal_ms // 2, 1000))
        )

    @property
    def stall(self) -> int:
        return self.stall_ms if self.stall_ms is not None else self.lease_ms

    def validate(self, renews: bool) -> None:
        if self.lease_ms <= 0 or self.renewal_ms <= 0 or self.unit_ms <= 0:
            raise ReproduceError("lease, renewal interval and work unit must be positive")
        if renews and self.renewal_ms + self.op_timeout >= self.lease_ms - self.margin:
            raise ReproduceError(
                f"renewal interval {self.renewal_ms}ms + command timeout {self.op_timeout}ms must fit inside the "
                f"lease {self.lease_ms}ms minus its margin {self.margin}ms, or no renewal can ever be on time"
            )
