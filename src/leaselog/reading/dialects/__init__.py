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
    # the rule's short name (`locked`, `not-executing`): the event's `raw_event` is `<dialect>/<name>`
    name: str = ""
    # a literal that must occur in the line's record or in the stack trace logged under it, else the line
    # is no lease event (Spring's "Unexpected error occurred in scheduled task" is about a lock only when
    # its trace says so)
    confirm: str = ""
    # the message names no lock: the job is the one last acquired on the same pod and thread
    job_from_thread: bool = False
    # `job_id` is a list of names (`a, b`): one event per name
    job_list: bool = False
    # events the same line also says, logged right before the rule's own (ShedLock's `Locked` and `Not
    # executing` are each a scheduler tick: `job_triggered` with the rule's `trigger`)
    also: tuple[str, ...] = ()
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
    # lines the library (or the framework) prints around it that the sample needs: the acquisition a
    # job-from-thread message refers to (`before`), the stack trace a confirmed rule reads (`after`)
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


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
    # literals whose presence in a file (its first lines) says the library is in use even when none of its
    # lines is (a package name in a start-up line, a logger at INFO): for "turn logger X to DEBUG"
    hints: tuple[str, ...] = ()
    # how to turn its loggers on (Spring Boot property, logback, log4j2)
    enable: str = ""
    # what it cannot measure from its own lines (said in findings and in docs/DIALECTS.md)
    cannot_measure: str = ""
    # facts that span lines (a Celery task's id on the lock lines its worker process logged, a renewal
    # confirmed by the renewal thread's next line): run once on the reader's raw frame (its `dialect`
    # column names the dialect that read each row), after the rows are settled; returns the same columns
    join: Callable[[pl.DataFrame], pl.DataFrame] | None = None
    # its holders' successful renewals are not logged (at the default level, or ever): a lease its lines
    # show lasts at least its length past the last renewal seen, and at most until another holder acquired
    # the key; when no successful renewal of the job is seen on a pod, what it renewed is unknown
    silent_renewals: bool = False
    # a holder acts until it logs the loss of its lease or exits (leader election): a run its lines never
    # end is the holder's for as long as the job's logs go
    holds_until_lost: bool = False

    def match(
        self, message: str, record: Mapping[str, Any] | None = None
    ) -> tuple[str, dict[str, str]] | None:
        """The first rule matching `message`: (canonical event, fields from named groups and constants)."""
        hit = self.match_rule(message, record)
        return None if hit is None else (hit[0].event, hit[1])

    def match_rule(
        self, message: str, record: Mapping[str, Any] | None = None
    ) -> tuple[Rule, dict[str, str]] | None:
        """The first rule matching `message`, and its fields (named groups over the rule's constants,
        then the record's keys the rule names for fields the message did not give)."""
        if not any(n in message for n in self.needles):
            return None
        for rule in self.rules:
            m = rule.compiled().search(message)
            if m:
                got = {k: v for k, v in m.groupdict().items() if v is not None}
                duration = got.pop("lease_duration", None)
                if duration is not None and (ms := iso_duration_ms(duration)) is not None:
                    got["lease_ms"] = str(ms)
                seconds = got.pop("elapsed_s", None)  # (a process's uptime in seconds: Spring Boot's)
                if seconds is not None:
                    got["elapsed_ms"] = str(round(float(seconds) * 1000))
                out = {**rule.fields, **got}
                if record is not None:
                    for name, keys in rule.keys.items():
                        if name not in out:
                            value = next((record[k] for k in keys if record.get(k) not in (None, "")), None)
                            if value is not None:
                                out[name] = str(value)
                return rule, out
        return None

    def rule_named(self, name: str) -> Rule | None:
        return next((r for r in self.rules if (r.name or r.event) == name), None)


_CACHE: dict[str, re.Pattern[str]] = {}
_ISO_DURATION = re.compile(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?\Z")


def iso_duration_ms(text: str) -> int | None:
    """A `java.time.Duration` as it prints (`PT30S`, `PT1M30.5S`, `PT2H`) in milliseconds, or None."""
    m = _ISO_DURATION.match(text)
    if m is None or not any(m.groups()):
        return None
    h, mi, sec = m.groups()
    return round((int(h or 0) * 3600 + int(mi or 0) * 60 + float(sec or 0)) * 1000)


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
# every dialect's needles: a line with none of them is never handed to a dialect's regex
NEEDLES: tuple[str, ...] = tuple(dict.fromkeys(n for d in DIALECTS for n in d.needles))
NEEDLE_BYTES: tuple[bytes, ...] = tuple(n.encode() for n in NEEDLES)
# the `raw_event` prefixes (`<dialect>/`) of the dialects whose holders' renewals go unlogged, and of those
# whose holders act until they log the loss
SILENT_RENEWALS: tuple[str, ...] = tuple(f"{d.name}/" for d in DIALECTS if d.silent_renewals)
HOLDS_UNTIL_LOST: tuple[str, ...] = tuple(f"{d.name}/" for d in DIALECTS if d.holds_until_lost)


@dataclass(frozen=True)
class Hit:
    """A message some dialect reads: the dialect, its rule, and the canonical fields the message gives."""

    dialect: Dialect
    rule: Rule
    fields: dict[str, str]

    @property
    def label(self) -> str:
        """What the event's `raw_event` says: `<dialect>/<rule name>`."""
        return f"{self.dialect.name}/{self.rule.name or self.rule.event}"


def match_message(message: str, record: Mapping[str, Any] | None = None) -> Hit | None:
    """The first dialect (in name order) whose rule reads `message`, or None. Cheap on messages no dialect
    reads: each dialect looks for its needles before any regex runs. `record` (the line's fields) gives
    what a structured logger put beside the message (`Rule.keys`)."""
    for dialect in DIALECTS:
        got = dialect.match_rule(message, record)
        if got is not None:
            return Hit(dialect, got[0], got[1])
    return None


def rule_of(label: str) -> tuple[Dialect, Rule] | None:
    """The dialect and rule a `raw_event` label (`<dialect>/<rule name>`) names, or None."""
    name, _, rule_name = label.partition("/")
    dialect = BY_NAME.get(name)
    rule = dialect.rule_named(rule_name) if dialect is not None else None
    return None if dialect is None or rule is None else (dialect, rule)


__all__ = [
    "BY_NAME",
    "DIALECTS",
    "HOLDS_UNTIL_LOST",
    "NEEDLES",
    "NEEDLE_BYTES",
    "SILENT_RENEWALS",
    "Dialect",
    "Hit",
    "Rule",
    "Sample",
    "iso_duration_ms",
    "match_message",
    "rule_of",
]
