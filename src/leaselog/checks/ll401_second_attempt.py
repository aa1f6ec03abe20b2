"""Another attempt at a job that was already attempted: which path triggered it.

Anti-pattern: explaining a second attempt by the lease alone. Lease expiry explains why the attempt
*could* acquire the lock; it does not identify why it *tried*. The article's incident found no
duplicate Kafka message, yet could not say whether scheduling, retry, polling or another path sent
the second pod, because the logs did not carry the trigger.

Best practice: log a `job_triggered` event for every attempt with its trigger and the message identity
(Kafka topic, partition, offset or the application's message id, delivery count, retry attempt), a new
executionId per attempt and the same jobId for the same logical request.

Trigger rules, first match wins: `abandoned` (the trigger says so: a job queue took the earlier attempt's
run as abandoned once its lease lapsed, and put the job back while that run had logged no end, as RQ's
StartedJobRegistry cleanup does); `retry` (trigger says retry, or the same message again after a failed
attempt); `redelivery` (same topic+partition+offset or message id as an earlier attempt, or a delivery
count > 1, or the trigger says a scheduler recovered a failed instance's run: Quartz's `recovery`); `retry` (attempt number > 1); `scheduler` / `poll` (the trigger says so); `duplicate_publish`
(both attempts carry a message identity, and they differ: a new message for the same job; an earlier
attempt without one, say a scheduler's, is passed over for the latest that carried one); else `unknown`.
"""

from __future__ import annotations

import polars as pl

from leaselog.checks.causal import refuted_leases, refuted_overlaps
from leaselog.checks.certainty import certainty_columns, handover_skew_bound, handover_skew_columns
from leaselog.checks.contract import Check, CheckContext
from leaselog.checks.frames import at_file, evidence, one_or_two, skew_details
from leaselog.checks.offsets import behind_columns
from leaselog.checks.phrasing import durations, moments, text
from leaselog.reconstruct import NEVER_RAN
from leaselog.timebase import ms_expr
from leaselog.unlogged_renewals import UNLOGGED

TRIGGERS = ("abandoned", "redelivery", "duplicate_publish", "scheduler", "retry", "poll", "unknown")
_RETRY = ["retry", "retried", "retrying", "backoff"]
_SCHEDULER = ["scheduler", "schedule", "scheduled", "cron", "timer", "quartz"]
_POLL = ["poll", "polling", "poller", "sweep", "reconcile"]
# a clustered scheduler firing again a run its failed instance had in progress (Quartz's requestsRecovery)
_RECOVERY = ["recovery", "recovering"]
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
    "fencing_token",
    "denied_at",
    "valid_until",
    "lease_end",
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


