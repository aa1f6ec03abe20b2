"""Analysis settings: CLI options and `leaselog.toml`, validated with pydantic."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from leaselog.durations import parse_duration_ms, parse_signed_duration_ms
from leaselog.vocabulary import CANONICAL_EVENTS, EVENT_ALIASES, FIELD_ALIASES, normalise_event_name


def _duration(v: Any) -> Any:
    if v is None:
        return v
    if isinstance(v, int | float | str) and not isinstance(v, bool):
        return parse_duration_ms(v)  # a negative, non-finite or out-of-range one is a ValueError
    return v


DurationMs = Annotated[float, BeforeValidator(_duration)]


def _canonical_field(name: str) -> str | None:
    """`job_id`, or any built-in spelling of it (`jobId`), -> the canonical field name."""
    if name in FIELD_ALIASES:
        return name
    for canon, keys in FIELD_ALIASES.items():
        if name in keys:
            return canon
    return None


def _canonical_event(name: str) -> str | None:
    hit = EVENT_ALIASES.get(normalise_event_name(name))
    return hit[0] if hit else None


def compile_rule(pattern: str) -> Any:
    """A message rule's regex, compiled by RE2: matching takes time linear in the message, whatever the
    pattern (`^(a+)+$` cannot hang a run). RE2 has Python's syntax but no backreferences or lookaround;
    such a pattern is a ValueError saying so."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is raised (and reported with the config's line), not logged
    try:
        return re2.compile(pattern, options=options)
    except re2.error as e:
        why = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise ValueError(
            f"{why} (leaselog matches message_regex with RE2, in linear time: no backreferences, "
            "no lookahead or lookbehind)"
        ) from e


class EventRule(BaseModel):
    """Map a log line to a canonical event by a regex on its message text.

    Named groups (e.g. `(?P<jobId>\\S+)`) become fields of the event; `fields` adds constants
    (`fields = {released = "false"}`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    event: str
    message_regex: str
    fields: dict[str, str] = Field(default_factory=dict)

    @field_validator("event")
    @classmethod
    def _known_event(cls, v: str) -> str:
        canon = _canonical_event(v)
        if canon is None:
            raise ValueError(f"event {v!r} is not one of {', '.join(CANONICAL_EVENTS)}")
        return canon

    @field_validator("message_regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        try:
            rx = compile_rule(v)
        except ValueError as e:
            raise ValueError(f"bad regex {v!r}: {e}") from e
        unknown = [g for g in rx.groupindex if _canonical_field(g) is None]
        if unknown:
            raise ValueError(
                f"named group(s) {unknown} in {v!r} are no field leaselog knows; use e.g. jobId, "
                "executionId, pod, leaseMs, fencingToken, reason"
            )
        return v

    @field_validator("fields", mode="before")
    @classmethod
    def _known_constants(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        out = {}
        for k, val in v.items():
            canon = _canonical_field(str(k))
            if canon is None:
                raise ValueError(f"field {k!r} is no field leaselog knows")
            out[canon] = (
                val if isinstance(val, str) else str(val).lower() if isinstance(val, bool) else str(val)
            )
        return out


def _names(v: Any) -> Any:
    """A name or a list of names -> a list (`job_id = "report_request_id"` is fine)."""
    return [v] if isinstance(v, str) else v


def _canonical_names(v: Any, canonical: Callable[[str], str | None], what: str, known: Iterable[str]) -> Any:
    """`{spelling: name or [names]}` -> `{canonical: [names]}`; an unknown key names the known ones."""
    if not isinstance(v, dict):
        return v
    out: dict[str, Any] = {}
    for k, names in v.items():
        canon = canonical(str(k))
        if canon is None:
            raise ValueError(f"unknown canonical {what} {k!r}; known: {', '.join(known)}")
        listed = _names(names)
        out.setdefault(canon, []).extend(listed if isinstance(listed, list) else [listed])
    return out


class Settings(BaseModel):
    """Everything an analysis can be told. All durations are milliseconds (strings like `10m` accepted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lease_ttl_ms: DurationMs | None = Field(None, description="TTL when the log has no leaseMs")
    dialects: bool = Field(
        True, description="read lock libraries' own lines (ShedLock, Redisson, ...) as lease events"
    )
    max_skew_ms: DurationMs = Field(250.0, description="cross-pod clock skew bound")
    clock_offsets_ms: dict[str, float] = Field(
        default_factory=dict, description="per-pod clock offset: subtract from that pod's timestamps"
    )
    clock_jitter_ms: DurationMs = Field(
        100.0,
        description="how far one pod's log may run backwards (or disagree with its elapsedMs) before it is a "
        "clock step",
    )
    stop_slo_ms: DurationMs = Field(5_000.0, description="a stop slower than this is stop_delayed")
    takeover_slo_ms: DurationMs = Field(60_000.0, description="takeover target after a crash")
    renewal_interval_ms: DurationMs | None = Field(None, description="configured renewal interval")
    format: str | None = Field(None, description="force one input format for every file")
    timezone: str = Field(
        "UTC", description="zone of timestamps written without one (IANA name, e.g. Europe/Berlin)"
    )
    max_line_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024,
        description="longest line read; a longer one is counted malformed and skipped (memory stays bounded)",
    )
    log_date: str | None = Field(
        None,
        pattern=r"^\d{4}-\d\d-\d\d$",
        description="date of console lines that carry only a time of day (default: from the file name, "
        "else its modification date)",
    )
    fields: dict[str, list[str]] = Field(
        default_factory=dict, description="canonical field -> extra source field names"
    )
    events: dict[str, list[str]] = Field(
        default_factory=dict, description="canonical event -> extra event names"
    )
    rules: list[EventRule] = Field(default_factory=list, description="message regex -> event")

    @field_validator("fields", mode="before")
    @classmethod
    def _known_fields(cls, v: Any) -> Any:
        return _canonical_names(v, _canonical_field, "field", FIELD_ALIASES)

    @field_validator("events", mode="before")
    @classmethod
    def _known_events(cls, v: Any) -> Any:
        return _canonical_names(v, _canonical_event, "event", CANONICAL_EVENTS)

    @field_validator("clock_offsets_ms", mode="before")
    @classmethod
    def _offsets_in_range(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        return {pod: parse_signed_duration_ms(x) for pod, x in v.items()}

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, v: str) -> str:
        import zoneinfo

        if v == "UTC":
            return v
        try:
            zoneinfo.ZoneInfo(v)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"unknown time zone {v!r}; use an IANA name such as Europe/Berlin or UTC") from e
        return v

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: str | None) -> str | None:
        from leaselog.reading.formats import FORMATS

        if v is not None and v not in FORMATS:
            raise ValueError(f"unknown format {v!r}; known: {', '.join(FORMATS)}")
        return v


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the offending key/line."""


# friendly name -> Settings field: the names a leaselog.toml and `leaselog.analyze(...)` accept
FRIENDLY_OPTIONS: dict[str, str] = {
    "lease_ttl": "lease_ttl_ms",
    "max_skew": "max_skew_ms",
    "clock_jitter": "clock_jitter_ms",
    "stop_slo": "stop_slo_ms",
    "takeover_slo": "takeover_slo_ms",
    "renewal_interval": "renewal_interval_ms",
    "clock_offsets": "clock_offsets_ms",
}
_TOML_NAME = {v: k for k, v in FRIENDLY_OPTIONS.items()}
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_.\-@"' ]+?)\s*=""")


