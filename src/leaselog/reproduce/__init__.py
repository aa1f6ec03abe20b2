"""Reproduce lease incidents against a real Redis, then analyze what the workers logged.

    from leaselog.reproduce import run_scenario, ReproduceOptions
    run = run_scenario("article", ReproduceOptions(lease_ms=2000))
    run.logs, run.truth["measured"]

Layout: `server` (a throwaway redis-server or the user's), `worker` (one pod, a separate process),
`scenarios` (the orchestration and its faults), `truth` (the figures a run measured itself).

The lab needs the `lab` extra (`pip install 'leaselog[lab]'`: the Redis client and the lock libraries'
real workers); the analyzer never imports this package. The names above are imported when first read, so
the shape renderers (`shapes`, `export_shapes`, `python_shapes`, `render_jvm`, `rows`: pure functions
that write rows in the log shapes leaselog reads) are imported without Redis.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from leaselog.reproduce.options import ReproduceOptions
    from leaselog.reproduce.scenarios import SCENARIOS, ReproduceRun, Scenario, run_scenario
    from leaselog.reproduce.server import ReproduceError

LAB_INSTALL = "pip install 'leaselog[lab]'"
# the packages of the lab's extra that `leaselog reproduce` imports (the lock libraries' labs add theirs)
LAB_MODULES = ("redis",)

# name -> the module it lives in
EXPORTS = {
    "ReproduceOptions": "leaselog.reproduce.options",
    "SCENARIOS": "leaselog.reproduce.scenarios",
    "ReproduceRun": "leaselog.reproduce.scenarios",
    "Scenario": "leaselog.reproduce.scenarios",
    "run_scenario": "leaselog.reproduce.scenarios",
    "ReproduceError": "leaselog.reproduce.server",
}

__all__ = ["SCENARIOS", "ReproduceError", "ReproduceOptions", "ReproduceRun", "Scenario", "run_scenario"]


class LabMissing(ImportError):
    """The lab's extra is not installed here."""


def missing_lab() -> str | None:
    """The first of the lab's packages that cannot be imported here (None: the lab can run)."""
    for name in LAB_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            return name
    return None


def require_lab() -> None:
    """Raise LabMissing, naming the command that installs the lab, when one of its packages is missing."""
    name = missing_lab()
    if name is not None:
        raise LabMissing(f"the lab needs the `lab` extra (no module {name!r} here): {LAB_INSTALL}", name=name)


def __getattr__(name: str) -> Any:
    module = EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'leaselog.reproduce' has no attribute {name!r}")
    require_lab()
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # read once
    return value
