"""`leaselog analyze PATHS --engine spark`: the pipeline's stages (`leaselog.pipeline`) as a Spark job.

    read      one task per input (file or object): `read_source` -> events as Arrow, plus the input's
              line accounting, log ends and totals (one extra row per input, collected by the driver)
    fleet     the driver merges the inputs' log ends (and the failovers of the lock's Redis they logged) into
              the `FleetContext` every partition is given
    analyze   events `repartition(P, job_id)` + `sortWithinPartitions(seq)`, then `mapInArrow`: each
              partition's whole jobs through `analyze_events`; out come its findings, the fleet checks'
              partials and its counts (Arrow IPC payloads, a few rows per partition)
    merge     on the driver: `fleet_findings` from the partials, `merge` into the same Analysis (and so the
              same JSON document) as one run on one machine

The session is `getOrCreate`d, so inside `spark-submit`, a Databricks notebook or an EMR step the running
session (and its cluster) is used; `--master` only applies when leaselog starts one itself. The workers
need leaselog installed (`pip install 'leaselog[spark]'` on every node, or a wheel shipped with
`--py-files`) and Java 17+ on the machines.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from leaselog.config import Settings
from leaselog.events import EVENT_SCHEMA
from leaselog.execution_runs import REMARKS_SCHEMA, identify_executions
from leaselog.fleet import FleetContext, Totals
from leaselog.pipeline import (
    SEQ_BITS,
    Part,
    SourceRead,
    analyze_events,
    check_read,
    fleet_findings,
    merge,
    read_source,
    sources_of,
)
from leaselog.reading.sources import Source

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from leaselog.analysis import Analysis

META = "_leaselog_meta"  # the read stage's extra column: a pickled account of one input, else null


class SparkError(RuntimeError):
    """The Spark engine cannot run here (pyspark or Java missing)."""


@dataclass
class StageTimes:
    """Wall-clock seconds per stage of one run (what `--engine spark` reports with --verbose)."""

    seconds: dict[str, float] = field(default_factory=dict)
    driver_bytes: int = 0  # Arrow IPC bytes the analyze stage sent to the driver
    partitions: int = 0

    def mark(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[name] = round(now - since, 3)
        return now


def session(master: str | None = None, *, app: str = "leaselog") -> SparkSession:
    """The running Spark session (spark-submit, Databricks, EMR), or a new one on `master` (default
    `local[*]`). The workers run the driver's Python unless PYSPARK_PYTHON says otherwise."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise SparkError("--engine spark needs pyspark: pip install 'leaselog[spark]' (and Java 17+)") from e
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app)
    if master:
        builder = builder.master(master)
    elif SparkSession.getActiveSession() is None and "spark.master" not in os.environ.get(
        "PYSPARK_SUBMIT_ARGS", ""
    ):
        builder = builder.master("local[*]")
    try:
        spark = builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()
    except Exception as e:  # a JVM that cannot start (no Java, wrong version) comes up as anything
        raise SparkError(f"cannot start Spark (Java 17+ on PATH or JAVA_HOME?): {e}") from e
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def _spark_type(dtype: pl.DataType) -> Any:
    from pyspark.sql import types as T

    if dtype == pl.String or dtype == pl.Categorical:  # (the events' Categorical columns travel as strings)
        return T.StringType()
    if dtype == pl.Int64:
        return T.LongType()
    if dtype == pl.Int8:
        return T.ByteType()
    if dtype == pl.Float64:
        return T.DoubleType()
    if dtype == pl.Boolean:
        return T.BooleanType()
    if isinstance(dtype, pl.Datetime):
        return T.TimestampType()
    raise TypeError(f"no Spark type for {dtype}")


def _event_schema(with_meta: bool) -> Any:
    from pyspark.sql import types as T

    fields = [T.StructField(c, _spark_type(dt), True) for c, dt in EVENT_SCHEMA.items()]
    if with_meta:
        fields.append(T.StructField(META, T.BinaryType(), True))
    return T.StructType(fields)


