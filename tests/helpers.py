"""Shared test helpers (importable as `helpers`: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import leaselog

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def analyze_rows(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> leaselog.Analysis:
    jsonl(tmp_path / "log.jsonl", rows)
    return leaselog.analyze(tmp_path / "log.jsonl", **options)


def free_port() -> int:
    """A loopback port nobody listens on (for a throwaway server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def local_s3() -> Iterator[str]:
    """A local S3 server (moto's, on loopback) and the AWS_* environment pointing at it, for as long as the
    block runs (child processes, e.g. Spark workers, inherit it); yields its URL. Needs moto installed."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    deadline = time.monotonic() + 10
    while True:  # listening before anyone connects
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
        # the local server can refuse a connection while it is busy (seen right after uploads, at load ~6):
        # botocore's standard mode retries connection errors, as a client of a real store would
        "AWS_RETRY_MODE": "standard",
        "AWS_MAX_ATTEMPTS": "10",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    _forget_s3_clients()
    try:
        yield url
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _forget_s3_clients()


def _forget_s3_clients() -> None:
    """fsspec keeps one S3 filesystem per set of arguments, and the endpoint comes from the environment:
    a filesystem made for another (since stopped) local server would be handed out again."""
    try:
        import s3fs
    except ImportError:
        return
    s3fs.S3FileSystem.clear_instance_cache()
