"""`leaselog reproduce random` and `leaselog reproduce replay DIR`: the lab's terminal side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from leaselog.reproduce.campaign import (
    COLUMNS,
    RUN_KINDS,
    Campaign,
    differential,
    rescore,
    run_campaign,
    score_folder,
)
from leaselog.reproduce.score import RunScore
from leaselog.reproduce.server import ReproduceError


def table_of(rows: list[dict[str, Any]], title: str) -> Table:
    t = Table(title=title, title_justify="left", show_edge=False)
    t.add_column("kind")
    for c in COLUMNS:
        t.add_column(c.replace("_", " "), justify="right")
    for r in rows:
        bad = r["missed"] or r["false"] or r["figure_errors"]
        t.add_row(
            f"[red]{r['kind']}[/red]" if bad else r["kind"],
            *(str(r[c]) for c in COLUMNS),
        )
    return t


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """The per-kind table as Markdown (for a README or a CI summary)."""
    head = "| kind | " + " | ".join(c.replace("_", " ") for c in COLUMNS) + " |"
    sep = "|---|" + "---:|" * len(COLUMNS)
    body = ["| " + r["kind"] + " | " + " | ".join(str(r[c]) for c in COLUMNS) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def _wide(quiet: bool) -> Console:
    """The table needs ~110 columns; a pipe or CI log gets them too (rich would wrap at 80)."""
    c = Console(quiet=quiet)
    return c if c.is_terminal else Console(quiet=quiet, width=120)


def campaign(
    *,
    runs: int,
    seed: int,
    out: Path | None,
    redis_url: str | None,
    keep: bool,
    report: Path | None,
    diff: bool,
    start: int,
    jobs: int,
    quiet: bool,
    only: tuple[str, ...] = (),
    without: tuple[str, ...] = (),
) -> int:
    console = _wide(quiet)
    err = Console(stderr=True)
    folder = out or Path("leaselog-lab") / f"seed-{seed}"

    def say(m: str) -> None:
        if not quiet:
            bad = " FAIL " in m or m.startswith("    ")
            err.print(f"[red]{m}[/red]" if bad else f"[dim]{m}[/dim]", highlight=False, soft_wrap=True)

    try:
        camp = run_campaign(
            runs,
            seed,
            folder,
            redis_url=redis_url,
            keep=keep,
            diff=diff,
            start=start,
            jobs=jobs,
            progress=say,
            only=only,
            without=without,
        )
    except ReproduceError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        return 2
    _summary(camp, folder, console)
    if report is not None:
        report.write_text(json.dumps(camp.report(), indent=1) + "\n", encoding="utf-8")
        console.print(f"wrote {report}")
    if camp.errors and not camp.results:
        return 2
    return 0 if camp.ok else 1


def totals_of(camp: Campaign) -> Table:
    """Runs, failed runs, expected, found, missed, false, figure errors: with ids against without."""
    t = Table(
        title="the same runs with execution ids and without: against the truth, then against the flat logs with ids",
        title_justify="left",
        show_edge=False,
    )
    cols = (
        "runs",
        "failedRuns",
        "expected",
        "found",
        "undecided",
        "missed",
        "false",
        "figure_errors",
        "differentRuns",
        "differentRenderings",
    )
    names = {
        "failedRuns": "failed runs",
        "differentRuns": "runs differing",
        "differentRenderings": "renderings",
    }
    t.add_column("logs")
    for c in cols:
        t.add_column(names.get(c, c.replace("_", " ")), justify="right")
    for label, ids in (("with ids", True), ("without ids", False)):
        row = camp.totals(ids)
        t.add_row(label, *(str(row[c]) for c in cols))
    return t


def by_run_kind(camp: Campaign) -> Table | None:
    """The totals of the failover, clock-step and whole-second runs apart, with ids and without."""
    kinds = [k for k in RUN_KINDS if camp.of_kind(k)]
    if not kinds:
        return None
    t = Table(title="failover, clock-step and whole-second runs apart", title_justify="left", show_edge=False)
    cols = (
        "runs",
        "failedRuns",
        "expected",
        "found",
        "undecided",
        "missed",
        "false",
        "figure_errors",
        "stepAllowed",
        "unchecked",
        "differentRuns",
        "differentRenderings",
    )
    t.add_column("runs of")
    t.add_column("logs")
    for c in cols:
        names = {
            "failedRuns": "failed runs",
            "stepAllowed": "off by a step",
            "differentRuns": "runs differing",
            "differentRenderings": "renderings",
        }
        t.add_column(names.get(c, c.replace("_", " ")), justify="right")
    for k in kinds:
        for label, ids in (("with ids", True), ("without ids", False)):
            row = camp.totals(ids, k)
            t.add_row(k.replace("_", "-"), label, *(str(row[c]) for c in cols))
    return t


def _summary(camp: Campaign, folder: Path, console: Console) -> None:
    rep = camp.report()
    console.print(
        table_of(rep["table"], f"leaselog reproduce random: {rep['runs']} runs, seed {camp.seed}"),
    )
    console.print(table_of(rep["tableNoIds"], "the same runs without execution ids"))
    console.print(totals_of(camp))
    kinds = by_run_kind(camp)
    if kinds is not None:
        console.print(kinds)
    failed = rep["failedRuns"]
    if failed:
        shown = ", ".join(failed[:8]) + (f" and {len(failed) - 8} more" if len(failed) > 8 else "")
        console.print(
            f"[red]{len(failed)} of {rep['runs']} run(s) failed[/red], kept under {folder}/: {shown}\n"
            f"  replay one: leaselog reproduce replay {folder}/{failed[0]}\n"
            f"  all again (after a fix): leaselog reproduce replay {folder}",
            highlight=False,
        )
    else:
        console.print(
            "[green]every run agreed with its truth[/green] (no miss, no false finding, no figure error)"
        )
    for e in camp.errors:
        console.print(f"[red]could not run[/red] {e}", highlight=False)


def replay(folder: Path, shape: str | None, diff: bool, quiet: bool) -> int:
    """Re-analyze a kept run (its truth.json and flat logs) and score it again; given a campaign's folder
    (run-*/truth.json inside), every kept run, with the campaign's table."""
    console = _wide(quiet)
    truth_path = folder / "truth.json"
    runs = sorted(p.parent for p in folder.glob("run-*/truth.json"))
    if not truth_path.is_file() and runs:
        return _replay_campaign(folder, runs, diff, console)
    if not truth_path.is_file():
        Console(stderr=True).print(
            f"[red]error:[/red] no truth.json in {folder} (nor run-*/truth.json)", highlight=False
        )
        return 2
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    name = shape or truth["plan"]["shape"]
    rs, _doc = score_folder(folder, truth, name)
    console.print(f"[bold]{truth['run']}[/bold] in shape {name}: {folder / name}/", highlight=False)
    print_items(rs, console)
    no_ids, _doc = score_folder(folder, truth, name, ids=False)
    console.print(f"[bold]without execution ids[/bold]: {folder / name}-no-ids/", highlight=False)
    print_items(no_ids, console)
    diffs = differential(folder, truth) if diff else {}
    for s, d in diffs.items():
        console.print(f"[red]shape {s}[/red] differs from the flat logs: {'; '.join(d)}", highlight=False)
    return 1 if rs.failed or no_ids.failed or diffs else 0


