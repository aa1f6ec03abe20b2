"""`leaselog watch` end to end: the final findings are `analyze`'s on the same files (however the lines
came in), each finding's JSON-line lifecycle, the wall clock's "still running?", stdin from a pipe
(kubectl --prefix lines of several pods interleaved), --on-finding, and the metrics endpoint."""

from __future__ import annotations

import io
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from watch_helpers import final_findings, last_lines, normalised

import leaselog
from leaselog.config import Settings
from leaselog.reproduce.server import free_port
from leaselog.watch.alerts import OnFinding
from leaselog.watch.metrics import Metrics
from leaselog.watch.run import Watcher, WatchOptions

SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
FOLDERS = sorted(p for p in SAMPLES.iterdir() if p.is_dir())  # `formats/` and `scenarios/` hold every sample


def watcher(paths: list[str], out: io.BytesIO, settings: Settings | None = None, **kw: object) -> Watcher:
    options = WatchOptions(
        paths, settings or Settings(), jsonl=out, exit_when_idle_s=0.0, use_inotify=False, discover_s=0.0
    )
    for k, v in kw.items():
        setattr(options, k, v)
    return Watcher(options)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_final_findings_equal_analyze_when_lines_arrive_in_pieces(folder: Path, tmp_path: Path) -> None:
    """Each file grows a few lines at a time (a tick after each piece), then the watch ends: what stands
    is exactly `analyze`'s JSON findings on the same files."""
    live = tmp_path / folder.name
    shutil.copytree(folder, live, ignore=lambda _d, names: [n for n in names if n.endswith(".gz")])
    files = sorted(p for p in live.rglob("*") if p.is_file())
    contents = {p: p.read_bytes() for p in files}
    for p in files:
        p.write_bytes(b"")
    out = io.BytesIO()
    w = watcher([str(live)], out)
    step = 0
    while any(len(p.read_bytes()) < len(c) for p, c in contents.items()):
        for p, c in contents.items():
            have = p.read_bytes().count(b"\n")
            # uneven pieces of whole lines (some 25 per file); the last may lack its newline
            upto = have + 1 + (7 * step) % 6 + c.count(b"\n") // 25
            p.write_bytes(b"\n".join(c.split(b"\n")[:upto]) + (b"\n" if upto < c.count(b"\n") else b""))
            if upto >= c.count(b"\n"):
                p.write_bytes(c)
        w.tick()
        step += 1
    result = w.finish()
    expected = leaselog.document(leaselog.analyze(str(live)))["findings"]
    assert final_findings(out.getvalue()) == normalised(expected)
    assert normalised([f.to_json_dict() for f in result.findings]) == normalised(expected)


def test_nothing_to_read_gives_nothing(tmp_path: Path) -> None:
    out = io.BytesIO()
    result = watcher([str(tmp_path)], out).run()
    assert result.findings == [] and out.getvalue() == b""


def _line(ts: datetime, **fields: object) -> bytes:
    stamp = ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps({"ts": stamp, "jobId": "report-7", **fields}).encode() + b"\n"


