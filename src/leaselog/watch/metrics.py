"""`--metrics-port PORT`: Prometheus metrics over HTTP (prometheus_client), on its own registry.

- `leaselog_findings` (gauge, by kind, severity and state): findings standing now (open or final);
- `leaselog_findings_written_total` (counter, by kind, severity and state): JSON lines written;
- `leaselog_executions_running`: executions kept whose end has not been read;
- `leaselog_zombie_executions`: running executions whose lease expired (by the logs or the wall clock);
- `leaselog_lines_read_total` (counter, by status: used, ignored, malformed);
- `leaselog_lag_seconds`: the wall clock minus the newest line's time;
- `leaselog_jobs_forgotten_total`, `leaselog_events_kept`: memory housekeeping.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import polars as pl
from prometheus_client import CollectorRegistry, Gauge, start_http_server
from prometheus_client import Counter as PromCounter

from leaselog.findings import Finding

if TYPE_CHECKING:
    from leaselog.watch.run import Watcher


class Metrics:
    """Serves the metrics on `port` (127.0.0.1 unless `addr` says otherwise) and keeps them current."""

    def __init__(self, port: int, addr: str = "127.0.0.1") -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        labels = ["kind", "severity", "state"]
        self.standing = Gauge("leaselog_findings", "Findings standing now", labels, registry=r)
        self.written = PromCounter("leaselog_findings_written", "Finding lines written", labels, registry=r)
        self.running = Gauge("leaselog_executions_running", "Executions whose end was not read", registry=r)
        self.zombies = Gauge(
            "leaselog_zombie_executions", "Running executions past their lease expiry", registry=r
        )
        self.lines = PromCounter("leaselog_lines_read", "Input lines read", ["status"], registry=r)
        self.lag = Gauge("leaselog_lag_seconds", "Wall clock minus the newest line's time", registry=r)
        self.forgotten = PromCounter("leaselog_jobs_forgotten", "Jobs whose state was dropped", registry=r)
        self.kept = Gauge("leaselog_events_kept", "Lease events kept in memory", registry=r)
        self._lines_seen: Counter[str] = Counter()
        self._forgotten_seen = 0
        self.server, self.thread = start_http_server(port, addr=addr, registry=r)
        self.port = int(self.server.server_port)

    def on_line(self, line: dict[str, Any], f: Finding) -> None:
        self.written.labels(f.kind, f.severity, line["state"]).inc()

    def observe(self, w: Watcher) -> None:
        standing: Counter[tuple[str, str, str]] = Counter(
            (e.finding.kind, e.finding.severity, e.state)
            for e in w.ledger.entries.values()
            if e.state != "withdrawn"
        )
        self.standing.clear()
        for (kind, severity, state), n in standing.items():
            self.standing.labels(kind, severity, state).set(n)
        now = datetime.now(UTC)
        x = w.execs
        if x.height:
            running = x.filter(pl.col("end_kind") == "open")
            self.running.set(running.height)
            self.zombies.set(running.filter(pl.col("expires_at") < now).height)
        else:
            self.running.set(0)
            self.zombies.set(0)
        for status in ("used", "ignored", "malformed"):
            got = w.state.lines[status]
            if got > self._lines_seen[status]:
                self.lines.labels(status).inc(got - self._lines_seen[status])
                self._lines_seen[status] = got
        if w.state.newest is not None:
            self.lag.set(max(0.0, (now - w.state.newest).total_seconds()))
        if w.state.forgotten_jobs > self._forgotten_seen:
            self.forgotten.inc(w.state.forgotten_jobs - self._forgotten_seen)
            self._forgotten_seen = w.state.forgotten_jobs
        self.kept.set(w.state.rows)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
