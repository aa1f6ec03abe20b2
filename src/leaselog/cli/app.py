"""The `leaselog` command line: the typer app, its commands (one module each), and `main`.

Every command opens the library and only formats what it returns."""

from __future__ import annotations

import sys

import typer

from leaselog.cli.analyze import analyze
from leaselog.cli.inspect import formats_command, inspect_command
from leaselog.cli.reproduce import reproduce_command
from leaselog.cli.watch import watch_command

app = typer.Typer(
    name="leaselog",
    help="Explain distributed-lock lease incidents from job workers' structured logs.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Explain distributed-lock lease incidents from job workers' structured logs."""


# the order of `leaselog --help`
app.command("analyze")(analyze)
app.command("formats")(formats_command)
app.command("inspect")(inspect_command)
app.command("reproduce")(reproduce_command)
app.command("watch")(watch_command)


def main(argv: list[str] | None = None) -> int:
    """Entry point: returns the exit code (0 ok, 1 findings at --fail-on, 2 usage/input error)."""
    try:
        # with standalone_mode=False click returns the code of a typer.Exit instead of raising it
        rc = app(args=argv if argv is not None else sys.argv[1:], standalone_mode=False)
    except typer.Exit as e:
        return int(e.exit_code)
    except typer.Abort:
        return 130
    except Exception as e:
        # usage errors (typer vendors click's exception classes, so match on their interface)
        show = getattr(e, "show", None)
        if callable(show) and isinstance(getattr(e, "exit_code", None), int):
            show()
            return 2
        raise
    return rc if isinstance(rc, int) else 0
