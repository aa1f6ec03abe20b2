"""Terminal output for `leaselog formats` and `leaselog inspect`: formats what the library returns."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from leaselog.inspection import Inspection, describe_formats
from leaselog.reading.dialects import DIALECTS
from leaselog.render.safe import printable

DETAIL_COLUMNS = ("lease_ms", "released", "renewal_outcome")


def _show(v: object) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def render_formats(console: Console) -> None:
    table = Table(
        title="Log formats (auto-detected per file in the order shown; --format NAME forces one)",
        show_lines=True,
    )
    table.add_column("#", justify="right")
    table.add_column("format")
    table.add_column("what it is")
    table.add_column("what it maps")
    for f in describe_formats():
        table.add_row(
            str(f["detection"] or "-"), str(f["name"]), escape(str(f["description"])), escape(str(f["maps"]))
        )
    console.print(table)
    console.print(
        "Pod precedence: kubernetes.pod_name > k8s.pod.name > service.node.name > pod/podName/"
        "HOSTNAME > host.name > GELF host; else the file name. Map your own names in leaselog.toml.",
        highlight=False,
    )
    dialects = Table(
        title="Dialects: lock libraries' own lines, read as lease events in any format above (no flag)",
        show_lines=True,
    )
    dialects.add_column("dialect")
    dialects.add_column("library")
    dialects.add_column("what it maps")
    dialects.add_column("turn its loggers on")
    for d in DIALECTS:
        maps = "; ".join(dict.fromkeys(f"{r.name or r.event} -> {r.event}" for r in d.rules))
        dialects.add_row(d.name, escape(d.library), escape(maps), escape(d.enable))
    console.print(dialects)


def _text(v: object) -> str:
    """A value read from a log, for a markup string: control characters and markup both escaped."""
    return escape(printable(v))


def render_inspection(r: Inspection, console: Console) -> None:
    how = "forced" if r.forced else "detected"
    votes = ", ".join(f"{k} {v}" for k, v in r.votes.items()) or "none"
    console.print(
        f"[bold]{_text(r.path)}[/bold]: format [bold]{r.format}[/bold] ({how}; first lines read by: {votes})",
        highlight=False,
    )
    rep = r.report
    console.print(
        f"lines {rep.lines}: used {rep.used}, ignored {rep.ignored}, malformed {rep.malformed}; "
        f"{r.event_count} lease events",
        highlight=False,
    )

    keys = Table(title="Keys in the first records and the field each fills")
    keys.add_column("key")
    keys.add_column("leaselog field")
    keys.add_column("example")
    for k in r.keys:
        field = k.field or "[dim]-[/dim]"
        if k.shadowed_by:
            field += f" [dim](but {_text(k.shadowed_by)} wins)[/dim]"
        keys.add_row(_text(k.key), field, _text(k.example))
    console.print(keys)

    if r.events.height:
        ev = Table(title=f"First {r.events.height} of {r.event_count} events as leaselog read them")
        for c in ("line", "time", "pod", "job", "execution", "event", "details"):
            ev.add_column(c, overflow="fold", no_wrap=c in ("line", "time", "event"))
        for row in r.events.iter_rows(named=True):
            t = row["t"]
            details = [f"{k}={_show(row[k])}" for k in DETAIL_COLUMNS if row.get(k) is not None]
            if row["raw_event"] and row["raw_event"] != row["event"]:
                details.insert(0, f"logged as {row['raw_event']}")
            ev.add_row(
                str(row["line"]),
                t.strftime("%H:%M:%S.%f")[:-3] if t else "?",
                _text(str(row["pod"])),
                _text(str(row["job_id"])),
                _text(str(row["execution_id"])),
                _text(row["event"]),
                _text(" ".join(details)),
            )
        console.print(ev)
    else:
        console.print(
            "[yellow]No lease events.[/yellow] A lease event needs a job id (jobId, job_id, ... or "
            "your name for it under \\[fields] in leaselog.toml) and a known event name."
        )
    for name, lines in r.dialect_lines.items():
        n = r.report.dialects.get(name, 0)
        shown = ", ".join(str(x) for x in lines) + (" ..." if n > len(lines) else "")
        console.print(
            f"[green]Read by dialect {_text(name)}[/green]: {n} lock-library line(s), lines {shown}",
            highlight=False,
        )
    if r.unmapped_events:
        console.print(
            "[yellow]Event names that map to nothing[/yellow] (map them under \\[events] in leaselog.toml):",
            highlight=False,
        )
        for name, n in r.unmapped_events.items():
            console.print(f"  {_text(name)}  ({n} lines)", highlight=False)
    for line, why in r.malformed:
        console.print(f"[red]malformed[/red] line {line}: {_text(why)}", highlight=False)
