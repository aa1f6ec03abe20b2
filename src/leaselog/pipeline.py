"""The analysis as stages any engine can run: read -> (fleet facts) -> per-job analysis -> fleet checks -> merge.

    read_source(sources, settings)              -> SourceRead: events (+ line accounting, notes); the
                                                   reader's rows become events in `events_of`'s stages:
                                                   typed, clocks, failovers, identity, numbered, placed
    FleetContext.of(events) / .merge(parts)     -> the whole input's facts (`leaselog.fleet`)
    analyze_events(events, settings, fleet)     -> Part: executions, leases, renewals, findings of the
                                                   per-job checks, the fleet checks' partials
    fleet_findings(partials, settings)          -> the fleet checks' findings
    merge(reads, parts, fleet_rows, settings)   -> Analysis (the same document as one run)

`analyze_events` takes any subset of whole jobs (every event of a job in the same call): its findings do
not depend on which other jobs it sees, so the jobs can be split over the partitions of a cluster. `seq`
is a global order key (a per-source read numbers its events from `seq_base`), and the merge re-sorts
every frame by it. `analyze` is these stages with one partition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from leaselog.analysis import Analysis
from leaselog.caveats import identity_caveats
from leaselog.checks import REGISTRY, Check, CheckContext, run_checks
from leaselog.checks.contract import Partial, as_findings
from leaselog.clocks.undo import undo_clock_steps
from leaselog.config import FRIENDLY_OPTIONS, Settings
from leaselog.events import Typed, build_events, split_rejected, why_unusable
from leaselog.execution_keys import execution_identity
from leaselog.execution_runs import identify_executions, identity_notes
from leaselog.failovers import REJECTED_SCHEMA, empty_failovers, split_failovers
from leaselog.findings import empty_findings, finalize
from leaselog.fleet import FleetContext, Totals
from leaselog.library_advice import library_advice
from leaselog.ordering import number_events, place_events
from leaselog.reading.fields import FieldMapper
from leaselog.reading.reader import InputReport, ProgressFn, Reader
from leaselog.reading.report import account_rejected
from leaselog.reading.sources import InputError, Source, expand_sources
from leaselog.reconstruct import reconstruct
from leaselog.schema import schema as documented_schema
from leaselog.timebase import compact
from leaselog.vocabulary import PROCESS_STARTED

MALFORMED_SCHEMA = dict(documented_schema("malformed"))
# a per-source read numbers its events from `source index << SEQ_BITS`: 2^40 events per source
SEQ_BITS = 40

JOB_CHECKS: tuple[Check, ...] = tuple(c for c in REGISTRY if c.scope == "job")
FLEET_CHECKS: tuple[Check, ...] = tuple(c for c in REGISTRY if c.scope == "fleet")


@dataclass
class BuiltEvents:
    events: pl.DataFrame  # EVENT_SCHEMA
    # rows rejected while typing (file, line, reason): a lease event without a usable timestamp, a value
    # that cannot be what its field means, a time going back within one execution
    rejected: pl.DataFrame
    # what the reader of the output must know about how the events were read (shown as notes)
    notes: list[str] = field(default_factory=list)
    # file -> the zone its zone-less (local) timestamps were read in
    local_time_files: dict[str, str] = field(default_factory=dict)
    # the lock's Redis failing over (no job's: leaselog.failovers), in time order; and its lines without a
    # usable timestamp (file, line, reason: never counted as lease events, so accounted apart)
    failovers: pl.DataFrame = field(default_factory=empty_failovers)
    failovers_rejected: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=REJECTED_SCHEMA))


def events_of(typed: Typed, settings: Settings) -> BuiltEvents:
    """The reader's rows typed (`events.build_events`) as canonical events, stage by stage. The call takes
    the typed frame over: each column a stage replaces is freed."""
    df, typed.frame = typed.frame, pl.DataFrame()
    df = clocks(df, settings)
    # the lock's Redis failing over is no job's: a fact of the fleet
    df, failovers, failovers_rejected = split_failovers(df, settings.clock_offsets_ms)
    df, unreadable = why_unusable(df, typed.reasons)
    df, shared = execution_identity(df, settings.timezone)
    df, rejected = split_rejected(df)
    events = place_events(number_events(df), settings.clock_offsets_ms)
    return BuiltEvents(
        events=events,
        rejected=rejected,
        notes=[*typed.notes, *unreadable, *shared],
        local_time_files=typed.local_time_files,
        failovers=failovers,
        failovers_rejected=failovers_rejected,
    )


def clocks(df: pl.DataFrame, settings: Settings) -> pl.DataFrame:
    """Stage: a wall clock that stepped inside an execution is read with the step undone (its own
    elapsedMs shows it): the lines after a step back are then no end before their start, and durations
    hold. A process's start (Spring Boot's start-up line) only told the clock where `elapsedMs` counts
    from anew: it is no lease event, and no job's."""
    df = undo_clock_steps(df, settings.clock_jitter_ms)
    if (started := df["event"] == PROCESS_STARTED).any():
        df = df.filter(~started)
    return df


