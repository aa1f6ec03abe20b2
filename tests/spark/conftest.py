"""One Spark session (local[2]) for every Spark test, started after a local S3 server (moto, loopback) so
the workers see its endpoint. Skipped where pyspark or Java is missing."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java 17+", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str | None]:
    """A local S3 server's URL (None when moto or s3fs is not installed), in the environment the Spark
    workers inherit."""
    try:
        import s3fs  # noqa: F401
        from moto.server import ThreadedMotoServer
    except ImportError:
        yield None
        return
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": url,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield url
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def spark(s3_endpoint: str | None) -> Iterator[Any]:

    from leaselog.spark import session

    s = session("local[2]")
    s.sparkContext.setLogLevel("ERROR")
    try:
        yield s
    finally:
        s.stop()
