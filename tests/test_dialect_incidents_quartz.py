"""Quartz's incident in sample_logs/dialects/quartz/ (a real Quartz 2.3.2 JDBC cluster on PostgreSQL,
`tests/integration/quartz_cluster.py`): instance A SIGSTOPped while running `DEFAULT.report`
(requestsRecovery), instance B's cluster manager recovering it and running it again while A, resumed,
finished its run. Its clean run (sample_logs/dialects/quartz-clean/) stays quiet.

Truth of the incident run (the job's own clock, epoch ms): A ran 1796408645141 to 1796408657701, B's
recovered run 1796408653708 to 1796408657778, so 3993 ms of overlap.
"""

from __future__ import annotations

from pathlib import Path

import leaselog

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs" / "dialects"
# Quartz never logs the lease: at the least 7.5 s from a job's start (JobStoreSupport.calcFailedIfAfter)
TTL = "7.5s"


def _by_kind(a: leaselog.Analysis) -> dict[str, list[leaselog.Finding]]:
    out: dict[str, list[leaselog.Finding]] = {}
    for f in a.finding_list:
        out.setdefault(f.kind, []).append(f)
    return out


def test_a_paused_instances_job_recovered_and_run_again() -> None:
    a = leaselog.analyze(str(SAMPLES / "quartz"), lease_ttl=TTL)
    got = _by_kind(a)
    assert a.line_totals()["malformed"] == 0
    (overlap,) = got["overlapping_executions"]
    # B's job start (its own line, 18:24:13.729) to A's end (18:24:17.701); truth 3993 ms
    assert overlap.duration_ms == 3972 and set(overlap.pods) == {"quartz-a", "quartz-b"}
    assert abs(overlap.duration_ms - 3993) <= 100
    (second,) = got["second_attempt"]
    assert second.trigger == "redelivery" and "`recovery`" in second.message
    (lost,) = got["ownership_loss_unhandled"]
    # A's cluster manager said it was recovered by another instance at 18:24:13.735, and A ran on
    assert lost.duration_ms == 3966 and lost.pods == ("quartz-a",)
    (outlived,) = got["lease_outlived"]
    # at least from B's acquisition (18:24:13.708, Quartz's "Calling execute") to A's end
    assert outlived.duration_ms == 3993
    assert {f.kind for f in a.finding_list if f.severity == "error"} == {
        "overlapping_executions",
        "ownership_loss_unhandled",
        "lease_outlived",
    }


def test_the_same_incident_with_job_run_shell_at_info(tmp_path: Path) -> None:
    """Without Quartz's DEBUG start line the application's own start is the instance's claim."""
    for f in (SAMPLES / "quartz").iterdir():
        kept = [ln for ln in f.read_text().splitlines() if " DEBUG " not in ln]
        (tmp_path / f.name).write_text("\n".join(kept) + "\n")
    a = leaselog.analyze(str(tmp_path), lease_ttl=TTL)
    got = _by_kind(a)
    (overlap,) = got["overlapping_executions"]
    assert overlap.duration_ms == 3972
    (second,) = got["second_attempt"]
    assert second.trigger == "redelivery"
    assert a.executions.height == 2


def test_the_clean_run_is_quiet() -> None:
    a = leaselog.analyze(str(SAMPLES / "quartz-clean"), lease_ttl=TTL)
    assert a.events.height > 0 and a.executions.height == 1
    assert a.line_totals()["malformed"] == 0
    assert not a.finding_list


def test_quartz_at_info_without_the_apps_lines_says_which_logger_to_turn_on(tmp_path: Path) -> None:
    from leaselog.unread import nothing_read

    for f in (SAMPLES / "quartz-clean").iterdir():
        kept = [ln for ln in f.read_text().splitlines() if " DEBUG " not in ln and "event=" not in ln]
        (tmp_path / f.name).write_text("\n".join(kept) + "\n")
    a = leaselog.analyze(str(tmp_path))
    unread = nothing_read(a.input_reports)
    assert unread is not None and unread.headline.startswith("no lease events in ")
    assert any("org.quartz.core.JobRunShell" in r for r in unread.reasons), unread.reasons


def test_quartzs_lines_alone_bound_what_they_can(tmp_path: Path) -> None:
    """Without the application's lines Quartz logs no end of either run: what its lines prove is that A
    was still alive (its cluster manager's line, 18:24:13.735) after B had claimed the job (18:24:13.708),
    and that B's run was the recovery's; the overlap's length is not measured."""
    for f in (SAMPLES / "quartz").iterdir():
        kept = [ln for ln in f.read_text().splitlines() if "event=" not in ln]
        (tmp_path / f.name).write_text("\n".join(kept) + "\n")
    a = leaselog.analyze(str(tmp_path), lease_ttl=TTL)
    got = _by_kind(a)
    (outlived,) = got["lease_outlived"]
    assert outlived.duration_ms == 27 and "at least 27ms" in outlived.message
    (second,) = got["second_attempt"]
    assert second.trigger == "redelivery"
    assert "overlapping_executions" not in got
