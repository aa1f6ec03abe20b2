"""leaselog: explain distributed-lock lease incidents from job workers' structured logs.

    import leaselog
    a = leaselog.analyze("logs/")
    a.findings          # polars DataFrame, one row per finding
"""

from leaselog.analysis import Analysis, analyze
from leaselog.config import Settings
from leaselog.findings import Evidence, Finding

__all__ = ["Analysis", "Evidence", "Finding", "Settings", "analyze"]
__version__ = "0.1.0"
