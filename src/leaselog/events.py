"""Canonical events: the typed polars frame every later layer reads (the vocabulary and its aliases are in
leaselog.vocabulary).

The reader hands over one row of raw strings per lease event (already picked out of whatever log shape it
came in); `build_events` types them, maps event aliases onto the canonical vocabulary and puts every event
on one timeline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import polars.selectors as cs

from leaselog.clocks.resolution import time_resolution
from leaselog.clocks.undo import undo_clock_steps
from leaselog.config import Settings, compile_rule
from leaselog.dialect_rows import settle_lease_ends
from leaselog.execution_keys import execution_gate, execution_keys
from leaselog.execution_runs import ID, POD
from leaselog.failovers import REJECTED_SCHEMA, empty_failovers, split_failovers
from leaselog.reading.dialects import NEEDLE_BYTES, NEEDLES, match_message
from leaselog.thread_spellings import whole_thread_names
from leaselog.timebase import PSEUDO_EPOCH as PSEUDO_EPOCH
from leaselog.timebase import compact as compact
from leaselog.timebase import gathered, pseudo_times
from leaselog.values import TIME_SHAPES, ends_before_start, fall_back, times, typed_values
from leaselog.vocabulary import EVENT_ALIASES, FIELD_ALIASES, PROCESS_STARTED, normalise_event_name

_STRING_FIELDS = (
    "pod",
    "thread",
    "job_id",
    "execution_id",
    "owner",
    "reason",
    "status",
    "trigger",
    "topic",
    "message_id",
)
_FLOAT_FIELDS = ("elapsed_ms", "latency_ms", "idle_ms")
_INT_FIELDS = ("lease_ms", "fencing_token", "partition", "offset", "delivery_count", "attempt")

# The typed frame: column -> dtype. Documented column by column in `leaselog.schema`.
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "t": pl.Datetime("us", "UTC"),
    "clock": pl.Categorical(),
    "seq": pl.Int64(),
    "pod": pl.String(),
    "thread": pl.String(),
    # the container instance (its runtime id): another id on a pod is another process, counting anew
    "container_id": pl.String(),
    "job_id": pl.String(),
    "execution_id": pl.String(),
    # how its execution was identified: an index into leaselog.execution_runs.IDENTITIES
    "identity": pl.Int8(),
    "event": pl.Categorical(),
    "raw_event": pl.Categorical(),
    "elapsed_ms": pl.Float64(),
    # ms taken off the logged time: a clock step inside the execution, undone by its elapsedMs
    "clock_step_ms": pl.Float64(),
    # the job's first line on the pod after a process's start-up line: elapsedMs counts anew from it
    "new_origin": pl.Boolean(),
    # the time resolution of the line's file, ms (leaselog.clocks.resolution; null: no wall-clock time)
    "ts_resolution_ms": pl.Float64(),
    "lease_ms": pl.Int64(),
    "fencing_token": pl.Int64(),
    "owner": pl.String(),
    "renewal_outcome": pl.String(),
    "latency_ms": pl.Float64(),
    "late": pl.Boolean(),
    "reason": pl.String(),
    "status": pl.Categorical(),
    "released": pl.Boolean(),
    "release_outcome": pl.String(),
    "outcome": pl.String(),
    "trigger": pl.Categorical(),
    "topic": pl.Categorical(),
    "partition": pl.Int64(),
    "offset": pl.Int64(),
    "message_id": pl.String(),
    "delivery_count": pl.Int64(),
    "idle_ms": pl.Float64(),
    "entry_kept": pl.Boolean(),
    "attempt": pl.Int64(),
    "message": pl.String(),
    "file": pl.String(),
    "line": pl.Int64(),
    "fields": pl.String(),
}


def as_string(s: pl.Series) -> pl.Series:
    """`s` as strings: an events column that is Categorical (few values, held as 4-byte codes) as the
    String the frames built from the events have."""
    return s.cast(pl.String) if s.dtype == pl.Categorical else s


# Columns the reader fills with raw strings (everything but what build_events derives).
RAW_COLUMNS: tuple[str, ...] = (
    "ts",
    *(
        c
        for c in EVENT_SCHEMA
        if c
        not in (
            "t",
            "clock",
            "seq",
            "identity",
            "clock_step_ms",
            "new_origin",
            "ts_resolution_ms",
            "file",
            "line",
            "fields",
        )
    ),
    "file",
    "line",
    "fields",
    "file_index",
    # a lock library's line (leaselog.reading.dialects): which dialect read it, and the lease's absolute
    # end when the library logs that instead of a length (turned into lease_ms by `build_events`)
    "dialect",
    "lease_until",
)

_OUTCOMES = {
    "success": "success",
    "succeeded": "success",
    "ok": "success",
    "renewed": "success",
    "true": "success",
    "1": "success",
    "rejected": "rejected",
    "denied": "rejected",
    "lost": "rejected",
    "not_owner": "rejected",
    "false": "rejected",
    "0": "rejected",
    "timeout": "timeout",
    "timed_out": "timeout",
    "timedout": "timeout",
    "error": "error",
    "exception": "error",
    "failed": "error",
    "failure": "error",
}


@dataclass
class FieldMapper:
    """Picks canonical fields out of one flattened record. Built once per run from the settings."""

    settings: Settings
    aliases: dict[str, list[str]] = field(init=False)
    event_aliases: dict[str, tuple[str, dict[str, str]]] = field(init=False)
    # user event names also match a record's whole message text (apps that log `Acquired lock` as prose)
    message_events: dict[str, str] = field(init=False)
    rules: list[tuple[str, Any, dict[str, str]]] = field(init=False)  # (event, RE2 regex, constants)

    def __post_init__(self) -> None:
        self.aliases = {k: list(v) for k, v in FIELD_ALIASES.items()}
        for canonical, extra in self.settings.fields.items():
            # user names take precedence over the built-in spellings
            self.aliases[canonical] = [*extra, *(k for k in self.aliases[canonical] if k not in extra)]
        self.event_aliases = dict(EVENT_ALIASES)
        self.message_events = {}
        for canonical, names in self.settings.events.items():
            for n in names:
                self.event_aliases[normalise_event_name(n)] = (canonical, {})
                self.message_events[normalise_event_name(n)] = canonical
        self.rules = [(r.event, compile_rule(r.message_regex), dict(r.fields)) for r in self.settings.rules]
        # group name -> canonical field (named groups use canonical names or any alias without dots)
        self._group_field = {a: canon for canon, keys in self.aliases.items() for a in keys}
        self._group_field.update({c: c for c in self.aliases})
        # source key -> [(canonical field, precedence)]: a record is walked by its own (few) keys
        # instead of probing every alias of every field
        self._key_index: dict[str, list[tuple[str, int]]] = {}
        for canon, keys in self.aliases.items():
            for i, k in enumerate(keys):
                self._key_index.setdefault(k, []).append((canon, i))
        self._alias_count = len(self._key_index)
        self._needles = (
            None
            if self.rules
            else tuple(dict.fromkeys(n.split(".", 1)[0].encode() for n in self.aliases["job_id"]))
        )
        self._event_cache: dict[str, tuple[str, dict[str, str]] | None] = {}
        # literals one of which every line a lock library's dialect reads contains
        self.dialect_needles: tuple[bytes, ...] = NEEDLE_BYTES if self.settings.dialects else ()

    @property
    def needles(self) -> tuple[bytes, ...] | None:
        """Byte strings one of which every lease-event line must contain (a cheap prefilter), or None.

        A dotted name (`job.id`) is looked for by its first part: nested JSON writes `"job":{"id":..}`,
        and the last part (`id`) would match nearly every line. Computed once: the reader asks per line.
        """
        return self._needles

    def _fields(self, rec: Mapping[str, Any]) -> dict[str, str | None]:
        """Canonical field -> raw string, each from the highest-precedence key present and non-empty."""
        if len(rec) > self._alias_count:  # a record with more keys than there are aliases: probe aliases
            row: dict[str, str | None] = {}
            for canonical, keys in self.aliases.items():
                for k in keys:
                    v = rec.get(k)
                    if v is not None and v != "":
                        row[canonical] = _to_str(v)
                        break
            return row
        best: dict[str, tuple[int, Any]] = {}
        index = self._key_index
        for k, v in rec.items():
            hits = index.get(k)
            if hits is None or v is None or (v.__class__ is str and not v):
                continue
            for canon, prio in hits:
                got = best.get(canon)
                if got is None or prio < got[0]:
                    best[canon] = (prio, v)
        return {c: _to_str(v) for c, (_, v) in best.items()}

    def _event_alias(self, name: str) -> tuple[str, dict[str, str]] | None:
        try:
            return self._event_cache[name]
        except KeyError:
            hit = self.event_aliases.get(normalise_event_name(name))
            if len(self._event_cache) < 10_000:  # bounded: event names are few, garbage is not
                self._event_cache[name] = hit
            return hit

    def extract(self, rec: Mapping[str, Any]) -> tuple[str, dict[str, str | None]] | str | None:
        """Map one flattened record.

        Returns (canonical event, raw canonical fields), or a string naming an event it does not know
        (an unmapped event name, so a user can map it), or None for a line unrelated to leases.
        """
        row = self._fields(rec)
        if "job_id" not in row and not self.rules:
            return self._dialect(rec, row)  # no job: unrelated to leases, unless a lock library said it
        event_name = row.get("event")
        implied: dict[str, str] = {}
        canonical_event: str | None = None
        if event_name is not None:
            hit = self._event_alias(event_name)
            if hit is not None:
                canonical_event, implied = hit
        elif self.message_events:
            message = row.get("message")
            if message:
                canonical_event = self.message_events.get(normalise_event_name(message))
                if canonical_event is not None:
                    event_name = message
        if canonical_event is None and self.rules:
            message = row.get("message")
            if message:
                for ev, rx, constants in self.rules:
                    m = rx.search(message)
                    if m:
                        canonical_event = ev
                        event_name = event_name or ev
                        for g, val in m.groupdict().items():
                            if val is not None:
                                row[self._group_field.get(g, g)] = val
                        implied = constants
                        break
        if canonical_event is None and self.dialect_needles:
            got = self._dialect(rec, row)
            if got is not None:
                return got
        if row.get("job_id") is None:
            return None
        if canonical_event is None:
            return event_name if event_name is not None else None
        for k, v in implied.items():
            row.setdefault(self._group_field.get(k, k), v)
        row["raw_event"] = event_name
        return canonical_event, row

    def _dialect(
        self, rec: Mapping[str, Any], row: dict[str, str | None]
    ) -> tuple[str, dict[str, str | None]] | None:
        """A lock library's own message (leaselog.reading.dialects): its canonical event, the lock name as
        the job. A rule that needs a literal confirmed (in the record's other values, or in the stack
        trace the reader attaches later) gets it appended to the message when the record has it."""
        message = row.get("message")
        if not message or not self.dialect_needles or not any(n in message for n in NEEDLES):
            return None
        hit = match_message(message, rec)
        if hit is None:
            return None
        out: dict[str, str | None] = {k: v for k, v in row.items() if k not in ("event", "job_id")}
        for k, v in hit.fields.items():
            out[self._group_field.get(k, k)] = v
        confirm = hit.rule.confirm
        if confirm and confirm not in message:
            said = next((v for v in rec.values() if isinstance(v, str) and confirm in v), None)
            if said is not None:
                out["message"] = f"{message}\n{said}"
        out["dialect"] = hit.dialect.name
        out["raw_event"] = hit.label
        return hit.rule.event, out


def _to_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, dict | list):
        import orjson

        try:
            return orjson.dumps(v).decode()
        except (TypeError, RecursionError):  # nested beyond orjson's limit: say so, never crash
            return "<value nested too deep>"
    return str(v)


@dataclass
class BuiltEvents:
    events: pl.DataFrame
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


def build_events(
    raw: pl.DataFrame | dict[str, list[Any]], event_names: list[str] | None, settings: Settings
) -> BuiltEvents:
    """Type the reader's raw columns into the canonical event frame (schema: EVENT_SCHEMA).

    `raw` is the reader's frame (RAW_COLUMNS as strings, `line`/`file_index` integers, and the canonical
    `event`), or the same as lists with the canonical names in `event_names`. A lease event with a value
    its field cannot hold (`BuiltEvents.rejected`, with why) is left out.
    """
    if isinstance(raw, pl.DataFrame):
        df = raw
    else:
        names = event_names or []
        n = len(names)
        data: dict[str, Any] = {k: raw.get(k, [None] * n) for k in RAW_COLUMNS}
        df = pl.DataFrame(
            {
                **{
                    k: pl.Series(k, v, dtype=pl.String)
                    for k, v in data.items()
                    if k not in ("line", "file_index")
                },
                "line": pl.Series("line", data["line"], dtype=pl.Int64),
                "file_index": pl.Series("file_index", data["file_index"], dtype=pl.Int64),
                "event": pl.Series("event", names, dtype=pl.String),
            }
        )
    # only `df` holds the raw columns from here: each one a typed column replaces is freed as it goes,
    # when the caller handed its last reference over (`pipeline.read_source`)
    del raw
    tz = settings.timezone
    # the reader hands its rows over in file and line order, almost always: then sorting the wide
    # frame (seconds at a million events) is skipped
    in_order = df.select(
        (
            (pl.col("file_index").diff() > 0)
            | ((pl.col("file_index").diff() == 0) & (pl.col("line").diff() >= 0))
        )
        .fill_null(True)
        .all()
    ).item()
    if not in_order:
        order = df.select(pl.arg_sort_by("file_index", "line", maintain_order=True)).to_series()
        columns = df.get_columns()
        del df  # (gathered frees each column once sorted: the frame is held once, not twice)
        df = gathered(columns, order)
    # a console line's thread cut to its last 15 characters (Logback's `%15.15t`) is the one longer thread
    # of its pod and file that it is the tail of: one thread, not two (leaselog.thread_spellings)
    df = whole_thread_names(df)
    df = times(df, tz)
    df = time_resolution(df)
    df = settle_lease_ends(df)
    notes: list[str] = []
    local_files: dict[str, str] = {}
    if df["naive"].any():
        if tz != "UTC":
            df = fall_back(df, tz)
        for f, example in (
            df.filter("naive").group_by("file", maintain_order=True).agg(pl.col("ts").first()).iter_rows()
        ):
            local_files[f] = tz
            notes.append(
                f"{f}: timestamps without a zone (e.g. `{example}`) read as {tz} time"
                + (" (--timezone ZONE if they are another zone's local time)" if tz == "UTC" else "")
            )
    df, reasons = typed_values(df, _FLOAT_FIELDS, _INT_FIELDS)
    df = df.with_columns(
        pl.col("renewal_outcome")
        .str.to_lowercase()
        .replace_strict(_OUTCOMES, default=pl.col("renewal_outcome").str.to_lowercase()),
        pl.col("outcome").str.to_lowercase(),
        pl.col("release_outcome").str.to_lowercase(),
        pl.col("trigger").str.to_lowercase(),
        *(
            pl.col(c)
            .str.to_lowercase()
            .replace_strict(
                {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False},
                default=None,
                return_dtype=pl.Boolean,
            )
            for c in ("late", "entry_kept")
        ),
    )
    # a renewal line without an outcome is a success (e.g. `lease_renewed`, or a plain renewal log)
    df = df.with_columns(
        pl.when(pl.col("event") == "lease_renewal")
        .then(pl.col("renewal_outcome").fill_null("success"))
        .otherwise(pl.col("renewal_outcome"))
        .alias("renewal_outcome")
    )
    # a wall clock that stepped inside an execution is read with the step undone (its own elapsedMs shows
    # it): the lines after a step back are then no end before their start, and durations hold
    df = undo_clock_steps(df, settings.clock_jitter_ms)
    # a process's start (Spring Boot's start-up line) only told the clock where `elapsedMs` counts from
    # anew: it is no lease event, and no job's
    if (started := df["event"] == PROCESS_STARTED).any():
        df = df.filter(~started)
    # the lock's Redis failing over is no job's either: a fact of the fleet
    df, failovers, failover_rejected = split_failovers(df, settings.clock_offsets_ms)
    # A timestamp that is present but unreadable makes its line malformed; so does a missing one in a file
    # with wall-clock times (the event cannot be placed).
    file_has_wall = pl.col("t_wall").is_not_null().any().over("file_index")
    reasons.insert(
        0,
        pl.when(pl.col("ts").is_not_null() & pl.col("t_wall").is_null())
        .then(
            pl.when(pl.col("ts").cast(pl.Float64, strict=False).is_not_null())
            .then(
                pl.format(
                    "without a parseable timestamp: `{}` is no epoch time between 1970 and 2200",
                    pl.col("ts").str.slice(0, 40),
                )
            )
            .otherwise(
                pl.format(
                    "without a parseable timestamp: `{}` is in no shape leaselog reads",
                    pl.col("ts").str.slice(0, 60),
                )
            )
        )
        .when(pl.col("ts").is_null() & file_has_wall)
        .then(pl.lit("without a parseable timestamp (missing; the file's other lines have one)"))
        .otherwise(None),
    )
    df = df.with_columns(pl.concat_str(reasons, separator="; ", ignore_nulls=True).alias("_why")).drop(
        cs.starts_with("_why_")
    )
    unreadable = (
        df.filter(pl.col("ts").is_not_null() & pl.col("t_wall").is_null())
        .group_by("file", maintain_order=True)
        .agg(pl.len(), pl.col("ts").first())
    )
    # (counted only when needed: a group-by on the file names of a million events holds ~0.4 GB)
    totals = dict(df.group_by("file").len().iter_rows()) if unreadable.height else {}
    for f, n_bad, example in unreadable.iter_rows():
        if n_bad == totals.get(f):
            notes.append(
                f"{f}: none of its {n_bad} lease events' timestamps could be read (e.g. `{example}`); "
                f"leaselog reads {TIME_SHAPES}"
            )
    # a line without an execution id is held as its job and pod's until the runs are cut out of them
    # (leaselog.execution_runs, once every event of the job is at hand)
    if df["execution_id"].null_count():  # (formatting a million ids only to keep none of them costs)
        df = df.with_columns(
            pl.when(pl.col("execution_id").is_null())
            .then(pl.lit(POD, pl.Int8))
            .otherwise(pl.lit(ID, pl.Int8))
            .alias("identity"),
            pl.col("execution_id").fill_null(pl.format("{}@{}", pl.col("job_id"), pl.col("pod"))),
        )
    else:
        df = df.with_columns(pl.lit(ID, pl.Int8).alias("identity"))
    shared, early = execution_gate(df, kept=pl.col("_why") == "")
    if shared:
        df, shared_notes = execution_keys(df)
        notes += shared_notes
    if early or shared:
        back = ends_before_start(tz, kept=pl.col("_why") == "")
        df = df.with_columns(
            pl.when(pl.col("_why") == "").then(back.fill_null("")).otherwise(pl.col("_why")).alias("_why")
        )
        # (a rejected line is no start to end before: the check sees only the kept ones)
    bad = pl.col("_why") != ""
    rejected = df.filter(bad).select(
        "file", "line", pl.format("lease event `{}`: {}", pl.col("raw_event"), pl.col("_why")).alias("reason")
    )
    if rejected.height:  # (filtering copies every column: only when there is something to drop)
        df = df.filter(~bad)
    # Events are numbered (`seq`) in the order they happened: within a file by time where it has wall
    # clocks (a Loki export lists its lines newest first; an async appender can write a line after a
    # later one), by line otherwise. Files whose times never go back (almost all) skip the sort.
    same_file = pl.col("file_index").diff() == 0
    step = pl.col("t_wall").diff()
    if df.select((same_file & (step < 0)).fill_null(False).any()).item():
        # a file written newest first breaks ties of equal times newest first too
        back = (same_file & (step < 0)).cast(pl.Int64).sum().over("file_index")
        ahead = (same_file & (step > 0)).cast(pl.Int64).sum().over("file_index")
        line_key = pl.when(back > ahead).then(-pl.col("line")).otherwise(pl.col("line"))
        order = df.select(
            pl.arg_sort_by([pl.col("file_index"), pl.col("t_wall"), line_key], maintain_order=True)
        ).to_series()
        columns = df.get_columns()
        del df  # (gathered frees each column once sorted: the frame is held once, not twice)
        df = gathered(columns, order)
    df = df.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))

    offsets = settings.clock_offsets_ms
    if offsets:
        off = pl.col("pod").replace_strict(offsets, default=0.0, return_dtype=pl.Float64)
        df = df.with_columns(
            (pl.col("t_wall") - pl.duration(microseconds=(off * 1000).round(0).cast(pl.Int64))).alias(
                "t_wall"
            )
        )
    df = df.with_columns(
        pl.when(pl.col("t_wall").is_not_null())
        .then(pl.lit("wall"))
        .when(pl.col("elapsed_ms").is_not_null())
        .then(pl.lit("elapsed"))
        .otherwise(pl.lit("order"))
        .alias("clock")
    )
    all_wall = not (df["clock"] != "wall").any()
    df = df.with_columns(pl.col("t_wall").alias("t")) if all_wall else pseudo_times(df)
    events = df.select([pl.col(c).cast(dt) for c, dt in EVENT_SCHEMA.items()])
    return BuiltEvents(
        events=events,
        rejected=rejected,
        notes=notes,
        local_time_files=local_files,
        failovers=failovers,
        failovers_rejected=failover_rejected,
    )
