"""leaselog: explain distributed-lock lease incidents from job workers' structured logs.

import leaselog
a = leaselog.analyze("logs/", lease_ttl="10m")
a.findings               # polars DataFrame, one row per finding
a.executions             # one row per execution (columns: leaselog.schema.describe("executions"))
a.timeline("report-42")  # plotly Figure
a.write_parquet("out/")  # ... and later: leaselog.load("out/")
"""

from leaselog import schema
from leaselog.analysis import Analysis, analyze
from leaselog.config import ConfigError, Settings
from leaselog.findings import Evidence, Finding
from leaselog.reading.sources import InputError
from leaselog.store import StoreError, load

__all__ = [
    "Analysis",
    "ConfigError",
    "Evidence",
    "Finding",
    "InputError",
    "Settings",
    "StoreError",
    "analyze",
    "load",
    "schema",
]
__version__ = "0.1.0"