def _arrow_schema(with_meta: bool) -> pa.Schema:
    import pyarrow as pa

    types = {
        pl.String: pa.string(),
        pl.Categorical: pa.string(),
        pl.Int64: pa.int64(),
        pl.Int8: pa.int8(),
        pl.Float64: pa.float64(),
        pl.Boolean: pa.bool_(),
    }
    fields = [
        pa.field(c, pa.timestamp("us", tz="UTC") if isinstance(dt, pl.Datetime) else types[dt.base_type()])
        for c, dt in EVENT_SCHEMA.items()
    ]
    if with_meta:
        fields.append(pa.field(META, pa.binary()))
    return pa.schema(fields)


def _to_arrow(frame: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    return frame.to_arrow().cast(schema)


def _ipc(frame: pl.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.write_ipc(out, compression="zstd")
    return out.getvalue()


def _from_ipc(data: bytes) -> pl.DataFrame:
    return pl.read_ipc(io.BytesIO(data))


@dataclass
class _InputAccount:
    """What the driver learns of one input from the read stage (everything but its events)."""

    index: int
    read: SourceRead  # with an empty events frame
    log_ends: bytes  # FleetContext.log_ends as IPC
    totals: Totals


def _read_task(
    sources: Sequence[Source], settings: Settings, keep_fields: bool
) -> Callable[..., Iterator[Any]]:
    """The read stage's mapInArrow function: each id in its batches is an input to read."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = _arrow_schema(with_meta=True)
        for batch in batches:
            for i in batch.column("id").to_pylist():
                read = read_source([sources[i]], settings, seq_base=i << SEQ_BITS, keep_fields=keep_fields)
                events, read.events = read.events, read.events.clear()
                account = _InputAccount(
                    i, read, _ipc(FleetContext.of(events).log_ends), Totals.of_events(events)
                )
                if events.height:
                    table = _to_arrow(events.with_columns(pl.lit(None, dtype=pl.Binary).alias(META)), schema)
                    yield from table.to_batches(max_chunksize=65536)
                meta = pa.table(
                    {
                        **{f.name: pa.nulls(1, f.type) for f in schema if f.name != META},
                        META: pa.array([pickle.dumps(account)], pa.binary()),
                    },
                    schema=schema,
                )
                yield from meta.to_batches()

    return run


_OUT = "kind string, payload binary"


def _analyze_task(settings: Settings, fleet: FleetContext, frames: bool) -> Callable[..., Iterator[Any]]:
    """The analyze stage's mapInArrow function: one partition's whole jobs through `analyze_events`."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        got = [b for b in batches if b.num_rows]
        if not got:  # a partition no job hashed to
            return
        table = pa.Table.from_batches(got)
        events = pl.from_arrow(table)
        assert isinstance(events, pl.DataFrame)
        events = events.select([pl.col(c).cast(dt) for c, dt in EVENT_SCHEMA.items()])
        part = analyze_events(events, settings, fleet)
        out: list[tuple[str, bytes]] = [
            ("findings", _ipc(part.findings)),
            ("remarks", _ipc(part.remarks)),
            ("counts", pickle.dumps((events.height, _jobs(part.executions), part.executions.height))),
        ]
        for code, partial in part.partials.items():
            out += [(f"partial/{code}/{name}", _ipc(frame)) for name, frame in partial.items()]
        if frames:
            out += [
                ("executions", _ipc(part.executions)),
                ("leases", _ipc(part.leases)),
                ("renewals", _ipc(part.renewals)),
            ]
        yield pa.RecordBatch.from_pydict(
            {"kind": [k for k, _ in out], "payload": [v for _, v in out]},
            schema=pa.schema([("kind", pa.string()), ("payload", pa.binary())]),
        )

    return run


def pa_table(batches: Any) -> pa.Table:
    """`toArrow`'s table, or `_collect_as_arrow`'s batches (Spark 3.5) as one."""
    import pyarrow as pa

    return batches if isinstance(batches, pa.Table) else pa.Table.from_batches(batches)


def _jobs(executions: pl.DataFrame) -> int:
    return int(executions["job_id"].n_unique()) if executions.height else 0


def run(
    paths: Sequence[str],
    settings: Settings,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    partitions: int | None = None,
    frames: bool = False,
    times: StageTimes | None = None,
) -> Analysis:
    """The analysis of `paths` on Spark: the same Analysis as `leaselog.analyze` (same JSON document).

    `frames=False` (enough for --json) keeps the events, executions, leases and renewals on the
    cluster: the Analysis then carries empty frames of them and the document's counts (`Totals`).
    `frames=True` (--parquet, --html) brings them to the driver as well.
    """
    times = times if times is not None else StageTimes()
    t = time.perf_counter()
    if spark is None:
        spark = session(master)
        t = times.mark("session", t)
    sources, problems = sources_of(list(paths))
    read_df = (
        spark.range(0, len(sources), numPartitions=max(1, len(sources)))
        .mapInArrow(_read_task(sources, settings, frames), _event_schema(with_meta=True))
        .persist()
    )
    meta_rows = read_df.filter(read_df[META].isNotNull()).select(META).collect()
    accounts = sorted((pickle.loads(r[0]) for r in meta_rows), key=lambda a: a.index)
    t = times.mark("read", t)
    reads = [a.read for a in accounts]
    check_read(reads)
    # (each input's failovers of the lock's Redis, no job's, come with its read)
    fleet = FleetContext.merge(FleetContext(_from_ipc(a.log_ends), a.read.failovers) for a in accounts)
    totals = Totals.merge(a.totals for a in accounts)
    n = partitions or max(2, 4 * spark.sparkContext.defaultParallelism)
    times.partitions = n
    events_df = read_df.filter(read_df[META].isNull()).drop(META)
    out = (
        events_df.repartition(n, "job_id")
        .sortWithinPartitions("seq")
        .mapInArrow(_analyze_task(settings, fleet, frames), _OUT)
        .collect()
    )
    t = times.mark("analyze", t)
    payloads: dict[str, list[bytes]] = {}
    for kind, payload in out:
        payloads.setdefault(kind, []).append(bytes(payload))
        times.driver_bytes += len(payload)
    parts = _parts(payloads)
    rows = fleet_findings([p.partials for p in parts], settings)
    events = pl.DataFrame(schema=EVENT_SCHEMA)
    if frames:
        events = (
            frames_of(events_df).select([pl.col(c).cast(dt) for c, dt in EVENT_SCHEMA.items()]).sort("seq")
        )
        # the names the partitions gave (each job is identified whole, so the same on the driver)
        events = identify_executions(events)[0]
    counts = [pickle.loads(c) for c in payloads.get("counts", [])]
    totals = totals.with_jobs(sum(c[1] for c in counts), sum(c[2] for c in counts))
    analysis = merge(reads, events, parts, rows, settings, problems, totals=None if frames else totals)
    read_df.unpersist()
    times.mark("merge", t)
    return analysis


def _parts(payloads: dict[str, list[bytes]]) -> list[Part]:
    """The partitions' payloads as Parts (frames concatenated per kind: the merge re-sorts them)."""

    def frame(kind: str) -> pl.DataFrame:
        found = [_from_ipc(p) for p in payloads.get(kind, [])]
        found = [f for f in found if f.width]
        return pl.concat(found, how="vertical_relaxed") if found else pl.DataFrame()

    partials: dict[str, dict[str, pl.DataFrame]] = {}
    for kind in payloads:
        if kind.startswith("partial/"):
            _, code, name = kind.split("/", 2)
            partials.setdefault(code, {})[name] = frame(kind)
    remarks = frame("remarks")
    return [
        Part(
            frame("executions"),
            frame("leases"),
            frame("renewals"),
            frame("findings"),
            partials,
            pl.DataFrame(schema=EVENT_SCHEMA),
            remarks if remarks.width else pl.DataFrame(schema=REMARKS_SCHEMA),
        )
    ]


def frames_of(df: DataFrame) -> pl.DataFrame:
    """A Spark DataFrame as a polars one, through Arrow (`toArrow` since Spark 4.0)."""
    spark_df: Any = df  # (`_collect_as_arrow`: Spark 3.5's way, typed as a column lookup)
    table = spark_df.toArrow() if hasattr(spark_df, "toArrow") else spark_df._collect_as_arrow()
    out = pl.from_arrow(pa_table(table))
    assert isinstance(out, pl.DataFrame)
    return out
