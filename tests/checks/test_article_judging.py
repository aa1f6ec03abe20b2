"""Each bullet of the article's "How we will judge a fix" maps to a check, and a case proves the check
tells the broken behaviour (fires) from the fixed one (quiet, or the info finding that the safeguard worked)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _check_cases import FIXTURES

import leaselog

ARTICLE = Path(__file__).resolve().parents[2] / "docs" / "INCIDENT.md"  # our summary, quoting the criteria


def _codes(case: str, **options: object) -> list[str]:
    return [f.code for f in leaselog.analyze(FIXTURES / f"{case}.jsonl", **options).finding_list]


# bullet (as the article words it) -> (checks that judge it, proof: case -> codes that must / must not fire)
JUDGING: dict[str, tuple[set[str], list[tuple[str, set[str], set[str]]]]] = {
    "The reproduction demonstrates that lease expiry permits B to start while A continues.": (
        {"LL101", "LL102"},
        [
            ("LL101/fires_article", {"LL101", "LL102"}, {"LL103"}),
            ("LL101/quiet_sequential", set(), {"LL101", "LL102"}),
        ],
    ),
    "An old worker cannot release or renew a newer worker’s lease.": (
        {"LL301", "LL201"},
        # the owner check refused: A's release deleted nothing, B's lease stayed, no second lease appeared
        [("LL301/fires_article", {"LL301"}, {"LL103", "LL302"}), ("LL201/fires_rejected", {"LL201"}, set())],
    ),
    "Ownership loss produces deliberate, observable behavior at defined stopping points.": (
        {"LL203", "LL204", "LL205"},
        [
            ("LL203/fires_keeps_working", {"LL203"}, set()),
            ("LL205/fires_request_is_last_line", {"LL205"}, {"LL203"}),
            ("LL204/fires_slow_stop", {"LL204"}, {"LL203", "LL205"}),
            ("LL203/quiet_stopped", {"LL201"}, {"LL203", "LL204", "LL205"}),
        ],
    ),
    "Repeated completion attempts have a defined durable outcome.": (
        {"LL501", "LL502", "LL503"},
        [
            ("LL503/fires_duplicate", {"LL503"}, {"LL501", "LL502"}),
            ("LL501/fires_two_accepted", {"LL501", "LL502"}, {"LL503"}),
        ],
    ),
    "Measurements distinguish overlapping computation from duplicate committed effects.": (
        {"LL101", "LL501"},
        [
            ("LL101/fires_one_result_accepted", {"LL101", "LL503"}, {"LL501"}),
            ("LL501/fires_two_accepted", {"LL501"}, set()),
        ],
    ),
    "Recovery after a worker crash meets the agreed takeover target.": (
        {"LL601"},
        [("LL601/fires_within_target", {"LL601"}, set()), ("LL601/fires_over_target", {"LL601"}, set())],
    ),
}


def _article_bullets() -> list[str]:
    text = ARTICLE.read_text(encoding="utf-8")
    section = text[text.index("## How the article judges a fix") :]
    section = section[: section.index("\n## ", 3)]
    return [line.removeprefix("- ").strip() for line in section.splitlines() if line.startswith("- ")]


def test_every_bullet_is_mapped() -> None:
    assert set(_article_bullets()) == set(JUDGING)


@pytest.mark.parametrize("bullet", list(JUDGING), ids=[b[:40] for b in JUDGING])
def test_bullet_is_proved(bullet: str) -> None:
    checks, proofs = JUDGING[bullet]
    from leaselog.checks import REGISTRY

    assert checks <= {m.code for m in REGISTRY}
    fired_somewhere: set[str] = set()
    for case, must, must_not in proofs:
        codes = set(_codes(case))
        assert must <= codes, (case, codes)
        assert not (must_not & codes), (case, codes)
        fired_somewhere |= codes
    assert checks <= fired_somewhere


def test_takeover_target_is_judged_against_the_slo() -> None:
    """Same crash, two targets: the finding says whether recovery met the agreed target."""
    case = FIXTURES / "LL601/fires_within_target.jsonl"
    (ok,) = [f for f in leaselog.analyze(case).finding_list if f.code == "LL601"]
    (late,) = [f for f in leaselog.analyze(case, takeover_slo_ms=5000).finding_list if f.code == "LL601"]
    assert ok.details["withinTarget"] is True and ok.severity == "info"
    assert late.details["withinTarget"] is False and late.severity == "warning"
    assert ok.duration_ms == late.duration_ms == pytest.approx(2500)