def test_overlap_is_open_while_running_then_final(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    a, b = tmp_path / "pod-a.jsonl", tmp_path / "pod-b.jsonl"
    a.write_bytes(
        _line(t0, executionId="a", pod="pod-a", event="lock_acquired", leaseMs=10_000)
        + _line(t0, executionId="a", pod="pod-a", event="job_started")
    )
    out = io.BytesIO()
    w = watcher([str(tmp_path)], out)
    w.tick()
    assert out.getvalue() == b""  # one execution, inside its lease: nothing to say
    b.write_bytes(
        _line(t0 + timedelta(seconds=12), executionId="b", pod="pod-b", event="lock_acquired", leaseMs=10_000)
        + _line(t0 + timedelta(seconds=12), executionId="b", pod="pod-b", event="job_started")
    )
    with a.open("ab") as f:
        f.write(_line(t0 + timedelta(seconds=15), executionId="a", pod="pod-a", event="job_progress"))
    w.tick()
    first = last_lines(out.getvalue())
    overlap = [d for d in first.values() if d["kind"] == "overlapping_executions"]
    assert [d["state"] for d in overlap] == ["open"]
    outlived = [d for d in first.values() if d["kind"] == "lease_outlived"]
    assert [(d["state"], d["certainty"]) for d in outlived] == [("open", "certain")]
    with a.open("ab") as f:
        f.write(
            _line(t0 + timedelta(seconds=20), executionId="a", pod="pod-a", event="job_finished", status="ok")
        )
    with b.open("ab") as f:
        f.write(
            _line(t0 + timedelta(seconds=21), executionId="b", pod="pod-b", event="job_finished", status="ok")
        )
    w.tick()
    done = last_lines(out.getvalue())
    overlap = [d for d in done.values() if d["kind"] == "overlapping_executions"]
    assert [d["state"] for d in overlap] == ["final"] and overlap[0]["durationMs"] == 8000.0
    w.finish()
    assert final_findings(out.getvalue()) == normalised(
        leaselog.document(leaselog.analyze(str(tmp_path)))["findings"]
    )


def test_still_running_by_the_wall_clock_then_withdrawn_at_exit(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    lease_ms, skew_ms = 2000, 100
    f = tmp_path / "pod-a.jsonl"
    f.write_bytes(
        _line(now, executionId="a", pod="pod-a", event="lock_acquired", leaseMs=lease_ms)
        + _line(now, executionId="a", pod="pod-a", event="job_started")
        + _line(now, executionId="q", pod="pod-a", event="lock_acquired", jobId="quiet-1", leaseMs=lease_ms)
        + _line(now, executionId="q", pod="pod-a", event="job_finished", jobId="quiet-1", status="ok")
    )
    out = io.BytesIO()
    w = watcher([str(tmp_path)], out, settings=Settings(max_skew_ms=skew_ms))
    w.tick()
    window = now + timedelta(milliseconds=lease_ms + skew_ms)
    # the lease is still valid (a tick that a loaded machine delayed past the window may rightly ask)
    if datetime.now(UTC) < window:
        assert out.getvalue() == b""
    time.sleep(max(0.0, (window - datetime.now(UTC)).total_seconds()) + 0.2)  # past it, and no line
    w.tick()
    lines = last_lines(out.getvalue())
    (d,) = lines.values()  # quiet-1 finished inside its lease: nothing about it
    assert (d["kind"], d["state"], d["certainty"], d["severity"]) == (
        "lease_outlived",
        "open",
        "uncertain",
        "warning",
    )
    assert d["jobId"] == "report-7" and "still running?" in d["message"]
    w.finish()  # the logs never established it
    (d,) = last_lines(out.getvalue()).values()
    assert d["state"] == "withdrawn"
    assert leaselog.analyze(str(tmp_path)).finding_list == []


def test_old_logs_get_no_wall_clock_findings(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    (tmp_path / "pod-a.jsonl").write_bytes(
        _line(t0, executionId="a", pod="pod-a", event="lock_acquired", leaseMs=300)
    )
    out = io.BytesIO()
    w = watcher([str(tmp_path)], out)
    w.tick()
    w.tick()
    assert out.getvalue() == b""
    w.finish()


def _kubectl_stream() -> bytes:
    """The kubectl sample's two pods as `kubectl logs -f --prefix --timestamps` interleaves them."""
    rows = []
    for pod in ("pod-a", "pod-b"):
        for line in (SAMPLES / "formats" / "kubectl" / f"{pod}.log").read_bytes().splitlines():
            rows.append((line.split(b" ", 1)[0], b"[pod/%s/worker] " % pod.encode() + line))
    return b"".join(r + b"\n" for _, r in sorted(rows, key=lambda r: r[0]))


def test_kubectl_prefixed_stdin_through_a_pipe(tmp_path: Path) -> None:
    stream = _kubectl_stream()
    out = tmp_path / "findings.jsonl"
    p = subprocess.Popen(
        [sys.executable, "-m", "leaselog.cli", "watch", "-", "--jsonl", str(out), "-q", "--fail-on", "never"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdin is not None
    half = len(stream) // 2
    p.stdin.write(stream[:half])  # a line cut in two between writes
    p.stdin.flush()
    time.sleep(0.5)
    p.stdin.write(stream[half:])
    p.stdin.close()  # the end of standard input ends the watch
    assert p.wait(timeout=60) == 0, p.stderr.read() if p.stderr else ""
    same = tmp_path / "stream.log"
    same.write_bytes(stream)
    expected = leaselog.document(leaselog.analyze(str(same)))["findings"]
    got = final_findings(out.read_bytes())
    assert got == normalised(json.loads(json.dumps(expected).replace(str(same), "<stdin>")))
    pods = {pod for d in expected for pod in d["pods"]}
    assert pods == {"pod-a", "pod-b"}  # named by the prefix


def test_on_finding_runs_for_findings_at_fail_on(tmp_path: Path) -> None:
    got = tmp_path / "alerts.jsonl"
    alert = OnFinding(f"cat >> {got}", "error")
    out = io.BytesIO()
    w = watcher([str(SAMPLES / "article-incident")], out, listeners=[alert])
    w.run()
    alert.close()
    sent = [json.loads(x) for x in got.read_text().splitlines()]
    assert sent and all(d["severity"] == "error" for d in sent)
    assert {d["kind"] for d in sent} == {"overlapping_executions", "lease_outlived"}
    assert all(d["state"] == "final" for d in sent) and alert.stats.failed == 0
    quiet = OnFinding(f"cat >> {tmp_path / 'none.jsonl'}", "error")
    watcher([str(SAMPLES / "clean")], io.BytesIO(), listeners=[quiet]).run()
    quiet.close()
    assert not (tmp_path / "none.jsonl").exists() and quiet.stats.ran == 0


def test_on_finding_failures_are_counted(tmp_path: Path) -> None:
    alert = OnFinding("exit 3", "warning")
    watcher([str(SAMPLES / "article-incident")], io.BytesIO(), listeners=[alert]).run()
    alert.close()
    assert (
        alert.stats.ran > 0
        and alert.stats.failed == alert.stats.ran
        and "exit 3" in (alert.stats.last_error or "")
    )


def test_metrics_scraped_over_loopback(tmp_path: Path) -> None:
    m = Metrics(free_port())
    try:
        out = io.BytesIO()
        w = watcher([str(SAMPLES / "article-incident")], out)
        w.ledger.listeners.append(m.on_line)
        w.observers.append(m.observe)
        w.tick()
        text = urllib.request.urlopen(f"http://127.0.0.1:{m.port}/metrics", timeout=5).read().decode()
        assert 'leaselog_findings{kind="overlapping_executions",severity="error",state="final"} 1.0' in text
        used = leaselog.analyze(str(SAMPLES / "article-incident")).line_totals()["used"]
        assert f'leaselog_lines_read_total{{status="used"}} {used:.1f}' in text
        assert "leaselog_executions_running 0.0" in text
        w.finish()
    finally:
        m.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_watch_with_every_finding_final(sig: signal.Signals, tmp_path: Path) -> None:
    """Without --exit-when-idle it runs until told to stop; then it flushes what is pending: the last
    line without its newline is read, and what stands is written final."""
    logs = tmp_path / "logs"
    shutil.copytree(SAMPLES / "article-incident", logs)
    a = logs / "pod-a.jsonl"
    text = a.read_bytes()
    a.write_bytes(text[:-1])  # no newline after the last line yet
    out = tmp_path / "findings.jsonl"
    port = free_port()
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leaselog.cli",
            "watch",
            str(logs),
            "--jsonl",
            str(out),
            "-q",
            "--metrics-port",
            str(port),
        ],
        stderr=subprocess.PIPE,
    )
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and not (out.exists() and b"lease_outlived" in out.read_bytes()):
            time.sleep(0.05)
        scraped = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        assert 'leaselog_findings{kind="lease_outlived",severity="error",state="final"} 1.0' in scraped
        p.send_signal(sig)
        assert p.wait(timeout=30) == 1  # an error-level finding stands (--fail-on error, the default)
    finally:
        if p.poll() is None:
            p.kill()
    assert final_findings(out.read_bytes()) == normalised(
        leaselog.document(leaselog.analyze(str(logs)))["findings"]
    )


def test_jobs_ended_long_ago_are_forgotten_and_their_findings_final(tmp_path: Path) -> None:
    """Bounded memory: a job whose executions ended more than --forget-after before the newest line loses
    its events; its findings were written final; a job still recent keeps everything."""
    t0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    f = tmp_path / "pod-a.jsonl"

    def job(name: str, at: datetime) -> bytes:
        out = b""
        for ex, pod, start in (("a", "pod-a", at), ("b", "pod-b", at + timedelta(seconds=12))):
            out += _line(start, jobId=name, executionId=ex, pod=pod, event="lock_acquired", leaseMs=10_000)
            out += _line(start, jobId=name, executionId=ex, pod=pod, event="job_started")
        for ex, pod, s in (("a", "pod-a", 20), ("b", "pod-b", 21)):
            out += _line(
                at + timedelta(seconds=s),
                jobId=name,
                executionId=ex,
                pod=pod,
                event="job_finished",
                status="ok",
            )
        return out

    f.write_bytes(job("old-1", t0))
    out = io.BytesIO()
    w = watcher([str(tmp_path)], out, forget_after_ms=60_000)
    w.tick()
    kept_before = w.state.rows
    assert kept_before == 6
    with f.open("ab") as fh:
        fh.write(job("new-2", t0 + timedelta(minutes=5)))
    w.tick()
    w._forget()
    assert w.state.rows == 6 and w.state.forgotten_jobs == 1  # old-1's events dropped, new-2's kept
    assert set(w.execs["job_id"].to_list()) == {"new-2"}
    old = [d for d in last_lines(out.getvalue()).values() if d["jobId"] == "old-1"]
    assert old and all(d["state"] == "final" for d in old)
    result = w.finish()
    assert {f.job_id for f in result.findings} == {"new-2", None}  # None: lease_settings, over the jobs kept
    assert result.forgotten_findings == dict(Counter(d["severity"] for d in old))
    # the lines written still hold every job's findings as analyze gives them (lease_settings aside: it
    # summarises the jobs kept, not the forgotten ones)
    per_job = [
        d for d in leaselog.document(leaselog.analyze(str(tmp_path)))["findings"] if d["jobId"] is not None
    ]
    got = [x for x in final_findings(out.getvalue()) if '"jobId": null' not in x]
    assert got == normalised(per_job) and any('"old-1"' in x for x in got)


def test_live_view_shows_running_executions_and_findings(tmp_path: Path) -> None:
    from rich.console import Console

    from leaselog.watch.live import LiveView

    now = datetime.now(UTC)
    (tmp_path / "pod-a.jsonl").write_bytes(
        _line(
            now - timedelta(seconds=30), executionId="a", pod="pod-a", event="lock_acquired", leaseMs=10_000
        )
        + _line(now - timedelta(seconds=30), executionId="a", pod="pod-a", event="job_started")
        + _line(now - timedelta(seconds=5), executionId="a", pod="pod-a", event="job_progress")
        + _line(now, executionId="c", pod="pod-c", event="lock_acquired", jobId="calm-1", leaseMs=600_000)
    )
    screen = io.StringIO()
    view = LiveView(Console(file=screen, force_terminal=True, width=200))
    w = watcher([str(tmp_path)], io.BytesIO())
    w.ledger.listeners.append(view.on_line)
    w.tick()
    text = screen.getvalue()
    Console(file=screen, force_terminal=False, width=200).print(view.render(w))
    view.close()
    drawn = screen.getvalue()[len(text) :]
    # report-7's lease expired 20 s ago (acquired 30 s ago, 10 s lease); calm-1's has ~10 minutes left
    expired = re.search(r"report-7 .* expired (\d+\.\d)s ago", drawn)
    assert expired and 19.5 <= float(expired[1]) < 40, drawn  # (a loaded machine takes its time)
    assert re.search(r"calm-1 .* (9m[0-5]\d|10m00)", drawn), drawn
    assert "lease_outlived" in drawn  # the finding, as it came
    w.finish()


def test_usage_and_input_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from leaselog.cli import main

    assert main(["watch", str(tmp_path / "no-such-folder" / "x.jsonl")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["watch", str(tmp_path), "--format", "nope"]) == 2
    assert main(["watch", str(tmp_path), "--exit-when-idle", "soon"]) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert (
            main(["watch", str(tmp_path), "-q", "--exit-when-idle", "0s", "--metrics-port", str(port)]) == 2
        )
    assert "--metrics-port" in capsys.readouterr().err


def test_malformed_lines_are_counted_and_located_as_analyze_does(tmp_path: Path) -> None:
    t0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    f = tmp_path / "pod-a.jsonl"
    good = _line(t0, executionId="a", pod="pod-a", event="lock_acquired", leaseMs=1000)
    f.write_bytes(good * 3 + b'{"ts": "2026-11-02T10:00:01Z", "jobId": \n' + good)
    w = watcher([str(tmp_path)], io.BytesIO())
    w.tick()
    with f.open("ab") as fh:
        fh.write(b"\x00\x01 binary\n" + good)
    w.tick()
    a = leaselog.analyze(str(tmp_path))
    assert w.state.lines["malformed"] == a.line_totals()["malformed"] == 2
    assert w.state.rejected_lines().rows() == a.malformed.rows()
    assert [r[1] for r in a.malformed.rows()] == [4, 6]
    w.finish()


def test_an_execution_keeps_its_number_after_its_job_is_forgotten(tmp_path: Path) -> None:
    """Runs without ids are named `job@pod#n`: a job forgotten (its runs ended long ago) and then run
    again on the same pod numbers the new run after the forgotten ones, so a name written in a finding
    never comes to mean another execution."""
    t0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
    f = tmp_path / "pod-a.jsonl"

    def run(job: str, at: datetime, seconds: int = 5) -> bytes:
        out = _line(at, jobId=job, pod="pod-a", event="lock_acquired", leaseMs=10_000)
        out += _line(at, jobId=job, pod="pod-a", event="job_started")
        out += _line(
            at + timedelta(seconds=seconds), jobId=job, pod="pod-a", event="job_finished", status="ok"
        )
        return out + _line(at + timedelta(seconds=seconds), jobId=job, pod="pod-a", event="lock_released")

    # five runs: 20 lines, enough for the input's format to be fixed (the head is not read again)
    f.write_bytes(b"".join(run("report-1", t0 + timedelta(seconds=10 * i)) for i in range(5)))
    out = io.BytesIO()
    w = watcher([str(tmp_path)], out, forget_after_ms=60_000)
    w.tick()
    assert sorted(w.execs["execution_id"].to_list()) == [f"report-1@pod-a#{n}" for n in range(1, 6)]
    with f.open("ab") as fh:  # another job, five minutes on: report-1 is forgotten
        fh.write(run("other-2", t0 + timedelta(minutes=5)))
    w.tick()
    w._forget()
    assert w.state.forgotten_jobs == 1 and "report-1" not in set(w.execs["job_id"].to_list())
    with f.open("ab") as fh:  # report-1 runs again on pod-a
        fh.write(run("report-1", t0 + timedelta(minutes=6)))
    w.tick()
    got = w.execs.filter(pl.col("job_id") == "report-1")["execution_id"].to_list()
    assert got == ["report-1@pod-a#6"]
    w.finish()
