"""A worker's connection to its lock's Redis: every lease command bounded and sent once, and (a failover
run) a reconnect to the new primary when the old one is gone."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from leaselog.reproduce.pod import COORDINATION_TIMEOUT_S


def lease_client(a: argparse.Namespace, url: str) -> Any:
    """Every lease command is bounded and sent once: a stalled Redis must surface as a timeout (an uncertain
    outcome), never as a hang, and never be silently re-sent (redis-py retries by default)."""
    return redis.Redis.from_url(
        url,
        username=a.redis_user,
        password=a.redis_password,
        socket_timeout=a.op_timeout_ms / 1000,
        socket_connect_timeout=max(1.0, a.op_timeout_ms / 1000),
        retry=Retry(NoBackoff(), 0),
    )


class LockConnection:
    """The lock's client: `--lock-redis` (the lock's own primary) or `--redis`. With `--primary-key` (a
    failover run: the harness plays Sentinel and names the primary there), a command that finds its server
    gone asks for the current primary; when it has changed, the connection moves there, logs
    `lock_reconnected` through `emit`, and sends the command once more (as a client library replays a
    command after a reconnect)."""

    def __init__(self, a: argparse.Namespace, emit: Callable[..., Any]) -> None:
        self.a, self.emit = a, emit
        self.url: str = a.lock_redis or a.redis
        self.r: Any = lease_client(a, self.url)
        self.names: Any = (
            redis.Redis.from_url(a.redis, socket_timeout=COORDINATION_TIMEOUT_S) if a.primary_key else None
        )

    def call(self, script: Any, keys: list[str], args: list[Any]) -> Any:
        try:
            return script(keys=keys, args=args, client=self.r)
        except redis.ConnectionError as e:
            if self.names is None or not self.reconnect(type(e).__name__):
                raise
        return script(keys=keys, args=args, client=self.r)

    def reconnect(self, cause: str) -> bool:
        try:
            url = self.names.get(self.a.primary_key)
        except redis.RedisError:
            return False
        url = url.decode() if isinstance(url, bytes) else url
        if not url or url == self.url:
            return False  # no new primary yet: the command failed
        old, self.url = self.url, url
        self.r.close()
        self.r = lease_client(self.a, url)
        addr, was = (u.removeprefix("redis://").removesuffix("/0") for u in (url, old))
        self.emit(
            "lock_reconnected",
            f"report lock: connection to {was} lost ({cause}); master changed, reconnected to {addr} "
            "(role master)",
            primary=addr,
            previousPrimary=was,
        )
        return True
