"""The data the HTML report carries instead of figures: one columnar table of every finding (in the list's
order) and the executions and events of each job that gets a timeline. The page writes the findings list
from it (assets/findings.js) and draws a job's timeline from it when it is first shown (assets/timeline.js).

timeline.js follows timeline.py, lanes.py and markers.py step for step, and a test draws jobs both ways and
compares the figures. Everything in the table is raw log text: the page escapes it before it becomes markup
(as html_parts.e does) or reaches plotly (as plotting.esc does). Times are integers, microseconds since the
Unix epoch (on the log-order timeline too: `epoch` is where its seconds count from).

The table travels gzip-compressed and base64-encoded in the page's data block (the events' raw fields and
the findings' evidence repeat a lot; compressed they are a small share of the page).
"""

from __future__ import annotations

import base64
import gzip
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from leaselog.render.lanes import MAX_FINDING_ROWS, MIN_BAND, SPREAD
from leaselog.render.markers import (
    DETAIL_COLUMNS,
    MARKERS,
    MAX_FIELDS_CHARS,
    MAX_MARKERS,
    MAX_SPREAD,
    SPREAD_STEP,
    with_late,
)
from leaselog.render.plotting import (
    DIM,
    EXECUTION,
    LEASE,
    LEASE_EDGE,
    OPEN_END,
    RENEWAL_COLOUR,
    SEVERITY_COLOUR,
    ZOMBIE,
)
from leaselog.render.timeline import MAX_LANES
from leaselog.timebase import PSEUDO_EPOCH

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["encode_table", "figure_height", "timeline_table"]

_EXECUTION_COLUMNS = (
    "execution_id",
    "pod",
    "clock",
    "start",
    "end",
    "acquired_at",
    "valid_until",
    "triggered_at",
    "last_seen",
    "ttl_ms",
    "runtime_ms",
    "lease_end",
    "end_kind",
    "acquired_file",
    "acquired_line",
    "started_file",
    "started_line",
    "file",
)
_EVENT_COLUMNS = (
    "execution_id",
    "t",
    "seq",
    "event",
    "raw_event",
    "detail",
    "pod",
    "file",
    "line",
    "fields",
    "late",
    "released",
    "outcome",
    "renewal_outcome",
)
_FINDING_COLUMNS = (
    "job_id",
    "kind",
    "code",
    "severity",
    "certainty",
    "execution_ids",
    "pods",
    "start",
    "end",
    "duration_ms",
    "trigger",
    "message",
    "timeline",
    "goto",
    "wall",
)


def _style() -> dict[str, Any]:
    """The figures' colours and limits, so the page draws with the same ones as the Python figures."""
    return {
        "colour": {
            "lease": LEASE,
            "leaseEdge": LEASE_EDGE,
            "execution": EXECUTION,
            "zombie": ZOMBIE,
            "openEnd": OPEN_END,
            "dim": DIM,
        },
        "severity": SEVERITY_COLOUR,
        "markers": [[event, *m] for event, m in MARKERS.items()],
        "renewal": [[variant, colour] for variant, colour in RENEWAL_COLOUR.items()],
        "limits": {
            "lanes": MAX_LANES,
            "findingRows": MAX_FINDING_ROWS,
            "minBand": MIN_BAND,
            "spread": SPREAD,
            "markers": MAX_MARKERS,
            "spreadStep": SPREAD_STEP,
            "maxSpread": MAX_SPREAD,
        },
    }


def _micros(frame: pl.DataFrame) -> pl.DataFrame:
    """Every datetime column as integer microseconds since the Unix epoch."""
    return frame.with_columns(pl.col(pl.Datetime).dt.epoch("us"))


def _columns(frame: pl.DataFrame, k: pl.Series) -> tuple[dict[str, list[Any]], list[int]]:
    """The frame's columns as lists, and where each job's rows start (`at[k]` to `at[k + 1]`)."""
    counts = k.value_counts().sort("k")
    sizes = [0] * (int(k.max()) + 1 if k.len() else 0)  # type: ignore[arg-type]
    for job, n in counts.iter_rows():
        sizes[job] = n
    at = [0]
    for n in sizes:
        at.append(at[-1] + n)
    return _micros(frame).to_dict(as_series=False), at


