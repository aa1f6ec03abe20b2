"""Following inputs as `tail -F` does: appended lines, a last line without its newline, rotation,
truncation, new files in a folder, gzip once complete, standard input through a real pipe."""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path

from leaselog.watch.follow import Chunk, Follower, StdinPump


def lines(chunks: list[Chunk]) -> list[tuple[str, int, bytes, int]]:
    """(file name, first line, data, generation) per chunk."""
    return [(Path(c.tail.path).name, c.first_line, c.data, c.generation) for c in chunks]


def test_appended_lines_and_a_partial_last_line(tmp_path: Path) -> None:
    f = tmp_path / "pod-a.jsonl"
    f.write_bytes(b"one\ntwo\nthr")
    fol = Follower([str(f)])
    assert lines(fol.poll()) == [("pod-a.jsonl", 1, b"one\ntwo\n", 0)]
    assert fol.poll() == []  # the partial line waits for its newline
    with f.open("ab") as out:
        out.write(b"ee\nfour\n")
    assert lines(fol.poll()) == [("pod-a.jsonl", 3, b"three\nfour\n", 0)]
    with f.open("ab") as out:
        out.write(b"five")
    assert fol.poll() == []
    assert lines(fol.flush_partial()) == [("pod-a.jsonl", 5, b"five", 0)]  # at exit: read as analyze reads it
    fol.close()


def test_empty_and_missing_inputs(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    fol = Follower([str(folder), str(tmp_path / "later.jsonl")], discover_s=0)
    assert fol.poll() == [] and fol.flush_partial() == []
    (tmp_path / "later.jsonl").write_bytes(b"x\n")  # a file named before it exists is followed
    assert lines(fol.poll()) == [("later.jsonl", 1, b"x\n", 0)]
    fol.close()


def test_rotation_reads_the_old_file_to_its_end_then_the_new_one(tmp_path: Path) -> None:
    f = tmp_path / "pod-a.jsonl"
    f.write_bytes(b"a1\na2\n")
    fol = Follower([str(f)])
    assert lines(fol.poll()) == [("pod-a.jsonl", 1, b"a1\na2\n", 0)]
    with f.open("ab") as out:
        out.write(b"a3\n")  # written just before the rotation
    f.rename(tmp_path / "pod-a.jsonl.1")
    f.write_bytes(b"b1\n")
    got = fol.poll()
    assert lines(got) == [("pod-a.jsonl", 3, b"a3\n", 0), ("pod-a.jsonl", 1, b"b1\n", 1)]
    assert got[1].restart
    fol.close()


def test_truncation_starts_a_new_generation(tmp_path: Path) -> None:
    f = tmp_path / "pod-a.jsonl"
    f.write_bytes(b"a1\na2\na3\n")
    fol = Follower([str(f)])
    fol.poll()
    with f.open("r+b") as out:  # copytruncate: same inode, cut to zero, then written again
        out.truncate(0)
        out.write(b"b1\n")
    assert lines(fol.poll()) == [("pod-a.jsonl", 1, b"b1\n", 1)]
    with f.open("ab") as out:
        out.write(b"b2\n")
    assert lines(fol.poll()) == [("pod-a.jsonl", 2, b"b2\n", 1)]
    fol.close()


def test_new_files_in_a_folder_and_only_log_names(tmp_path: Path) -> None:
    fol = Follower([str(tmp_path)], discover_s=0)
    assert fol.poll() == []
    (tmp_path / "pod-b.jsonl").write_bytes(b"b\n")
    (tmp_path / "notes.md").write_bytes(b"not a log\n")
    sub = tmp_path / "node-2"
    sub.mkdir()
    (sub / "pod-c.log").write_bytes(b"c\n")
    assert sorted(lines(fol.poll())) == [("pod-b.jsonl", 1, b"b\n", 0), ("pod-c.log", 1, b"c\n", 0)]
    fol.close()


def test_gzip_is_read_once_complete(tmp_path: Path) -> None:
    whole = gzip.compress(b"".join(b"line %d\n" % i for i in range(1000)))
    f = tmp_path / "pod-a.jsonl.gz"
    f.write_bytes(whole[: len(whole) // 2])  # still being written
    fol = Follower([str(tmp_path)], discover_s=0)
    assert fol.poll() == [] and fol.poll() == []
    f.write_bytes(whole)
    assert fol.poll() == []  # its size just changed: wait for it to hold still
    got = fol.poll()
    assert len(got) == 1 and got[0].data.count(b"\n") == 1000 and got[0].first_line == 1
    assert fol.poll() == []  # read once
    fol.close()


def test_stdin_through_a_real_pipe() -> None:
    r, w = os.pipe()
    with os.fdopen(r, "rb") as reader:
        fol = Follower(["-"], stdin=reader)
        os.write(w, b"one\ntw")
        got = _wait(fol)
        assert lines(got) == [("-", 1, b"one\n", 0)]
        os.write(w, b"o\nthree")
        os.close(w)  # the end of the stream reads its last line, newline or not
        got = _wait(fol, until_eof=True)
        assert b"".join(c.data for c in got) == b"two\nthree"
        assert got[0].first_line == 2
        assert not fol.stdin_open
        fol.close()


def _wait(fol: Follower, until_eof: bool = False) -> list[Chunk]:
    out: list[Chunk] = []
    end = time.monotonic() + 5
    while time.monotonic() < end:
        fol.wake.wait(0.05)
        fol.wake.clear()
        out += fol.poll()
        if out and (not until_eof or not fol.stdin_open):
            return out
    raise AssertionError("nothing came")


def test_stdin_pump_keeps_bytes_in_order() -> None:
    r, w = os.pipe()
    with os.fdopen(r, "rb") as reader:
        pump = StdinPump(reader)
        payload = b"".join(b"%06d\n" % i for i in range(20000))
        with os.fdopen(w, "wb") as writer:
            writer.write(payload)
        got = b""
        end = time.monotonic() + 5
        while time.monotonic() < end:
            data, eof = pump.take()
            got += data
            if eof:
                got += pump.take()[0]
                break
            time.sleep(0.01)
        assert got == payload
