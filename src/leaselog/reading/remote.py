"""Inputs in object storage or on a web server: `s3://`, `gs://`, `abfs://` (and `az://`, `abfss://`),
`http(s)://`, read through fsspec as a stream (gzip included, told by its magic bytes as on disk).

A bucket prefix or a "folder" is listed like a local folder (its log files, rotations and .gz of them;
anything else listed as skipped), a glob (`s3://logs/2026-11-*/*.jsonl.gz`) is matched on the store, and
an http(s) URL is one file. Credentials and endpoints come from where each store's own tools read them
(`AWS_*` variables and `~/.aws`, `AWS_ENDPOINT_URL` for an S3-compatible server, Google's application
default credentials, `AZURE_STORAGE_*`), or fsspec's `FSSPEC_<PROTOCOL>_<OPTION>` variables.
`pip install 'leaselog[s3]'` (or `[gcs]`, `[azure]`, `[http]`) adds the store's fsspec driver.
"""

from __future__ import annotations

import glob
import io
import re
from typing import IO, Any, cast

URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
PROTOCOLS = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "abfs": "azure",
    "abfss": "azure",
    "az": "azure",
    "http": "http",
    "https": "http",
}
# the extra that installs a protocol's driver
EXTRAS = {"s3": "s3", "gcs": "gcs", "azure": "azure", "http": "http"}


class RemoteError(OSError):
    """An object store could not be reached or listed (a missing driver, credentials, a bad URL)."""


def is_url(path: str) -> bool:
    """Whether an input names an object in a store or on a web server (not a local path)."""
    m = URL.match(path)
    return m is not None and m.group(1).lower() in PROTOCOLS


def _fs(url: str) -> tuple[Any, str]:
    """(fsspec filesystem, path within it) for a URL; RemoteError naming what to install when the
    driver is missing."""
    m = URL.match(url)
    kind = PROTOCOLS.get(m.group(1).lower(), "") if m else ""
    try:
        import fsspec
    except ImportError as e:
        raise RemoteError(
            f"reading {url} needs fsspec: pip install 'leaselog[{EXTRAS.get(kind, 's3')}]'"
        ) from e
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as e:
        raise RemoteError(
            f"reading {url} needs its driver: pip install 'leaselog[{EXTRAS.get(kind, 's3')}]' ({e})"
        ) from e
    except (ValueError, TypeError) as e:
        raise RemoteError(f"{url}: {e}") from e
    return fs, path


def _error(url: str, e: BaseException) -> RemoteError:
    """Any store error as an OSError the reader reports (`cannot open: ...`), never a crash."""
    if isinstance(e, RemoteError):
        return e
    if isinstance(e, FileNotFoundError):
        err = RemoteError(2, "no such object")
    elif isinstance(e, PermissionError):
        err = RemoteError(13, "access denied")
    else:
        err = RemoteError(5, f"{type(e).__name__}: {e}".strip())
    err.filename = url
    return err


def expand_url(url: str) -> tuple[list[tuple[str, bool]], str | None]:
    """The objects a URL names: [(url, named directly)], and a problem when it names none.

    A glob or a prefix lists the store (objects found that way may be skipped by name); an http(s) URL,
    or a URL naming one object, is that object.
    """
    if PROTOCOLS.get(URL.match(url).group(1).lower(), "") == "http":  # type: ignore[union-attr]
        return [(url, True)], None
    try:
        fs, path = _fs(url)
        if glob.has_magic(path):
            found = sorted(fs.glob(path))
            objects = [p for p in found if not fs.isdir(p)]
            return [
                (_unstrip(fs, url, p), False) for p in objects
            ], None if objects else f"{url}: pattern matched no objects"
        if fs.isfile(path):
            return [(url, True)], None
        if fs.isdir(path):
            objects = sorted(fs.find(path))
            return [
                (_unstrip(fs, url, p), False) for p in objects
            ], None if objects else f"{url}: no objects under this prefix"
    except Exception as e:
        return [], f"{url}: {_error(url, e).strerror}"
    return [], f"{url}: no such object or prefix"


def _unstrip(fs: Any, url: str, path: str) -> str:
    """A listed object's path as a URL in the spelling the user gave (`s3://`, not `s3a://`)."""
    scheme = URL.match(url).group(1)  # type: ignore[union-attr]
    full: str = fs.unstrip_protocol(path)
    return scheme + full[full.index("://") :]


def head(url: str, size: int) -> bytes:
    """The first `size` bytes of an object (b"" when it cannot be read)."""
    try:
        fs, path = _fs(url)
        with fs.open(path, "rb") as fh:
            data: bytes = fh.read(size)
            return data
    except Exception:
        return b""


def open_url(url: str) -> IO[bytes]:
    """The object's bytes as a stream, gunzipped when they start with gzip's magic bytes."""
    import gzip

    try:
        fs, path = _fs(url)
        fh = fs.open(path, "rb")
    except Exception as e:
        raise _error(url, e) from e
    buffered = io.BufferedReader(_Guarded(url, fh), buffer_size=1 << 20)
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        return cast(IO[bytes], gzip.GzipFile(fileobj=buffered, mode="rb"))
    return cast(IO[bytes], buffered)


class _Guarded(io.RawIOBase):
    """A store's file as a raw stream whose errors are OSErrors (the reader keeps what came before)."""

    def __init__(self, url: str, fh: Any) -> None:
        self._url, self._fh = url, fh

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        try:
            data = self._fh.read(len(b))
        except Exception as e:
            raise _error(self._url, e) from e
        n = len(data)
        b[:n] = data
        return n

    def close(self) -> None:
        try:
            self._fh.close()
        finally:
            super().close()
