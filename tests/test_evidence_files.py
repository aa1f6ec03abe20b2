"""Evidence names the true file:line of the line that proves it, even when an execution spans files.

One pod's log can be split over files (rotation: `pod-a.log.1` then `pod-a.log`; stdout and stderr; a
collector that splits a day), so one execution's lines can sit in two files. Each evidence line must be
read from the file it names, not from the file of the execution's first (or last) line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import leaselog
from helpers import SAMPLES
from leaselog.findings import Finding
from leaselog.reading.dialects import rule_of

ARTICLE = SAMPLES / "article-incident"
SCENARIOS = sorted(p for p in (SAMPLES / "scenarios").iterdir() if p.is_dir())


def _line(file: str, line: int) -> str | None:
    lines = Path(file).read_text(encoding="utf-8").splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else None


_CRI = re.compile(r"^\S+ (?:stdout|stderr) ([PF]) ")


def _record(file: str, line: int) -> str | None:
    """The log record starting on a line: a CRI partial line (`P`) continues on the next lines, and a record
    of a JSON document on the lines to its closing bracket."""
    lines = Path(file).read_text(encoding="utf-8").splitlines()
    if not 1 <= line <= len(lines):
        return None
    text, i = lines[line - 1], line - 1
    if text.strip() in ("{", "["):
        # a record of a JSON document (an export) starts on this line and runs to its closing bracket
        rest = "\n".join(lines[i:]).lstrip()
        end = json.JSONDecoder().raw_decode(rest)[1]
        return rest[:end]
    while (m := _CRI.match(lines[i])) and m.group(1) == "P" and i + 1 < len(lines):
        i += 1
        nxt = _CRI.match(lines[i])
        text += lines[i][nxt.end() :] if nxt else lines[i]
    return text


def _problems(findings: list[Finding]) -> list[str]:
    """Every evidence line that is missing, or whose JSON belongs to another job or execution."""
    bad: list[str] = []
    for f in findings:
        for e in f.evidence:
            where = f"{f.code} {f.job_id} {e.file}:{e.line} ({e.note})"
            raw = _line(e.file, e.line)
            if raw is None:
                bad.append(f"{where}: no such line")
                continue
            row: dict[str, Any] = json.loads(raw)
            if "jobId" not in row:
                bad.append(f"{where}: not a job line: {raw}")
                continue
            if f.job_id is not None and row["jobId"] != f.job_id:
                bad.append(f"{where}: line is about job {row['jobId']}")
            if f.execution_ids and row.get("executionId") not in f.execution_ids:
                bad.append(f"{where}: line is about execution {row.get('executionId')}")
            named = [x for x in f.execution_ids if e.note and x in e.note]
            if named and row.get("executionId") not in named:
                bad.append(f"{where}: note names {named}, line is about {row.get('executionId')}")
    return bad


def _split_copies(src: Path, dest: Path) -> list[Path]:
    """One copy of `src` per (file, k): that file rotated into `<stem>-1` (first k lines) and `<stem>-2`."""
    files = sorted(src.glob("*.jsonl"))
    out = []
    for f in files:
        lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
        for k in range(1, len(lines)):
            d = dest / f"{f.stem}-{k}"
            d.mkdir(parents=True)
            for other in files:
                if other != f:
                    (d / other.name).write_text(other.read_text(encoding="utf-8"), encoding="utf-8")
            (d / f"{f.stem}-1.jsonl").write_text("".join(lines[:k]), encoding="utf-8")
            (d / f"{f.stem}-2.jsonl").write_text("".join(lines[k:]), encoding="utf-8")
            out.append(d)
    return out


def test_article_incident_with_pod_a_rotated_after_the_acquire(tmp_path: Path) -> None:
    # pod-a-1: startup, job_triggered, lock_acquired; pod-a-2: job_started onwards (its line 1)
    lines = (ARTICLE / "pod-a.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "pod-a-1.jsonl").write_text("".join(lines[:3]), encoding="utf-8")
    (tmp_path / "pod-a-2.jsonl").write_text("".join(lines[3:]), encoding="utf-8")
    (tmp_path / "pod-b.jsonl").write_text(
        (ARTICLE / "pod-b.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    analysis = leaselog.analyze(tmp_path, lease_ttl="5s")
    whole = leaselog.analyze(ARTICLE, lease_ttl="5s")
    # the same findings as the unsplit log, with evidence that reads true
    assert [(f.code, f.job_id) for f in analysis.finding_list] == [
        (f.code, f.job_id) for f in whole.finding_list
    ]
    assert analysis.finding_list
    assert _problems(analysis.finding_list) == []


@pytest.mark.parametrize("src", [ARTICLE, *SCENARIOS], ids=lambda p: p.name)
def test_every_rotation_point_keeps_evidence_true(src: Path, tmp_path: Path) -> None:
    """Each check family, with each pod's log rotated at every line (renewals in one file, the stop in the
    next, the acquire before the rotation and the last line after it, ...)."""
    kinds: set[str] = set()
    bad: list[str] = []
    for d in _split_copies(src, tmp_path):
        findings = leaselog.analyze(d, lease_ttl="5s").finding_list
        kinds |= {f.kind for f in findings}
        bad += [f"{d.name}: {p}" for p in _problems(findings)]
    assert kinds
    assert bad == []


def _joined_to(events: pl.DataFrame, job: str, file: str, line: int) -> str | None:
    """How a line that does not name `job` was given it by its dialect, or None when it was not: the rule
    says its message names no lock (the job is the lease last named on that pod and thread: client-go's
    callers' `leader election lost`, Spring's `Unexpected error occurred in scheduled task`), or the
    dialect's join put the lock's name in place of the name the line gives (a Celery task's "received",
    which names the task)."""
    rows = events.filter((pl.col("file") == file) & (pl.col("line") == line) & (pl.col("job_id") == job))
    for label, message in rows.select("raw_event", "message").iter_rows():
        found = rule_of(label or "")
        if found is None:
            continue
        dialect, rule = found
        if rule.job_from_thread:
            return f"{label}: its message names no lock"
        own = dialect.match_rule(message or "")
        if dialect.join is not None and own is not None and own[1].get("job_id") not in (None, job):
            return f"{label}: joined from {own[1]['job_id']}"
    return None


def test_sample_logs_evidence_lines_exist_and_mention_their_job() -> None:
    """Over every sample (all formats): each evidence line exists in its file and mentions the finding's job
    (a CRI record split into partial lines is read on to its last part), unless the line's own message
    names no lock and its dialect joined it to the job by pod, thread and time (`_joined_to`)."""
    a = leaselog.analyze(SAMPLES, lease_ttl="5s")
    findings = a.finding_list
    assert findings
    redis_logs = {r.path for r in a.input_reports if r.format == "redis"}
    bad, joined = [], set()
    for f in findings:
        for e in f.evidence:
            raw = _record(e.file, e.line)
            if raw is None:
                bad.append(f"{f.code} {e.file}:{e.line}: no such line")
            elif f.job_id is not None and f.job_id not in raw:
                # the lock's Redis failing over (a Sentinel's log) is no job's: a fact of the whole fleet
                how = "redis-server/failover: no job's" if e.file in redis_logs else None
                how = how or _joined_to(a.events, f.job_id, e.file, e.line)
                if how is None:
                    bad.append(f"{f.code} {e.file}:{e.line}: does not mention {f.job_id}: {raw[:200]}")
                else:
                    joined.add(how.partition(":")[0])
    assert bad == []
    # the joins the samples exercise (a join that stops happening must be noticed here)
    assert joined == {
        "k8s-leader-election/leadership-lost",
        "spring-redis-lock-registry/expired-at-unlock",
        "celery/received",
        "redis-server/failover",
    }
