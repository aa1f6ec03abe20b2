"""Lock libraries a file shows signs of though none of their lease lines is in it.

ShedLock and RedisLockRegistry log their locks only at DEBUG: a file read at INFO holds the scheduled work
(`scheduling-1` threads, Spring's task errors) or the library's package name (a start-up line, a WARN) and
not one lease line. Only files that gave no lease event are looked at again, and only their first
`HINT_BYTES`: what "no lease events" says to do next (turn logger X to DEBUG) comes from here.
"""

from __future__ import annotations

import os
import zlib

from leaselog.reading.dialects import DIALECTS
from leaselog.reading.sources import Source
from leaselog.reading.streams import open_binary

__all__ = ["HINT_BYTES", "library_hints"]

HINT_BYTES = 4 * 1024 * 1024


def library_hints(source: Source) -> list[str]:
    """The dialects (by name) whose hints occur in the file's first HINT_BYTES; [] for stdin, objects in
    remote storage, and files that cannot be read again."""
    if source.is_stdin or not os.path.isfile(source.path):
        return []
    try:
        fh = open_binary(source)
        try:
            head = fh.read(HINT_BYTES)
        finally:
            fh.close()
    except (OSError, EOFError, ValueError, zlib.error):  # a corrupt gzip: no hints, never a crash
        return []
    if isinstance(head, str):  # (a text stream would be a bug elsewhere; never crash on it)
        head = head.encode()
    low = head.lower()
    return [d.name for d in DIALECTS if any(h.lower().encode() in low for h in d.hints)]
