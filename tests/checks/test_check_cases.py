"""One parametrized runner for every data-file check case (see _check_cases.py for the format)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _check_cases import Case, load_cases, lookup, matches, row_values

import leaselog
from leaselog.checks import BY_CODE, CheckContext

CASES = load_cases()


def _json_lines(case: Case) -> dict[int, dict[str, Any]]:
    return {
        i: json.loads(line) for i, line in enumerate(case.path.read_text(encoding="utf-8").splitlines(), 1)
    }


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_check_case(case: Case) -> None:
    a = leaselog.analyze(case.path, **case.options)
    found = sorted(
        (f for f in a.finding_list if f.code == case.code),
        key=lambda f: (f.start.timestamp() if f.start else 0.0, f.execution_ids),
    )
    assert len(found) == case.expected_count, [f.message for f in found]
    lines = _json_lines(case)
    for f in found:
        d = f.to_json_dict()
        assert d["message"], "every finding explains itself"
        assert f.evidence, f"{case.id}: a finding without evidence"
        for e in f.evidence:
            assert e.file == str(case.path)
            row = lines[e.line]
            # the proving line belongs to the job the finding is about
            if f.job_id is not None:
                assert row.get("jobId") == f.job_id, (e, row)
            if row.get("executionId") is None and f.kind != "lease_settings":
                # a line without an id: its execution is named by its job and pod (leaselog.execution_runs)
                assert any(x.startswith(f"{row['jobId']}@{row['pod']}") for x in f.execution_ids), (e, row)
                continue
            assert row.get("executionId") in f.execution_ids or f.kind in ("lease_settings",), (e, row)
    wanted = case.header["expect"].get("findings", [])
    # (the findings expected may name only the first few of those found)
    for f, want in zip(found[: len(wanted)], wanted, strict=True):
        d = f.to_json_dict()
        for key, value in want.items():
            if key == "messageContains":
                for part in value:
                    assert part in d["message"], f"{case.id}: {part!r} not in {d['message']!r}"
                continue
            actual = lookup(d, key)
            assert matches(actual, value), f"{case.id}: {key} = {actual!r}, expected {value!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_detected_rows(case: Case) -> None:
    """The check's detected rows, before phrasing: one per finding (the contract's columns even when
    none), and the figures a case expects exactly."""
    a = leaselog.analyze(case.path, **case.options)
    ctx = CheckContext(
        events=a.events, executions=a.executions, leases=a.leases, renewals=a.renewals, settings=a.settings
    )
    rows = BY_CODE[case.code].detect(ctx)
    assert {"job_id", "execution_ids"} <= set(rows.columns), rows.columns
    assert rows.height == case.expected_count, rows
    want_rows = case.expected_rows
    if want_rows is None:
        return
    assert len(want_rows) <= rows.height, case.id
    for i, (row, want) in enumerate(
        zip(rows.head(len(want_rows)).iter_rows(named=True), want_rows, strict=True)
    ):
        got = row_values(row)
        for key, value in want.items():
            if key == "evidence":
                value = [{"file": str(case.path), **e} for e in value]
            actual = lookup(got, key)
            assert matches(actual, value), f"{case.id} row {i}: {key} = {actual!r}, expected {value!r}"


def test_every_case_has_a_header_with_a_count() -> None:
    assert CASES, "no check cases found"
    for c in CASES:
        assert isinstance(c.header.get("case"), str) and c.header["case"], c.id
        assert c.expected_count >= 0
        assert len(c.header["expect"].get("findings", [])) <= c.expected_count, c.id
        assert len(c.expected_rows or []) <= c.expected_count, c.id
