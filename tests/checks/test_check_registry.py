"""The registry, the docs and the fixtures stay complete (flake8/sqlfluff style)."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
from _check_cases import FIXTURES, load_cases

from leaselog.checks import MODULES, REGISTRY, Check

PRODUCT = Path(__file__).resolve().parents[2] / "docs" / "PRODUCT.md"
SEVERITIES = {"error", "warning", "info"}
# The 16 kinds of the first machine output contract, frozen: kept, never renamed. Kinds added since are
# read from the registry (a new check is one module plus its fixtures); the docs are held to the registry
# below (docs/PRODUCT.md's kind list, docs/CHECKS.md's table), so a rename shows there.
CONTRACT_KINDS = {
    "overlapping_executions",
    "lease_outlived",
    "concurrent_leases",
    "renewal_failed",
    "renewal_gap",
    "ownership_loss_unhandled",
    "stop_delayed",
    "stop_unconfirmed",
    "stale_release",
    "release_failed",
    "second_attempt",
    "duplicate_effect",
    "stale_write_accepted",
    "completion_rejected",
    "crash_takeover",
    "lease_settings",
}
CHECKS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "CHECKS.md"


def _product_kinds() -> set[str]:
    text = PRODUCT.read_text(encoding="utf-8")
    para = text[text.index("`kind` is one of:") :]
    para = para[: para.index(".")]
    return set(re.findall(r"`([a-z_]+)`", para)) - {"kind"}


@pytest.mark.parametrize(
    ("mod", "check"),
    zip(MODULES, REGISTRY, strict=True),
    ids=[m.__name__.rsplit(".", 1)[-1] for m in MODULES],
)
def test_module_is_complete(mod: ModuleType, check: Check) -> None:
    code, kind, severity = check.code, check.kind, check.severity
    assert re.fullmatch(r"LL\d{3}", code)
    assert severity in SEVERITIES
    assert mod.__name__.rsplit(".", 1)[-1] == f"{code.lower()}_{kind}"
    doc = mod.__doc__ or ""
    assert check.doc == doc
    summary = doc.strip().splitlines()[0]
    assert summary.endswith(".") and len(summary) > 20
    assert "\nAnti-pattern:" in doc and "\nBest practice:" in doc
    assert callable(check.detect) and callable(check.explain)
    cases = [c for c in load_cases() if c.code == code]
    assert any(c.name == "empty" and c.expected_count == 0 for c in cases), f"{code}: no empty case"
    assert any(c.name.startswith("quiet") and c.expected_count == 0 for c in cases), f"{code}: no quiet case"
    assert any(c.expected_count > 0 for c in cases), f"{code}: no firing case"


def test_codes_unique_and_ordered() -> None:
    codes = [m.code for m in REGISTRY]
    assert len(codes) == len(set(codes))
    assert codes == sorted(codes)


def test_kinds_match_product_contract() -> None:
    kinds = [m.kind for m in REGISTRY]
    assert len(kinds) == len(set(kinds))
    assert len(CONTRACT_KINDS) == 16
    assert CONTRACT_KINDS - set(kinds) == set()  # none renamed, none dropped
    # docs/PRODUCT.md lists every kind (a new check: add its kind to "`kind` is one of:")
    assert _product_kinds() == set(kinds)


def test_no_fixture_folder_without_a_check() -> None:
    codes = {m.code for m in REGISTRY}
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} <= codes


def test_checks_page_lists_every_check() -> None:
    """docs/CHECKS.md's table: one row per check, `| LLnnn | kind | what it finds | sample |`, in code
    order (a new check: add its row; the sample cell is `—` when only its fixtures show it)."""
    rows = [
        line
        for line in CHECKS_PAGE.read_text(encoding="utf-8").splitlines()
        if re.match(r"\| LL\d{3} \|", line)
    ]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert [c[:2] for c in cells] == [[m.code, m.kind] for m in REGISTRY]
    assert all(len(c) == 4 and c[2] and c[3] for c in cells), rows
