"""`leaselog analyze`: read, reconstruct, check, then write the outputs and the terminal summary.

Its options are the parameters of `analyze` below (typer reads them from the signature): a new option is
one more parameter there plus its use in the body."""

from __future__ import annotations

import dataclasses
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from leaselog.cli.common import (
    ClockOffsetOpt,
    FailOn,
    LeaseTtlOpt,
    RenewalIntervalOpt,
    StopSloOpt,
    TakeoverSloOpt,
    default_config,
    engine_options,
    first_error,
    print_error,
)
from leaselog.config import ConfigError
from leaselog.findings import SEVERITY_RANK
from leaselog.reading.sources import InputError
from leaselog.render.safe import printable


def progress_reader(paths: list[str], console: Console) -> tuple[Any, Any]:
    """A rich progress bar on the bytes read from disk (compressed bytes for .gz), only when stderr is a
    terminal and only once reading has taken over a second; (callback, context manager) or (None, None)."""
    if not console.is_terminal or os.environ.get("CI"):
        return None, None
    import contextlib
    import time

    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    from leaselog.reading.sources import expand_sources

    sources, _ = expand_sources(paths)
    total = sum(Path(s.path).stat().st_size for s in sources if not s.is_stdin)
    if not total:
        return None, None
    progress = Progress(
        "reading",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task("read", total=total)
    started = time.monotonic()
    shown = False

    def advance(n: int) -> None:
        nonlocal shown
        progress.update(task, advance=n)
        if not shown and time.monotonic() - started > 1.0:  # quick reads never flash a bar
            progress.start()
            shown = True

    stop = contextlib.ExitStack()
    stop.callback(progress.stop)
    return advance, stop


class Engine(StrEnum):
    local = "local"
    spark = "spark"


def _command(ctx: typer.Context) -> tuple[str, ...]:
    """The command line as the options were given (those left at their default left out), for the report's
    provenance: the same whatever way it was started (`leaselog`, `python -m leaselog`, `main([...])`)."""
    out = ["leaselog", "analyze"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if value is None or value == param.default or value is False or value == []:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            v = getattr(v, "value", v)  # enums as their value
            if not param.opts or not param.opts[0].startswith("-"):
                out.append(str(v))
            elif v is True:
                out.append(param.opts[0])
            else:
                out += [param.opts[0], str(v)]
    return tuple(out)


def analyze(
    ctx: typer.Context,
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Log files, folders (read recursively), globs, or - for stdin.", show_default=False
        ),
    ],
    lease_ttl: LeaseTtlOpt = None,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", help="Write the findings as JSON (the contract in docs/PRODUCT.md)."),
    ] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML timeline report.")] = None,
    parquet: Annotated[
        Path | None, typer.Option(help="Write every table as Parquet into this folder.")
    ] = None,
    fail_on: Annotated[
        FailOn, typer.Option(help="Exit 1 when a finding of this severity or worse exists.")
    ] = FailOn.never,
    max_skew: Annotated[
        str | None,
        typer.Option(
            help="Clock-skew bound between pods; smaller cross-pod findings are 'uncertain'. Default 250ms."
        ),
    ] = None,
    clock_offset: ClockOffsetOpt = None,
    stop_slo: StopSloOpt = None,
    takeover_slo: TakeoverSloOpt = None,
    renewal_interval: RenewalIntervalOpt = None,
    log_format: Annotated[
        str | None,
        typer.Option("--format", help="Force one input format for all files (see `leaselog formats`)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="A leaselog.toml with field/event mappings and settings (default: ./leaselog.toml if present)."
        ),
    ] = None,
    max_jobs: Annotated[
        int, typer.Option(help="Jobs shown in the terminal (all are in --json/--html).")
    ] = 50,
    timezone: Annotated[
        str | None,
        typer.Option(help="Zone of timestamps written without one (IANA name: Europe/Berlin). Default UTC."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    brief: Annotated[
        bool, typer.Option("--brief", help="Print only the table of findings by job, no details.")
    ] = False,
    pdf: Annotated[
        Path | None,
        typer.Option(help="Also print the HTML report to this PDF (needs Chromium and Playwright)."),
    ] = None,
    engine: Annotated[
        Engine, typer.Option(help="Where to run: this process, or Spark (pip install 'leaselog\\[spark]').")
    ] = Engine.local,
    master: Annotated[
        str | None,
        typer.Option(help="--engine spark: the master URL when leaselog starts Spark (default local[*])."),
    ] = None,
    partitions: Annotated[
        int | None,
        typer.Option(min=1, help="--engine spark: partitions the jobs are split into (default 4 x cores)."),
    ] = None,
) -> None:
    """Analyze logs and explain lease incidents.

    [bold]Examples[/bold]

      leaselog analyze sample_logs/article-incident/

      leaselog analyze 'logs/*.jsonl' logs/old.jsonl.gz - --lease-ttl 10m --json findings.json --fail-on error

      leaselog analyze logs/ --json - | jq '.findings[].code'

      leaselog analyze s3://bucket/lease-logs/ --engine spark --json findings.json

    The files (--json, --html, --parquet) are written before the terminal summary; `--json -` writes the
    JSON to standard output and the summary to standard error.

    Exit code: 0 when no finding reaches --fail-on, 1 when one does, 2 for usage or input errors (an output
    that cannot be written included: the others are still written), 3 when the inputs were read but gave
    no lease event at all (nothing to judge: the summary says why).
    """
    from pydantic import ValidationError

    from leaselog.outputs import OutputError, check_outputs, write_outputs
    from leaselog.pipeline import analyze as run_analysis
    from leaselog.render.terminal import render
    from leaselog.unread import UNREAD_EXIT, nothing_read

    json_to_stdout = json_out is not None and str(json_out) == "-"
    # the summary goes to stderr when stdout carries the JSON
    console = Summary(stderr=json_to_stdout, quiet=quiet)
    err = Console(stderr=True)
    options: dict[str, Any] = {
        **engine_options(
            lease_ttl, max_skew, stop_slo, takeover_slo, renewal_interval, clock_offset, log_format
        ),
        "timezone": timezone,
    }
    if log_format is not None:
        from leaselog.reading.formats import FORMATS

        if log_format not in FORMATS:
            raise typer.BadParameter(
                f"{printable(log_format)!r}; known: {', '.join(FORMATS)}", param_hint="--format"
            )
    if timezone is not None:
        from leaselog.config import Settings

        try:
            Settings(timezone=timezone)
        except ValidationError as e:
            raise typer.BadParameter(printable(first_error(e)), param_hint="--timezone") from e
    config = default_config(config)
    # every output is checked before minutes of reading: a wrong path is known at once
    try:
        outputs = check_outputs(json_out=json_out, html=html, parquet=parquet, inputs=paths)
    except OutputError as e:
        print_error(err, str(e))
        raise typer.Exit(2) from e
    if pdf is not None and (pdf.is_dir() or not pdf.resolve().parent.is_dir()):
        print_error(err, f"--pdf {printable(pdf)}: {'is a folder' if pdf.is_dir() else 'no such folder'}")
        raise typer.Exit(2)
    outputs = dataclasses.replace(outputs, command=_command(ctx))
    try:
        callback, progress = (None, None) if quiet else progress_reader(paths, err)
    except OSError:
        callback, progress = None, None
    # each event's whole record is only shown by the HTML report (hovers) and kept in Parquet
    options["keep_fields"] = html is not None or parquet is not None or pdf is not None
    try:
        if engine is Engine.spark:
            a = _on_spark(paths, config, options, master, partitions, err)
        elif progress is not None:
            with progress:
                a = run_analysis(paths, config=config, progress=callback, **options)
        else:
            a = run_analysis(paths, config=config, **options)
    except (InputError, ConfigError) as e:
        print_error(err, str(e))
        raise typer.Exit(2) from e
    except ValidationError as e:  # a setting out of range (options are checked above; this is a config's)
        print_error(err, first_error(e))
        raise typer.Exit(2) from e
    # the files first: a closed terminal (`| head`) must not cost them
    written, failures = write_outputs(a, outputs)
    if pdf is not None:
        from leaselog.render.pdf import PdfError, write_pdf

        try:
            html_ok = outputs.html if outputs.html in written else None
            written.append(str(write_pdf(a, pdf, html=html_ok, command=outputs.command)))
        except (PdfError, OSError) as e:
            failures.append(f"--pdf {printable(pdf)}: {e}")
    for message in failures:
        print_error(err, message)
    if not quiet:
        render(a, console, max_jobs=max_jobs, brief=brief)
    for path in written:
        console.print(Text(f"wrote {printable(path)}"), highlight=False)
    if failures:
        raise typer.Exit(2)
    if nothing_read(a.input_reports) is not None:
        raise typer.Exit(UNREAD_EXIT)
    if fail_on is not FailOn.never:
        limit = SEVERITY_RANK[fail_on.value]
        if any(SEVERITY_RANK[sev] <= limit for sev in a.findings["severity"].unique().to_list()):
            raise typer.Exit(1)


def _on_spark(
    paths: list[str],
    config: Path | None,
    options: dict[str, Any],
    master: str | None,
    partitions: int | None,
    err: Console,
) -> Any:
    """The analysis on Spark (`leaselog.spark.run`): the same Analysis, so the same outputs."""
    from leaselog.pipeline import settings_of
    from leaselog.spark import SparkError, run

    if "-" in paths:
        raise InputError("--engine spark reads files and objects (paths, s3://, gs://, ...), not stdin")
    keep = options.pop("keep_fields")
    settings = settings_of(config=config, options=options)
    try:
        return run(paths, settings, master=master, partitions=partitions, frames=keep)
    except SparkError as e:
        print_error(err, str(e))
        raise typer.Exit(2) from e


class Summary(Console):
    """The terminal summary's console. Its reader closing the pipe (`| head -1`) ends the summary, not the
    run: rich would exit 1 (which means "a finding reached --fail-on"); here the rest of the summary is
    dropped and the exit code is the findings' as always. The files were written before it."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        try:  # Python would report the broken pipe again when it flushes stdout at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