@dataclass
class SourceRead:
    """What reading some sources gives: their events and the account of every line."""

    events: pl.DataFrame
    inputs: list[InputReport]
    malformed: list[
        tuple[str, int, str]
    ]  # file, line, reason (located up to MAX_LOCATED per file and reason)
    notes: list[str] = field(default_factory=list)
    local_time_files: dict[str, str] = field(default_factory=dict)
    # the lock's Redis failing over (leaselog.failovers): no job's, handed to the checks as a fleet fact
    failovers: pl.DataFrame = field(default_factory=empty_failovers)


def read_source(
    sources: Sequence[Source],
    settings: Settings,
    *,
    seq_base: int = 0,
    progress: ProgressFn | None = None,
    keep_fields: bool = True,
) -> SourceRead:
    """Read and type the events of these sources (all of an analysis's, or one of them on a worker).

    The events are numbered (`seq`) from `seq_base` in the order they happened within each file. What the
    reader decides across files (a pod name every file shares, the same line shipped twice) is decided
    among the sources of one call.
    """
    mapper = FieldMapper(settings)
    read = Reader(mapper, forced_format=settings.format, progress=progress, keep_fields=keep_fields).read(
        list(sources)
    )
    inputs, malformed_rows, raws = read.inputs, list(read.malformed), [read.raw]
    # the raw string columns are as large as the typed events made from them: hold only one of the two
    # (the call takes the only reference, so build_events frees each raw column it replaces)
    del read
    built = events_of(build_events(raws.pop(), None, settings), settings)
    if built.rejected.height:
        account_rejected(built.rejected, built.events, inputs, malformed_rows)
    if built.failovers_rejected.height:
        account_rejected(built.failovers_rejected, built.failovers, inputs, malformed_rows, events=False)
    columns = built.events.get_columns()
    built.events = pl.DataFrame()  # (compact frees each chunked column once it has copied it)
    events = compact(columns)
    if seq_base:
        events = events.with_columns(pl.col("seq") + seq_base)
    return SourceRead(
        events, inputs, malformed_rows, list(built.notes), dict(built.local_time_files), built.failovers
    )


@dataclass
class Part:
    """What the analysis of some whole jobs gives (frames in input order)."""

    executions: pl.DataFrame
    leases: pl.DataFrame
    renewals: pl.DataFrame
    findings: pl.DataFrame  # the per-job checks' findings (FINDING_SCHEMA), not finalised
    partials: dict[str, Partial]  # fleet check code -> its part
    events: pl.DataFrame  # the events with every execution named (leaselog.execution_runs)
    remarks: pl.DataFrame  # runs without an id the reader must know about (execution_runs.identity_notes)


def analyze_events(events: pl.DataFrame, settings: Settings, fleet: FleetContext | None = None) -> Part:
    """Executions, leases, renewals and the per-job checks' findings of these events (every event of each
    of their jobs), plus each fleet check's partial. `fleet`: the whole input's facts (None: these events
    are the whole input)."""
    events, remarks = identify_executions(events)
    executions, leases, renewals = reconstruct(events, settings)
    ctx = CheckContext(
        events=events, executions=executions, leases=leases, renewals=renewals, settings=settings, fleet=fleet
    )
    findings = library_advice(
        identity_caveats(run_checks(ctx, JOB_CHECKS), executions), events, settings.lease_ttl_ms
    )
    partials = {c.code: c.partial(ctx) for c in FLEET_CHECKS if c.partial is not None}
    return Part(executions, leases, renewals, findings, partials, events, remarks)


