"""Facts several checks read, each derived once per analysis: typed functions of the analysis's frames
(`Frames`: the checks' context is one), below the checks, so that no check imports another.

A fact is a function `f(frames) -> pl.DataFrame` decorated with `@fact`: the first call on a context
derives it, later calls (from any check) get the same frame.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Protocol

import polars as pl

__all__ = ["Frames", "fact"]


class Frames(Protocol):
    """What a fact is derived from: the analysis's frames, and where its facts are kept."""

    @property
    def events(self) -> pl.DataFrame: ...

    @property
    def executions(self) -> pl.DataFrame: ...

    @property
    def facts(self) -> dict[Callable[..., Any], pl.DataFrame]: ...


def fact(make: Callable[[Frames], pl.DataFrame]) -> Callable[[Frames], pl.DataFrame]:
    """`make` derived once per context, however many checks ask for it."""

    @wraps(make)
    def once(frames: Frames) -> pl.DataFrame:
        got = frames.facts.get(make)
        if got is None:
            got = frames.facts[make] = make(frames)
        return got

    return once
