"""Where the logs cannot decide: runs of one pod that no thread and no distinct execution id tell apart.

Two attempts of one pod that truly ran at once, rendered in a shape whose lines name no thread
(`shapes.NO_THREAD`) with no execution ids, or with one id both reuse: which line is whose, the lines do
not say. leaselog then marks the runs `... (runs not told apart)` and its findings about them uncertain.
Such a finding is the honest answer, and the scorer takes it as one (`undecided`): an expected finding
met by it is not held to the true figure, and one the truth does not expect is tolerated. Only where both
hold: the truth needs the thread or the id those logs lack, and the analysis says it cannot tell.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from leaselog.execution_runs import UNTOLD_NAMES
from leaselog.reproduce.identity import true_runs
from leaselog.reproduce.shapes import NO_THREAD

UNDECIDED = (
    "the logs cannot tell these runs apart (no thread, no distinct execution id), and the finding says so"
)


def concurrent_pods(truth: dict[str, Any]) -> frozenset[str]:
    """The pods two of whose attempts truly ran at once (then only an id or a thread tells their lines
    apart). Told on each pod's clock as it was before any step: a step back while both ran can put the
    later one's logged span wholly before the earlier one's."""
    runs = sorted(true_runs(truth, stepped=False), key=lambda r: (r.pod, r.first_ms))
    return frozenset(a.pod for a, b in pairwise(runs) if a.pod == b.pod and b.first_ms <= a.last_ms)


def indistinct_pods(truth: dict[str, Any], shape: str, ids: bool) -> frozenset[str]:
    """The pods two of whose attempts truly ran at once, in a rendering (`shape`, with or without ids)
    that tells them apart by neither a thread nor a distinct execution id."""
    if shape not in NO_THREAD or (ids and truth["plan"].get("id_style") != "reused"):
        return frozenset()
    return concurrent_pods(truth)


def says_undecided(f: dict[str, Any], pods: frozenset[str]) -> bool:
    """Does finding `f` say the logs cannot tell its runs apart (uncertain, below error, one of its
    executions marked not told apart), on pods where that is so?"""
    froms = (f.get("details") or {}).get("executionFrom") or []
    return (
        bool(pods)
        and f.get("certainty") == "uncertain"
        and f.get("severity") != "error"
        and any(x in UNTOLD_NAMES for x in froms)
        and set(f.get("pods") or ()) <= pods
    )
