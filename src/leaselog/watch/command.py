"""`leaselog watch` put together: settings as `analyze` makes them, the outputs, the loop, the summary."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from rich.console import Console

from leaselog.config import Settings, load_config_file
from leaselog.findings import SEVERITY_RANK
from leaselog.reading.sources import InputError
from leaselog.watch.follow import STDIN
from leaselog.watch.run import Watcher, WatchOptions, WatchResult


def settings_for(options: dict[str, Any], config: Path | None) -> Settings:
    base: dict[str, Any] = load_config_file(config) if config is not None else {}
    base.update({k: v for k, v in options.items() if v is not None})
    return Settings(**base)


def run_watch(
    paths: list[str],
    *,
    options: dict[str, Any],
    config: Path | None,
    jsonl: str | None,
    exit_when_idle_ms: float | None,
    forget_after_ms: float | None,
    on_finding: str | None,
    fail_on: str | None,
    metrics_port: int | None,
    quiet: bool,
) -> int:
    """Run the watch; the exit code (1 when a finding at `fail_on` or worse stands at the end)."""
    settings = settings_for(options, config)
    missing = [p for p in paths if p != STDIN and not Path(p).exists() and not any(c in p for c in "*?[")]
    if missing and len(missing) == len(paths):
        # a named file that does not exist yet is followed (it may be created), unless nothing else is
        folders = [p for p in missing if not Path(p).parent.is_dir()]
        if folders:
            raise InputError("; ".join(f"{p}: no such file or folder" for p in folders))
    console = Console(stderr=False, quiet=quiet)
    with ExitStack() as stack:
        out: IO[bytes] | None = None
        if jsonl == "-":
            out = sys.stdout.buffer
        elif jsonl is not None:
            out = stack.enter_context(open(jsonl, "ab"))
        w = Watcher(
            WatchOptions(
                paths=paths,
                settings=settings,
                jsonl=out,
                exit_when_idle_s=None if exit_when_idle_ms is None else exit_when_idle_ms / 1000,
                forget_after_ms=forget_after_ms if forget_after_ms is not None else 15 * 60_000,
            )
        )
        alert = None
        if on_finding is not None and fail_on is not None:
            from leaselog.watch.alerts import OnFinding

            alert = OnFinding(on_finding, fail_on)
            w.ledger.listeners.append(alert)
            stack.callback(alert.close)
        if metrics_port is not None:
            from leaselog.watch.metrics import Metrics

            try:
                metrics = Metrics(metrics_port)
            except OSError as e:
                raise InputError(f"--metrics-port {metrics_port}: {e.strerror or e}") from e
            w.ledger.listeners.append(metrics.on_line)
            w.observers.append(metrics.observe)
            stack.callback(metrics.close)
        if not quiet and jsonl != "-" and console.is_terminal:
            from leaselog.watch.live import LiveView

            view = LiveView(console)
            w.ledger.listeners.append(view.on_line)
            w.observers.append(view.observe)
            stack.callback(view.close)
        result = w.run()
        if not quiet and jsonl != "-":
            summarise(result, console)
        if alert is not None:
            alert.close()
            if alert.stats.failed:
                Console(stderr=True).print(
                    f"[yellow]--on-finding failed {alert.stats.failed} of {alert.stats.ran} times; "
                    f"last: {alert.stats.last_error}[/yellow]",
                    highlight=False,
                )
    if fail_on is not None:
        limit = SEVERITY_RANK[fail_on]
        severities = [f.severity for f in result.findings] + [
            s for s, n in result.forgotten_findings.items() if n
        ]
        if any(SEVERITY_RANK[s] <= limit for s in severities):
            return 1
    return 0


def summarise(result: WatchResult, console: Console) -> None:
    lines = result.lines
    total = sum(lines.values())
    console.print(
        f"watched {result.inputs} inputs: {total} lines ({lines.get('used', 0)} used, "
        f"{lines.get('malformed', 0)} malformed); {len(result.findings)} findings at the end"
        + (
            f"; {result.forgotten_jobs} finished jobs forgotten on the way "
            f"({sum(result.forgotten_findings.values())} of their findings written final before)"
            if result.forgotten_jobs
            else ""
        ),
        highlight=False,
    )
    for f in result.findings:
        console.print(f"  {f.severity:<7} {f.kind:<26} {f.job_id or '-'}: {f.message}", highlight=False)
