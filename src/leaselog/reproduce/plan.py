"""The parameters of one lab run (`lab.draw` picks them, `lab.play` plays them): the run and its pods."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PodPlan:
    role: str  # A, B, C...: A takes the first message and acquires first
    path: str  # "first" or the trigger path of a later attempt (PATHS)
    fire_ms: int | None  # when the harness fires this pod's trigger, from A's start (None: redelivery)
    on_denied: str  # exit | wait | wait-silent
    units: int
    clock_offset_ms: int
    dies_after_trigger: bool = False  # killed between its job_triggered and the lock
    # several executions in one process (layouts.py): one trigger per worker thread, the units of work
    # of each execution in turn, and when the harness fires the pod's own scheduler (ms from t0)
    threads: tuple[str, ...] = ()
    units_list: tuple[int, ...] = ()
    ticks_ms: tuple[int, ...] = ()

    @property
    def pod(self) -> str:
        return f"pod-{self.role.lower()}"

    @property
    def execution_id(self) -> str:
        return f"attempt-{self.role.lower()}"


@dataclass(frozen=True)
class Plan:
    seed: int
    index: int
    lease_ms: int
    renew: bool
    renewal_ms: int
    margin_ms: int
    op_timeout_ms: int
    renew_retry_ms: int  # 0: stop at the first failed renewal
    completion: str  # fenced | idempotent | plain | none
    ignore_stop: bool
    fault: str
    fault_at_ms: int  # from A's start
    fault_ms: int
    shape: str
    pods: tuple[PodPlan, ...] = field(default_factory=tuple)
    layout: str = "pods"  # pods: one execution per pod; else a layout of layouts.py
    id_style: str = "unique"  # what each execution logs as its id: unique | counter | reused
    # one pod's logging clock steps once by clock_step_ms, clock_step_at_ms after its first lease line
    clock_step_role: str = ""
    clock_step_ms: int = 0
    clock_step_at_ms: int = 0
    # after a clock step, two clean handoffs of other jobs between the stepped pod and another (roles: the
    # stepped pod's, then the other's; reproduce/handoffs.py), their lines with or without elapsedMs
    handoffs: tuple[str, ...] = ()
    handoff_elapsed: bool = True
    # rendered with its times truncated to whole seconds (reproduce/coarse.py): never with a clock step
    coarse: bool = False

    @property
    def kinds(self) -> tuple[str, ...]:
        """The campaign's run kinds this run belongs to (`failover`, `clock_step`, `coarse`), for `--only`."""
        return tuple(
            k
            for k, on in (
                ("failover", self.fault == "failover"),
                ("clock_step", self.clock_step_ms != 0),
                ("coarse", self.coarse),
            )
            if on
        )

    @property
    def name(self) -> str:
        return f"run-{self.seed}-{self.index:04d}"

    def describe(self) -> str:
        paths = ",".join(p.path for p in self.pods[1:])
        life = f"renew {self.renewal_ms}ms" if self.renew else "no renewal"
        layout = "" if self.layout == "pods" else f"{self.layout} (ids {self.id_style}), "
        step = (
            f", pod-{self.clock_step_role.lower()} clock step {self.clock_step_ms:+d}ms@{self.clock_step_at_ms}ms"
            if self.clock_step_ms
            else ""
        )
        if self.handoffs:
            step += f", handoffs pod-{self.handoffs[0].lower()}<->pod-{self.handoffs[1].lower()}"
            step += "" if self.handoff_elapsed else " (no elapsedMs)"
        if self.coarse:
            step += ", whole-second times"
        return (
            f"{layout}ttl {self.lease_ms}ms {life}, {len(self.pods)} pods ({paths}), fault {self.fault}"
            f"@{self.fault_at_ms}ms/{self.fault_ms}ms{step}, {self.completion}, shape {self.shape}"
        )


def plan_from_dict(d: dict[str, Any]) -> Plan:
    tuples = ("threads", "units_list", "ticks_ms")
    fields: list[dict[str, Any]] = [
        {k: tuple(v) if k in tuples else v for k, v in p.items()} for p in d["pods"]
    ]
    pods = tuple(PodPlan(**f) for f in fields)
    return Plan(**{**d, "pods": pods, "handoffs": tuple(d.get("handoffs", ()))})