def fleet_findings(partials: Sequence[Mapping[str, Partial]], settings: Settings) -> pl.DataFrame:
    """The fleet checks' findings from every part's partials (FINDING_SCHEMA, not finalised)."""
    # (a fleet check's explain reads its rows and the settings only)
    ctx = CheckContext(
        events=pl.DataFrame(),
        executions=pl.DataFrame(),
        leases=pl.DataFrame(),
        renewals=pl.DataFrame(),
        settings=settings,
    )
    frames = []
    for check in FLEET_CHECKS:
        if check.merge is None:
            continue
        rows = check.merge([p[check.code] for p in partials if check.code in p], settings)
        frames.append(as_findings(check, rows, ctx))
    frames = [f for f in frames if f.height]
    return pl.concat(frames) if frames else empty_findings()


def _concat(frames: Sequence[pl.DataFrame], order: str) -> pl.DataFrame:
    """The parts' frames as one, in input order (`order`: a global order key)."""
    frames = [f for f in frames if f.width]
    if not frames:
        return pl.DataFrame()
    if len(frames) == 1:
        return frames[0]
    return pl.concat(frames, how="vertical_relaxed").sort(order, maintain_order=True)


def merge(
    reads: Sequence[SourceRead],
    events: pl.DataFrame,
    parts: Sequence[Part],
    fleet_rows: pl.DataFrame,
    settings: Settings,
    problems: Sequence[str] = (),
    *,
    totals: Totals | None = None,
) -> Analysis:
    """One Analysis from the reads (in source order), the events, the parts (any order) and the fleet
    checks' findings: the same as one run over everything. `totals`: the document's counts when `events`
    and the parts' frames are not the whole input's (a cluster run keeps them on the workers)."""
    inputs = [r for read in reads for r in read.inputs]
    malformed_rows = [m for read in reads for m in read.malformed]
    malformed = pl.DataFrame(malformed_rows, schema=MALFORMED_SCHEMA, orient="row").sort("file", "line")
    executions = _concat([p.executions for p in parts], "first_seq")
    leases = _in_execution_order([p.leases for p in parts], executions)
    renewals = _concat([p.renewals for p in parts], "seq")
    found = [p.findings for p in parts if p.findings.height]
    if fleet_rows.height:
        found.append(fleet_rows)
    findings = finalize(_in_check_order(pl.concat(found) if found else empty_findings()))
    return Analysis(
        events=events,
        executions=executions,
        leases=leases,
        renewals=renewals,
        findings=findings,
        input_reports=inputs,
        malformed=malformed,
        settings=settings,
        problems=[
            *problems,
            *(n for read in reads for n in read.notes),
            *identity_notes(_concat([p.remarks for p in parts], "kind")),
        ],
        local_time_files={f: z for read in reads for f, z in read.local_time_files.items()},
        totals=totals,
    )


def _in_execution_order(leases: Sequence[pl.DataFrame], executions: pl.DataFrame) -> pl.DataFrame:
    """The parts' leases as one, in the order of their executions (first appearance)."""
    if len(leases) == 1:
        return leases[0]
    order = executions.select("job_id", "execution_id", pl.int_range(pl.len()).alias("_at"))
    return (
        pl.concat(leases, how="vertical_relaxed")
        .join(order, on=["job_id", "execution_id"], how="left")
        .sort("_at", maintain_order=True)
        .drop("_at")
    )


def _in_check_order(findings: pl.DataFrame) -> pl.DataFrame:
    """Findings of several parts in the checks' (registry) order, each check's in its parts' order: what
    one run gives before `finalize` sorts (its ties keep this order)."""
    rank = {c.code: i for i, c in enumerate(REGISTRY)}
    return findings.sort(
        pl.col("code").replace_strict(rank, default=len(rank), return_dtype=pl.Int64), maintain_order=True
    )


Duration = str | float | int


