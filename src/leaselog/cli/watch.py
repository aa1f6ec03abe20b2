"""`leaselog watch`: follow logs as they are written and report lease incidents while they happen."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from leaselog.cli.common import (
    ClockOffsetOpt,
    FailOn,
    LeaseTtlOpt,
    RenewalIntervalOpt,
    StopSloOpt,
    TakeoverSloOpt,
    default_config,
    duration,
    engine_options,
)
from leaselog.config import ConfigError
from leaselog.reading.sources import InputError


def watch_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Log files, folders (new files in them are followed), globs, or - for stdin.",
            show_default=False,
        ),
    ],
    jsonl: Annotated[
        str | None,
        typer.Option(help="Write each finding event as a JSON line to this file (- for stdout)."),
    ] = None,
    exit_when_idle: Annotated[
        str | None,
        typer.Option(help="Exit when no input grew for this long (4s); else run until SIGINT/SIGTERM."),
    ] = None,
    on_finding: Annotated[
        str | None,
        typer.Option(
            help="Run this shell command with a finding's JSON on stdin (findings at --fail-on or worse)."
        ),
    ] = None,
    fail_on: Annotated[
        FailOn, typer.Option(help="Severity for --on-finding, and exit 1 at the end when one stands.")
    ] = FailOn.error,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port (127.0.0.1).")
    ] = None,
    forget_after: Annotated[
        str,
        typer.Option(
            help="Drop a job's state once all its executions ended this long before the newest line."
        ),
    ] = "15m",
    lease_ttl: LeaseTtlOpt = None,
    max_skew: Annotated[
        str | None, typer.Option(help="Clock-skew bound between pods. Default 250ms.")
    ] = None,
    clock_offset: ClockOffsetOpt = None,
    stop_slo: StopSloOpt = None,
    takeover_slo: TakeoverSloOpt = None,
    renewal_interval: RenewalIntervalOpt = None,
    log_format: Annotated[
        str | None, typer.Option("--format", help="Force one input format (see `leaselog formats`).")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="A leaselog.toml (default: ./leaselog.toml if present).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No live view, no summary.")] = False,
) -> None:
    """Follow logs as they are written and report lease incidents while they happen.

    Follows files like `tail -F` (rotation, truncation, new files in a folder, .gz files once complete);
    `-` follows stdin (`kubectl logs -f deploy/report-worker --prefix --timestamps | leaselog watch -`).
    With --jsonl each finding is a JSON line with `"state"`: open (still growing), final, or withdrawn.

    [bold]Examples[/bold]

      leaselog watch /var/log/report-worker/ --jsonl findings.jsonl

      kubectl logs -f deploy/report-worker --prefix --timestamps | leaselog watch - --on-finding 'curl -d @- $HOOK'

      leaselog watch logs/ --exit-when-idle 4s --jsonl - -q

    Exit code: 0, or 1 when a finding at --fail-on stands at the end; 2 for usage or input errors.
    """
    from leaselog.watch.command import run_watch

    if log_format is not None:
        from leaselog.reading.formats import FORMATS

        if log_format not in FORMATS:
            raise typer.BadParameter(f"{log_format!r}; known: {', '.join(FORMATS)}", param_hint="--format")
    try:
        options: dict[str, Any] = {
            **engine_options(
                lease_ttl, max_skew, stop_slo, takeover_slo, renewal_interval, clock_offset, log_format
            ),
        }
        idle = duration(exit_when_idle, "--exit-when-idle")
        forget = duration(forget_after, "--forget-after")
        config = default_config(config)
        code = run_watch(
            paths,
            options=options,
            config=config,
            jsonl=jsonl,
            exit_when_idle_ms=idle,
            forget_after_ms=forget,
            on_finding=on_finding,
            fail_on=None if fail_on is FailOn.never else fail_on.value,
            metrics_port=metrics_port,
            quiet=quiet,
        )
    except (InputError, ConfigError) as e:
        Console(stderr=True).print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from e
    raise typer.Exit(code)
