"""Dialects: a lock library's or scheduler's own log messages, read as canonical lease events.

A format says how a line is shaped (JSON, a console pattern, klog); a dialect says what a line's *message*
means when a lock library wrote it. Teams on the day of an incident have these lines and no `jobId`: the
lock or lease name is the job, the pod comes from the line's pod/host fields or the file name, and the
thread or worker process (with the lifecycle) tells executions apart, as none of these libraries logs an
execution id.

One module per library, each defining `DIALECT: Dialect`: its messages as rules, the literal needles every
one of its lines contains (lines with none of them are never handed to a regex), the library's source
(file and version) each message was taken from, and real-format sample lines with the event each gives.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl


@dataclass(frozen=True)
class Rule:
    """One library message: `pattern` (Python `re` syntax that RE2 also accepts) is searched in the record's
    message; its named groups are canonical fields (`job_id`, `lease_until`, `lease_ms`, `owner`, `thread`,
    ...), and `fields` are constants the message implies (e.g. `{"renewal_outcome": "error"}`)."""

    event: str
    pattern: str
    fields: Mapping[str, str] = field(default_factory=dict)
    # which library versions print it this way (wordings change between versions that are still in use)
    versions: str = ""
    # canonical field -> record keys to read it from when the message has no group for it: structured
    # loggers put the lock's name beside the message (klog's `lock="ns/name"`, JSON's `"lock": ...`)
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def compiled(self) -> re.Pattern[str]:
        return _compile(self.pattern)


@dataclass(frozen=True)
class Sample:
    """A line as the library prints it in a framework's layout, and the event it must give (None: read,
    but no lease event)."""

    line: str
    event: str | None
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Dialect:
    name: str  # `shedlock`, `k8s-leader-election`, ...
    library: str  # the library as its users know it, with its package or logger
    sources: tuple[str, ...]  # repository file and version each message was taken from
    needles: tuple[str, ...]  # literals: every line this dialect reads contains one of them
    rules: tuple[Rule, ...]
    samples: tuple[Sample, ...]
    # loggers whose lines this dialect reads (to say "turn X to DEBUG" when only other lines are seen)
    loggers: tuple[str, ...] = ()
    advice: str = ""  # what to log or configure when the library leaves something out
    # what the library never logs, so no check may read its absence as a fact (e.g. "renewals": a lease
    # renewed in silence is not a lease that expired at acquisition + TTL)
    unlogged: tuple[str, ...] = ()
    # facts that span lines (a task's id on the lock lines its worker process logged, a renewal confirmed
    # by the next one): run once on the reader's raw frame (RAW_COLUMNS as strings, in file and line
    # order) with a `dialect` column naming the dialect that read each row; returns the same columns
    join: Callable[[pl.DataFrame], pl.DataFrame] | None = None

    def match(
        self, message: str, record: Mapping[str, Any] | None = None
    ) -> tuple[str, dict[str, str]] | None:
        """The first rule matching `message`: (canonical event, fields from named groups and constants,
        then from the record's keys named by the rule for fields the message did not give)."""
        if not any(n in message for n in self.needles):
            return None
        for rule in self.rules:
            m = rule.compiled().search(message)
            if m:
                got = {k: v for k, v in m.groupdict().items() if v is not None}
                out = {**rule.fields, **got}
                if record is not None:
                    for name, keys in rule.keys.items():
                        if name not in out:
                            value = next((record[k] for k in keys if record.get(k) not in (None, "")), None)
                            if value is not None:
                                out[name] = str(value)
                return rule.event, out
        return None


_CACHE: dict[str, re.Pattern[str]] = {}


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return _CACHE[pattern]
    except KeyError:
        _CACHE[pattern] = got = re.compile(pattern)
        return got


def _discover() -> tuple[Dialect, ...]:
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        dialect = getattr(module, "DIALECT", None)
        if not isinstance(dialect, Dialect):
            raise TypeError(f"{module.__name__} defines no DIALECT")
        found.append(dialect)
    return tuple(found)


DIALECTS: tuple[Dialect, ...] = _discover()
BY_NAME: dict[str, Dialect] = {d.name: d for d in DIALECTS}

__all__ = ["BY_NAME", "DIALECTS", "Dialect", "Rule", "Sample"]
