#!/usr/bin/env python3
"""Whether a change keeps the JSON document byte for byte: leaselog from this checkout and from another
checkout's `src` (`--before`) analyse the same inputs, each in a process of its own, and the documents are
compared.

    python bench/same_json.py --before ../main/src                  # samples, lab and check fixtures
    python bench/same_json.py --before ../main/src --also bench/data/fleet-seed-200000.jsonl

The inputs: every folder of `sample_logs/` that holds logs (its `leaselog.toml` as the config, when it has
one), with the default settings and with `--lease-ttl 5s`; every folder of `tests/fixtures/lab/`; every
check case of `tests/fixtures/checks/` with its header's options; and each `--also` input. Each is written
as `analyze --json` writes it (the events' `fields` column left out) and, for the small inputs, with that
column kept. Exit status 1 when any document differs (their names are printed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# runs in each checkout's process: one JSON document per job, named by the job's number
WORKER = """
import io, json, sys
import leaselog
jobs = json.load(open(sys.argv[1]))
for i, (paths, options, keep) in enumerate(jobs):
    out = io.BytesIO()
    try:
        leaselog.write_json(leaselog.analyze(paths, keep_fields=keep, **options), out)
    except Exception as e:  # an input error is an outcome too: the same one on both sides
        out.write(f"{type(e).__name__}: {e}".encode())
    open(f"{sys.argv[2]}/{i}.json", "wb").write(out.getvalue())
"""


def jobs(also: list[str]) -> list[tuple[str, list[str], dict[str, object], bool]]:
    """(name, paths, options, keep_fields) of every document to compare."""
    out: list[tuple[str, list[str], dict[str, object], bool]] = []
    samples = ROOT / "sample_logs"
    for folder in sorted(p for p in samples.rglob("*") if p.is_dir()):
        logs = [f for f in folder.iterdir() if f.is_file() and f.suffix in (".jsonl", ".log", ".json", ".gz")]
        if not logs:
            continue
        config = folder / "leaselog.toml"
        base: dict[str, object] = {"config": str(config)} if config.exists() else {}
        name = str(folder.relative_to(ROOT))
        for keep in (False, True):
            out.append((f"{name} fields={keep}", [str(folder)], base, keep))
            out.append((f"{name} ttl=5s fields={keep}", [str(folder)], {**base, "lease_ttl": "5s"}, keep))
    for folder in sorted((ROOT / "tests" / "fixtures" / "lab").iterdir()):
        if folder.is_dir():
            out.append((str(folder.relative_to(ROOT)), [str(folder)], {}, False))
    for case in sorted((ROOT / "tests" / "fixtures" / "checks").glob("LL*/*.jsonl")):
        header = json.loads(case.read_text(encoding="utf-8").splitlines()[0])
        for keep in (False, True):
            name = f"{case.relative_to(ROOT)} fields={keep}"
            out.append((name, [str(case)], dict(header.get("options", {})), keep))
    out.extend((path, [path], {}, False) for path in also)
    return out


def run(src: Path, job_file: Path, folder: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    subprocess.run([sys.executable, "-c", WORKER, str(job_file), str(folder)], env=env, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the other checkout's src folder")
    ap.add_argument("--also", action="append", default=[], help="another input to compare (repeatable)")
    a = ap.parse_args(argv)
    todo = jobs(a.also)
    with tempfile.TemporaryDirectory(prefix="leaselog-same-json-") as tmp:
        job_file = Path(tmp) / "jobs.json"
        job_file.write_text(json.dumps([[paths, options, keep] for _, paths, options, keep in todo]))
        for side, src in (("after", ROOT / "src"), ("before", a.before)):
            (Path(tmp) / side).mkdir()
            run(src, job_file, Path(tmp) / side)
        differ, errors = [], []
        for i, (name, *_) in enumerate(todo):
            after = (Path(tmp) / "after" / f"{i}.json").read_bytes()
            if after != (Path(tmp) / "before" / f"{i}.json").read_bytes():
                differ.append(name)
            if not after.startswith(b"{"):
                errors.append(f"{name}: {after[:200].decode(errors='replace')}")
    for name in differ:
        print(f"differs: {name}")
    for line in errors:
        print(f"no document (the same on both sides if not listed above): {line}")
    print(f"{len(todo) - len(differ)} of {len(todo)} documents byte for byte the same")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
