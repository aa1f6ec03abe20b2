"""Each finding's lifecycle while logs come in: opened, updated, closed (or withdrawn), as JSON lines.

A finding is known by its identity: kind, job, its first execution id and its start (plus, for the
fleet-level `lease_settings`, the job type and TTL it is about). `lease_outlived` names the execution that
took over once one does, and a zombie's end moves while it runs: neither makes it another finding.

- `open`: an execution it is about has not ended yet (its interval is still growing; `durationMs` is
  "so far"). Re-written when its figures change, at most once per `open_every_s`.
- `final`: every execution it is about has ended (or the run is over). Written again only if it changes.
- `withdrawn`: it was written, and the logs read since no longer establish it (say a "still running?"
  from the wall clock, or a crash whose execution logged again). Its last line says so.

The last line about a finding is its state at the end; at exit every finding standing is `final`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, Any

import orjson

from leaselog.findings import SEVERITY_RANK, Finding, findings_json

Identity = tuple[Any, ...]


def identity(f: Finding) -> Identity:
    d = f.details
    return (
        f.kind,
        f.job_id,
        f.execution_ids[:1],
        f.start,
        d.get("jobType"),
        d.get("ttlMs") if f.job_id is None else None,
    )


@dataclass
class Entry:
    finding: Finding
    doc: dict[str, Any]
    state: str
    written_at: float
    written_doc: dict[str, Any]  # as last written
    changed: bool = False  # differs from what was last written (an open finding waiting for its slot)


class Ledger:
    """The findings written so far and their states; writes JSON lines and calls the listeners."""

    def __init__(
        self,
        out: IO[bytes] | None,
        *,
        open_every_s: float = 1.0,
        listeners: Iterable[Callable[[dict[str, Any], Finding], None]] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.out = out
        self.open_every_s = open_every_s
        self.listeners = list(listeners)
        self.clock = clock
        self.entries: dict[Identity, Entry] = {}
        self.by_job: dict[str | None, set[Identity]] = {}
        self.written = 0
        self.forgotten: Counter[str] = Counter()  # findings of forgotten jobs (final), by severity

    def update(
        self, jobs: set[str | None] | None, findings: list[Finding], ended: Callable[[Finding], bool]
    ) -> None:
        """The findings now standing for `jobs` (a job id, or None for the fleet-level findings; `jobs`
        None: everything); `ended` tells whether a finding's interval is closed."""
        now = self.clock()
        fresh: dict[Identity, Finding] = {identity(f): f for f in findings}
        if jobs is None:
            before = set(self.entries)
        else:
            before = set()
            for j in jobs:
                before |= self.by_job.get(j, set())
        docs = findings_json(list(fresh.values()))
        for (key, f), doc in zip(fresh.items(), docs, strict=True):
            state = "final" if ended(f) else "open"
            e = self.entries.get(key)
            if e is None:
                self.entries[key] = Entry(f, doc, state, now, doc)
                self.by_job.setdefault(f.job_id, set()).add(key)
                self._write(doc, state, f)
                continue
            if e.doc == doc and e.state == state and not e.changed:
                continue
            if e.state == "withdrawn" or e.doc != doc or e.state != state:
                e.finding, e.doc = f, doc
            # what a responder acts on (state, certainty, severity, executions) is written at once; a
            # figure that grows ("so far") at most once per `open_every_s`
            material = state != e.state or _gist(doc) != _gist(e.written_doc)
            due = material or now - e.written_at >= self.open_every_s or state == "final"
            if due:
                e.state, e.written_at, e.changed, e.written_doc = state, now, False, doc
                self._write(doc, state, f)
            else:
                e.changed = True
        for key in before - set(fresh):
            e = self.entries[key]
            if e.state != "withdrawn":
                e.state, e.written_at, e.changed = "withdrawn", now, False
                self._write(e.doc, "withdrawn", e.finding)

    def add(self, f: Finding, *, ended: bool) -> None:
        """One finding standing (or changed), without withdrawing any other."""
        self.update(set(), [f], lambda _f: ended)

    def flush_due(self) -> None:
        """Write the open findings whose change waited for their slot."""
        now = self.clock()
        for e in self.entries.values():
            if e.changed and now - e.written_at >= self.open_every_s:
                e.written_at, e.changed, e.written_doc = now, False, e.doc
                self._write(e.doc, e.state, e.finding)

    def close_all(self) -> None:
        """At exit: every finding standing is final."""
        for e in self.entries.values():
            if e.state == "open" or e.changed:
                e.state, e.changed = "final", False
                self._write(e.doc, "final", e.finding)

    def forget_jobs(self, jobs: set[str]) -> None:
        """Jobs whose state was dropped: their findings are closed for good (written final if still open)."""
        for j in jobs:
            for key in self.by_job.pop(j, set()):
                e = self.entries.pop(key)
                if e.state != "withdrawn":
                    self.forgotten[e.finding.severity] += 1
                if e.state == "open" or e.changed:
                    self._write(e.doc, "final", e.finding)

    def standing(self) -> list[Finding]:
        return [e.finding for e in self.entries.values() if e.state != "withdrawn"]

    def _write(self, doc: dict[str, Any], state: str, f: Finding) -> None:
        line = {**doc, "state": state}
        self.written += 1
        if self.out is not None:
            self.out.write(orjson.dumps(line) + b"\n")
            self.out.flush()
        for listen in self.listeners:
            listen(line, f)


def _gist(doc: dict[str, Any]) -> tuple[Any, ...]:
    return (doc["certainty"], doc["severity"], doc["executionIds"], doc.get("trigger"))


def at_or_above(severity: str, limit: str | None) -> bool:
    return limit is not None and SEVERITY_RANK[severity] <= SEVERITY_RANK[limit]
