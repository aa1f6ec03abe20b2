"""The `leaselog watch` loop: follow the inputs, read what they gain, re-run the engine on the jobs it
touched, and write each finding's lifecycle as it changes.

A tick runs when an input grew (watchfiles wakes the loop at once) and at least every `tick_s`. The
fleet-level `lease_settings` runs every `fleet_every_s` and at exit. At exit (idle, end of standard
input alone, SIGINT or SIGTERM) each input's last unterminated line is read, the whole engine runs once
more over every event kept, in `analyze`'s file order, and every finding standing is written `final`.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, BinaryIO

import polars as pl

from leaselog.config import Settings
from leaselog.findings import Finding, sort_findings
from leaselog.watch.emit import Ledger, identity
from leaselog.watch.follow import DISCOVER_S, STDIN, Follower
from leaselog.watch.live_rules import EXEC_COLUMNS, GRACE, RUNNING, hold_back, live_overlaps, still_running
from leaselog.watch.state import Engine, LiveState

Listener = Callable[[dict[str, Any], Finding], None]


@dataclass
class WatchOptions:
    paths: list[str]
    settings: Settings
    jsonl: IO[bytes] | None = None
    exit_when_idle_s: float | None = None
    tick_s: float = 0.2
    fleet_every_s: float = 600.0
    forget_after_ms: float = 15 * 60_000
    listeners: list[Listener] = field(default_factory=list)
    stdin: BinaryIO | None = None
    use_inotify: bool = True
    discover_s: float = DISCOVER_S  # how often named folders and globs are listed for new files


@dataclass
class WatchResult:
    findings: list[Finding]
    lines: dict[str, int]
    inputs: int
    forgotten_jobs: int
    forgotten_findings: dict[str, int]  # findings of forgotten jobs (written final on the way), by severity


class Watcher:
    """One `leaselog watch` run."""

    def __init__(self, options: WatchOptions) -> None:
        self.o = options
        self.follower = Follower(options.paths, stdin=options.stdin, discover_s=options.discover_s)
        self.state = LiveState(options.settings, options.forget_after_ms)
        self.ledger = Ledger(options.jsonl, listeners=options.listeners)
        self.execs: pl.DataFrame = pl.DataFrame(schema={c: pl.Null for c in EXEC_COLUMNS})
        self.stop = threading.Event()
        self.started_wall = datetime.now(UTC)
        self.last_growth = time.monotonic()
        self.last_line_at: float | None = None  # monotonic time of the last line read
        self.ticks = 0
        self.recheck: set[str] = set()  # jobs with findings held back (live_rules.hold_back)
        self.observers: list[Callable[[Watcher], None]] = []  # the live view, metrics: called each tick

    # -- the loop ----------------------------------------------------------------------------------------

    def run(self) -> WatchResult:
        watcher = self._start_inotify() if self.o.use_inotify else None
        previous = self._trap_signals()
        last_fleet = last_forget = last_recheck = time.monotonic()
        try:
            while not self.stop.is_set():
                self.follower.wake.wait(self.o.tick_s)
                self.follower.wake.clear()
                self.tick()
                now = time.monotonic()
                if now - last_fleet >= self.o.fleet_every_s:
                    last_fleet = now
                    self._fleet()
                if self.recheck and now - last_recheck >= 1.0:
                    last_recheck = now
                    self._apply(self.state.run(set(self.recheck)))
                if now - last_forget >= 5.0:
                    last_forget = now
                    self._forget()
                if self._idle(now):
                    break
        except KeyboardInterrupt:
            pass
        finally:
            self.stop.set()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if watcher is not None:
                watcher.join(timeout=2)
        return self.finish()

    def _idle(self, now: float) -> bool:
        if self.follower.pump is not None and self.o.paths == [STDIN] and not self.follower.stdin_open:
            return True  # standard input alone, and it ended
        idle = self.o.exit_when_idle_s
        return idle is not None and now - self.last_growth >= idle

    def tick(self) -> None:
        """Read what the inputs gained; re-run the engine on the jobs it touched."""
        chunks = self.follower.poll()
        for c in chunks:
            self.state.add(c)
        if chunks:
            self.last_growth = self.last_line_at = time.monotonic()
        jobs = self.state.take_touched()
        if jobs:
            self._apply(self.state.run(jobs))
        self._wall_clock()  # a silent execution among busy ones too
        self.ledger.flush_due()
        self.ticks += 1
        for observe in self.observers:
            observe(self)

    def _apply(self, eng: Engine) -> None:
        cols = [c for c in EXEC_COLUMNS if c in eng.executions.columns]
        fresh = eng.executions.select(cols)
        if self.execs.height:
            kept = self.execs.filter(~pl.col("job_id").is_in(list(eng.jobs)))
            self.execs = pl.concat([kept, fresh], how="vertical_relaxed")
        else:
            self.execs = fresh
        findings = list(eng.findings)
        found = {identity(f) for f in findings}
        now = datetime.now(UTC)
        newest = self.state.newest
        # live (the newest line is recent), a running execution runs until now; else until the newest line
        horizon = now if newest is not None and now - newest < GRACE else newest
        for f in [*live_overlaps(eng.ctx, horizon), *self._still_running(eng.jobs)]:
            if identity(f) not in found:
                found.add(identity(f))
                findings.append(f)
        hold = self.o.settings.takeover_slo_ms
        decided = hold_back(findings, fresh, self.state.newest, now, self.started_wall, hold)
        # jobs with a finding held back are run again every second until it is decided
        shown = {id(f) for f in decided}
        held = {f.job_id for f in findings if f.job_id is not None and id(f) not in shown}
        self.recheck = (self.recheck - set(eng.jobs)) | held
        findings = decided
        self.ledger.update(set(eng.jobs), findings, self._ended_by(fresh))

    def _still_running(self, jobs: set[str] | None) -> list[Finding]:
        x = self.execs if jobs is None else self.execs.filter(pl.col("job_id").is_in(list(jobs)))
        return still_running(x, datetime.now(UTC), self.started_wall, self.o.settings.max_skew_ms)

    def _wall_clock(self) -> None:
        """Executions past expiry + skew with no line: add (or refresh) their "still running?" findings."""
        if not self.execs.height:
            return
        extra = self._still_running(None)
        standing = {k for k, e in self.ledger.entries.items() if e.state != "withdrawn"}
        for f in extra:
            if (
                identity(f) not in standing
                or self.ledger.entries[identity(f)].finding.certainty == "uncertain"
            ):
                self.ledger.add(f, ended=False)

    @staticmethod
    def _ended_by(executions: pl.DataFrame) -> Callable[[Finding], bool]:
        """Whether a finding's interval is closed: every execution it names has ended."""
        running = set(
            executions.filter(pl.col("end_kind").is_in(RUNNING)).select("job_id", "execution_id").iter_rows()
        )

        def ended(f: Finding) -> bool:
            if f.job_id is None or f.details.get("stillRunning"):
                return False
            return not any((f.job_id, x) in running for x in f.execution_ids)

        return ended

    def _fleet(self) -> None:
        eng = self.state.run(None, fleet=True)
        self.ledger.update({None}, [f for f in eng.findings if f.job_id is None], lambda _f: False)

    def _forget(self) -> None:
        gone = self.state.forget(self.execs, keep=self.recheck)
        if gone:
            self.execs = self.execs.filter(~pl.col("job_id").is_in(list(gone)))
            self.ledger.forget_jobs(gone)

    # -- the end -----------------------------------------------------------------------------------------

    def finish(self) -> WatchResult:
        for c in self.follower.flush_partial():
            self.state.add(c)
        for c in self.follower.poll():
            self.state.add(c)
        self.follower.close()
        order_of = self._analyze_order()
        eng = self.state.run(None, fleet=True, order=order_of)
        self.state.take_touched()
        self.ledger.update(None, eng.findings, lambda _f: True)
        self.ledger.close_all()
        self.state.close()
        return WatchResult(
            findings=sort_findings(self.ledger.standing()),
            lines=dict(self.state.lines),
            inputs=len(self.state.inputs),
            forgotten_jobs=self.state.forgotten_jobs,
            forgotten_findings=dict(self.ledger.forgotten),
        )

    def _analyze_order(self) -> Callable[[int], Any]:
        """file_index -> a key in the order `leaselog analyze` reads the inputs named (as they are now)."""
        position = {p: i for i, p in enumerate(self.follower.candidates())}
        by_index = {st.file_index: st for st in self.state.inputs.values()}

        def key(file_index: int) -> Any:
            st = by_index[file_index]
            return (position.get(st.tail.path, len(position) + st.tail.index), st.generation)

        return key

    # -- plumbing ----------------------------------------------------------------------------------------

    def _trap_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {signal.SIGTERM: signal.getsignal(signal.SIGTERM)}

        def stop(_sig: int, _frame: Any) -> None:
            self.stop.set()
            self.follower.wake.set()

        signal.signal(signal.SIGTERM, stop)
        return previous

    def _start_inotify(self) -> threading.Thread | None:
        roots = self.follower.watch_roots()
        if not roots:
            return None
        try:
            import watchfiles
        except ImportError:
            return None

        def run() -> None:
            try:
                for _changes in watchfiles.watch(
                    *roots,
                    stop_event=self.stop,
                    debounce=0,
                    step=20,
                    rust_timeout=500,
                    yield_on_timeout=False,
                    raise_interrupt=False,
                    watch_filter=None,
                ):
                    self.follower.wake.set()
            except (OSError, RuntimeError):
                return  # no inotify here: the loop's polling reads on alone

        t = threading.Thread(target=run, name="leaselog-watchfiles", daemon=True)
        t.start()
        return t
