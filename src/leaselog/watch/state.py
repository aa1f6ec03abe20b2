"""Incremental state: the lease events read so far, kept as the reader's raw rows, and the batch engine
re-run on the jobs that changed.

Lines are read by the very reader `leaselog analyze` uses (`Reader.read`, one call per chunk of whole
lines, the input's format fixed once its first lines have been seen), so a line gives the same event,
the same `file:line` and the same malformed reason as in a batch run. Each tick re-runs `build_events`,
`reconstruct` and the checks on the events of the jobs touched since the last tick (a job's findings
depend on its own events only; the fleet-level `lease_settings` runs on everything, periodically and at
exit); `final_pass` runs the whole engine once more over every event kept, in `analyze`'s file order.

Memory: a job whose executions have all ended longer ago than `forget_after_ms` (by the newest line's
time) is forgotten: its rows are dropped, its findings are final, its counts stay.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from leaselog.caveats import identity_caveats
from leaselog.checks import REGISTRY, CheckContext, run_checks
from leaselog.config import Settings
from leaselog.events import build_events
from leaselog.execution_runs import GIVEN_SCHEMA, identify_executions
from leaselog.findings import Finding, enforce_invariants, records
from leaselog.fleet import FleetContext
from leaselog.library_advice import library_advice
from leaselog.pipeline import events_of
from leaselog.reading.fields import FieldMapper
from leaselog.reading.library_lines import settle_library_rows
from leaselog.reading.reader import RAW_SCHEMA, SNIFF_LINES, InputReport, Reader
from leaselog.reading.sources import Source
from leaselog.reconstruct import reconstruct
from leaselog.timebase import compact
from leaselog.vocabulary import LOCK_FAILOVER
from leaselog.watch.follow import Chunk, Tail

FLEET_CODES = ("LL701",)
LOCATED = 1000  # malformed lines located per input and reason (the reader's own bound per file)  # checks over every job at once: run periodically and at exit
EMPTY_RAW = pl.DataFrame(schema=RAW_SCHEMA)


@dataclass
class Engine:
    """What one run of the batch engine gave for some jobs."""

    ctx: CheckContext
    findings: list[Finding]
    jobs: set[str]

    @property
    def executions(self) -> pl.DataFrame:
        return self.ctx.executions


@dataclass
class InputState:
    """One input generation: its report (as `analyze` accounts for its lines) and its format."""

    tail: Tail
    generation: int
    file_index: int
    report: InputReport
    format: str | None = None  # fixed once SNIFF_LINES lines were read in one go
    head: bytes = b""  # the lines read while the format is not fixed (read again when more come)
    malformed: list[tuple[str, int, str]] = field(default_factory=list)
    located: Counter[str] = field(default_factory=Counter)  # malformed lines seen, by reason


class LiveState:
    """The raw lease events kept, per input and job, and the engine run over them."""

    def __init__(self, settings: Settings, forget_after_ms: float = 15 * 60_000) -> None:
        self.settings = settings
        self.mapper = FieldMapper(settings)
        self.forget_after_ms = forget_after_ms
        # per job and pod, the highest run number `job@pod#n` of forgotten runs (numbered after, from then)
        self.given = pl.DataFrame(schema=GIVEN_SCHEMA)
        self.inputs: dict[tuple[int, int], InputState] = {}  # (tail index, generation)
        self._frames: list[pl.DataFrame] = []
        self._raw: pl.DataFrame = EMPTY_RAW
        self.touched: set[str] = set()
        self.forgotten_jobs = 0
        self.lines = Counter[str]()  # used / ignored / malformed, over every input
        self.newest: datetime | None = None  # the newest wall-clock time read
        self._tmp = Path(tempfile.mkdtemp(prefix="leaselog-watch-"))

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    # -- reading -----------------------------------------------------------------------------------------

    def input_for(self, tail: Tail, generation: int) -> InputState:
        key = (tail.index, generation)
        st = self.inputs.get(key)
        if st is None:
            st = InputState(tail, generation, len(self.inputs), InputReport(tail.display, "?"))
            self.inputs[key] = st
        return st

    def add(self, chunk: Chunk) -> None:
        """Read a chunk of whole lines of one input."""
        st = self.input_for(chunk.tail, chunk.generation)
        if st.format is None:
            # the format is detected from the input's first lines, as `analyze` does: until there are
            # SNIFF_LINES of them, the head is read again from its start each time it grows
            st.head += chunk.data
            self._drop_input(st)
            self._read(st, st.head, 1, None)
            if st.report.lines >= SNIFF_LINES or chunk.tail.done:
                st.format = st.report.format
                st.head = b""
            return
        self._read(st, chunk.data, chunk.first_line, st.format)

    def _drop_input(self, st: InputState) -> None:
        for k in ("used", "ignored", "malformed"):
            self.lines[k] -= getattr(st.report, k)
        st.report = InputReport(st.tail.display, "?")
        st.malformed = []
        st.located = Counter()
        if self._frames or self._raw.height:
            self._raw = self.raw().filter(pl.col("file_index") != st.file_index)
            self._frames = []

    def _read(self, st: InputState, data: bytes, first_line: int, fmt: str | None) -> None:
        # the reader reads files: the chunk goes to a scratch file named as the input's last path parts,
        # so the pod a file name stands for (`pod-a.jsonl`, kubelet folders) is the same
        parts = Path(st.tail.display).parts[-3:]
        scratch = self._tmp.joinpath(str(st.file_index), *parts)
        scratch.parent.mkdir(parents=True, exist_ok=True)
        scratch.write_bytes(data)
        reader = Reader(
            self.mapper, forced_format=fmt or self.settings.format, keep_fields=False, settle_library=False
        )
        got = reader.read([Source(str(scratch))])
        rep = got.inputs[0]
        shift = first_line - 1
        r = st.report
        if rep.format not in ("?", "unknown") or r.format == "?":
            r.format = rep.format
        r.lines += rep.lines
        r.used += rep.used
        r.ignored += rep.ignored
        r.malformed += rep.malformed
        r.events += rep.events
        r.unmapped_events.update(rep.unmapped_events)
        if rep.error:
            r.error = rep.error
        self.lines.update(used=rep.used, ignored=rep.ignored, malformed=rep.malformed)
        for _, n, why in got.malformed:  # located up to LOCATED per input and reason, as analyze does
            st.located[why] += 1
            if st.located[why] <= LOCATED:
                st.malformed.append((st.tail.display, n + shift, why))
        raw = got.raw
        if raw.height:
            raw = raw.with_columns(
                pl.lit(st.tail.display, dtype=pl.String).alias("file"),
                (pl.col("line") + shift).alias("line"),
                pl.lit(st.file_index, dtype=pl.Int64).alias("file_index"),
            )
            self._frames.append(raw)
            self.touched.update(raw["job_id"].drop_nulls().unique().to_list())

    def raw(self) -> pl.DataFrame:
        if self._frames:
            self._raw = pl.concat([self._raw, *self._frames], how="vertical")
            self._frames = []
        return self._raw

    # -- the engine --------------------------------------------------------------------------------------

    def run(
        self, jobs: set[str] | None, *, fleet: bool = False, order: Callable[[int], Any] | None = None
    ) -> Engine:
        """The batch engine over the events of `jobs` (None: every job kept); `fleet` adds the fleet-level
        checks; `order` maps a file_index to its sort key (analyze's file order) for a final pass."""
        # lock-library lines settled over every line kept, as the reader settles a whole input (a line
        # naming no lock takes its job from an earlier chunk's acquisition on the same thread)
        raw = settle_library_rows(self.raw(), [])
        if jobs is not None:
            # (a failover of the lock's Redis is no job's: every job's checks see it)
            raw = raw.filter(pl.col("job_id").is_in(list(jobs)) | (pl.col("event") == LOCK_FAILOVER))
        if order is not None and raw.height:
            keys = {i: order(i) for i in raw["file_index"].unique().to_list()}
            rank = {i: n for n, i in enumerate(sorted(keys, key=lambda i: keys[i]))}
            raw = raw.with_columns(pl.col("file_index").replace_strict(rank, return_dtype=pl.Int64))
        built = events_of(build_events(raw, None, self.settings), self.settings)
        events = identify_executions(compact(built.events.get_columns()), self.given)[0]
        executions, leases, renewals = reconstruct(events, self.settings)
        # the events' own facts, and the failovers of the lock's Redis read with them (as analyze hands over)
        fleet_facts = FleetContext.of(events, built.failovers) if built.failovers.height else None
        ctx = CheckContext(
            events=events,
            executions=executions,
            leases=leases,
            renewals=renewals,
            settings=self.settings,
            fleet=fleet_facts,
        )
        chosen = REGISTRY if fleet else tuple(c for c in REGISTRY if c.code not in FLEET_CODES)
        findings = enforce_invariants(
            records(
                library_advice(
                    identity_caveats(run_checks(ctx, chosen), executions), events, self.settings.lease_ttl_ms
                )
            )
        )
        wall = events.filter(pl.col("clock") == "wall")["t"]
        if wall.len():
            top = wall.max()
            if isinstance(top, datetime) and (self.newest is None or top > self.newest):
                self.newest = top
        seen = set(raw["job_id"].drop_nulls().unique().to_list())
        return Engine(ctx, findings, seen if jobs is None else jobs)

    def take_touched(self) -> set[str]:
        jobs, self.touched = self.touched, set()
        return jobs

    def rejected_lines(self) -> pl.DataFrame:
        """The located malformed lines of every input (file, line, reason)."""
        rows = [m for st in self.inputs.values() for m in st.malformed]
        return pl.DataFrame(
            rows, schema={"file": pl.String, "line": pl.Int64, "reason": pl.String}, orient="row"
        )

    # -- memory ------------------------------------------------------------------------------------------

    def forget(self, executions: pl.DataFrame, keep: set[str] | None = None) -> set[str]:
        """Drop the rows of jobs last seen (any execution's end or last line) more than `forget_after_ms`
        before the newest line, but not of jobs touched since the last run nor in `keep`; return those
        jobs. (An execution silent that long is decided: its absence findings were released long before.)
        """
        if self.newest is None or not executions.height:
            return set()
        limit = self.newest.timestamp() * 1000 - self.forget_after_ms
        busy = list(self.touched | (keep or set()))
        per_job = executions.group_by("job_id").agg(
            pl.max_horizontal(pl.col("end").max(), pl.col("last_seen").max()).alias("last")
        )
        old = per_job.filter((pl.col("last").dt.epoch("ms") < limit) & ~pl.col("job_id").is_in(busy))[
            "job_id"
        ].to_list()
        if old:
            self._remember_numbers(executions.filter(pl.col("job_id").is_in(old)))
            self._raw = self.raw().filter(~pl.col("job_id").is_in(old))
            self.forgotten_jobs += len(old)
        return set(old)

    def _remember_numbers(self, executions: pl.DataFrame) -> None:
        """The numbers `job@pod#n` given to the runs of jobs about to be forgotten: a later run of the job
        on that pod is numbered after them, so an execution's name means one execution for the watch's
        lifetime."""
        name = pl.col("execution_id")
        prefix = (
            pl.when(pl.col("pod").is_null())
            .then(pl.format("{}#", pl.col("job_id")))
            .otherwise(pl.format("{}@{}#", pl.col("job_id"), pl.col("pod")))
        )
        numbers = executions.filter(name.str.starts_with(prefix)).select(
            "job_id",
            "pod",
            name.str.slice(prefix.str.len_chars()).cast(pl.Int64, strict=False).alias("_given"),
        )
        self.given = (
            pl.concat([self.given, numbers.cast(GIVEN_SCHEMA)])  # type: ignore[arg-type]
            .group_by("job_id", "pod")
            .agg(pl.col("_given").max())
            .drop_nulls("_given")
        )

    @property
    def rows(self) -> int:
        return self._raw.height + sum(f.height for f in self._frames)
