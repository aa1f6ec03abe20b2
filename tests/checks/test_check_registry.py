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
# the kinds of the machine output contract: kept, never renamed (kinds may be added)
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
# kinds added since, each with its code (a new check adds itself here, so a rename cannot pass unseen)
ADDED_KINDS = {"LL206": "stop_ignored", "LL402": "attempts_not_run"}
KINDS = CONTRACT_KINDS | set(ADDED_KINDS.values())


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
    assert set(kinds) == KINDS
    assert set(kinds) >= CONTRACT_KINDS  # none renamed
    by_code = {m.code: m.kind for m in REGISTRY}
    assert {c: by_code[c] for c in ADDED_KINDS} == ADDED_KINDS
    assert _product_kinds() == KINDS  # docs/PRODUCT.md lists every kind


def test_no_fixture_folder_without_a_check() -> None:
    codes = {m.code for m in REGISTRY}
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} <= codes


def test_readme_lists_every_check() -> None:
    readme = (Path(__file__).resolve().parent.parent.parent / "README.md").read_text(encoding="utf-8")
    for m in REGISTRY:
        assert f"| {m.code} | {m.kind} |" in readme, m.code
