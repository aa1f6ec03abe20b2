"""Analysis settings: CLI options and `leaselog.toml`, validated with pydantic."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from leaselog.durations import parse_duration_ms, parse_signed_duration_ms


def _duration(v: Any) -> Any:
    if v is None or isinstance(v, int | float):
        return v
    if isinstance(v, str):
        return parse_duration_ms(v)
    return v


DurationMs = Annotated[float, BeforeValidator(_duration)]


class EventRule(BaseModel):
    """Map a log line to a canonical event by a regex on its message text.

    Named groups (e.g. `(?P<jobId>\\S+)`) become fields of the event.
    """

    model_config = ConfigDict(extra="forbid")
    event: str
    message_regex: str

    @field_validator("message_regex")
    @classmethod
    def _compiles(cls, v: str) -> str:
        import re

        try:
            re.compile(v)
        except re.error as e:
            raise ValueError(f"bad regex {v!r}: {e}") from e
        return v


class Settings(BaseModel):
    """Everything an analysis can be told. All durations are milliseconds (strings like `10m` accepted)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lease_ttl_ms: DurationMs | None = Field(None, description="TTL when the log has no leaseMs")
    max_skew_ms: DurationMs = Field(250.0, description="cross-pod clock skew bound")
    clock_offsets_ms: dict[str, float] = Field(
        default_factory=dict, description="per-pod clock offset: subtract from that pod's timestamps"
    )
    stop_slo_ms: DurationMs = Field(5_000.0, description="a stop slower than this is stop_delayed")
    takeover_slo_ms: DurationMs = Field(60_000.0, description="takeover target after a crash")
    renewal_interval_ms: DurationMs | None = Field(None, description="configured renewal interval")
    format: str | None = Field(None, description="force one input format for every file")
    fields: dict[str, list[str]] = Field(
        default_factory=dict, description="canonical field -> extra source field names"
    )
    events: dict[str, list[str]] = Field(
        default_factory=dict, description="canonical event -> extra event names"
    )
    rules: list[EventRule] = Field(default_factory=list, description="message regex -> event")

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        from leaselog.events import FIELD_ALIASES

        unknown = sorted(set(v) - set(FIELD_ALIASES))
        if unknown:
            raise ValueError(f"unknown canonical field(s) {unknown}; known: {sorted(FIELD_ALIASES)}")
        return v

    @field_validator("events")
    @classmethod
    def _known_events(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        from leaselog.events import CANONICAL_EVENTS

        unknown = sorted(set(v) - set(CANONICAL_EVENTS))
        if unknown:
            raise ValueError(f"unknown canonical event(s) {unknown}; known: {sorted(CANONICAL_EVENTS)}")
        return v

    @field_validator("rules")
    @classmethod
    def _known_rule_events(cls, v: list[EventRule]) -> list[EventRule]:
        from leaselog.events import CANONICAL_EVENTS

        for r in v:
            if r.event not in CANONICAL_EVENTS:
                raise ValueError(f"rule event {r.event!r} is not one of {sorted(CANONICAL_EVENTS)}")
        return v


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file and the offending key/line."""


def _line_of(text: str, key: str) -> int | None:
    for i, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith((f"{key} ", f"{key}=", f"[{key}]", f'"{key}"')):
            return i
    return None


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a `leaselog.toml` into settings keywords; errors name the file and line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{p}: cannot read config: {e.strerror}") from e
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from e
    try:
        Settings(**_config_keywords(data))
    except ValidationError as e:
        msgs = []
        for err in e.errors():
            key = str(err["loc"][0]) if err["loc"] else "?"
            line = _line_of(text, key)
            where = f"{p}:{line}" if line else str(p)
            msgs.append(f"{where}: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}")
        raise ConfigError("\n".join(msgs)) from e
    return _config_keywords(data)


def _config_keywords(data: dict[str, Any]) -> dict[str, Any]:
    """Translate TOML's friendlier names (`lease_ttl = "10m"`) into Settings fields."""
    renames = {
        "lease_ttl": "lease_ttl_ms",
        "max_skew": "max_skew_ms",
        "stop_slo": "stop_slo_ms",
        "takeover_slo": "takeover_slo_ms",
        "renewal_interval": "renewal_interval_ms",
        "clock_offsets": "clock_offsets_ms",
    }
    out: dict[str, Any] = {}
    for k, v in data.items():
        out[renames.get(k, k)] = v
    if isinstance(out.get("clock_offsets_ms"), dict):
        out["clock_offsets_ms"] = {
            pod: parse_signed_duration_ms(val)
            for pod, val in out["clock_offsets_ms"].items()
        }
    return out