def _unquote(k: str) -> str:
    """A TOML key as written (`fields."k8s.pod"`, `'x'`) -> dotted parts without quotes; the split skips
    dots inside double quotes. Good enough to find a line for an error message, not a TOML parser."""
    return ".".join(p.strip().strip("\"'") for p in re.split(r"\.(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", k))


def _locate(text: str, path: list[str | int]) -> int | None:
    """The config line an error is about: walks TOML tables so `rules[1].message_regex` finds the
    `message_regex` of the second `[[rules]]`, `fields.jobX` the `jobX` key under `[fields]`."""
    table: str = ""
    counts: dict[str, int] = {}
    best: int | None = None
    want_table = str(path[0]) if path else ""
    want_index = path[1] if len(path) > 1 and isinstance(path[1], int) else None
    rest = [str(p) for p in path[1:] if not isinstance(p, int)]
    for no, line in enumerate(text.splitlines(), start=1):
        h = _HEADER.match(line)
        if h and not _KEY.match(line):
            table = _unquote(h.group(2))
            if h.group(1) == "[[":
                counts[table] = counts.get(table, -1) + 1
                table = f"{table}#{counts[table]}"
            here = table.split("#")[0]
            if here == want_table and (want_index is None or table == f"{want_table}#{want_index}"):
                best = best or no
                if not rest:
                    return no
            continue
        k = _KEY.match(line)
        if not k:
            continue
        key = _unquote(k.group(1))
        base = table.split("#")[0]
        full = f"{base}.{key}" if base else key
        in_table = want_index is None or table == f"{want_table}#{want_index}" or not table
        target = ".".join([want_table, *rest])
        if in_table and (full == target or full.startswith(target + ".")):
            return no
        if in_table and full == want_table:
            best = best or no  # `fields = {...}` inline: the whole table is on this line
    return best


def _error_path(loc: tuple[Any, ...], msg: str) -> list[str | int]:
    path: list[str | int] = [_TOML_NAME.get(str(loc[0]), str(loc[0])), *loc[1:]] if loc else []
    if len(path) == 1 and path[0] in ("fields", "events"):
        quoted = re.search(r"'([^']+)'", msg)  # the validator names the bad key
        if quoted:
            path.append(quoted.group(1))
    return path


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a `leaselog.toml` into settings keywords; errors name the file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{p}: cannot read config: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: config is not UTF-8 text") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from e
    try:
        keywords = _config_keywords(data)
        Settings(**keywords)
    except ValueError as e:  # also pydantic's ValidationError
        errors = e.errors() if isinstance(e, ValidationError) else [{"loc": (), "msg": str(e)}]
        msgs = []
        for err in errors:
            msg = str(err["msg"]).removeprefix("Value error, ")
            loc = tuple(err["loc"])
            line = _locate(text, _error_path(loc, msg))
            where = f"{p}:{line}" if line else str(p)
            shown = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in _error_path(loc, ""))
            shown = shown.lstrip(".") or "config"
            msgs.append(f"{where}: {shown}: {msg}")
        raise ConfigError("\n".join(msgs)) from e
    return keywords


def _config_keywords(data: dict[str, Any]) -> dict[str, Any]:
    """Translate TOML's friendlier names (`lease_ttl = "10m"`) into Settings fields."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        out[FRIENDLY_OPTIONS.get(k, k)] = v
    if isinstance(out.get("clock_offsets_ms"), dict):
        out["clock_offsets_ms"] = {
            pod: parse_signed_duration_ms(val) for pod, val in out["clock_offsets_ms"].items()
        }
    return out
