"""A throwaway `redis-server` on a free loopback port, or a user's server reached by URL.

The throwaway server never touches disk (`--save ''`, `--appendonly no`, a temp dir) and only listens on
127.0.0.1; it is stopped (SIGTERM, then SIGKILL) when the context exits, whatever happened inside.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

START_TIMEOUT_S = 10.0


class ReproduceError(RuntimeError):
    """A reproduction that cannot run (no redis-server, unreachable server, a worker that failed)."""


@dataclass(frozen=True)
class RedisTarget:
    url: str
    throwaway: bool
    version: str


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_args(exe: str, port: int, folder: Path, logfile: str, loglevel: str, *extra: str) -> list[str]:
    """A throwaway `redis-server`'s command line: loopback `port`, nothing persisted, its files and its log
    (`logfile`, at `loglevel`) in `folder`, then `extra` options."""
    return [
        exe,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(folder),
        "--loglevel",
        loglevel,
        "--logfile",
        str(folder / logfile),
        *extra,
    ]


def _version(client: redis.Redis) -> str:
    info = client.info("server")
    return str(info.get("redis_version", "?"))


@contextmanager
def throwaway_redis(executable: str = "redis-server") -> Iterator[RedisTarget]:
    """Start `redis-server` from PATH on a free loopback port; stop it on exit."""
    exe = shutil.which(executable)
    if exe is None:
        raise ReproduceError(
            f"`{executable}` is not on PATH. Install it (Debian/Ubuntu: `apt-get install redis-server`, "
            "macOS: `brew install redis`) or point at a running server with --redis redis://HOST:PORT/0."
        )
    with tempfile.TemporaryDirectory(prefix="leaselog-redis-") as tmp:
        # A port picked by the OS can be taken again between our probe and redis binding it: retry a few.
        last_err = ""
        for _ in range(5):
            port = free_port()
            proc = subprocess.Popen(
                server_args(exe, port, Path(tmp), "redis.log", "warning", "--protected-mode", "yes"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            url = f"redis://127.0.0.1:{port}/0"
            client = redis.Redis.from_url(
                url, socket_timeout=1.0, socket_connect_timeout=1.0, retry=Retry(NoBackoff(), 0)
            )
            deadline = time.monotonic() + START_TIMEOUT_S
            try:
                while time.monotonic() < deadline and proc.poll() is None:
                    try:
                        client.ping()
                        break
                    except redis.ConnectionError:
                        time.sleep(0.02)
                if proc.poll() is not None or not _ping(client):
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    last_err = err.strip() or (Path(tmp) / "redis.log").read_text(errors="replace")[-500:]
                    _stop(proc)
                    continue
                target = RedisTarget(url=url, throwaway=True, version=_version(client))
            finally:
                client.close()
            try:
                yield target
            finally:
                _stop(proc)
            return
        raise ReproduceError(f"could not start {exe}: {last_err or 'no answer to PING'}")


def _ping(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    if proc.stderr:
        proc.stderr.close()


@contextmanager
def existing_redis(url: str) -> Iterator[RedisTarget]:
    """A server the user runs; we only check that it answers."""
    client = redis.Redis.from_url(
        url, socket_timeout=2.0, socket_connect_timeout=2.0, retry=Retry(NoBackoff(), 0)
    )
    try:
        try:
            client.ping()
            version = _version(client)
        except redis.RedisError as e:
            raise ReproduceError(f"cannot reach Redis at {url}: {e}") from e
    finally:
        client.close()
    yield RedisTarget(url=url, throwaway=False, version=version)


@contextmanager
def redis_target(url: str | None) -> Iterator[RedisTarget]:
    """The user's server when a URL is given, else a throwaway one."""
    cm = existing_redis(url) if url else throwaway_redis()
    with cm as target:
        yield target