def analyze(
    paths: str | Path | Sequence[str | Path],
    *,
    config: str | Path | None = None,
    lease_ttl: Duration | None = None,
    max_skew: Duration | None = None,
    stop_slo: Duration | None = None,
    takeover_slo: Duration | None = None,
    renewal_interval: Duration | None = None,
    clock_offsets: Mapping[str, Duration] | None = None,
    settings: Settings | None = None,
    progress: ProgressFn | None = None,
    keep_fields: bool = True,
    **options: Any,
) -> Analysis:
    """Analyze log files, folders, globs (or `-` for stdin): the same engine as `leaselog analyze`.

    Durations are milliseconds or strings like `"10m"`, `"30s"`, `"250ms"`:
    `lease_ttl` (TTL when the log has no leaseMs), `max_skew` (clock-skew bound between pods), `stop_slo`,
    `takeover_slo`, `renewal_interval`; `clock_offsets` maps a pod to an offset subtracted from its
    timestamps (`{"pod-b": "-120ms"}`). Any other Settings field is accepted by name (`format="ecs"`,
    `fields=...`, and the `*_ms` spellings). They apply on top of `config` (a leaselog.toml) and `settings`.
    `keep_fields=False` leaves `events.fields` (each event's whole record as JSON, which the HTML report
    shows on hover) null: the events frame is then about half the size.
    Raises InputError when nothing at all could be read, TypeError for an unknown keyword.
    """
    s = settings_of(
        config=config,
        settings=settings,
        friendly={
            "lease_ttl": lease_ttl,
            "max_skew": max_skew,
            "stop_slo": stop_slo,
            "takeover_slo": takeover_slo,
            "renewal_interval": renewal_interval,
            "clock_offsets": None if clock_offsets is None else _signed_offsets(clock_offsets),
        },
        options=options,
    )
    sources, problems = sources_of(paths)
    read = read_source(sources, s, progress=progress, keep_fields=keep_fields)
    check_read([read])
    # (the call takes the events' only reference: the columns it replaces, such as the execution ids when
    # runs are cut out of a job's lines, are freed instead of held until the end)
    # (the fleet's facts are the events' own unless the lock's Redis failed over: then those come too)
    fleet = FleetContext.of(read.events, read.failovers) if read.failovers.height else None
    part = analyze_events(_taken(read), s, fleet)
    return merge([read], part.events, [part], fleet_findings([part.partials], s), s, problems)


def _taken(read: SourceRead) -> pl.DataFrame:
    """The read's events, which it no longer holds."""
    events, read.events = read.events, pl.DataFrame()
    return events


def settings_of(
    *,
    config: str | Path | None = None,
    settings: Settings | None = None,
    friendly: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> Settings:
    """The Settings `analyze` runs with: `settings`, then `config` (a leaselog.toml), then the options."""
    from leaselog.config import load_config_file

    # a friendly name without a keyword of its own (`clock_jitter="150ms"`) is its Settings field
    opts = {FRIENDLY_OPTIONS.get(k, k): v for k, v in (options or {}).items()}
    unknown = sorted(set(opts) - set(Settings.model_fields))
    if unknown:
        known = sorted([*FRIENDLY_OPTIONS, *Settings.model_fields])
        raise TypeError(f"analyze() got unknown keyword(s) {unknown}; known: {', '.join(known)}")
    for name, value in (friendly or {}).items():
        if value is None:
            continue
        field_name = FRIENDLY_OPTIONS[name]
        if opts.get(field_name) is not None:
            raise TypeError(f"analyze() got both {name}= and {field_name}=; give one")
        opts[field_name] = value
    base: dict[str, Any] = settings.model_dump() if settings else {}
    if config is not None:
        base.update(load_config_file(config))
    base.update({k: v for k, v in opts.items() if v is not None})
    return Settings(**base)


def sources_of(paths: str | Path | Sequence[str | Path]) -> tuple[list[Source], list[str]]:
    """The sources the paths name (and a problem per unusable path); InputError when none is readable."""
    if isinstance(paths, str | Path):
        paths = [paths]
    sources, problems = expand_sources([str(p) for p in paths])
    if not any(src.skipped is None for src in sources):  # nothing to read (same_as: read elsewhere)
        raise InputError("; ".join(problems) or "no input named")
    return sources, problems


def check_read(reads: Sequence[SourceRead]) -> None:
    """InputError when nothing at all was read (a gzip cut short still gave the lines before the cut)."""
    inputs = [r for read in reads for r in read.inputs]
    if all(r.error and r.used + r.ignored == 0 for r in inputs):
        raise InputError("; ".join(f"{r.path}: {r.error}" for r in inputs))


def _signed_offsets(offsets: Mapping[str, Duration]) -> dict[str, float]:
    """Per-pod clock offsets: numbers are ms, strings may be signed durations (`"-120ms"`)."""
    from leaselog.durations import parse_signed_duration_ms

    return {
        pod: float(v) if isinstance(v, int | float) else parse_signed_duration_ms(v)
        for pod, v in offsets.items()
    }
