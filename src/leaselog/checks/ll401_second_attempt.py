"""Another attempt at a job that was already attempted: which path triggered it.

Anti-pattern: explaining a second attempt by the lease alone. Lease expiry explains why the attempt
*could* acquire the lock; it does not identify why it *tried*. The article's incident found no
duplicate Kafka message, yet could not say whether scheduling, retry, polling or another path sent
the second pod, because the logs did not carry the trigger.

Best practice: log a `job_triggered` event for every attempt with its trigger and the message identity
(Kafka topic, partition, offset or the application's message id, delivery count, retry attempt), a new
executionId per attempt and the same jobId for the same logical request.

Trigger rules, first match wins: `retry` (trigger says retry, or the same message again after a failed
attempt); `redelivery` (same topic+partition+offset or message id as an earlier attempt, or a delivery
count > 1); `retry` (attempt number > 1); `scheduler` / `poll` (the trigger says so); `duplicate_publish`
(both attempts carry a message identity, and they differ: a new message for the same job); else `unknown`.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.base import CheckContext, at, certainty_columns, ev, handover_skew_note, ms_expr, when
from leaselog.durations import format_duration
from leaselog.findings import Finding

CODE = "LL401"
KIND = "second_attempt"
SEVERITY = "warning"

TRIGGERS = ("redelivery", "duplicate_publish", "scheduler", "retry", "poll", "unknown")
_RETRY = ["retry", "retried", "retrying", "backoff"]
_SCHEDULER = ["scheduler", "schedule", "scheduled", "cron", "timer", "quartz"]
_POLL = ["poll", "polling", "poller", "sweep", "reconcile"]
_FAILED = ["failed", "failure", "error", "exception", "aborted"]

_COLS = [
    "execution_id",
    "pod",
    "clock",
    "first_seen",
    "first_seq",
    "start",
    "end",
    "end_kind",
    "trigger",
    "topic",
    "partition",
    "offset",
    "message_id",
    "delivery_count",
    "attempt",
    "acquired_at",
    "denied_at",
    "valid_until",
    "finish_status",
    "first_file",
    "first_line",
    "triggered_line",
    "triggered_file",
    "acquired_line",
    "acquired_file",
    "triggered_at",
]


def _identity(suffix: str = "") -> pl.Expr:
    """A message identity string (topic/partition/offset, else message id), or null."""
    t, p, o, m = (pl.col(f"{c}{suffix}") for c in ("topic", "partition", "offset", "message_id"))
    return (
        pl.when(o.is_not_null())
        .then(pl.format("{}/{}@{}", t.fill_null("?"), p.cast(pl.String).fill_null("?"), o))
        .when(m.is_not_null())
        .then(pl.format("id:{}", m))
        .otherwise(None)
    )


def attempts(executions: pl.DataFrame, leases: pl.DataFrame) -> pl.DataFrame:
    """One row per non-first attempt of a job: the earlier attempt it is compared with, and its trigger."""
    lat = leases.select("job_id", "execution_id", "confirm_latency_ms")
    x = (
        executions.join(lat, on=["job_id", "execution_id"], how="left")
        .select("job_id", "timeline", *_COLS, "confirm_latency_ms")
        .with_columns(_identity().alias("identity"), pl.col("message_id").alias("mid"))
    )
    p = x.join(x, on=["job_id", "timeline"], suffix="_new").filter(
        (pl.col("first_seen") < pl.col("first_seen_new"))
        | (
            (pl.col("first_seen") == pl.col("first_seen_new"))
            & (pl.col("first_seq") < pl.col("first_seq_new"))
        )
    )
    same = (
        (pl.col("offset").is_not_null() & (pl.col("identity") == pl.col("identity_new")))
        | (pl.col("mid").is_not_null() & (pl.col("mid") == pl.col("mid_new")))
    ).fill_null(False)
    p = p.with_columns(same.alias("same_message"))
    # compare with the latest earlier attempt carrying the same message, else the latest earlier attempt
    p = p.sort("job_id", "first_seen_new", "same_message", "first_seen", "first_seq")
    chosen = p.group_by("job_id", "timeline", "execution_id_new", maintain_order=True).agg(
        pl.all().last(), pl.len().alias("earlier_attempts")
    )
    trig = pl.col("trigger_new")
    kind = (
        pl.when(trig.is_in(_RETRY))
        .then(pl.lit("retry"))
        .when(pl.col("same_message") & pl.col("finish_status").is_in(_FAILED))
        .then(pl.lit("retry"))
        .when(pl.col("same_message") | (pl.col("delivery_count_new") > 1))
        .then(pl.lit("redelivery"))
        .when(pl.col("attempt_new") > 1)
        .then(pl.lit("retry"))
        .when(trig.is_in(_SCHEDULER))
        .then(pl.lit("scheduler"))
        .when(trig.is_in(_POLL))
        .then(pl.lit("poll"))
        .when(pl.col("identity").is_not_null() & pl.col("identity_new").is_not_null())
        .then(pl.lit("duplicate_publish"))
        .otherwise(pl.lit("unknown"))
    )
    return chosen.with_columns(
        kind.alias("trigger_path"),
        ms_expr("valid_until", "acquired_at_new").alias("since_expiry_ms"),
        (pl.col("end") > pl.col("start_new")).fill_null(False).alias("earlier_still_running"),
    ).sort("job_id", "first_seen_new")


def _missing_fields(r: dict[str, object]) -> list[str]:
    miss = []
    if r["trigger_new"] is None:
        miss.append("trigger")
    if r["offset_new"] is None and r["message_id_new"] is None:
        miss.append("kafka.topic/partition/offset or messageId")
    if r["delivery_count_new"] is None:
        miss.append("deliveryCount")
    if r["attempt_new"] is None:
        miss.append("attempt")
    return miss


def _why(r: dict[str, object], path: str) -> str:
    new, old = r["execution_id_new"], r["execution_id"]
    if path == "redelivery":
        if r["same_message"]:
            return (
                f"redelivery: it carries the same message as {old} ({r['identity_new'] or r['mid_new']})"
                + (
                    f", delivery count {r['delivery_count_new']}"
                    if r["delivery_count_new"] is not None
                    else ""
                )
            )
        return f"redelivery: its delivery count is {r['delivery_count_new']}"
    if path == "retry":
        if r["trigger_new"] in _RETRY:
            return f"retry: its trigger is `{r['trigger_new']}`"
        if r["same_message"]:
            return (
                f"retry: the same message as {old} again after {old} ended with status {r['finish_status']}"
            )
        return f"retry: attempt number {r['attempt_new']}"
    if path in ("scheduler", "poll"):
        return f"{path}: its trigger is `{r['trigger_new']}`"
    if path == "duplicate_publish":
        return (
            f"duplicate publish: a different message ({r['identity_new']}) for the same job as {old}'s "
            f"({r['identity']}); look at the producer"
        )
    if r["triggered_line_new"] is None:
        fields = "no job_triggered event"
    else:
        fields = "a job_triggered event without " + ", ".join(_missing_fields(r))
    return (
        f"unknown: {new} logged {fields}. Start logging, on every pickup, a job_triggered event with "
        "trigger, kafka.topic/partition/offset (or messageId), deliveryCount and attempt"
    )


# what a finding is phrased from (rows carry only these into Python)
_USED = [
    "job_id",
    "trigger_path",
    "earlier_attempts",
    "same_message",
    "since_expiry_ms",
    "earlier_still_running",
    "certainty",
    "caveat",
    "execution_id",
    "pod",
    "clock",
    "end",
    "end_kind",
    "valid_until",
    "finish_status",
    "identity",
    "first_file",
    "first_line",
    "triggered_file",
    "triggered_line",
    "confirm_latency_ms",
    "execution_id_new",
    "pod_new",
    "clock_new",
    "start_new",
    "acquired_at_new",
    "denied_at_new",
    "trigger_new",
    "identity_new",
    "mid_new",
    "offset_new",
    "message_id_new",
    "delivery_count_new",
    "attempt_new",
    "first_file_new",
    "first_line_new",
    "triggered_file_new",
    "triggered_line_new",
    "acquired_file_new",
    "acquired_line_new",
]


def check(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    found = attempts(ctx.executions, ctx.leases).with_columns(
        # how far to trust the time since the earlier lease expired: the same for every row, so as columns
        certainty_columns(
            pl.col("since_expiry_ms").abs(), ("pod", "pod_new"), ("clock", "clock_new"), ctx.settings
        )
    )
    for r in found.select(_USED).iter_rows(named=True):
        path = r["trigger_path"]
        new, old = r["execution_id_new"], r["execution_id"]
        ck, ck_new = r["clock"], r["clock_new"]
        n = r["earlier_attempts"] + 1
        message = (
            f"{new} ({r['pod_new']}) is attempt {n} at {r['job_id']}, after {old} ({r['pod']}). "
            f"Trigger: {_why(r, path)}."
        )
        since = r["since_expiry_ms"]
        certainty, caveat, skew_bound = "certain", "", None
        if since is not None:
            rel = "after" if since >= 0 else "before"
            message += (
                f" It acquired the lock at {when(r['acquired_at_new'], ck_new)}, {format_duration(abs(since))} "
                f"{rel} {old}'s lease ended at {when(r['valid_until'], ck)}: lease expiry explains why it could "
                "acquire, the trigger explains why it tried."
            )
            certainty, caveat = r["certainty"], r["caveat"]
            if ck == "wall" and ck_new == "wall":
                skew_bound, note = handover_skew_note(r["pod"], r["pod_new"], since, r["confirm_latency_ms"])
                message += note
        elif r["denied_at_new"] is not None:
            message += (
                f" It was denied the lock at {when(r['denied_at_new'], ck_new)}: the lease still held it."
            )
        if r["earlier_still_running"]:
            message += f" {old} was still running then (until {when(r['end'], ck)})."
        message += caveat
        evidence = [
            *ev(*at(r, "triggered", "first"), f"{old} picked up"),
            *ev(*at(r, "triggered", "first", suffix="_new"), f"{new} picked up"),
        ]
        if r["acquired_line_new"] is not None and (r["acquired_file_new"], r["acquired_line_new"]) != at(
            r, "triggered", "first", suffix="_new"
        ):
            evidence += ev(r["acquired_file_new"], r["acquired_line_new"], f"{new} acquires")
        out.append(
            Finding(
                kind=KIND,
                code=CODE,
                # a second attempt after the first ended cleanly is an explanation, not a problem
                severity=SEVERITY if r["earlier_still_running"] or r["end_kind"] == "open" else "info",
                certainty=certainty,
                job_id=r["job_id"],
                execution_ids=(old, new),
                pods=tuple(dict.fromkeys([r["pod"], r["pod_new"]])),
                start=r["start_new"],
                end=r["start_new"],
                duration_ms=since,
                trigger=path,
                message=message,
                evidence=tuple(evidence),
                details={
                    "sincePreviousLeaseExpiryMs": since,
                    "attemptNumber": n,
                    "sameMessage": r["same_message"],
                    "missingFields": _missing_fields(r) if path == "unknown" else [],
                    "skewBoundMs": skew_bound,
                },
            )
        )
    return out
