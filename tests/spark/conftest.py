"""One Spark session (local[2]) for every Spark test, started after a local S3 server (moto, loopback) so
the workers see its endpoint. Skipped where pyspark or Java is missing."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import local_s3

pytest.importorskip("pyspark")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java 17+", allow_module_level=True)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str | None]:
    """A local S3 server's URL (None when moto or s3fs is not installed), in the environment the Spark
    workers inherit."""
    try:
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError:
        yield None
        return
    with local_s3() as url:
        yield url


@pytest.fixture(scope="session")
def spark(s3_endpoint: str | None) -> Iterator[Any]:

    from leaselog.spark import session

    s = session("local[2]")
    s.sparkContext.setLogLevel("ERROR")
    try:
        yield s
    finally:
        s.stop()