def timeline_table(a: Analysis, drawn: list[str], listed: pl.DataFrame) -> dict[str, Any]:
    """The table the page writes the findings list and draws the timelines of `drawn` from (timeline k is
    `drawn[k]`). `listed`: every finding in the list's order (html_findings.listed_findings); a timeline's
    findings are a run of it, rows `findings.at[k][0]` to `findings.at[k][1]`."""
    jobs = pl.DataFrame(
        {"job_id": drawn, "k": list(range(len(drawn)))}, schema={"job_id": pl.String, "k": pl.Int64}
    )
    ex = (
        a.executions.join(jobs, on="job_id", how="inner")
        .sort("k", "start", "first_seq", nulls_last=True)
        .select("k", *_EXECUTION_COLUMNS)
    )
    detail = pl.concat_str(
        [pl.when(pl.col(c).is_not_null()).then(pl.format(f"{c}=" + "{}", pl.col(c))) for c in DETAIL_COLUMNS],
        separator=" ",
        ignore_nulls=True,
    )
    ev = (
        with_late(a.events.with_row_index("_row").join(jobs, on="job_id", how="inner"), a.renewals)
        .filter(pl.col("execution_id").is_not_null())
        .sort("k", "_row")  # each job's events in the frame's order, as the Python figure reads them
        .with_columns(detail.alias("detail"), pl.col("fields").str.slice(0, MAX_FIELDS_CHARS))
        .select("k", *_EVENT_COLUMNS)
    )
    tables: dict[str, Any] = {}
    for name, frame in (("executions", ex), ("events", ev)):
        cols, at = _columns(frame.drop("k"), frame["k"])
        at += [at[-1]] * (len(drawn) + 1 - len(at))  # jobs at the end with no rows
        tables[name] = {"columns": cols, "at": [[at[k], at[k + 1]] for k in range(len(drawn))]}
    runs = (
        listed.select("timeline")
        .with_row_index("_i")
        .filter(pl.col("timeline") >= 0)
        .group_by("timeline")
        .agg(pl.col("_i").min().alias("lo"), (pl.col("_i").max() + 1).alias("hi"))
    )
    at_f = [[0, 0] for _ in drawn]
    for k, lo, hi in runs.iter_rows():
        at_f[k] = [lo, hi]
    tables["findings"] = {
        "columns": _micros(
            listed.select(
                *_FINDING_COLUMNS,
                pl.col("evidence").list.eval(pl.element().struct.field("file")).alias("evidence_file"),
                pl.col("evidence").list.eval(pl.element().struct.field("line")).alias("evidence_line"),
                pl.col("evidence").list.eval(pl.element().struct.field("note")).alias("evidence_note"),
            )
        ).to_dict(as_series=False),
        "at": at_f,
    }
    return {
        "jobs": drawn,
        "epoch": int(PSEUDO_EPOCH.timestamp() * 1_000_000),
        "style": _style(),
        **tables,
    }


def encode_table(table: dict[str, Any]) -> str:
    """The table as JSON, gzip-compressed (no timestamp in the header: the same table is the same bytes),
    base64-encoded: nothing in it can close a <script> element or be read as markup."""
    raw = orjson.dumps(table, option=orjson.OPT_SERIALIZE_NUMPY)
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def figure_height(a: Analysis, drawn: list[str]) -> list[int]:
    """Each drawn timeline's height in pixels as timeline.py lays it out (lanes, finding rows, a second
    panel), for the space held before it is drawn; a job with more lanes than MAX_LANES is reckoned at the
    cap."""
    if not drawn:
        return []
    jobs = pl.DataFrame(
        {"job_id": drawn, "k": list(range(len(drawn)))}, schema={"job_id": pl.String, "k": pl.Int64}
    )
    lanes = (
        a.executions.join(jobs, on="job_id", how="inner")
        .group_by("k")
        .agg(
            (pl.col("clock") == "wall").sum().alias("wall"),
            (pl.col("clock") != "wall").sum().alias("other"),
        )
    )
    rows = (
        a.findings.join(jobs, on="job_id", how="inner")
        .group_by("k")
        .agg(pl.col("start").is_not_null().sum().alias("rows"))
    )
    facts = (
        jobs.join(lanes, on="k", how="left")
        .join(rows, on="k", how="left")
        .fill_null(0)
        .with_columns(
            pl.min_horizontal(pl.col("wall") + pl.col("other"), pl.lit(MAX_LANES)).alias("n"),
            pl.min_horizontal("rows", pl.lit(MAX_FINDING_ROWS)).alias("rows"),
            ((pl.col("wall") > 0) & (pl.col("other") > 0)).cast(pl.Int64).alias("second"),
        )
        .with_columns(
            pl.when(pl.col("n") == 0)
            .then(160)
            .otherwise(150 + 80 * pl.col("n") + 22 * pl.col("rows") + 90 * pl.col("second"))
            .alias("height")
        )
        .sort("k")
    )
    return [int(h) for h in facts["height"].to_list()]
