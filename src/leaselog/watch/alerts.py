"""`--on-finding CMD`: run a command with the finding's JSON line on its standard input.

For findings at or above `--fail-on`'s severity, each time one is opened, becomes final or is withdrawn
(not for every "so far" update of an open one: a page per second helps nobody). The command runs through
the shell, one at a time in a worker thread, so a slow webhook never holds up reading; its exit status
and the tail of its error output are kept for the summary. A command still running after `timeout_s`
is killed.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

import orjson

from leaselog.findings import Finding
from leaselog.watch.emit import Identity, at_or_above, identity


@dataclass
class AlertStats:
    ran: int = 0
    failed: int = 0
    last_error: str | None = None
    errors: list[str] = field(default_factory=list)


class OnFinding:
    """A listener for the ledger that runs `command` for findings at or above `fail_on`."""

    def __init__(self, command: str, fail_on: str, timeout_s: float = 30.0) -> None:
        self.command = command
        self.fail_on = fail_on
        self.timeout_s = timeout_s
        self.stats = AlertStats()
        self._last_state: dict[Identity, str] = {}
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="leaselog-on-finding", daemon=True)
        self._thread.start()

    def __call__(self, line: dict[str, Any], f: Finding) -> None:
        if not at_or_above(f.severity, self.fail_on):
            return
        key, state = identity(f), line["state"]
        if self._last_state.get(key) == state:
            return  # an open finding's update: already alerted
        self._last_state[key] = state
        self._queue.put(orjson.dumps(line) + b"\n")

    def _run(self) -> None:
        while (payload := self._queue.get()) is not None:
            try:
                done = subprocess.run(
                    self.command,
                    shell=True,
                    input=payload,
                    capture_output=True,
                    timeout=self.timeout_s,
                    check=False,
                )
                ok = done.returncode == 0
                why = f"exit {done.returncode}: {done.stderr.decode(errors='replace').strip()[-300:]}"
            except (OSError, subprocess.TimeoutExpired) as e:
                ok, why = False, str(e)
            self.stats.ran += 1
            if not ok:
                self.stats.failed += 1
                self.stats.last_error = why
            self._queue.task_done()

    def close(self) -> None:
        """Wait for the commands queued to run (bounded by their timeout each)."""
        self._queue.put(None)
        self._thread.join()
