"""`leaselog reproduce`: run a lease incident for real against Redis and hold the analysis against the
ground truth the run measured; `random` and `replay` hand over to leaselog.reproduce.lab_cli."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from leaselog.cli.common import duration


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
        Path | None,
        typer.Option("--json", help="Write the analysis as JSON (the contract in docs/PRODUCT.md)."),
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
        bool,
        typer.Option(
            help="random, replay: also check that every log shape, with and without execution ids, gives the same findings."
        ),
    ] = True,
    shape: Annotated[
        str | None, typer.Option(help="replay: score this log shape instead of the drawn one.")
    ] = None,
    only: Annotated[
        str | None,
        typer.Option(
            help="random: only the runs that draw one of these kinds (comma-separated: failover, clock_step, coarse)."
        ),
    ] = None,
    without: Annotated[
        str | None,
        typer.Option(
            help="random: draw none of these kinds (comma-separated: failover, clock_step, coarse)."
        ),
    ] = None,
) -> None:
    """Run a lease incident for real against Redis (worker pods are separate processes), then analyze
    what they logged, and hold the analysis against what the run measured itself (truth.json).

    [bold]article[/bold]: the article's demo: no renewal, overlap, lease outlived, stale release.

    [bold]renewal[/bold]: the proposed lifecycle; pod A paused (SIGSTOP) past its lease: renewal rejected, stop confirmed, stale write rejected by fencing.

    [bold]renewal-stall[/bold]: the same lifecycle; Redis stalled (CLIENT PAUSE): renewal times out, A stops in time.

    [bold]crash[/bold]: pod A killed (SIGKILL) mid-job; B takes over the redelivered request after A's lease expires.

    [bold]random[/bold]: a randomized campaign (--runs, --seed): lease, renewal, retry policy, 1-5 pods, a fault (SIGSTOP, CLIENT PAUSE, SIGKILL, ACL network cut, slow unit, a failover of the lock's Redis to a replica that missed the acquisition), a clock step on one pod, trigger paths, fencing, clock offsets and the log shape drawn per run, and pods that run the job several times (a scheduler firing every few seconds, two worker threads, a redelivery to the same pod; ids unique, counted per pod or reused); each run's findings scored against its truth, per kind, with execution ids and again with every id removed. Failed runs are kept under --out (default ./leaselog-lab/seed-S/).

    [bold]replay[/bold] DIR: score a kept lab run again (after a fix).

    [bold]Examples[/bold]

      leaselog reproduce article

      leaselog reproduce renewal --lease 2s --renewal 500ms --html renewal.html

      leaselog reproduce crash --redis redis://127.0.0.1:6379/0 --out runs/crash

      leaselog reproduce random --runs 200 --seed 7 --report lab.json

      leaselog reproduce replay leaselog-lab/seed-7/run-7-0042

    The lab needs its extra: pip install 'leaselog\\[lab]' (the Redis client and the lock libraries' workers).

    Exit code: 0 when the analysis agrees with the ground truth, 1 when it does not, 2 when the scenario could not run (the lab's extra not installed, no redis-server, unreachable server, bad options).
    """
    require_lab()
    if scenario in ("random", "replay"):
        raise typer.Exit(
            reproduce_lab(
                scenario,
                folder,
                out,
                redis_url,
                runs,
                seed,
                start,
                keep,
                jobs,
                report,
                diff,
                shape,
                quiet,
                only,
                without,
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
        v = duration(value, option)
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
        from leaselog.render.document import write_json

        write_json(a, json_out)
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


def require_lab() -> None:
    """Exit 2 with the command that installs the lab when its extra is missing here (the other commands
    never need it)."""
    from leaselog.reproduce import LabMissing
    from leaselog.reproduce import require_lab as check

    try:
        check()
    except LabMissing as e:
        line = f"[red]error:[/red] leaselog reproduce: {escape(str(e))}"
        Console(stderr=True).print(line, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from e


def reproduce_lab(
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
    only: str | None = None,
    without: str | None = None,
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
        only=run_kinds(only),
        without=run_kinds(without),
    )


def run_kinds(option: str | None) -> tuple[str, ...]:
    """`failover,clock-step` -> ("failover", "clock_step")."""
    return tuple(k.strip().replace("-", "_") for k in (option or "").split(",") if k.strip())
