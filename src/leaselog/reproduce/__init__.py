"""Reproduce lease incidents against a real Redis, then analyze what the workers logged.

    from leaselog.reproduce import run_scenario, ReproduceOptions
    run = run_scenario("article", ReproduceOptions(lease_ms=2000))
    run.logs, run.truth["measured"]

Layout: `server` (a throwaway redis-server or the user's), `worker` (one pod, a separate process),
`scenarios` (the orchestration and its faults), `truth` (the figures a run measured itself).
"""

from leaselog.reproduce.options import ReproduceOptions
from leaselog.reproduce.scenarios import SCENARIOS, ReproduceRun, Scenario, run_scenario
from leaselog.reproduce.server import ReproduceError

__all__ = ["SCENARIOS", "ReproduceError", "ReproduceOptions", "ReproduceRun", "Scenario", "run_scenario"]
