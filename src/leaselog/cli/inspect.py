"""`leaselog formats` and `leaselog inspect`: what leaselog reads, and what it understood of one file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from leaselog.cli.common import default_config, print_error
from leaselog.config import ConfigError
from leaselog.reading.sources import InputError


def formats_command() -> None:
    """List the log formats leaselog reads, what each maps where, and the auto-detection order.

    [bold]Example[/bold]

      leaselog formats
    """
    from leaselog.render.formats import render_formats

    render_formats(Console())


def inspect_command(
    file: Annotated[Path, typer.Argument(help="One log file (plain or .gz).", show_default=False)],
    log_format: Annotated[
        str | None,
        typer.Option("--format", help="Force a format instead of detecting it (see `leaselog formats`)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="A leaselog.toml whose field/event names and rules to apply (default: ./leaselog.toml if present)."
        ),
    ] = None,
    events: Annotated[int, typer.Option(help="How many of the first events to show.")] = 20,
    json_out: Annotated[bool, typer.Option("--json", help="Print the inspection as JSON instead.")] = False,
) -> None:
    """Show what leaselog understood of one file: the format detected, the keys found and what each fills,
    the first events as read, and event names that mapped to nothing (map them in leaselog.toml).

    [bold]Examples[/bold]

      leaselog inspect sample_logs/formats/otlp/pod-a.jsonl

      leaselog inspect logs/worker.json --config leaselog.toml --events 50
    """
    from leaselog.config import Settings, load_config_file
    from leaselog.inspection import inspect_file
    from leaselog.render.formats import render_inspection

    err = Console(stderr=True)
    config = default_config(config)
    try:
        base = load_config_file(config) if config is not None else {}
        if log_format is not None:
            base["format"] = log_format
        settings = Settings(**base)
        result = inspect_file(file, settings=settings, events=events)
    except (InputError, ConfigError) as e:
        print_error(err, str(e))
        raise typer.Exit(2) from e
    except ValueError as e:  # pydantic: an unknown --format
        print_error(err, str(e))
        raise typer.Exit(2) from e
    if json_out:
        import orjson

        sys.stdout.write(
            orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2, default=str).decode() + "\n"
        )
    else:
        render_inspection(result, Console())
