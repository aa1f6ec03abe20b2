"""leaselog on Spark: `leaselog analyze PATHS --engine spark` (`runner.run`), the same findings as one
machine's run. `pip install 'leaselog[spark]'`; Java 17+ from the system."""

from leaselog.spark.runner import SparkError, StageTimes, run, session

__all__ = ["SparkError", "StageTimes", "run", "session"]
