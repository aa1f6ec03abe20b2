"""What the inputs are: which files a folder holds (rotations too), each file read once, a shipper's
repeated lines dropped, FIFOs and process substitutions read, a line too long to hold, where each file's
pod came from (issues 12 item 4, 13, 14)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import leaselog
from leaselog.cli import main
from leaselog.config import Settings
from leaselog.inspection import inspect_file
from leaselog.reading import reader as reader_mod
from leaselog.reading.fields import FieldMapper
from leaselog.reading.reader import Reader, ReadResult
from leaselog.reading.sources import Source, expand_sources

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "sample_logs" / "article-incident"
GELF = ROOT / "sample_logs" / "formats" / "gelf"


def _summary(a: leaselog.Analysis) -> list[tuple[Any, ...]]:
    return sorted(
        (f.kind, f.job_id, tuple(f.execution_ids), tuple(f.pods), f.duration_ms) for f in a.finding_list
    )


def _read(paths: list[Path], **settings: Any) -> ReadResult:
    return Reader(FieldMapper(Settings(**settings))).read([Source(str(p)) for p in paths])


# ---------------------------------------------------------------- GELF host (issue 12, item 4)


def _gelf_with_app_name_in_host(folder: Path) -> None:
    folder.mkdir()
    for f in sorted(GELF.iterdir()):
        (folder / f.name).write_text(
            f.read_text()
            .replace('"host":"pod-a"', '"host":"report-worker"')
            .replace('"host":"pod-b"', '"host":"report-worker"')
        )


def test_gelf_host_shared_by_every_file_is_not_the_pod(tmp_path: Path) -> None:
    _gelf_with_app_name_in_host(tmp_path / "g")
    a = leaselog.analyze(tmp_path / "g")
    assert set(a.events["pod"].unique().to_list()) == {"pod-a", "pod-b"}  # the file names
    for r in a.input_reports:
        assert r.pod_source == "file name"
        assert r.pod_note is not None and "gelf.host is 'report-worker' in every file" in r.pod_note
    assert _summary(a) == _summary(leaselog.analyze(GELF))  # as when host carried the pod
    d = leaselog.document(a)
    assert {i["pod_source"] for i in d["inputs"]} == {"file name"}


def test_gelf_host_stays_the_pod_when_it_tells_files_apart_or_there_is_one_file(tmp_path: Path) -> None:
    a = leaselog.analyze(GELF)  # host = the pod in each file
    assert {r.pod_source for r in a.input_reports} == {"gelf.host"}
    assert set(a.events["pod"].unique().to_list()) == {"pod-a", "pod-b"}
    _gelf_with_app_name_in_host(tmp_path / "g")
    one = leaselog.analyze(tmp_path / "g" / "pod-a.json")  # a single file: nothing to compare with
    assert set(one.events["pod"].unique().to_list()) == {"report-worker"}


def test_gelf_host_gives_way_when_only_one_of_several_files_logged_lease_lines(tmp_path: Path) -> None:
    """Lab run 2031-0041: pod-b logged only start-up lines, so no second file showed `host` to be shared."""
    _gelf_with_app_name_in_host(tmp_path / "g")
    idle = '{"version":"1.1","host":"report-worker","short_message":"worker up","timestamp":1762070400.0}\n'
    (tmp_path / "g" / "pod-b.json").write_text(idle)
    a = leaselog.analyze(tmp_path / "g")
    assert set(a.events["pod"].unique().to_list()) == {"pod-a"}
    (rep,) = [r for r in a.input_reports if r.path.endswith("pod-a.json")]
    assert rep.pod_source == "file name" and rep.pod_note is not None and "GELF" in rep.pod_note


def test_pod_source_in_the_inputs_table(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    _gelf_with_app_name_in_host(tmp_path / "g")
    main(["analyze", str(tmp_path / "g")])
    out = capsys.readouterr().out
    assert "pod from" in out and "file name" in out and "not a pod's name" in out


# ---------------------------------------------------------------- folders: rotated names, skipped files


def test_folders_read_rotated_names_and_say_what_was_skipped(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in (INCIDENT / "pod-a.jsonl").read_text().splitlines()]
    line = (INCIDENT / "pod-a.jsonl").read_text()
    d = tmp_path / "logs"
    (d / "kubelet").mkdir(parents=True)
    (d / "worker.log").write_text(line)
    (d / "worker.log.1").write_text(line.replace("report-42", "r1"))
    (d / "worker.log.2.gz").write_bytes(gzip.compress(line.replace("report-42", "r2").encode()))
    (d / "worker.log.2026-11-02.gz").write_bytes(gzip.compress(line.replace("report-42", "r3").encode()))
    (d / "kubelet" / "0.log.20261102-101500.gz").write_bytes(
        gzip.compress(line.replace("report-42", "r4").encode())
    )
    (d / "worker").write_text(line.replace("report-42", "r5"))  # no extension, text
    (d / "worker.log.2026-11-01.3.gz").write_bytes(gzip.compress(line.replace("report-42", "r6").encode()))
    (d / "app.2026-11-01.log").write_text(line.replace("report-42", "r7"))
    (d / "core").write_bytes(b"\x7fELF\x00\x01" * 100)  # no extension, binary
    (d / "screenshot.png").write_bytes(b"\x89PNG")
    (d / ".hidden.log").write_text(line)
    a = leaselog.analyze(d)
    assert set(a.events["job_id"].unique().to_list()) == {
        "report-42",
        "r1",
        "r2",
        "r3",
        "r4",
        "r5",
        "r6",
        "r7",
    }
    skipped = {Path(r.path).name: r.skipped for r in a.input_reports if r.skipped}
    assert skipped == {
        "core": "no extension and not text",
        "screenshot.png": "not a log file name (.jsonl, .json, .log, .ndjson, .txt, .logfmt, their rotations, or .gz of them)",
        ".hidden.log": "hidden file",
    }
    assert all(r.lines == 0 for r in a.input_reports if r.skipped)
    assert len(rows) * 8 == a.line_totals()["total"]


def test_skipped_files_are_named_in_the_terminal(tmp_path: Path, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    shutil.copy(INCIDENT / "pod-a.jsonl", tmp_path / "pod-a.jsonl")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    main(["analyze", str(tmp_path)])
    assert "image.png: skipped: not a log file name" in capsys.readouterr().out


def test_a_folder_of_only_skipped_files_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    with pytest.raises(leaselog.InputError, match="folder has no log files"):
        leaselog.analyze(tmp_path)


# ---------------------------------------------------------------- the same file twice, a shipper's retries


def test_the_same_file_by_two_paths_is_read_once(tmp_path: Path, monkeypatch: Any) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    for f in INCIDENT.iterdir():
        shutil.copy(f, d / f.name)
    os.link(d / "pod-a.jsonl", tmp_path / "hard-link.jsonl")
    (d / "link-to-b.jsonl").symlink_to(d / "pod-b.jsonl")
    monkeypatch.chdir(tmp_path)
    once = leaselog.analyze(d)
    a = leaselog.analyze(
        [d, str((d / "pod-a.jsonl").resolve()), "logs/pod-a.jsonl", tmp_path / "hard-link.jsonl"]
    )
    assert _summary(a) == _summary(once) and a.events.height == once.events.height
    repeats = {Path(r.path).name: r.same_as for r in a.input_reports if r.same_as}
    assert set(repeats) == {"link-to-b.jsonl", "pod-a.jsonl", "hard-link.jsonl"}
    assert all(r.lines == 0 for r in a.input_reports if r.same_as)


def test_exact_duplicate_lines_are_dropped_and_counted(tmp_path: Path) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    for f in INCIDENT.iterdir():
        lines = f.read_text().splitlines()
        (d / f.name).write_text(
            "\n".join(x for line in lines for x in (line, line)) + "\n"
        )  # every line twice
    a = leaselog.analyze(d)
    clean = leaselog.analyze(INCIDENT)
    assert _summary(a) == _summary(clean)
    for r, c in zip(a.input_reports, clean.input_reports, strict=True):
        assert r.duplicates == c.used and r.used == c.used and r.events == c.events
        assert r.lines == 2 * c.lines and r.used + r.ignored + r.malformed == r.lines


def test_identical_lines_without_time_or_elapsed_are_all_kept(tmp_path: Path) -> None:
    p = tmp_path / "w.log"
    p.write_text("jobId=j executionId=e pod=p event=lock_denied\n" * 3)
    r = _read([p])
    assert r.raw.height == 3 and r.inputs[0].duplicates == 0


# ---------------------------------------------------------------- FIFO, /dev/null, process substitution


def test_a_fifo_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    text = (INCIDENT / "pod-a.jsonl").read_bytes()

    def write() -> None:  # gives up after 10 s if nobody opens the FIFO to read it
        deadline = time.monotonic() + 10
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as w:
            w.write(text)

    t = threading.Thread(target=write)
    t.start()
    sources, problems = expand_sources([str(fifo)])
    assert problems == []
    r = Reader(FieldMapper(Settings())).read(sources)
    t.join(timeout=10)
    assert r.inputs[0].lines == len(text.splitlines()) and r.inputs[0].used > 0


def test_dev_null_is_an_empty_input_not_a_missing_one() -> None:
    sources, problems = expand_sources(["/dev/null"])
    assert problems == [] and [s.path for s in sources] == ["/dev/null"]
    a = leaselog.analyze("/dev/null")
    assert a.line_totals()["total"] == 0 and a.finding_list == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for <(...)")
def test_process_substitution_is_read(tmp_path: Path) -> None:
    gz = tmp_path / "pod-a.jsonl.gz"
    gz.write_bytes(gzip.compress((INCIDENT / "pod-a.jsonl").read_bytes()))
    out = tmp_path / "o.json"
    cmd = f'"{sys.executable}" -m leaselog.cli analyze <(zcat "{gz}") --json "{out}"'
    done = subprocess.run(
        ["bash", "-c", cmd], capture_output=True, text=True, env={**os.environ}, check=False
    )
    assert "no such file" not in done.stdout + done.stderr
    assert json.loads(out.read_text())["lines"]["used"] == 5


# ---------------------------------------------------------------- inspect, OTLP accounting, line length


def test_inspect_reads_a_truncated_gzip_as_analyze_does(tmp_path: Path) -> None:
    rows = [
        json.dumps(
            {
                "ts": f"2026-01-01T00:00:{i % 60:02d}Z",
                "jobId": f"j{i}",
                "executionId": "e",
                "event": "job_started",
            }
        )
        for i in range(3000)
    ]
    data = gzip.compress(("\n".join(rows) + "\n").encode())
    p = tmp_path / "cut.jsonl.gz"
    p.write_bytes(data[: len(data) // 2])
    ins = inspect_file(p)
    assert ins.report.used > 100 and ins.report.error is not None
    assert main(["inspect", str(p)]) == 0


def _otlp_line(times: list[str]) -> str:
    records = [
        {
            "timeUnixNano": t,
            "body": {"stringValue": "x"},
            "attributes": [
                {"key": "jobId", "value": {"stringValue": "j"}},
                {"key": "executionId", "value": {"stringValue": "e"}},
                {"key": "event", "value": {"stringValue": ev}},
            ],
        }
        for t, ev in zip(times, ["lock_acquired", "job_started", "job_finished"][: len(times)], strict=True)
    ]
    batch = {
        "resourceLogs": [
            {
                "resource": {"attributes": [{"key": "k8s.pod.name", "value": {"stringValue": "p"}}]},
                "scopeLogs": [{"scope": {}, "logRecords": records}],
            }
        ]
    }
    return json.dumps(batch)


def test_an_otlp_line_of_records_without_usable_times_is_one_malformed_line(tmp_path: Path) -> None:
    p = tmp_path / "otel.jsonl"
    good = ["1798761600000000000", "1798761600100000000"]
    p.write_text(_otlp_line(good) + "\n" + _otlp_line(["garbage", "nope", "x"]) + "\n")
    a = leaselog.analyze(p)
    (r,) = a.input_reports
    assert (r.lines, r.used, r.ignored, r.malformed, r.events) == (2, 1, 0, 1, 2)
    assert a.line_totals() == {"total": 2, "used": 1, "ignored": 0, "malformed": 1}
    assert a.malformed["line"].to_list() == [2]
    ins = inspect_file(p)
    assert (ins.report.used, ins.report.malformed) == (1, 1)


@pytest.mark.parametrize("long", [False, True], ids=["per-line", "columnar"])
def test_a_line_longer_than_the_cap_is_malformed_and_never_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long: bool
) -> None:
    monkeypatch.setattr(reader_mod, "BLOCK_BYTES", 64 * 1024)
    good = (INCIDENT / "pod-a.jsonl").read_text().splitlines()
    extra = [json.dumps({"ts": "2026-11-02T10:20:00Z", "message": f"m{i}"}) for i in range(40 if long else 0)]
    p = tmp_path / "pod-a.jsonl"
    huge = '{"jobId":"report-42","message":"' + "x" * (20 * 1024 * 1024) + '"}'
    p.write_text("\n".join([*good[:3], huge, *good[3:], *extra]) + "\n")
    tracemalloc.start()
    r = _read([p], max_line_bytes=4096)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * 1024 * 1024  # the 20 MiB line was never held
    rep = r.inputs[0]
    assert rep.lines == len(good) + 1 + len(extra) and rep.malformed == 1
    assert r.malformed == [(str(p), 4, "line longer than 4096 bytes (max_line_bytes): not read")]
    assert rep.used == leaselog.analyze(INCIDENT / "pod-a.jsonl").input_reports[0].used


def test_the_line_cap_is_a_setting_with_a_floor() -> None:
    assert Settings().max_line_bytes == 16 * 1024 * 1024
    with pytest.raises(ValueError):
        Settings(max_line_bytes=10)


def test_lab_run_in_gelf_with_the_app_name_in_host_keeps_its_pods_apart(tmp_path: Path) -> None:
    """Issue 12 item 4, from a kept lab run (tests/fixtures/lab/gelf-app-host): Spring Boot's GELF output
    with `host` = the application name in both pods' files gives the findings of the run's flat logs."""
    from leaselog.reproduce import shapes

    run = ROOT / "tests" / "fixtures" / "lab" / "gelf-app-host"
    pods = {
        p.stem: [json.loads(x) for x in p.read_text().splitlines() if x.strip()]
        for p in sorted(run.glob("pod-*.jsonl"))
    }
    for name in ("gelf-app-host", "flat"):
        (tmp_path / name).mkdir()
        for f, content in shapes.render(name, pods).items():
            (tmp_path / name / f).write_text(content)
    gelf = leaselog.analyze(tmp_path / "gelf-app-host")
    flat = leaselog.analyze(tmp_path / "flat")
    assert set(gelf.events["pod"].unique().to_list()) == set(pods) == {"pod-a", "pod-b"}
    assert {r.pod_source for r in gelf.input_reports} == {"file name"}
    assert [(f.kind, f.execution_ids, tuple(sorted(f.pods)), f.certainty) for f in gelf.finding_list] == [
        (f.kind, f.execution_ids, tuple(sorted(f.pods)), f.certainty) for f in flat.finding_list
    ]
