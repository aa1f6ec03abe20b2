"""The live view on a terminal (rich): running executions with their lease time left, and the findings as
they come. Redrawn a few times a second by the loop; `-q` (or `--jsonl -`) shows none."""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from leaselog.durations import format_duration
from leaselog.findings import Finding

if TYPE_CHECKING:
    from leaselog.watch.run import Watcher

MAX_ROWS = 15
STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}


class LiveView:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.recent: deque[tuple[str, dict[str, Any]]] = deque(maxlen=MAX_ROWS)
        self.live = Live(console=console, refresh_per_second=4, transient=False)
        self.live.start()

    def on_line(self, line: dict[str, Any], f: Finding) -> None:
        self.recent.appendleft((line["state"], line))

    def observe(self, w: Watcher) -> None:
        self.live.update(self.render(w))

    def render(self, w: Watcher) -> Group:
        now = datetime.now(UTC)
        running = Table(title="running executions", title_justify="left", show_edge=False, expand=False)
        for col in ("job", "execution", "pod", "lease left", "running for"):
            running.add_column(col)
        x = w.execs
        if x.height:
            x = x.filter(pl.col("end_kind") == "open").sort("expires_at", nulls_last=True).head(MAX_ROWS)
            for r in x.iter_rows(named=True):
                left = (r["expires_at"] - now).total_seconds() * 1000 if r["expires_at"] is not None else None
                shown = "?" if left is None else format_duration(abs(left))
                cell = Text(shown) if left is None or left >= 0 else Text(f"expired {shown} ago", style="red")
                since = (now - r["start"]).total_seconds() * 1000 if r["start"] is not None else None
                running.add_row(r["job_id"], r["execution_id"], r["pod"], cell, format_duration(since))
        found = Table(title="findings", title_justify="left", show_edge=False)
        for col in ("state", "severity", "kind", "job", "message"):
            found.add_column(col, overflow="fold")
        for state, line in self.recent:
            sev = line["severity"]
            found.add_row(
                state,
                Text(sev, style=STYLE.get(sev, "")),
                line["kind"],
                line["jobId"] or "",
                line["message"][:160],
            )
        lines = w.state.lines
        status = Text(
            f"{len(w.follower.tails)} inputs, {lines['used'] + lines['ignored'] + lines['malformed']} lines "
            f"({lines['malformed']} malformed), {w.state.rows} events kept, {w.state.forgotten_jobs} jobs forgotten",
            style="dim",
        )
        return Group(status, running, found)

    def close(self) -> None:
        self.live.stop()
