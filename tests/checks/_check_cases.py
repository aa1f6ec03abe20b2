"""Data-file check cases: `tests/fixtures/checks/<CODE>/<case>.jsonl`.

The first line of a case is a header (it has no jobId, so leaselog ignores it as an unrelated line, and
evidence line numbers stay those of the file):
    {"case": "what it shows", "options": {Settings fields}, "expect": {"count": N, "findings": [{...}]}}
Each expected finding lists keys of the JSON contract (`durationMs`, `trigger`, `certainty`, ...), dotted
`details.*` keys, and `messageContains` (substrings). Findings of the case's code are compared in time
order; numbers match exactly (a count off by one fails).

`"expect": {"rows": [{...}]}` asserts on the check's detected rows (`check.detect(ctx)`, in the order detect
gives them, before any phrasing): each expected row lists columns of the frame by name (`duration_ms`,
`execution_ids`, `trigger`, the check's own figure columns...), `details` (an object: every key, in order)
or dotted `details.*` keys, and `evidence` (a list of `{file?, line, note}`; `file` defaults to the case's).
Moments are ISO strings (`"2025-06-12T09:14:03.4Z"`); numbers match exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "checks"


@dataclass(frozen=True)
class Case:
    code: str
    name: str
    path: Path
    header: dict[str, Any]

    @property
    def expected_count(self) -> int:
        return int(self.header["expect"]["count"])

    @property
    def expected_rows(self) -> list[dict[str, Any]] | None:
        rows = self.header["expect"].get("rows")
        return None if rows is None else list(rows)

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.header.get("options", {}))

    @property
    def id(self) -> str:
        return f"{self.code}/{self.name}"


def load_cases() -> list[Case]:
    out = []
    for p in sorted(FIXTURES.glob("LL*/*.jsonl")):
        header = json.loads(p.read_text(encoding="utf-8").splitlines()[0])
        out.append(Case(code=p.parent.name, name=p.stem, path=p, header=header))
    return out


def lookup(d: dict[str, Any], dotted: str) -> Any:
    cur: Any = d
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise KeyError(dotted)
        cur = cur[part]
    return cur


def row_values(row: dict[str, Any]) -> dict[str, Any]:
    """A detected row as fixtures spell it: `details` (JSON text) as an object (absent when null)."""
    out = dict(row)
    details = out.get("details")
    if isinstance(details, str):
        out["details"] = json.loads(details)
    elif details is None:
        out.pop("details", None)
    return out


def matches(actual: Any, expected: Any) -> bool:
    if isinstance(actual, datetime) and isinstance(expected, str):
        return actual == datetime.fromisoformat(expected)
    if isinstance(expected, dict):
        # every key, in order (the order is the JSON output's)
        return (
            isinstance(actual, dict)
            and list(actual) == list(expected)
            and all(matches(actual[k], v) for k, v in expected.items())
        )
    if isinstance(expected, bool) or expected is None:
        return actual is expected or actual == expected
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        # exact: a count off by one must fail, and every figure is arithmetic on millisecond timestamps
        # (a float tolerance only absorbs the binary representation of the result)
        return abs(float(actual) - float(expected)) <= 1e-6
    if isinstance(expected, list) and isinstance(actual, list | tuple):
        return len(actual) == len(expected) and all(
            matches(a, e) for a, e in zip(actual, expected, strict=True)
        )
    return bool(actual == expected)