def attempts(executions: pl.DataFrame, leases: pl.DataFrame, skew_ms: float) -> pl.DataFrame:
    """One row per non-first attempt of a job: the earlier attempt it is compared with, and its trigger.

    Only attempts that ran count, on both sides: one the lock turned away (or that was triggered and
    did nothing more) never ran; `attempts_not_run` (LL402) speaks for those. `skew_ms`: the clock-skew
    bound, within which two pods' acquisitions are ordered by their fencing tokens.
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
    # skewed clock can make it look so) and is still the later attempt. Two acquisitions the clocks put
    # within the clock-skew bound of each other are ordered by their fencing tokens where every attempt of
    # the job has one and none was handed out twice (leaselog.checks.anchors: a counter taken back by a
    # failover repeats one): the clocks cannot order them, the counter can.
    by_token = (
        pl.col("fencing_token").is_not_null().all() & (pl.col("fencing_token").n_unique() == pl.len())
    ).over("job_id", "timeline")
    k = x.select(
        "row",
        "job_id",
        "timeline",
        "execution_id",
        pl.coalesce("acquired_at", "first_seen").alias("order_at"),
        "first_seq",
        "fencing_token",
        by_token.alias("by_token"),
        "offset",
        "identity",
        "mid",
    )
    close = ms_expr("order_at", "order_at_new").abs() <= skew_ms
    p = k.join(k, on=["job_id", "timeline"], suffix="_new").filter(
        pl.when(pl.col("by_token") & close)
        .then(pl.col("fencing_token") < pl.col("fencing_token_new"))
        .otherwise(
            (pl.col("order_at") < pl.col("order_at_new"))
            | (
                (pl.col("order_at") == pl.col("order_at_new"))
                & (pl.col("first_seq") < pl.col("first_seq_new"))
            )
        )
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
        pl.when(trig == "abandoned")
        .then(pl.lit("abandoned"))
        .when(trig.is_in(_RETRY))
        .then(pl.lit("retry"))
        .when(pl.col("same_message") & pl.col("finish_status").is_in(_FAILED))
        .then(pl.lit("retry"))
        .when(pl.col("same_message") | (pl.col("delivery_count_new") > 1) | trig.is_in(_RECOVERY))
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
        # (a lease whose renewals went unlogged ended when this one was acquired at the latest: no time since)
        pl.when(pl.col("lease_end") != UNLOGGED)
        .then(ms_expr("valid_until", "acquired_at_new"))
        .alias("since_expiry_ms"),
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
        pl.when(path == "abandoned")
        .then(
            pl.format(
                "abandoned: the job was put back in its queue once {}'s lease lapsed (its worker stopped "
                "heartbeating), while {} had logged no end",
                old,
                old,
            )
        )
        .when((path == "redelivery") & same)
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
        .when((path == "redelivery") & pl.col("trigger_new").is_in(_RECOVERY).fill_null(False))
        .then(
            pl.format(
                "redelivery: its trigger is `{}` (a clustered scheduler fired {}'s run again, taking its "
                "instance for failed)",
                trig,
                old,
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


def _handover() -> pl.Expr:
    """Where the handover's skew bound is read: a time since the earlier lease's expiry, both pods on the
    wall clock."""
    since = pl.col("since_expiry_ms")
    return since.is_not_null() & (pl.col("clock") == "wall") & (pl.col("clock_new") == "wall")


def detect(ctx: CheckContext) -> pl.DataFrame:
    found = attempts(ctx.executions, ctx.leases, ctx.settings.max_skew_ms)
    # a release that deleted the key came before the later acquisition whatever the clocks say
    # (leaselog.checks.causal): then the earlier lease had ended, and (its execution ended before its
    # release) the earlier attempt was no longer running
    pair = {"execution_id_b": "execution_id_new"}
    found = (
        found.join(
            refuted_leases(ctx).rename(pair | {"y_after": "released_first"}),
            on=["job_id", "execution_id", "execution_id_new"],
            how="left",
            maintain_order="left",
        )
        .join(
            refuted_overlaps(ctx).rename(pair).with_columns(pl.lit(True).alias("_apart")),
            on=["job_id", "execution_id", "execution_id_new"],
            how="left",
            maintain_order="left",
        )
        .with_columns(
            pl.col("released_first").is_not_null().alias("inside_unbroken"),
            pl.col("released_first").fill_null(False),
            (pl.col("earlier_still_running") & pl.col("_apart").is_null()).alias("earlier_still_running"),
        )
        .drop("_apart")
    )
    since = pl.col("since_expiry_ms")
    # the facts that order two pods' events (leaselog.checks.anchors) may prove the later pod's clock runs
    # behind the earlier one's by as much as the acquisition is logged before the lease ended (or within
    # the skew bound of it): then nothing shows two leases at once
    found = behind_columns(ctx, found, "pod", "pod_new").with_columns(
        ((since < 0) & (-since - pl.col("behind_ms") <= ctx.settings.max_skew_ms))
        .fill_null(False)
        .alias("offset_covers")
    )
    # the later attempt's pickup line, and its acquire when that is another line
    picked_file_new = at_file("triggered", "first", suffix="_new")
    picked_line_new = pl.coalesce("triggered_line_new", "first_line_new")
    acquire_is_pickup = pl.col("acquired_file_new").eq_missing(picked_file_new) & pl.col(
        "acquired_line_new"
    ).eq_missing(picked_line_new)
    found = found.with_columns(
        # how far to trust the time since the earlier lease expired
        *certainty_columns(since.abs(), ("pod", "pod_new"), ("clock", "clock_new"), ctx.settings),
        _missing_fields().alias("missing"),
        handover_skew_bound("pod", "pod_new", "since_expiry_ms", "confirm_latency_ms", _handover()).alias(
            "skew_bound"
        ),
    )
    # never negative: an acquisition before the earlier lease ended has no time "since"
    after = pl.when(since >= 0).then(since)
    fields = {
        "attemptNumber": pl.col("earlier_attempts") + 1,
        # the earlier lease's renewals went unlogged: when it lapsed is bounded by this acquisition only
        "renewalsUnlogged": (pl.col("lease_end") == UNLOGGED).fill_null(False),
        "sameMessage": pl.col("same_message"),
        "missingFields": pl.when(pl.col("trigger_path") == "unknown")
        .then(pl.col("missing"))
        .otherwise(pl.lit([], dtype=pl.List(pl.String))),
    }
    bound = pl.col("skew_bound")
    # `start`/`end`/`trigger` of the rows are the finding's; the earlier attempt's are `*_old`
    return found.rename({"start": "start_old", "end": "end_old", "trigger": "trigger_old"}).with_columns(
        pl.concat_list("execution_id", "execution_id_new").alias("execution_ids"),
        one_or_two("pod", "pod_new").alias("pods"),
        pl.col("start_new").alias("start"),
        pl.col("start_new").alias("end"),
        after.alias("duration_ms"),
        # with no time since the expiry there is nothing to be uncertain about
        pl.when(since.is_null())
        .then(pl.lit("certain"))
        .when(pl.col("offset_covers"))
        .then(pl.lit("uncertain"))
        .otherwise("certainty")
        .alias("certainty"),
        # a second attempt after the first ended cleanly is an explanation, not a problem
        pl.when(pl.col("earlier_still_running") | (pl.col("end_kind") == "open").fill_null(False))
        .then(pl.lit(CHECK.severity))
        .otherwise(pl.lit("info"))
        .alias("severity"),
        pl.col("trigger_path").alias("trigger"),
        evidence(
            (
                at_file("triggered", "first"),
                pl.coalesce("triggered_line", "first_line"),
                pl.format("{} picked up", text("execution_id")),
            ),
            (picked_file_new, picked_line_new, pl.format("{} picked up", text("execution_id_new"))),
            # the acquire is cited when it is not the pickup line already cited
            (
                pl.when(acquire_is_pickup)
                .then(pl.lit(None, dtype=pl.String))
                .otherwise(pl.col("acquired_file_new")),
                pl.col("acquired_line_new"),
                pl.format("{} acquires", text("execution_id_new")),
            ),
        ).alias("evidence"),
        pl.when(since < 0)
        .then(
            skew_details(
                bound,
                sincePreviousLeaseExpiryMs=pl.lit(None, dtype=pl.Float64),
                acquiredBeforeLeaseEndMs=-since,
                **fields,
            )
        )
        .otherwise(skew_details(bound, sincePreviousLeaseExpiryMs=after, **fields))
        .alias("details"),
    )


def explain(rows: pl.DataFrame, ctx: CheckContext) -> pl.Series:
    old, new = text("execution_id"), text("execution_id_new")
    since = pl.col("since_expiry_ms")
    rows = rows.with_columns(
        moments(rows, "acquired_at_new", "clock_new").alias("acquired_when"),
        moments(rows, "valid_until", "clock").alias("expired_when"),
        moments(rows, "denied_at_new", "clock_new").alias("denied_when"),
        moments(rows, "end_old", "clock").alias("end_when"),
        durations(rows["since_expiry_ms"].abs()).alias("since_text"),
        *handover_skew_columns(rows, "pod", "pod_new", "since_expiry_ms", "confirm_latency_ms", _handover()),
    )
    return rows.select(
        pl.concat_str(
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
            .when((since < 0) & pl.col("released_first"))
            .then(
                pl.format(
                    " Its acquisition is logged at {}, {} before {}'s release that deleted the key ({}): the "
                    "release came first whatever the clocks say, so at least one clock or one line is wrong "
                    "(see clock_step, clock_contradiction).",
                    "acquired_when",
                    "since_text",
                    old,
                    "expired_when",
                )
            )
            .when((since < 0) & pl.col("inside_unbroken"))
            .then(
                pl.format(
                    " Its acquisition is logged at {}, inside {}'s lease, which its release deleting the key at "
                    "{} proves unbroken: it came before that lease or after it whatever the clocks say, so at "
                    "least one clock or one line is wrong (see clock_step, clock_contradiction).",
                    "acquired_when",
                    old,
                    "expired_when",
                )
            )
            .when(pl.col("offset_covers"))
            .then(
                pl.format(
                    " Its acquisition is logged at {}, {} before {}'s lease ended ({}), but the logs prove {}'s clock "
                    "runs at least {} behind {}'s (see clock_contradiction): it need not have come before the "
                    "expiry, and the clocks cannot place it closer.",
                    "acquired_when",
                    "since_text",
                    old,
                    "expired_when",
                    text("pod_new"),
                    durations(rows["behind_ms"]),
                    text("pod"),
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
            .when(pl.col("lease_end") == UNLOGGED)
            .then(
                pl.format(
                    " It acquired the lock at {}, once {}'s lease had lapsed ({}'s renewals are not logged, so when "
                    "is not known): lease expiry explains why it could acquire, the trigger explains why it tried.",
                    "acquired_when",
                    old,
                    old,
                )
            )
            .when(pl.col("denied_at_new").is_not_null())
            .then(pl.format(" It was denied the lock at {}: the lease still held it.", "denied_when"))
            .otherwise(pl.lit("")),
            pl.when(pl.col("inside_unbroken")).then(pl.lit("")).otherwise(pl.col("skew_note")),
            pl.when("earlier_still_running")
            .then(pl.format(" {} was still running then (until {}).", old, "end_when"))
            .otherwise(pl.lit("")),
            # how far to trust the time since the expiry (nothing to trust without one)
            pl.when(since.is_null()).then(pl.lit("")).otherwise("caveat"),
        ).alias("message")
    ).to_series()


CHECK = Check("LL401", "second_attempt", "warning", detect, explain)
