"""`leaselog analyze` outputs and what it prints (issue 14): outputs that cannot be written, markup and control
characters in paths and log values, a closed standard output, `--json -`, out-of-range options, and a
message_regex that would backtrack catastrophically."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import leaselog
from leaselog.cli import main
from leaselog.config import ConfigError, load_config_file

SAMPLES = Path(__file__).parent.parent / "sample_logs"
INCIDENT = SAMPLES / "article-incident"


def _cli(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(leaselog.__file__).parent.parent), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "leaselog.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        input=None if stdin is None else stdin.decode(),
    )


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("missing/o.json", "folder {tmp}/missing does not exist"),
        (".", "is a folder"),
        ("/sys/o.json", "cannot write in /sys"),  # a read-only file system (root may write anywhere else)
    ],
)
def test_an_output_that_cannot_be_written_is_refused_before_reading(
    tmp_path: Path, where: str, why: str
) -> None:
    target = where if where.startswith("/") else str(tmp_path / where)
    html = tmp_path / "r.html"
    proc = _cli("analyze", str(INCIDENT), "--json", target, "--html", str(html), "-q")
    _no_traceback(proc)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: --json {target}: ") and why.format(tmp=tmp_path) in line
    assert not html.exists()  # checked before the analysis: nothing written, no garbage either
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_full_disk_fails_that_output_only(tmp_path: Path) -> None:
    html, pq = tmp_path / "r.html", tmp_path / "pq"
    proc = _cli("analyze", str(INCIDENT), "--json", "/dev/full", "--html", str(html), "--parquet", str(pq))
    _no_traceback(proc)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --json /dev/full: cannot write: No space left on device"
    assert html.stat().st_size > 1000 and (pq / "leaselog.json").is_file()
    assert f"wrote {html}" in proc.stdout


def test_parquet_onto_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "taken"
    f.write_text("keep me")
    proc = _cli("analyze", str(INCIDENT), "--parquet", str(f))
    assert proc.returncode == 2 and "is a file, not a folder" in proc.stderr
    assert f.read_text() == "keep me"


def test_an_output_naming_an_input_or_another_output_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "pod-a.jsonl"
    log.write_bytes((INCIDENT / "pod-a.jsonl").read_bytes())
    before = log.read_bytes()
    for args in (["--json", str(log)], ["--html", str(log)], ["--json", "./pod-a.jsonl"]):
        proc = _cli("analyze", str(tmp_path), *args, cwd=tmp_path)
        assert proc.returncode == 2 and "is one of the inputs" in proc.stderr, args
    same = tmp_path / "out.json"
    proc = _cli("analyze", str(INCIDENT), "--json", str(same), "--html", str(same))
    assert proc.returncode == 2 and "--json and --html both write" in proc.stderr
    assert log.read_bytes() == before and not same.exists()


def test_paths_are_text_not_markup(tmp_path: Path) -> None:
    for name in ("o[/].json", "o[bold].json"):
        proc = _cli("analyze", str(INCIDENT), "--json", name, cwd=tmp_path)
        _no_traceback(proc)
        if name == "o[/].json":  # `o[` is no folder
            assert proc.returncode == 2 and "folder o[ does not exist" in proc.stderr
        else:
            assert proc.returncode == 0 and "wrote o[bold].json" in proc.stdout
            assert (tmp_path / name).is_file()
    proc = _cli("analyze", "nope[/]x.jsonl")
    _no_traceback(proc)
    assert proc.returncode == 2 and "nope[/]x.jsonl" in proc.stderr


def test_control_characters_in_log_values_are_shown_escaped(tmp_path: Path) -> None:
    forged = "report-42\x1b[2J\x1b[H\x1b[32mNo findings.\x1b[0m\x1b]8;;http://evil\x07x\x1b]8;;\x07\r"
    d = tmp_path / "logs\x1b[2J"
    d.mkdir()
    for name in ("pod-a.jsonl", "pod-b.jsonl"):
        recs = [json.loads(x) for x in (INCIDENT / name).read_text().splitlines()]
        for r in recs:
            if r.get("jobId"):
                r["jobId"] = forged
            if r.get("pod") == "pod-a":
                r["pod"] = "pod-\x1b[31ma"
        (d / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    proc = _cli("analyze", str(tmp_path))
    assert proc.returncode == 0
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "\r" not in proc.stdout
    assert "report-42\\x1b[2J\\x1b[H\\x1b[32mNo findings." in proc.stdout
    assert "logs\\x1b[2J" in proc.stdout and "LL101" in proc.stdout
    # and the HTML report keeps them inert (escaped text, no live link)
    html = tmp_path / "r.html"
    assert _cli("analyze", str(tmp_path), "--html", str(html), "-q").returncode == 0
    page = html.read_text()
    assert "\x1b" not in page and 'href="http://evil' not in page


def test_a_closed_stdout_costs_no_file(tmp_path: Path) -> None:
    out, html = tmp_path / "o.json", tmp_path / "o.html"
    cmd = f"{sys.executable} -m leaselog.cli analyze {INCIDENT} --json {out} --html {html} | head -1"
    env = {**os.environ, "PYTHONPATH": str(Path(leaselog.__file__).parent.parent), "COLUMNS": "200"}
    for fail_on, rc in (("never", 0), ("error", 1)):
        proc = subprocess.run(
            [
                "bash",
                "-c",
                f"{cmd.replace('| head', f'--fail-on {fail_on} | head')}; exit ${{PIPESTATUS[0]}}",
            ],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert proc.returncode == rc, proc.stderr
        assert proc.stdout.startswith("5 findings (2 error, 3 warning)") and proc.stdout.count("\n") == 1
        assert proc.stderr == ""
        assert json.loads(out.read_text())["findings"] and html.stat().st_size > 1000


def test_json_dash_is_standard_output(tmp_path: Path) -> None:
    proc = _cli("analyze", str(INCIDENT), "--json", "-", cwd=tmp_path)
    assert proc.returncode == 0
    d = json.loads(proc.stdout)
    assert {f["code"] for f in d["findings"]} >= {"LL101", "LL102"}
    assert "LL101 overlapping_executions" in proc.stderr  # the summary goes to stderr
    assert list(tmp_path.iterdir()) == []  # no file named "-"
    quiet = _cli("analyze", str(INCIDENT), "--json", "-", "-q")
    assert json.loads(quiet.stdout) == d and quiet.stderr == ""


@pytest.mark.parametrize(
    "args",
    [
        ["--clock-offset", "pod-a=1000000000000h"],
        ["--clock-offset", "pod-a=-99999999999d"],
        ["--lease-ttl", "1e400"],
        ["--max-skew", "100000000000000000000000000000000ms"],
        ["--stop-slo", "999999999999999h"],
        ["--timezone", "Mars/Olympus"],
    ],
)
def test_out_of_range_options_are_usage_errors(args: list[str]) -> None:
    proc = _cli("analyze", str(INCIDENT), *args)
    _no_traceback(proc)
    assert proc.returncode == 2 and "Invalid value for " + args[0] in proc.stderr


def test_timezone_option_reads_local_times(tmp_path: Path) -> None:
    rows = [
        {"ts": "2026-11-02 11:00:00", "pod": "p", "jobId": "j", "executionId": "e", "event": "lock_acquired"},
        {"ts": "2026-11-02 11:00:01", "pod": "p", "jobId": "j", "executionId": "e", "event": "job_started"},
    ]
    (tmp_path / "w.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o.json"
    assert (
        main(["analyze", str(tmp_path / "w.jsonl"), "--timezone", "Europe/Berlin", "--json", str(out)]) == 0
    )
    d = json.loads(out.read_text())
    assert d["settings"]["timezone"] == "Europe/Berlin"
    assert d["inputs"][0]["localTimeZone"] == "Europe/Berlin"
    assert d["timeRange"]["start"] == "2026-11-02T10:00:00.000Z"


def test_malformed_overflow_keeps_its_promise(tmp_path: Path) -> None:
    bad = "".join(f"not json {i}\n" for i in range(1500))
    (tmp_path / "junk.jsonl").write_text((INCIDENT / "pod-a.jsonl").read_text() + bad)
    out = tmp_path / "o.json"
    proc = _cli("analyze", str(tmp_path / "junk.jsonl"), "--json", str(out))
    d = json.loads(out.read_text())
    assert d["lines"]["malformed"] == 1500
    assert d["malformedLocated"] == len(d["malformed"]) == 1000 and d["malformedTruncated"] is True
    assert (
        "… and 1490 more (--json lists 1000 of them, at most 1000 of a file and reason; all are counted)"
        in proc.stdout
    )
    assert "all of them in --json" not in proc.stdout


def test_catastrophic_message_regex_is_bounded(tmp_path: Path) -> None:
    cfg = tmp_path / "leaselog.toml"
    cfg.write_text("[[rules]]\nevent = \"job_started\"\nmessage_regex = '^(a+)+$'\n")
    line = json.dumps({"ts": "2026-11-02T10:00:00Z", "jobId": "j", "message": "a" * 40 + "!"})
    (tmp_path / "w.jsonl").write_text((line + "\n") * 200)
    started = time.monotonic()
    a = leaselog.analyze(tmp_path / "w.jsonl", config=cfg)
    assert time.monotonic() - started < 10  # Python's re: 2**40 steps a line
    assert a.input_reports[0].ignored == 200


def test_a_regex_re2_cannot_run_is_a_config_error(tmp_path: Path) -> None:
    cfg = tmp_path / "leaselog.toml"
    cfg.write_text("[[rules]]\nevent = \"job_started\"\nmessage_regex = '(?P<jobId>a)\\1'\n")
    with pytest.raises(ConfigError, match=r"leaselog.toml:3: rules\[0\].message_regex: bad regex .*RE2"):
        load_config_file(cfg)
    proc = _cli("analyze", str(INCIDENT), "--config", str(cfg))
    assert proc.returncode == 2 and "no backreferences" in proc.stderr and "re2.cc" not in proc.stderr


def test_inspect_shows_paths_and_values_as_text(tmp_path: Path) -> None:
    p = tmp_path / "b[bold]ad.jsonl"
    rec = {"ts": "2026-11-02T10:00:00Z", "jobId": "j[/]\x1b[2J", "executionId": "e", "event": "job_started"}
    p.write_text(json.dumps(rec) + "\n")
    proc = _cli("inspect", str(p))
    _no_traceback(proc)
    assert proc.returncode == 0
    assert f"{p}: format flat" in proc.stdout and "\x1b" not in proc.stdout
    assert "j[/]\\x1b[2J" in proc.stdout
    missing = _cli("inspect", str(tmp_path / "nope[/]x.jsonl"))
    _no_traceback(missing)
    assert missing.returncode == 2 and "nope[/]x.jsonl" in missing.stderr
