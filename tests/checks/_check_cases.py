"""Data-file check cases: `tests/fixtures/checks/<CODE>/<case>.jsonl`.

The first line of a case is a header (it has no jobId, so leaselog ignores it as an unrelated line, and
evidence line numbers stay those of the file):
    {"case": "what it shows", "options": {Settings fields}, "expect": {"count": N, "findings": [{...}]}}
Each expected finding lists keys of the JSON contract (`durationMs`, `trigger`, `certainty`, ...), dotted
`details.*` keys, and `messageContains` (substrings). Findings of the case's code are compared in time
order; numbers match exactly (a count off by one fails).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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


def matches(actual: Any, expected: Any) -> bool:
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
