"""Cross-pod certainty: when two pods' clocks decide a finding, and what a lease handover proves about them."""

from __future__ import annotations

import polars as pl

from leaselog.checks.phrasing import durations, format_columns
from leaselog.config import Settings
from leaselog.durations import format_duration
from leaselog.findings import Certainty


def cross_pod_certainty(
    size_ms: float | None, pods: list[str], clocks: list[str | None], settings: Settings
) -> tuple[Certainty, str]:
    """A comparison across pods is only as good as their clocks: certain, or uncertain with the reason."""
    if any(c not in (None, "wall") for c in clocks) and len(set(pods)) > 1:
        return "uncertain", (
            " The log has no wall-clock timestamps: the order comes from line order, the duration from "
            "one pod's elapsedMs, so this size is an estimate."
        )
    if len(set(pods)) > 1 and size_ms is not None and size_ms <= settings.max_skew_ms:
        return "uncertain", (
            f" This is within the clock-skew bound of {format_duration(settings.max_skew_ms)} between "
            "pods, so the logs cannot prove it."
        )
    return "certain", ""


def certainty_columns(
    size_ms: pl.Expr,
    pods: tuple[str, str],
    clocks: tuple[str, str],
    settings: Settings,
    *,
    pods_as_given: bool = False,
) -> list[pl.Expr]:
    """`cross_pod_certainty` as two columns, `certainty` and `caveat`, computed for every row at once.

    Same rules and sentences: uncertain when the two pods differ (a null pod is its own unknown pod) and
    either the log has no wall clock or the size is within the clock-skew bound. `pods_as_given`: pods
    compared as `cross_pod_certainty` compares them (two null pods are one pod, a null differs from any).
    """
    a, b = pl.col(pods[0]), pl.col(pods[1])
    two_pods = a.ne_missing(b) if pods_as_given else a.fill_null("?") != b.fill_null("?")
    no_wall = pl.any_horizontal(
        *[(pl.col(c).is_not_null() & (pl.col(c) != "wall")).fill_null(False) for c in clocks]
    )
    _, no_wall_caveat = cross_pod_certainty(None, ["a", "b"], ["elapsed", None], settings)
    _, skew_caveat = cross_pod_certainty(0.0, ["a", "b"], ["wall", "wall"], settings)
    within_skew = (size_ms <= settings.max_skew_ms).fill_null(False)
    caveat = (
        pl.when(two_pods & no_wall)
        .then(pl.lit(no_wall_caveat))
        .when(two_pods & within_skew)
        .then(pl.lit(skew_caveat))
        .otherwise(pl.lit(""))
    )
    return [
        pl.when(caveat == "").then(pl.lit("certain")).otherwise(pl.lit("uncertain")).alias("certainty"),
        caveat.alias("caveat"),
    ]


def skew_details(bound: float | None) -> dict[str, float | None]:
    """A handover's skew bound as finding details, with no negative figure: `skewBoundMs` (how far the
    later pod's clock can be ahead) when the handover proves one, else `clockDisagreementMs` (how far the
    earlier pod's clock must be ahead, if Redis behaved) when the later pod acquired "too early"."""
    if bound is None or bound >= 0:
        return {"skewBoundMs": bound}
    return {"skewBoundMs": None, "clockDisagreementMs": -bound}


# the sentences of `handover_skew_columns` (a column for each name, filled by `format_columns`)
_SKEW_PROVEN = (
    " Redis handed the key over only after the earlier lease had expired in its own time, so "
    "{later}'s clock is at most {bound} ahead of {earlier}'s (the {gap} gap{latency})."
)


# (an acquire logged before the expiry, by less than the confirming call's latency: no negative gap)
_SKEW_PROVEN_INSIDE = (
    " Redis handed the key over only after the earlier lease had expired in its own time, so "
    "{later}'s clock is at most {bound} ahead of {earlier}'s (the acquire was logged {gap} before the "
    "expiry, inside the {latency_text} of the confirming call, which started the TTL up to that much earlier)."
)


_SKEW_CONTRADICTED = (
    " {later} logged its acquire {bound} before {earlier}'s lease ran out{latency}: if Redis behaved, "
    "{earlier}'s clock runs at least {bound} ahead of {later}'s."
)


_SKEW_LATENCY = " plus the {latency} confirming call"