def _replay_campaign(folder: Path, runs: list[Path], diff: bool, console: Console) -> int:
    results = [rescore(r, diff) for r in runs]
    seeds = {r.plan.seed for r in results}
    camp = Campaign(seeds.pop() if len(seeds) == 1 else -1, results)
    rep = camp.report()
    console.print(table_of(rep["table"], f"{folder}: {len(results)} kept runs scored again"))
    console.print(table_of(rep["tableNoIds"], "the same runs without execution ids"))
    console.print(totals_of(camp))
    failed = rep["failedRuns"]
    if failed:
        shown = ", ".join(failed[:8]) + (f" and {len(failed) - 8} more" if len(failed) > 8 else "")
        console.print(f"[red]{len(failed)} of {len(results)} run(s) fail[/red]: {shown}", highlight=False)
    return 0 if camp.ok else 1


def print_items(rs: RunScore, console: Console) -> None:
    """One line per scored item: status, kind, executions, truth -> leaselog, and why."""
    colour = {"missed": "red", "false": "red", "figure_error": "red", "found": "green"}
    for i in rs.items:
        c = colour.get(i.status, "dim")
        figures = ""
        if i.truth is not None or i.got is not None:
            figures = f"  truth {_fig(i.truth)} / leaselog {_fig(i.got)}"
        console.print(
            f"[{c}]{i.status:<12}[/{c}] {i.kind:<24} {','.join(i.execution_ids):<22}{figures}",
            highlight=False,
        )
        if i.status != "found" and i.why != "expected":
            console.print(f"             [dim]{i.why}[/dim]", highlight=False)


def _fig(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.0f}ms"
    return "-" if v is None else str(v)
