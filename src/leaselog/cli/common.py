"""What the commands share: option types declared once, duration/offset parsing as usage errors, the
`error:` line, and the Settings fields analyze and watch both take from their options."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from leaselog.durations import parse_duration_ms, parse_signed_duration_ms
from leaselog.render.safe import printable


class FailOn(StrEnum):
    never = "never"
    error = "error"
    warning = "warning"
    info = "info"


def duration(value: str | None, option: str) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration_ms(value)
    except ValueError as e:
        raise typer.BadParameter(printable(e), param_hint=option) from e


def offsets(values: list[str] | None) -> dict[str, float] | None:
    if not values:
        return None
    out: dict[str, float] = {}
    for v in values:
        pod, sep, amount = v.rpartition("=")
        if not sep or not pod:
            raise typer.BadParameter(
                f"{printable(v)!r}: use POD=OFFSET, e.g. pod-b=-120ms", param_hint="--clock-offset"
            )
        try:
            out[pod] = parse_signed_duration_ms(amount)
        except ValueError as e:
            raise typer.BadParameter(printable(e), param_hint="--clock-offset") from e
    return out


def engine_options(
    lease_ttl: str | None,
    max_skew: str | None,
    stop_slo: str | None,
    takeover_slo: str | None,
    renewal_interval: str | None,
    clock_offset: list[str] | None,
    log_format: str | None,
) -> dict[str, Any]:
    """The Settings fields analyze and watch both take from their options (usage errors raised as such)."""
    return {
        "lease_ttl_ms": duration(lease_ttl, "--lease-ttl"),
        "max_skew_ms": duration(max_skew, "--max-skew"),
        "stop_slo_ms": duration(stop_slo, "--stop-slo"),
        "takeover_slo_ms": duration(takeover_slo, "--takeover-slo"),
        "renewal_interval_ms": duration(renewal_interval, "--renewal-interval"),
        "clock_offsets_ms": offsets(clock_offset),
        "format": log_format,
    }


# options analyze and watch share (one declaration, one help text)
LeaseTtlOpt = Annotated[
    str | None, typer.Option(help="Lease TTL when the log has no leaseMs: 10m, 30s, 600000ms.")
]
ClockOffsetOpt = Annotated[
    list[str] | None,
    typer.Option(help="POD=OFFSET, subtracted from that pod's timestamps (repeatable): pod-b=-120ms."),
]
StopSloOpt = Annotated[str | None, typer.Option(help="A stop slower than this is stop_delayed. Default 5s.")]
TakeoverSloOpt = Annotated[str | None, typer.Option(help="Takeover target after a crash. Default 60s.")]
RenewalIntervalOpt = Annotated[
    str | None, typer.Option(help="Configured renewal interval (else inferred per execution).")
]


def print_error(console: Console, message: str) -> None:
    """One `error:` line; the message is text (paths and values), never markup."""
    console.print(
        Text.assemble(("error:", "red"), " ", printable(message, lines=True)), highlight=False, soft_wrap=True
    )


def first_error(e: Any) -> str:
    errors = e.errors()
    return "; ".join(str(x["msg"]).removeprefix("Value error, ") for x in errors) if errors else str(e)


def default_config(config: Path | None) -> Path | None:
    """The --config given, else ./leaselog.toml when the working folder has one."""
    if config is None and Path("leaselog.toml").is_file():
        return Path("leaselog.toml")
    return config
