"""Redis's own record of a lock's key for the lab's truth: keyspace notifications (`set`, `expire`, `del`,
`expired`) on the run's throwaway server, in Redis's order. A worker killed inside a call never notes its
outcome; this record settles whether the call reached Redis (leaselog.reproduce.prl_lab)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import redis

TIMEOUT_S = 60.0


class KeyEvents:
    """Redis's own record of the lock's key: keyspace notifications (`set`, `expire`, `del`, `expired`) on
    the run's throwaway server, in Redis's order. It tells whether a release whose process died before
    the UNLOCK's answer deleted the key."""

    def __init__(self, url: str, key: str) -> None:
        client: Any = redis.Redis.from_url(url, socket_timeout=TIMEOUT_S)
        # K: keyspace channel, g: generic commands (del, expire), $: strings (set), x: expired
        client.config_set("notify-keyspace-events", "Kg$x")
        db = client.connection_pool.connection_kwargs.get("db", 0)
        self.client = client
        self.pubsub: Any = client.pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(f"__keyspace@{db}__:{key}")
        self.events: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="key-events", daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(redis.RedisError):
                m = self.pubsub.get_message(timeout=0.05)
                if m and m.get("type") == "message":
                    self.events.append(m["data"].decode())

    def close(self) -> None:
        time.sleep(0.2)  # the last notifications in flight
        self._stop.set()
        self._thread.join(timeout=5)
        with contextlib.suppress(redis.RedisError):
            self.pubsub.close()
            self.client.close()

    def settle_from_redis(self, moments: dict[str, list[dict[str, Any]]]) -> None:
        settle_from_redis(self.events, moments)


def settle_from_redis(events: list[str], moments: dict[str, list[dict[str, Any]]]) -> None:
    """Settle from Redis's own record what a process killed mid-call never noted; `moments` gains it:
    - a release sent (`lock_release_sent`) with no outcome deleted the key when Redis deleted it while that
      attempt held it (a `del` between its acquisition's `set` and the next one: only the owner's UNLOCK
      deletes it): `lock_released`, deleted;
    - a refresh sent (`lease_renewal_sent`) with no outcome extended the lease when Redis counted more
      `expire`s in that attempt's hold than the truth has successful renewals (the acquisition's SET EX is
      the first; each successful EXTEND one more): `lease_renewal`, success, for the earliest such refreshes.
    The k-th `set` is the k-th acquisition; when the counts differ, nothing is inferred."""
    acquisitions = sorted(
        (float(m["monoMs"]), pod, str(m.get("run")))
        for pod, ms in moments.items()
        for m in ms
        if m["event"] == "lock_acquired"
    )
    order = [(pod, run) for _, pod, run in acquisitions]
    windows: list[list[str]] = []
    for e in events:
        if e == "set":
            windows.append([])
        elif windows:
            windows[-1].append(e)
    if len(windows) != len(order):
        return
    for (pod, run), window in zip(order, windows, strict=True):
        ms = [m for m in moments[pod] if str(m.get("run")) == run]
        added: list[dict[str, Any]] = []
        sent = next((m for m in ms if m["event"] == "lock_release_sent"), None)
        if sent is not None and not any(m["event"] == "lock_released" for m in ms) and "del" in window:
            added.append({**sent, "event": "lock_released", "released": True, "from": "redis keyspace del"})
        outcomes = {float(m["monoMs"]) for m in ms if m["event"] == "lease_renewal"}
        ok = sum(1 for m in ms if m["event"] == "lease_renewal" and m.get("renewalOutcome") == "success")
        unsettled = [
            m for m in ms if m["event"] == "lease_renewal_sent" and float(m["monoMs"]) not in outcomes
        ]
        for m in unsettled[: max(0, window.count("expire") - 1 - ok)]:
            fields = {"late": True} if m.get("late") else {}
            added.append(
                {
                    **m,
                    "event": "lease_renewal",
                    "renewalOutcome": "success",
                    "from": "redis keyspace expire",
                    **fields,
                }
            )
        if added:
            moments[pod].extend(added)
            moments[pod].sort(key=lambda m: float(m["monoMs"]))
