"""From a flattened record to the reader's raw lease-event row: which canonical field each of the record's
keys fills (the vocabulary's aliases and the user's own names), which canonical event it is (an alias, a
message rule, or a lock library's dialect), and the raw columns that row has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from leaselog.config import Settings, compile_rule
from leaselog.reading.dialects import NEEDLE_BYTES, NEEDLES, match_message
from leaselog.reading.formats.console import key_value_pairs
from leaselog.schema import schema
from leaselog.vocabulary import EVENT_ALIASES, FIELD_ALIASES, normalise_event_name

# Columns the reader fills with raw strings: the events' (leaselog.schema) but what typing them derives.
RAW_COLUMNS: tuple[str, ...] = (
    "ts",
    *(
        c
        for c in schema("events")
        if c
        not in (
            "t",
            "clock",
            "seq",
            "identity",
            "clock_step_ms",
            "new_origin",
            "ts_resolution_ms",
            "file",
            "line",
            "fields",
        )
    ),
    "file",
    "line",
    "fields",
    "file_index",
    # a lock library's line (leaselog.reading.dialects): which dialect read it, and the lease's absolute
    # end when the library logs that instead of a length (turned into lease_ms by `build_events`)
    "dialect",
    "lease_until",
)


@dataclass
class FieldMapper:
    """Picks canonical fields out of one flattened record. Built once per run from the settings."""

    settings: Settings
    aliases: dict[str, list[str]] = field(init=False)
    event_aliases: dict[str, tuple[str, dict[str, str]]] = field(init=False)
    # user event names also match a record's whole message text (apps that log `Acquired lock` as prose)
    message_events: dict[str, str] = field(init=False)
    rules: list[tuple[str, Any, dict[str, str]]] = field(init=False)  # (event, RE2 regex, constants)

    def __post_init__(self) -> None:
        self.aliases = {k: list(v) for k, v in FIELD_ALIASES.items()}
        for canonical, extra in self.settings.fields.items():
            # user names take precedence over the built-in spellings
            self.aliases[canonical] = [*extra, *(k for k in self.aliases[canonical] if k not in extra)]
        self.event_aliases = dict(EVENT_ALIASES)
        self.message_events = {}
        for canonical, names in self.settings.events.items():
            for n in names:
                self.event_aliases[normalise_event_name(n)] = (canonical, {})
                self.message_events[normalise_event_name(n)] = canonical
        self.rules = [(r.event, compile_rule(r.message_regex), dict(r.fields)) for r in self.settings.rules]
        # group name -> canonical field (named groups use canonical names or any alias without dots)
        self._group_field = {a: canon for canon, keys in self.aliases.items() for a in keys}
        self._group_field.update({c: c for c in self.aliases})
        # source key -> [(canonical field, precedence)]: a record is walked by its own (few) keys
        # instead of probing every alias of every field
        self._key_index: dict[str, list[tuple[str, int]]] = {}
        for canon, keys in self.aliases.items():
            for i, k in enumerate(keys):
                self._key_index.setdefault(k, []).append((canon, i))
        self._alias_count = len(self._key_index)
        self._needles = (
            None
            if self.rules
            else tuple(dict.fromkeys(n.split(".", 1)[0].encode() for n in self.aliases["job_id"]))
        )
        self._event_cache: dict[str, tuple[str, dict[str, str]] | None] = {}
        # literals one of which every line a lock library's dialect reads contains
        self.dialect_needles: tuple[bytes, ...] = NEEDLE_BYTES if self.settings.dialects else ()

    @property
    def needles(self) -> tuple[bytes, ...] | None:
        """Byte strings one of which every lease-event line must contain (a cheap prefilter), or None.

        A dotted name (`job.id`) is looked for by its first part: nested JSON writes `"job":{"id":..}`,
        and the last part (`id`) would match nearly every line. Computed once: the reader asks per line.
        """
        return self._needles

    def _fields(self, rec: Mapping[str, Any]) -> dict[str, str | None]:
        """Canonical field -> raw string, each from the highest-precedence key present and non-empty."""
        if len(rec) > self._alias_count:  # a record with more keys than there are aliases: probe aliases
            row: dict[str, str | None] = {}
            for canonical, keys in self.aliases.items():
                for k in keys:
                    v = rec.get(k)
                    if v is not None and v != "":
                        row[canonical] = _to_str(v)
                        break
            return row
        best: dict[str, tuple[int, Any]] = {}
        index = self._key_index
        for k, v in rec.items():
            hits = index.get(k)
            if hits is None or v is None or (v.__class__ is str and not v):
                continue
            for canon, prio in hits:
                got = best.get(canon)
                if got is None or prio < got[0]:
                    best[canon] = (prio, v)
        return {c: _to_str(v) for c, (_, v) in best.items()}

    def _event_alias(self, name: str) -> tuple[str, dict[str, str]] | None:
        try:
            return self._event_cache[name]
        except KeyError:
            hit = self.event_aliases.get(normalise_event_name(name))
            if len(self._event_cache) < 10_000:  # bounded: event names are few, garbage is not
                self._event_cache[name] = hit
            return hit

    def extract(self, rec: Mapping[str, Any]) -> tuple[str, dict[str, str | None]] | str | None:
        """Map one flattened record.

        Returns (canonical event, raw canonical fields), or a string naming an event it does not know
        (an unmapped event name, so a user can map it), or None for a line unrelated to leases.
        """
        row = self._fields(rec)
        if "job_id" not in row:
            rec, row = self._message_pairs(rec, row)
        if "job_id" not in row and not self.rules:
            return self._dialect(rec, row)  # no job: unrelated to leases, unless a lock library said it
        event_name = row.get("event")
        implied: dict[str, str] = {}
        canonical_event: str | None = None
        if event_name is not None:
            hit = self._event_alias(event_name)
            if hit is not None:
                canonical_event, implied = hit
        elif self.message_events:
            message = row.get("message")
            if message:
                canonical_event = self.message_events.get(normalise_event_name(message))
                if canonical_event is not None:
                    event_name = message
        if canonical_event is None and self.rules:
            message = row.get("message")
            if message:
                for ev, rx, constants in self.rules:
                    m = rx.search(message)
                    if m:
                        canonical_event = ev
                        event_name = event_name or ev
                        for g, val in m.groupdict().items():
                            if val is not None:
                                row[self._group_field.get(g, g)] = val
                        implied = constants
                        break
        if canonical_event is None and self.dialect_needles:
            got = self._dialect(rec, row)
            if got is not None:
                return got
        if row.get("job_id") is None:
            return None
        if canonical_event is None:
            return event_name if event_name is not None else None
        for k, v in implied.items():
            row.setdefault(self._group_field.get(k, k), v)
        row["raw_event"] = event_name
        return canonical_event, row

    def _message_pairs(
        self, rec: Mapping[str, Any], row: dict[str, str | None]
    ) -> tuple[Mapping[str, Any], dict[str, str | None]]:
        """A record with no job-id key whose message carries the lease fields as `key=value` pairs (a JSON
        line written by a format string around `%(message)s`, a GELF or OTLP message of a text logger):
        those pairs are its fields, never over a key the record has."""
        message = row.get("message")
        if not message or "=" not in message:
            return rec, row
        pairs: dict[str, Any] = {}
        key_value_pairs(message, pairs)
        if not any(k in pairs for k in self.aliases["job_id"]):
            return rec, row
        merged = {**pairs, **rec}
        return merged, self._fields(merged)

    def _dialect(
        self, rec: Mapping[str, Any], row: dict[str, str | None]
    ) -> tuple[str, dict[str, str | None]] | None:
        """A lock library's own message (leaselog.reading.dialects): its canonical event, the lock name as
        the job. A rule that needs a literal confirmed (in the record's other values, or in the stack
        trace the reader attaches later) gets it appended to the message when the record has it."""
        message = row.get("message")
        if not message or not self.dialect_needles or not any(n in message for n in NEEDLES):
            return None
        hit = match_message(message, rec)
        if hit is None:
            return None
        out: dict[str, str | None] = {k: v for k, v in row.items() if k not in ("event", "job_id")}
        for k, v in hit.fields.items():
            out[self._group_field.get(k, k)] = v
        confirm = hit.rule.confirm
        if confirm and confirm not in message:
            said = next((v for v in rec.values() if isinstance(v, str) and confirm in v), None)
            if said is not None:
                out["message"] = f"{message}\n{said}"
        out["dialect"] = hit.dialect.name
        out["raw_event"] = hit.label
        return hit.rule.event, out


def _to_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, dict | list):
        import orjson

        try:
            return orjson.dumps(v).decode()
        except (TypeError, RecursionError):  # nested beyond orjson's limit: say so, never crash
            return "<value nested too deep>"
    return str(v)
