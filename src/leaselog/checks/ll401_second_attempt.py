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
(both attempts carry a message identity, and they differ: a new message for the same job; an earlier
attempt without one, say a scheduler's, is passed over for the latest that carried one); else `unknown`.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.certainty import certainty_columns, handover_skew_columns, skew_details
from leaselog.checks.contract import CheckContext
from leaselog.checks.frames import at_file, ms_expr
from leaselog.checks.phrasing import durations, moments, text
from leaselog.findings import NO_LINE, Evidence, Finding, Severity
from leaselog.reconstruct import NEVER_RAN

CODE = "LL401"
KIND = "second_attempt"
SEVERITY: Severity = "warning"

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
    """One row per non-first attempt of a job: the earlier attempt it is compared with, and its trigger.

    Only attempts that ran count, on both sides: one the lock turned away (or that was triggered and
    did nothing more) never ran; `attempts_not_run` (LL402) speaks for those.
    """
    x = (
        executions.select("job_id", "timeline", *_COLS)
        .filter(~pl.col("end_kind").is_in(NEVER_RAN))
        # only a job with several executions on one timeline has a later attempt (most have one)
        .filter(pl.len().over("job_id", "timeline") > 1)
        .with_columns(_identity().alias("identity"), pl.col("message_id").alias("mid"))
        .with_row_index("row")
    )
    # Attempts are ordered by when they acquired the lock (the lock's own order), else by their first line:
    # a poller waiting silently for the lock can log its pickup before the holder's acquisition (or a
    # skewed clock can make it look so) and is still the later attempt.
    k = x.select(
        "row",
        "job_id",
        "timeline",
        "execution_id",
        pl.coalesce("acquired_at", "first_seen").alias("order_at"),
        "first_seq",
        "offset",
        "identity",
        "mid",
    )
    p = k.join(k, on=["job_id", "timeline"], suffix="_new").filter(
        (pl.col("order_at") < pl.col("order_at_new"))
        | ((pl.col("order_at") == pl.col("order_at_new")) & (pl.col("first_seq") < pl.col("first_seq_new")))
    )
    same = (
        (pl.col("offset").is_not_null() & (pl.col("identity") == pl.col("identity_new")))
        | (pl.col("mid").is_not_null() & (pl.col("mid") == pl.col("mid_new")))
    ).fill_null(False)
    p = p.with_columns(same.alias("same_message"))
    # compare with the latest earlier attempt carrying the same message, else the latest earlier attempt
    p = p.sort("job_id", "order_at_new", "same_message", "order_at", "first_seq")
    # a duplicate publish is told by the latest earlier attempt that carried a message at all (one the
    # scheduler or a poller started carries none, and says nothing about the producer)
    carried = pl.col("identity").is_not_null()
    pick = p.group_by("job_id", "timeline", "execution_id_new", maintain_order=True).agg(
        pl.col("row", "row_new", "same_message").last(),
        pl.len().alias("earlier_attempts"),
        pl.col("execution_id").filter(carried).last().alias("published_by"),
        pl.col("identity").filter(carried).last().alias("published_identity"),
    )
    wide = x.drop("row", "job_id", "timeline")
    chosen = pl.concat(
        [
            pick.select("job_id", "timeline", "execution_id_new"),
            wide[pick["row"]],
            wide.drop("execution_id")[pick["row_new"]].rename(lambda c: f"{c}_new"),
            pick.select("same_message", "earlier_attempts", "published_by", "published_identity"),
        ],
        how="horizontal",
    ).join(
        # the earlier attempt's lease's confirming latency (an execution has at most one lease), looked up
        # for the chosen pairs only
        leases.select("job_id", "execution_id", "confirm_latency_ms"),
        on=["job_id", "execution_id"],
        how="left",
        maintain_order="left",
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
        .when(pl.col("published_identity").is_not_null() & pl.col("identity_new").is_not_null())
        .then(pl.lit("duplicate_publish"))
        .otherwise(pl.lit("unknown"))
    )
    return chosen.with_columns(
        kind.alias("trigger_path"),
        ms_expr("valid_until", "acquired_at_new").alias("since_expiry_ms"),
        (pl.col("end") > pl.col("start_new")).fill_null(False).alias("earlier_still_running"),
    ).sort("job_id", "first_seen_new")


def _missing_fields() -> pl.Expr:
    """The trigger fields the later attempt's job_triggered event lacks, as a list."""
    labels = [
        pl.when(pl.col("trigger_new").is_null()).then(pl.lit("trigger")),
        pl.when(pl.col("offset_new").is_null() & pl.col("message_id_new").is_null()).then(
            pl.lit("kafka.topic/partition/offset or messageId")
        ),
        pl.when(pl.col("delivery_count_new").is_null()).then(pl.lit("deliveryCount")),
        pl.when(pl.col("attempt_new").is_null()).then(pl.lit("attempt")),
    ]
    return pl.concat_list(labels).list.drop_nulls()


def _why() -> pl.Expr:
    """Why the later attempt tried, in words (`trigger_path` first), from the pair's columns."""
    old, new, trig = text("execution_id"), text("execution_id_new"), text("trigger_new")
    path, same = pl.col("trigger_path"), pl.col("same_message")
    delivery = text("delivery_count_new")
    logged = (
        pl.when(pl.col("triggered_line_new").is_null())
        .then(pl.lit("no job_triggered event"))
        .otherwise(pl.lit("a job_triggered event without ") + pl.col("missing").list.join(", "))
    )
    return (
        pl.when((path == "redelivery") & same)
        .then(
            pl.format(
                "redelivery: it carries the same message as {} ({}){}",
                old,
                pl.coalesce("identity_new", "mid_new").fill_null("None"),
                pl.when(pl.col("delivery_count_new").is_not_null())
                .then(pl.lit(", delivery count ") + delivery)
                .otherwise(pl.lit("")),
            )
        )
        .when(path == "redelivery")
        .then(pl.format("redelivery: its delivery count is {}", delivery))
        .when((path == "retry") & pl.col("trigger_new").is_in(_RETRY).fill_null(False))
        .then(pl.format("retry: its trigger is `{}`", trig))
        .when((path == "retry") & same)
        .then(
            pl.format(
                "retry: the same message as {} again after {} ended with status {}",
                old,
                old,
                text("finish_status"),
            )
        )
        .when(path == "retry")
        .then(pl.format("retry: attempt number {}", text("attempt_new")))
        .when(path.is_in(["scheduler", "poll"]))
        .then(pl.format("{}: its trigger is `{}`", path, trig))
        .when(path == "duplicate_publish")
        .then(
            pl.format(
                "duplicate publish: a different message ({}) for the same job as {}'s ({}); look at the producer",
                text("identity_new"),
                text("published_by"),
                text("published_identity"),
            )
        )
        .otherwise(
            pl.format(
                "unknown: {} logged {}. Start logging, on every pickup, a job_triggered event with "
                "trigger, kafka.topic/partition/offset (or messageId), deliveryCount and attempt",
                new,
                logged,
            )
        )
    )


def check(ctx: CheckContext) -> list[Finding]:
    found = attempts(ctx.executions, ctx.leases).with_columns(
        # how far to trust the time since the earlier lease expired: the same for every row, so as columns
        *certainty_columns(
            pl.col("since_expiry_ms").abs(), ("pod", "pod_new"), ("clock", "clock_new"), ctx.settings
        ),
        _missing_fields().alias("missing"),
    )
    if found.height == 0:
        return []
    old, new = text("execution_id"), text("execution_id_new")
    since = pl.col("since_expiry_ms")
    # moments, durations and the skew bound a handover proves (only with the earlier lease's expiry and
    # both pods on the wall clock), one column each
    found = found.with_columns(
        moments(found, "acquired_at_new", "clock_new").alias("acquired_when"),
        moments(found, "valid_until", "clock").alias("expired_when"),
        moments(found, "denied_at_new", "clock_new").alias("denied_when"),
        moments(found, "end", "clock").alias("end_when"),
        durations(found["since_expiry_ms"].abs()).alias("since_text"),
        *handover_skew_columns(
            found,
            "pod",
            "pod_new",
            "since_expiry_ms",
            "confirm_latency_ms",
            where=since.is_not_null() & (pl.col("clock") == "wall") & (pl.col("clock_new") == "wall"),
        ),
    )
    message = pl.concat_str(
        pl.format(
            "{} ({}) is attempt {} at {}, after {} ({}). Trigger: {}.",
            new,
            text("pod_new"),
            (pl.col("earlier_attempts") + 1).cast(pl.String),
            text("job_id"),
            old,
            text("pod"),
            _why(),
        ),
        pl.when(since >= 0)
        .then(
            pl.format(
                " It acquired the lock at {}, {} after {}'s lease ended at {}: lease expiry explains why it "
                "could acquire, the trigger explains why it tried.",
                "acquired_when",
                "since_text",
                old,
                "expired_when",
            )
        )
        .when(since < 0)
        .then(
            # no duration "since" an expiry that had not happened: name the situation instead
            pl.format(
                " It acquired the lock at {} while {}'s lease was still valid (until {}, {} later): two "
                "leases at once (see concurrent_leases), so no lease expiry explains why it could acquire; "
                "the trigger explains why it tried.",
                "acquired_when",
                old,
                "expired_when",
                "since_text",
            )
        )
        .when(pl.col("denied_at_new").is_not_null())
        .then(pl.format(" It was denied the lock at {}: the lease still held it.", "denied_when"))
        .otherwise(pl.lit("")),
        pl.col("skew_note"),
        pl.when("earlier_still_running")
        .then(pl.format(" {} was still running then (until {}).", old, "end_when"))
        .otherwise(pl.lit("")),
        # how far to trust the time since the expiry (nothing to trust without one)
        pl.when(since.is_null()).then(pl.lit("")).otherwise("caveat"),
    )
    found = found.with_columns(
        message.alias("message"),
        at_file("triggered", "first").alias("picked_file"),
        pl.coalesce("triggered_line", "first_line").alias("picked_line"),
        at_file("triggered", "first", suffix="_new").alias("picked_file_new"),
        pl.coalesce("triggered_line_new", "first_line_new").alias("picked_line_new"),
        # with no time since the expiry there is nothing to be uncertain about
        pl.when(since.is_null()).then(pl.lit("certain")).otherwise("certainty").alias("certainty"),
    )
    out: list[Finding] = []
    for (
        job_id, path, n, same, since_ms, still_running, end_kind, certainty, old_id, pod, new_id, pod_new,
        start_new, message, skew_bound, missing,
        picked_file, picked_line, picked_file_new, picked_line_new, acquired_file_new, acquired_line_new,
    ) in zip(*(found[c].to_list() for c in _USED), strict=True):  # fmt: skip
        # the acquire is cited when it is not the pickup line already cited
        acquires = (acquired_file_new, acquired_line_new)
        evidence = Evidence.known(
            (picked_file, picked_line, f"{old_id} picked up"),
            (picked_file_new, picked_line_new, f"{new_id} picked up"),
            (*acquires, f"{new_id} acquires") if acquires != (picked_file_new, picked_line_new) else NO_LINE,
        )
        out.append(
            Finding.of(
                kind=KIND,
                code=CODE,
                # a second attempt after the first ended cleanly is an explanation, not a problem
                severity=SEVERITY if still_running or end_kind == "open" else "info",
                certainty=certainty,
                job_id=job_id,
                execution_ids=(old_id, new_id),
                pods=(pod,) if pod == pod_new else (pod, pod_new),
                start=start_new,
                end=start_new,
                # never negative: an acquisition before the earlier lease ended has no time "since"
                duration_ms=since_ms if since_ms is not None and since_ms >= 0 else None,
                trigger=path,
                message=message,
                evidence=evidence,
                details={
                    "sincePreviousLeaseExpiryMs": since_ms
                    if since_ms is not None and since_ms >= 0
                    else None,
                    **(
                        {"acquiredBeforeLeaseEndMs": -since_ms}
                        if since_ms is not None and since_ms < 0
                        else {}
                    ),
                    "attemptNumber": n + 1,
                    "sameMessage": same,
                    "missingFields": missing if path == "unknown" else [],
                    **skew_details(skew_bound),
                },
            )
        )
    return out


# what a finding is made of (only these columns reach Python), in the order `check` unpacks them
_USED = [
    "job_id",
    "trigger_path",
    "earlier_attempts",
    "same_message",
    "since_expiry_ms",
    "earlier_still_running",
    "end_kind",
    "certainty",
    "execution_id",
    "pod",
    "execution_id_new",
    "pod_new",
    "start_new",
    "message",
    "skew_bound",
    "missing",
    "picked_file",
    "picked_line",
    "picked_file_new",
    "picked_line_new",
    "acquired_file_new",
    "acquired_line_new",
]
