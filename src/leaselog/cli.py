"""The `leaselog` command line. Every command opens the library and only formats what it returns."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from leaselog.config import ConfigError
from leaselog.durations import parse_duration_ms, parse_signed_duration_ms
from leaselog.findings import SEVERITY_RANK
from leaselog.reading.sources import InputError
from leaselog.render.safe import printable

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


class FailOn(StrEnum):
    never = "never"
    error = "error"
    warning = "warning"
    info = "info"


def _duration(value: str | None, option: str) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration_ms(value)
    except ValueError as e:
        raise typer.BadParameter(printable(e), param_hint=option) from e


def _offsets(values: list[str] | None) -> dict[str, float] | None:
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


def _progress_reader(paths: list[str], console: Console) -> tuple[Any, Any]:
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


def _engine_options(
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
        "lease_ttl_ms": _duration(lease_ttl, "--lease-ttl"),
        "max_skew_ms": _duration(max_skew, "--max-skew"),
        "stop_slo_ms": _duration(stop_slo, "--stop-slo"),
        "takeover_slo_ms": _duration(takeover_slo, "--takeover-slo"),
        "renewal_interval_ms": _duration(renewal_interval, "--renewal-interval"),
        "clock_offsets_ms": _offsets(clock_offset),
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


@app.command()
def analyze(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Log files, folders (read recursively), globs, or - for stdin.", show_default=False
        ),
    ],
    lease_ttl: LeaseTtlOpt = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the findings as JSON (the contract in the README).")
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
) -> None:
    """Analyze logs and explain lease incidents.

    [bold]Examples[/bold]

      leaselog analyze sample_logs/article-incident/

      leaselog analyze 'logs/*.jsonl' logs/old.jsonl.gz - --lease-ttl 10m --json findings.json --fail-on error

      leaselog analyze logs/ --json - | jq '.findings[].code'

    The files (--json, --html, --parquet) are written before the terminal summary; `--json -` writes the
    JSON to standard output and the summary to standard error.

    Exit code: 0 when no finding reaches --fail-on, 1 when one does, 2 for usage or input errors (an output
    that cannot be written included: the others are still written).
    """
    from pydantic import ValidationError

    from leaselog.outputs import OutputError, check_outputs, write_outputs
    from leaselog.pipeline import analyze as run_analysis
    from leaselog.render.terminal import render

    json_to_stdout = json_out is not None and str(json_out) == "-"
    # the summary goes to stderr when stdout carries the JSON
    console = _Summary(stderr=json_to_stdout, quiet=quiet)
    err = Console(stderr=True)
    options: dict[str, Any] = {
        **_engine_options(
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
            raise typer.BadParameter(printable(_first_error(e)), param_hint="--timezone") from e
    if config is None and Path("leaselog.toml").is_file():
        config = Path("leaselog.toml")
    # every output is checked before minutes of reading: a wrong path is known at once
    try:
        outputs = check_outputs(json_out=json_out, html=html, parquet=parquet, inputs=paths)
    except OutputError as e:
        _error(err, str(e))
        raise typer.Exit(2) from e
    try:
        callback, progress = (None, None) if quiet else _progress_reader(paths, err)
    except OSError:
        callback, progress = None, None
    # each event's whole record is only shown by the HTML report (hovers) and kept in Parquet
    options["keep_fields"] = html is not None or parquet is not None
    try:
        if progress is not None:
            with progress:
                a = run_analysis(paths, config=config, progress=callback, **options)
        else:
            a = run_analysis(paths, config=config, **options)
    except (InputError, ConfigError) as e:
        _error(err, str(e))
        raise typer.Exit(2) from e
    except ValidationError as e:  # a setting out of range (options are checked above; this is a config's)
        _error(err, _first_error(e))
        raise typer.Exit(2) from e
    # the files first: a closed terminal (`| head`) must not cost them
    written, failures = write_outputs(a, outputs)
    for message in failures:
        _error(err, message)
    if not quiet:
        render(a, console, max_jobs=max_jobs)
    for path in written:
        console.print(Text(f"wrote {printable(path)}"), highlight=False)
    if failures:
        raise typer.Exit(2)
    if fail_on is not FailOn.never:
        limit = SEVERITY_RANK[fail_on.value]
        if any(SEVERITY_RANK[f.severity] <= limit for f in a.finding_list):
            raise typer.Exit(1)


def _error(console: Console, message: str) -> None:
    """One `error:` line; the message is text (paths and values), never markup."""
    console.print(
        Text.assemble(("error:", "red"), " ", printable(message, lines=True)), highlight=False, soft_wrap=True
    )


def _first_error(e: Any) -> str:
    errors = e.errors()
    return "; ".join(str(x["msg"]).removeprefix("Value error, ") for x in errors) if errors else str(e)


class _Summary(Console):
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


@app.command("formats")
def formats_command() -> None:
    """List the log formats leaselog reads, what each maps where, and the auto-detection order.

    [bold]Example[/bold]

      leaselog formats
    """
    from leaselog.render.formats import render_formats

    render_formats(Console())


@app.command("inspect")
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
    from leaselog.reading.inspect import inspect_file
    from leaselog.render.formats import render_inspection

    err = Console(stderr=True)
    if config is None and Path("leaselog.toml").is_file():
        config = Path("leaselog.toml")
    try:
        base = load_config_file(config) if config is not None else {}
        if log_format is not None:
            base["format"] = log_format
        settings = Settings(**base)
        result = inspect_file(file, settings=settings, events=events)
    except (InputError, ConfigError) as e:
        _error(err, str(e))
        raise typer.Exit(2) from e
    except ValueError as e:  # pydantic: an unknown --format
        _error(err, str(e))
        raise typer.Exit(2) from e
    if json_out:
        import orjson

        sys.stdout.write(
            orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2, default=str).decode() + "\n"
        )
    else:
        render_inspection(result, Console())


@app.command("reproduce")
def reproduce_command(
    scenario: Annotated[
        str,
        typer.Argument(
            help="article | renewal | renewal-stall | crash | random (a campaign) | replay (a kept lab run)",
            show_default=False,
        ),
    ],
    folder: Annotated[
        Path | None,
        typer.Argument(help="replay: the kept run's folder (with truth.json).", show_default=False),
    ] = None,
    redis_url: Annotated[
        str | None,
        typer.Option(
            "--redis",
            help="Use this server (only keys under a fresh run-id prefix) instead of a throwaway redis-server.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Folder for the pods' logs and truth.json. Default: ./leaselog-reproduce/SCENARIO-RUNID/"
        ),
    ] = None,
    lease: Annotated[str, typer.Option(help="Lease TTL the workers acquire with.")] = "5s",
    renewal: Annotated[str, typer.Option(help="Renewal interval (renewal, renewal-stall, crash).")] = "1s",
    max_runtime: Annotated[
        str, typer.Option(help="Local bound on a job's runtime, even while renewals succeed.")
    ] = "20s",
    stall: Annotated[
        str | None,
        typer.Option(
            help="renewal-stall: how long CLIENT PAUSE stalls Redis (default: the lease). It pauses every client of that server."
        ),
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the analysis as JSON (the contract in the README).")
    ] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML timeline report.")] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing but errors and the ground-truth verdict.")
    ] = False,
    runs: Annotated[int, typer.Option(help="random: how many runs.")] = 20,
    seed: Annotated[
        int, typer.Option(help="random: the campaign's seed (run i of seed S is always the same draw).")
    ] = 1,
    start: Annotated[
        int, typer.Option(help="random: index of the first run (replay part of a campaign).")
    ] = 0,
    keep: Annotated[bool, typer.Option(help="random: keep the folders of passing runs too.")] = False,
    jobs: Annotated[
        int,
        typer.Option(help="random: runs at a time, each on its own throwaway redis-server (1 with --redis)."),
    ] = 2,
    report: Annotated[
        Path | None, typer.Option(help="random: write the per-kind table and the failed runs as JSON.")
    ] = None,
    diff: Annotated[
        bool, typer.Option(help="random, replay: also check that every log shape gives the same findings.")
    ] = True,
    shape: Annotated[
        str | None, typer.Option(help="replay: score this log shape instead of the drawn one.")
    ] = None,
) -> None:
    """Run a lease incident for real against Redis (worker pods are separate processes), then analyze
    what they logged, and hold the analysis against what the run measured itself (truth.json).

    [bold]article[/bold]: the article's demo: no renewal, overlap, lease outlived, stale release.

    [bold]renewal[/bold]: the proposed lifecycle; pod A paused (SIGSTOP) past its lease: renewal rejected, stop confirmed, stale write rejected by fencing.

    [bold]renewal-stall[/bold]: the same lifecycle; Redis stalled (CLIENT PAUSE): renewal times out, A stops in time.

    [bold]crash[/bold]: pod A killed (SIGKILL) mid-job; B takes over the redelivered request after A's lease expires.

    [bold]random[/bold]: a randomized campaign (--runs, --seed): lease, renewal, retry policy, 2-5 pods, a fault (SIGSTOP, CLIENT PAUSE, SIGKILL, ACL network cut, slow unit), trigger paths, fencing, clock offsets and the log shape drawn per run; each run's findings scored against its truth, per kind. Failed runs are kept under --out (default ./leaselog-lab/seed-S/).

    [bold]replay[/bold] DIR: score a kept lab run again (after a fix).

    [bold]Examples[/bold]

      leaselog reproduce article

      leaselog reproduce renewal --lease 2s --renewal 500ms --html renewal.html

      leaselog reproduce crash --redis redis://127.0.0.1:6379/0 --out runs/crash

      leaselog reproduce random --runs 200 --seed 7 --report lab.json

      leaselog reproduce replay leaselog-lab/seed-7/run-7-0042

    Exit code: 0 when the analysis agrees with the ground truth, 1 when it does not, 2 when the scenario could not run (no redis-server, unreachable server, bad options).
    """
    if scenario in ("random", "replay"):
        raise typer.Exit(
            _reproduce_lab(
                scenario, folder, out, redis_url, runs, seed, start, keep, jobs, report, diff, shape, quiet
            )
        )
    from rich.table import Table

    from leaselog.pipeline import analyze as run_analysis
    from leaselog.render.terminal import render
    from leaselog.reproduce import SCENARIOS, ReproduceError, ReproduceOptions, run_scenario
    from leaselog.reproduce.truth import compare

    console = Console(quiet=quiet)
    err = Console(stderr=True)
    if scenario not in SCENARIOS:
        raise typer.BadParameter(f"{scenario!r}; known: {', '.join(SCENARIOS)}", param_hint="SCENARIO")

    def ms(value: str | None, option: str) -> int | None:
        v = _duration(value, option)
        return None if v is None else round(v)

    options = ReproduceOptions(
        lease_ms=ms(lease, "--lease") or 5000,
        renewal_ms=ms(renewal, "--renewal") or 1000,
        max_runtime_ms=ms(max_runtime, "--max-runtime") or 20_000,
        stall_ms=ms(stall, "--stall"),
    )
    say = (lambda _m: None) if quiet else (lambda m: err.print(f"[dim]{m}[/dim]", highlight=False))
    try:
        run = run_scenario(scenario, options, redis_url=redis_url, out=out, progress=say)
    except ReproduceError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from e
    console.print(f"[bold]{run.scenario}[/bold]: {run.truth['summary']}", highlight=False)
    console.print(
        f"logs: {', '.join(str(p) for p in run.logs)}; ground truth: {run.truth_path}\n", highlight=False
    )
    a = run_analysis(run.logs)
    render(a, console)
    table = Table(
        title="Ground truth (measured by the run) vs analysis", title_justify="left", show_edge=False
    )
    for col in ("what", "truth", "leaselog", ""):
        table.add_column(col)
    agreements = compare(run.truth, a)
    for g in agreements:
        mark = {True: "[green]ok[/green]", False: "[red]DIFFERS[/red]", None: ""}[g.ok]
        table.add_row(g.what, g.truth, g.found, mark)
    console.print()
    console.print(table)
    if json_out is not None:
        a.write_json(json_out)
        console.print(f"wrote {json_out}")
    if html is not None:
        from leaselog.render.html import write_report

        write_report(a, html)
        console.print(f"wrote {html}")
    bad = [g.what for g in agreements if g.ok is False]
    if bad:
        err.print(
            f"[red]the analysis disagrees with the ground truth:[/red] {', '.join(bad)}", highlight=False
        )
        raise typer.Exit(1)


@app.command("watch")
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
            **_engine_options(
                lease_ttl, max_skew, stop_slo, takeover_slo, renewal_interval, clock_offset, log_format
            ),
        }
        idle = _duration(exit_when_idle, "--exit-when-idle")
        forget = _duration(forget_after, "--forget-after")
        if config is None and Path("leaselog.toml").is_file():
            config = Path("leaselog.toml")
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


def _reproduce_lab(
    scenario: str,
    folder: Path | None,
    out: Path | None,
    redis_url: str | None,
    runs: int,
    seed: int,
    start: int,
    keep: bool,
    jobs: int,
    report: Path | None,
    diff: bool,
    shape: str | None,
    quiet: bool,
) -> int:
    """`reproduce random` / `reproduce replay DIR` (leaselog.reproduce.lab_cli)."""
    from leaselog.reproduce import lab_cli
    from leaselog.reproduce.shapes import SHAPES

    if scenario == "replay":
        if folder is None:
            raise typer.BadParameter("replay needs the kept run's folder", param_hint="FOLDER")
        if shape is not None and shape not in SHAPES:
            raise typer.BadParameter(f"{shape!r}; known: {', '.join(SHAPES)}", param_hint="--shape")
        return lab_cli.replay(folder, shape, diff, quiet)
    if runs < 1:
        raise typer.BadParameter("at least one run", param_hint="--runs")
    return lab_cli.campaign(
        runs=runs,
        seed=seed,
        out=out,
        redis_url=redis_url,
        keep=keep,
        report=report,
        diff=diff,
        start=start,
        jobs=jobs,
        quiet=quiet,
    )


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


if __name__ == "__main__":
    raise SystemExit(main())
