"""leaselog: explain distributed-lock lease incidents from job workers' structured logs.

import leaselog
a = leaselog.analyze("logs/", lease_ttl="10m")
a.findings               # polars DataFrame, one row per finding
a.executions             # one row per execution (columns: leaselog.schema.describe("executions"))
leaselog.timeline(a, "report-42")   # plotly Figure; leaselog.overview(a): every job
leaselog.write_parquet(a, "out/")   # ... and later: leaselog.load("out/")
leaselog.write_json(a, "findings.json"), leaselog.document(a) (the same as a dict), leaselog.write_html(a, "r.html")

`Analysis` is data; the outputs are the functions above (leaselog.render, leaselog.store).
"""

import os

# polars allocates through jemalloc and asks it to return freed memory after 0.5 s (dirty) and 1 s
# (muzzy) pages; without a background thread that return only happens when the allocator is next busy,
# so in a run of a few seconds peak RSS counted most intermediate frames that ever existed. jemalloc's
# own background thread returning pages after 200 ms cut peak RSS on 200 000 jobs from 1.14-1.22 GB to
# 1.02-1.03 GB at the same speed (returning at once: 0.98 GB, but 30% slower). polars appends this to
# its own setting (later options win) when it loads, so it applies when leaselog is imported first
# (the CLI, most scripts); a setting of one's own in the environment is kept instead.
os.environ.setdefault("_RJEM_MALLOC_CONF", "background_thread:true,dirty_decay_ms:200,muzzy_decay_ms:0")

from leaselog import schema  # (after the allocator setting above: it must precede polars)
from leaselog.analysis import Analysis
from leaselog.config import ConfigError, Settings
from leaselog.findings import Evidence, Finding
from leaselog.pipeline import analyze
from leaselog.reading.sources import InputError
from leaselog.render.document import document, write_json
from leaselog.render.parquet import write_parquet
from leaselog.render.views import overview, timeline, write_html
from leaselog.store import StoreError, load
from leaselog.version import VERSION

__all__ = [
    "Analysis",
    "ConfigError",
    "Evidence",
    "Finding",
    "InputError",
    "Settings",
    "StoreError",
    "analyze",
    "document",
    "load",
    "overview",
    "schema",
    "timeline",
    "write_html",
    "write_json",
    "write_parquet",
]
__version__ = VERSION
