"""Findings: small immutable records with evidence, and the frame/JSON forms of a list of them."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Self
from zoneinfo import ZoneInfo

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning", "info"]
Certainty = Literal["certain", "uncertain"]
SEVERITY_RANK: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


# how `Evidence.of` and `Finding.of` build a record without validation: what pydantic's own
# `model_construct` does, minus its per-field loop
_new = object.__new__
_set = object.__setattr__
_intern = sys.intern


class Evidence(BaseModel):
    """A log line that proves part of a finding."""

    model_config = ConfigDict(frozen=True)
    file: str
    line: int
    note: str | None = None

    @classmethod
    def of(cls, file: str, line: int, note: str | None = None) -> Self:
        """An Evidence from values already of the right types (a check's columns), without validation.

        The same record `Evidence(file=..., line=..., note=...)` builds, at a quarter of the cost.
        """
        e = _new(cls)
        # a path repeats in every finding: one string for all (polars gives each row its own)
        _set(e, "__dict__", {"file": _intern(file), "line": line, "note": note})
        _set(e, "__pydantic_fields_set__", _EVIDENCE_SET if note is not None else _EVIDENCE_SET_NO_NOTE)
        _set(e, "__pydantic_extra__", None)
        _set(e, "__pydantic_private__", None)
        return e

    @classmethod
    def known(cls, *lines: tuple[str | None, int | None, str | None]) -> tuple[Self, ...]:
        """Evidence for each `(file, line, note)` whose file and line are known (`ev()` for several lines
        at once, in one call: checks make one per finding, tens of thousands of them)."""
        return tuple(
            cls.of(file, int(line), note)
            for file, line, note in lines
            if file is not None and line is not None
        )


# One fields-set shared by every record built here (~0.7 KB a finding, 0.2 KB an evidence line, were
# per-record copies: ~100 MB at 68 000 findings). Sharing a mutable set is safe: pydantic's
# `model_copy(update=...)` copies the set before adding to it, and nothing else writes to it.
_EVIDENCE_SET: set[str] = {"file", "line", "note"}
_EVIDENCE_SET_NO_NOTE: set[str] = {"file", "line"}


class Finding(BaseModel):
    """One thing that went wrong (or, for info findings, a safeguard that worked)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    kind: str
    code: str
    severity: Severity
    certainty: Certainty = "certain"
    job_id: str | None = Field(None, alias="jobId")
    execution_ids: tuple[str, ...] = Field((), alias="executionIds")
    pods: tuple[str, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    duration_ms: float | None = Field(None, alias="durationMs")
    trigger: str | None = None
    message: str
    evidence: tuple[Evidence, ...] = ()
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        kind: str,
        code: str,
        severity: Severity,
        message: str,
        certainty: Certainty = "certain",
        job_id: str | None = None,
        execution_ids: tuple[str, ...] = (),
        pods: tuple[str, ...] = (),
        start: datetime | None = None,
        end: datetime | None = None,
        duration_ms: float | None = None,
        trigger: str | None = None,
        evidence: tuple[Evidence, ...] = (),
        details: dict[str, Any] | None = None,
    ) -> Self:
        """A Finding from values already of the right types, without validation (checks build tens of
        thousands: validating each cost more than phrasing it). The same record `Finding(...)` builds
        from these values: the one coercion validation would make, an int duration to float, is kept.
        """
        f = _new(cls)
        _set(
            f,
            "__dict__",
            {
                "kind": kind,
                "code": code,
                "severity": severity,
                "certainty": certainty,
                "job_id": job_id,
                "execution_ids": execution_ids,
                "pods": pods,
                "start": start,
                "end": end,
                "duration_ms": None if duration_ms is None else float(duration_ms),
                "trigger": trigger,
                "message": message,
                "evidence": evidence,
                "details": {} if details is None else details,
            },
        )
        _set(f, "__pydantic_fields_set__", _FINDING_SET)  # shared: see _EVIDENCE_SET
        _set(f, "__pydantic_extra__", None)
        _set(f, "__pydantic_private__", None)
        return f

    def to_json_dict(self) -> dict[str, Any]:
        return _json_dict(self, iso(self.start), iso(self.end))


_FINDING_SET: set[str] = set(Finding.model_fields)


def _json_dict(f: Finding, start: str | None, end: str | None, *, shared: bool = False) -> dict[str, Any]:
    """`f` in the JSON contract's shape, with its start and end already in ISO form.

    `shared=True` (for serialising at once): the same JSON, but the dict shares the finding's tuples
    (orjson writes a tuple as a list) and, for evidence with a note, the record's own `{file, line, note}`
    dict, instead of copying them.
    """
    v = f.__dict__
    duration = v["duration_ms"]
    d: dict[str, Any] = {
        "kind": v["kind"],
        "code": v["code"],
        "severity": v["severity"],
        "certainty": v["certainty"],
        "jobId": v["job_id"],
        "executionIds": v["execution_ids"] if shared else list(v["execution_ids"]),
        "pods": v["pods"] if shared else list(v["pods"]),
        "start": start,
        "end": end,
        "durationMs": None if duration is None else round(duration, 3),
        "message": v["message"],
        "evidence": [
            {"file": e.file, "line": e.line}
            if e.note is None
            else (e.__dict__ if shared else {"file": e.file, "line": e.line, "note": e.note})
            for e in v["evidence"]
        ],
    }
    if v["trigger"] is not None:
        d["trigger"] = v["trigger"]
    if v["details"]:
        d["details"] = v["details"]
    return d


def findings_json(findings: list[Finding], *, shared: bool = False) -> list[dict[str, Any]]:
    """`[f.to_json_dict() for f in findings]`, faster: a finding's end is often its start, formatted once.

    `shared=True` (for serialising straight away): the dicts share the findings' own tuples and evidence
    dicts instead of copying them; the same JSON, fewer objects to build and free.
    """
    starts = iso_all([f.start for f in findings])
    ends = iso_all([None if f.end is f.start else f.end for f in findings])
    return [
        _json_dict(f, start, start if f.end is f.start else end, shared=shared)
        for f, start, end in zip(findings, starts, ends, strict=True)
    ]


FindingKey = tuple[str, str | None, tuple[str, ...], datetime | None, datetime | None, Any, Any]


def finding_key(f: Finding) -> FindingKey:
    """What makes a finding the one it is: two findings with the same key say the same thing.

    Kind, executions, start and end; an execution is known by its job and id (two jobs can each have an
    `attempt-a`), and a fleet-level finding with no job (`lease_settings`) by the job type and TTL it is
    about.
    """
    d = f.details
    return (f.kind, f.job_id, f.execution_ids, f.start, f.end, d.get("jobType"), d.get("ttlMs"))


def enforce_invariants(findings: list[Finding]) -> list[Finding]:
    """The findings with the invariants every output relies on made true, in their order.

    - No two findings are the same (`finding_key`: kind, executions, start, end): a check that repeats one has a bug (fixed at its
      cause; tests run every check on every sample without this net), and a repeat adds nothing but
      noise, so the first stays, with the evidence of its repeats added to its own.
    - An `uncertain` finding is never an error: severity states what the logs prove, so it is a warning.
    """
    first: dict[FindingKey, int] = {}
    out: list[Finding] = []
    for f in findings:
        if f.certainty == "uncertain" and f.severity == "error":
            f = f.model_copy(update={"severity": "warning"})
        k = finding_key(f)
        at = first.get(k)
        if at is None:
            first[k] = len(out)
            out.append(f)
            continue
        kept = out[at]
        extra = tuple(e for e in f.evidence if e not in kept.evidence)
        if extra:
            out[at] = kept.model_copy(update={"evidence": (*kept.evidence, *extra)})
    return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while building or serialising many small objects (findings, their dicts).

    They hold no reference cycles, so reference counting frees them anyway; but every full collection walks
    every live object (the whole analysis), which made the checks and the JSON writing grow faster than the
    input. Measured on 200 000 jobs: the checks 4.9 s -> 3.5 s, the JSON 1.7 s -> 0.8 s.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def iso(t: datetime | None) -> str | None:
    if t is None:
        return None
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


_UTC_ZONE = ZoneInfo("UTC")  # the zone polars gives its UTC datetimes (ZoneInfo keeps one per key)
_EPOCH_UTC_ZONE = datetime(1970, 1, 1, tzinfo=_UTC_ZONE)
_MICROSECOND = timedelta(microseconds=1)


def iso_all(ts: list[datetime | None]) -> list[str | None]:
    """`[iso(t) for t in ts]`, formatted by polars when every moment is in polars' UTC zone (as checks make
    them from the frames): a third of the cost. Same strings: `%.3f` truncates to milliseconds as
    `isoformat(timespec="milliseconds")` does, over the whole range of datetime (checked on 200 000)."""
    if not all(t is None or t.tzinfo is _UTC_ZONE for t in ts):
        return [iso(t) for t in ts]
    # microseconds since the epoch, exactly (same zone object: plain field arithmetic, no utcoffset call)
    us = [None if t is None else (t - _EPOCH_UTC_ZONE) // _MICROSECOND for t in ts]
    moments = pl.Series(us, dtype=pl.Int64).cast(pl.Datetime("us", "UTC"))
    return moments.dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_list()


EVIDENCE_DTYPE = pl.List(pl.Struct({"file": pl.String(), "line": pl.Int64(), "note": pl.String()}))

# The findings of a run as one frame (`Analysis.findings`; documented in `leaselog.schema`): one row per
# finding, in output order. `details` is the finding's details as a JSON object (null when it has none).
FINDING_SCHEMA: dict[str, pl.DataType] = {
    "code": pl.String(),
    "kind": pl.String(),
    "severity": pl.String(),
    "certainty": pl.String(),
    "job_id": pl.String(),
    "execution_ids": pl.List(pl.String()),
    "pods": pl.List(pl.String()),
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "duration_ms": pl.Float64(),
    "trigger": pl.String(),
    "message": pl.String(),
    "evidence": EVIDENCE_DTYPE,
    "details": pl.String(),
}


def empty_findings() -> pl.DataFrame:
    return pl.DataFrame(schema=FINDING_SCHEMA)


def frame_of(findings: list[Finding]) -> pl.DataFrame:
    """Finding records as the findings frame (built column by column: fast at 100k)."""
    import orjson

    cols: dict[str, list[Any]] = {
        "code": [f.code for f in findings],
        "kind": [f.kind for f in findings],
        "severity": [f.severity for f in findings],
        "certainty": [f.certainty for f in findings],
        "job_id": [f.job_id for f in findings],
        "execution_ids": [list(f.execution_ids) for f in findings],
        "pods": [list(f.pods) for f in findings],
        "start": [f.start for f in findings],
        "end": [f.end for f in findings],
        "duration_ms": [f.duration_ms for f in findings],
        "trigger": [f.trigger for f in findings],
        "message": [f.message for f in findings],
        "evidence": [
            [{"file": e.file, "line": e.line, "note": e.note} for e in f.evidence] for f in findings
        ],
        "details": [orjson.dumps(f.details).decode() if f.details else None for f in findings],
    }
    return pl.DataFrame({k: pl.Series(k, v, dtype=FINDING_SCHEMA[k]) for k, v in cols.items()})


def records(frame: pl.DataFrame) -> list[Finding]:
    """The findings frame as Finding records (for code that wants objects: notebooks, the lab, `watch`)."""
    import orjson

    if frame.height == 0:
        return []
    with gc_paused():
        c = {name: frame[name].to_list() for name in FINDING_SCHEMA}
        rows = zip(*c.values(), strict=True)
        return [
            Finding.of(
                kind=kind,
                code=code,
                severity=severity,
                certainty=certainty,
                job_id=job_id,
                execution_ids=tuple(ids),
                pods=tuple(pods),
                start=start,
                end=end,
                duration_ms=duration,
                trigger=trigger,
                message=message,
                evidence=tuple(Evidence.of(e["file"], e["line"], e["note"]) for e in evidence),
                details=orjson.loads(details) if details is not None else None,
            )
            for (
                code,
                kind,
                severity,
                certainty,
                job_id,
                ids,
                pods,
                start,
                end,
                duration,
                trigger,
                message,
                evidence,
                details,
            ) in rows
        ]


def finalize(frame: pl.DataFrame) -> pl.DataFrame:
    """The findings with the invariants every output relies on made true, in output order.

    - An `uncertain` finding is never an error: severity states what the logs prove, so it is a warning.
    - No two findings are the same (`finding_key`: kind, executions, start, end): a check that repeats one
      has a bug (fixed at its cause; tests run every check on every sample without this net), and a
      repeat adds nothing but noise, so the first stays, with the evidence of its repeats added to its own.
    - Most severe first, then by job, start (a finding without one at the epoch) and code; ties keep the
      checks' order.
    """
    frame = frame.with_columns(
        pl.when((pl.col("certainty") == "uncertain") & (pl.col("severity") == "error"))
        .then(pl.lit("warning"))
        .otherwise(pl.col("severity"))
        .alias("severity")
    )
    key = pl.struct(
        "kind",
        "job_id",
        "execution_ids",
        "start",
        "end",
        pl.col("details").str.json_path_match("$.jobType").alias("_job_type"),
        pl.col("details").str.json_path_match("$.ttlMs").alias("_ttl"),
    )
    if frame.select(key.is_duplicated().any()).item():
        frame = frame_of(enforce_invariants(records(frame)))
    rank = pl.col("severity").replace_strict(SEVERITY_RANK, default=len(SEVERITY_RANK), return_dtype=pl.Int64)
    return frame.sort(
        rank,
        pl.col("job_id").fill_null(""),
        pl.col("start").fill_null(_EPOCH_UTC_ZONE),
        "code",
        maintain_order=True,
    )


_ISO = "%Y-%m-%dT%H:%M:%S%.3fZ"  # what `iso` writes: `%.3f` truncates to milliseconds as isoformat does


def json_dicts(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The findings frame's rows in the JSON contract's shape (`Finding.to_json_dict()` for each row)."""
    import orjson

    f = frame.select(
        "kind",
        "code",
        "severity",
        "certainty",
        "job_id",
        "execution_ids",
        "pods",
        pl.col("start").dt.strftime(_ISO),
        pl.col("end").dt.strftime(_ISO),
        "duration_ms",
        "message",
        pl.col("evidence").list.len().alias("n_evidence"),
        "trigger",
        "details",
    )
    # the evidence records flattened into three plain columns: polars hands nested structs to Python
    # several times slower than plain values
    flat = (
        frame.select("evidence")
        .filter(pl.col("evidence").list.len() > 0)
        .explode("evidence")
        .unnest("evidence")
    )
    files, lines, notes = (flat[c].to_list() for c in ("file", "line", "note"))
    out: list[dict[str, Any]] = []
    loads = orjson.loads
    at = 0
    for kind, code, severity, certainty, job_id, ids, pods, start, end, duration, message, n, trigger, details in zip(
        *(f[c].to_list() for c in f.columns), strict=True
    ):  # fmt: skip
        evidence = []
        for i in range(at, at + n):
            note = notes[i]
            evidence.append(
                {"file": files[i], "line": lines[i]}
                if note is None
                else {"file": files[i], "line": lines[i], "note": note}
            )
        at += n
        d: dict[str, Any] = {
            "kind": kind,
            "code": code,
            "severity": severity,
            "certainty": certainty,
            "jobId": job_id,
            "executionIds": ids,
            "pods": pods,
            "start": start,
            "end": end,
            "durationMs": None if duration is None else round(duration, 3),
            "message": message,
            "evidence": evidence,
        }
        if trigger is not None:
            d["trigger"] = trigger
        if details is not None:
            more = loads(details)
            if more:
                d["details"] = more
        out.append(d)
    return out


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Most severe first, then by job, start (a finding without one at the epoch) and code.

    Aware moments compare as their timestamps do, so the key holds the datetime itself; a naive one (no
    check makes one) cannot be compared with an aware one and takes the timestamp key instead. The
    collector stays off meanwhile: a key tuple per finding made it run full collections.
    """
    with gc_paused():
        try:
            return sorted(
                findings,
                key=lambda f: (SEVERITY_RANK[f.severity], f.job_id or "", f.start or _EPOCH, f.code),
            )
        except TypeError:
            return sorted(
                findings,
                key=lambda f: (
                    SEVERITY_RANK[f.severity],
                    f.job_id or "",
                    f.start.timestamp() if f.start else 0.0,
                    f.code,
                ),
            )
