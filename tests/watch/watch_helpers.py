"""Shared by the watch tests: a finding's last JSON line, and findings compared as JSON."""

from __future__ import annotations

import json
from typing import Any

import orjson


def normalised(findings: list[dict[str, Any]]) -> list[str]:
    """Findings as sorted canonical JSON texts (order-free comparison, every field exact)."""
    return sorted(json.dumps(d, sort_keys=True) for d in orjson.loads(orjson.dumps(findings)))


def last_lines(jsonl: bytes) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The last line written about each finding (by its identity)."""
    last: dict[tuple[Any, ...], dict[str, Any]] = {}
    for raw in jsonl.splitlines():
        d = orjson.loads(raw)
        d.setdefault("details", {})
        key = (d["kind"], d["jobId"], tuple(d["executionIds"][:1]), d["start"], d["details"].get("jobType"))
        last[key] = d
    return last


def final_findings(jsonl: bytes) -> list[str]:
    """The findings standing at the end (final, not withdrawn), without `state`, as `normalised` gives."""
    out = []
    for d in last_lines(jsonl).values():
        assert d["state"] in ("final", "withdrawn"), d
        if d["state"] == "final":
            d = {k: v for k, v in d.items() if k != "state"}
            if not d["details"]:
                del d["details"]
            out.append(d)
    return normalised(out)