# (times written coarser than 1 ms: each of the two moments may lie up to that much later than written)
_SKEW_RESOLUTION = " plus the {resolution} the timestamps are written to"


def handover_skew_columns(
    df: pl.DataFrame,
    earlier_pod: str,
    later_pod: str,
    gap_ms: str,
    confirm_latency_ms: str,
    where: pl.Expr,
    resolution_ms: str | None = None,
) -> list[pl.Series]:
    """What a lease handover proves about two pods' clocks, for every row of `df` where `where` holds.

    Redis let the later pod acquire the key only once the earlier lease was gone *in Redis's time*. The
    earlier pod logged its last confirmation after Redis had set the TTL (by up to that call's latency),
    so its logged expiry is late by at most that latency. Hence: later pod's clock - earlier pod's clock
    <= gap + latency. A negative bound means Redis granted the key while the earlier lease still looked
    valid: either the clocks disagree by at least that much, or the lock failed.
    `resolution_ms` (a column: the times' resolution where coarser than 1 ms, else null) is added to the
    bound: the later pod's moment may lie that much after its written time.
    Two columns: `skew_bound` (ms; null where the pods are the same, the gap unknown or `where` false)
    and `skew_note`, the sentence (`""` there)."""
    earlier, later, gap, lat = (pl.col(c) for c in (earlier_pod, later_pod, gap_ms, confirm_latency_ms))
    res = pl.col(resolution_ms) if resolution_ms is not None else pl.lit(None, dtype=pl.Float64)
    proves = where & gap.is_not_null() & earlier.is_not_null() & later.is_not_null() & (earlier != later)
    parts = df.select(
        proves.fill_null(False).alias("proves"),
        pl.when(proves).then(gap + lat.fill_null(0.0) + res.fill_null(0.0)).alias("bound"),
        pl.when(proves).then(res).alias("res"),
        pl.when(proves).then(gap).alias("gap"),
        # `if confirm_latency_ms`: neither null nor zero
        pl.when(proves & lat.is_not_null() & (lat != 0)).then(lat).alias("lat"),
        earlier.alias("earlier"),
        later.alias("later"),
    )
    parts = parts.with_columns(
        durations(parts["bound"].abs()).alias("bound_text"),
        durations(parts["gap"].abs()).alias("gap_text"),
        durations(parts["lat"]).alias("lat_text"),
        durations(parts["res"]).alias("res_text"),
    )
    lat_phrase = pl.concat_str(
        pl.when(pl.col("lat").is_not_null())
        .then(format_columns(_SKEW_LATENCY, latency=pl.col("lat_text")))
        .otherwise(pl.lit("")),
        pl.when(pl.col("res").is_not_null())
        .then(format_columns(_SKEW_RESOLUTION, resolution=pl.col("res_text")))
        .otherwise(pl.lit("")),
    )
    names = {
        "later": pl.col("later"),
        "earlier": pl.col("earlier"),
        "bound": pl.col("bound_text"),
        "gap": pl.col("gap_text"),
        "latency": lat_phrase,
        "latency_text": pl.col("lat_text"),
    }
    note = (
        pl.when(~pl.col("proves"))
        .then(pl.lit(""))
        .when(pl.col("gap") >= 0)
        .then(format_columns(_SKEW_PROVEN, **names))
        .when(pl.col("bound") >= 0)
        .then(format_columns(_SKEW_PROVEN_INSIDE, **names))
        .otherwise(format_columns(_SKEW_CONTRADICTED, **names))
    )
    return [parts["bound"].alias("skew_bound"), parts.select(note.alias("skew_note")).to_series()]


def handover_skew_bound(
    earlier_pod: str, later_pod: str, gap_ms: str, confirm_latency_ms: str, where: pl.Expr
) -> pl.Expr:
    """The `skew_bound` of `handover_skew_columns` as an expression (no prose): gap + the confirming call's
    latency where `where` holds, the gap is known and the two pods are known and differ; else null."""
    earlier, later, gap = pl.col(earlier_pod), pl.col(later_pod), pl.col(gap_ms)
    proves = where & gap.is_not_null() & earlier.is_not_null() & later.is_not_null() & (earlier != later)
    return pl.when(proves.fill_null(False)).then(gap + pl.col(confirm_latency_ms).fill_null(0.0))
