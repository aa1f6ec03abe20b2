"""Text from logs and command lines shown in a terminal as text: never markup, never control sequences.

A jobId of `report-42\\x1b[2J\\x1b[H\\x1b[32mNo findings.` would clear the screen and forge the summary if
printed raw; an OSC-8 sequence would plant a link. Control characters (C0, DEL, C1) and the invisible
bidirectional overrides are shown as `\\x1b`-style escapes instead. Rich markup in such text (`o[/].json`,
`[bold]`) is never interpreted: print it as a `rich.text.Text` (or with `markup=False`).
"""

from __future__ import annotations

_CONTROL = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
# bidirectional embeddings, overrides and isolates: they reorder what is shown around them
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]

_ESCAPE = {c: f"\\x{c:02x}" for c in _CONTROL} | {c: f"\\u{c:04x}" for c in _BIDI}
_ESCAPE_KEEP_LINES = {c: v for c, v in _ESCAPE.items() if c not in (0x0A, 0x09)}


def printable(text: object, *, lines: bool = False) -> str:
    """`text` with every control character shown as an escape; `lines=True` keeps newlines and tabs
    (a message with a stack trace attached), which move the cursor but forge nothing."""
    return str(text).translate(_ESCAPE_KEEP_LINES if lines else _ESCAPE)
