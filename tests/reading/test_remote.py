"""Inputs in object storage (a real S3 API: moto's server on loopback) and on a web server, read through
fsspec: the findings are the local files' findings, evidence named by URL."""

from __future__ import annotations

import gzip
import http.server
import json
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import leaselog
from helpers import SAMPLES, local_s3
from leaselog.reading.sources import InputError, expand_sources

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

pytestmark = pytest.mark.s3

SETS = ("article-incident", "clean-busy", "scenarios/crash-with-takeover")


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    """A local S3 server with a bucket `logs`: each sample set under `plain/<set>/` and `gz/<set>/`."""
    with local_s3():
        yield from _bucket()


def _bucket() -> Iterator[Any]:
    import boto3
    import fsspec

    fsspec.AbstractFileSystem.clear_instance_cache()  # (s3fs instances remember their endpoint)
    client = boto3.client("s3")
    client.create_bucket(Bucket="logs")
    for name in SETS:
        for f in sorted((SAMPLES / name).iterdir()):
            client.put_object(Bucket="logs", Key=f"plain/{name}/{f.name}", Body=f.read_bytes())
            client.put_object(Bucket="logs", Key=f"gz/{name}/{f.name}.gz", Body=gzip.compress(f.read_bytes()))
    try:
        yield client
    finally:
        fsspec.AbstractFileSystem.clear_instance_cache()


def _as_urls(doc: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A local run's document with every file name as the URL of the same object."""
    text = json.dumps(doc)
    for local, url in names.items():
        text = text.replace(json.dumps(local)[1:-1], url)
    return dict(json.loads(text))


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("kind", ["plain", "gz"])
def test_a_bucket_prefix_gives_the_local_files_document(s3: Any, name: str, kind: str) -> None:
    local = leaselog.analyze(SAMPLES / name)
    remote = leaselog.analyze(f"s3://logs/{kind}/{name}/")
    suffix = ".gz" if kind == "gz" else ""
    names = {
        str(SAMPLES / name / p.name): f"s3://logs/{kind}/{name}/{p.name}{suffix}"
        for p in (SAMPLES / name).iterdir()
    }
    assert remote.findings.height > 0
    assert leaselog.document(remote) == _as_urls(leaselog.document(local), names)


def test_a_glob_on_the_store_and_an_object_named_directly(s3: Any) -> None:
    one = "s3://logs/gz/article-incident/pod-a.jsonl.gz"
    sources, problems = expand_sources(["s3://logs/gz/article-incident/*.gz", one])
    assert problems == []
    assert [s.path for s in sources] == [one, "s3://logs/gz/article-incident/pod-b.jsonl.gz"]
    a = leaselog.analyze([one])
    assert [r.path for r in a.input_reports] == [one]
    assert a.line_totals()["used"] > 0


def test_objects_that_are_no_logs_are_listed_as_skipped(s3: Any) -> None:
    s3.put_object(
        Bucket="logs",
        Key="mixed/worker.jsonl",
        Body=(SAMPLES / "article-incident" / "pod-a.jsonl").read_bytes(),
    )
    s3.put_object(Bucket="logs", Key="mixed/report.pdf", Body=b"%PDF-1.4")
    s3.put_object(Bucket="logs", Key="mixed/core", Body=b"\x00\x01binary")
    sources, problems = expand_sources(["s3://logs/mixed/"])
    assert problems == []
    skipped = {s.path: s.skipped for s in sources}
    assert skipped["s3://logs/mixed/worker.jsonl"] is None
    assert "not a log file name" in (skipped["s3://logs/mixed/report.pdf"] or "")
    assert skipped["s3://logs/mixed/core"] == "no extension and not text"


def test_missing_objects_are_an_input_error_naming_the_url(s3: Any) -> None:
    with pytest.raises(InputError, match=r"s3://logs/nothing-here/: no such object or prefix"):
        leaselog.analyze("s3://logs/nothing-here/")
    with pytest.raises(InputError, match=r"s3://no-bucket/x.jsonl"):
        leaselog.analyze("s3://no-bucket/x.jsonl")
    with pytest.raises(InputError, match="pattern matched no objects"):
        leaselog.analyze("s3://logs/plain/*.nothing")


def test_a_gzip_object_cut_short_keeps_the_lines_before_the_cut(s3: Any, tmp_path: Path) -> None:
    # (cut well after the first lines the format is told from)
    body = gzip.compress((SAMPLES / "clean" / "worker-2.jsonl").read_bytes())
    cut = body[: len(body) * 3 // 4]
    s3.put_object(Bucket="logs", Key="cut/worker-2.jsonl.gz", Body=cut)
    (tmp_path / "worker-2.jsonl.gz").write_bytes(cut)
    remote = leaselog.analyze("s3://logs/cut/worker-2.jsonl.gz")
    local = leaselog.analyze(tmp_path / "worker-2.jsonl.gz")
    (r,), (lo,) = remote.input_reports, local.input_reports
    assert r.used == lo.used > 20
    assert (r.lines, r.malformed) == (lo.lines, lo.malformed) and r.malformed == 1
    assert r.error == lo.error and r.error is not None and r.error.startswith("read stopped at line")


@pytest.fixture(scope="module")
def web() -> Iterator[str]:
    """The sample logs on a plain HTTP server on loopback."""
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(SAMPLES))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined,method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_https_urls_are_read_as_files(web: str) -> None:
    pytest.importorskip("aiohttp")
    urls = [f"{web}/article-incident/pod-a.jsonl", f"{web}/article-incident/pod-b.jsonl"]
    remote = leaselog.analyze(urls)
    local = leaselog.analyze(SAMPLES / "article-incident")
    names = {str(SAMPLES / "article-incident" / u.rsplit("/", 1)[1]): u for u in urls}
    assert leaselog.document(remote) == _as_urls(leaselog.document(local), names)
    missing = leaselog.analyze([*urls, f"{web}/article-incident/none.jsonl"])
    assert missing.input_reports[-1].error == "cannot open: no such object"
