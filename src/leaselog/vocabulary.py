"""The event vocabulary: the canonical event names, the aliases that map onto them, and the source keys
each canonical field is read from. Data only: the reader, the field mapper (leaselog.reading.fields) and the
settings' validation (leaselog.config) all read it.
"""

from __future__ import annotations

import re

CANONICAL_EVENTS: tuple[str, ...] = (
    "job_triggered",
    "lock_acquired",
    "lock_denied",
    "job_started",
    "lease_renewal",
    "ownership_lost",
    "job_stop_requested",
    "job_stopped",
    "job_finished",
    "lock_released",
    "completion",
    # Not in the article's vocabulary, but in its demo: a line proving the execution was alive then
    # (`still_running_after_b_started`, heartbeats, progress lines).
    "job_progress",
    # The lock's client lost its Redis connection and reconnected, to a new primary after a failover
    # (`master changed`): what a lease held on the old primary may not have survived.
    "lock_reconnected",
    # A process started (Spring Boot's `Started X in s seconds (process running for u)`): no lease event
    # and no job's; it says where a pod's `elapsedMs` counts from anew (leaselog.clocks.undo), and the
    # events frame does not keep it.
    "process_started",
    # The lock's Redis changed primary (a Sentinel's `+switch-master`, a replica's `MASTER MODE enabled`):
    # no job's, a fact of the whole fleet (`FleetContext.failovers`); the events frame does not keep it.
    "lock_failover",
)
# the canonical events that are no job's: kept through reading, dropped from the events frame (a process's
# start once leaselog.clocks.undo has read it; a failover into the fleet's facts, leaselog.failovers)
PROCESS_STARTED = "process_started"
LOCK_FAILOVER = "lock_failover"
JOBLESS_EVENTS: tuple[str, ...] = (PROCESS_STARTED, LOCK_FAILOVER)

# alias (normalised: lower case, `-`/`.`/space -> `_`) -> (canonical event, fields the name implies)
EVENT_ALIASES: dict[str, tuple[str, dict[str, str]]] = {
    **{e: (e, {}) for e in CANONICAL_EVENTS},
    "triggered": ("job_triggered", {}),
    "job_received": ("job_triggered", {}),
    "message_received": ("job_triggered", {}),
    "acquired": ("lock_acquired", {}),
    "lease_acquired": ("lock_acquired", {}),
    "lock_granted": ("lock_acquired", {}),
    "denied": ("lock_denied", {}),
    "lease_denied": ("lock_denied", {}),
    "lock_busy": ("lock_denied", {}),
    "started": ("job_started", {}),
    "job_start": ("job_started", {}),
    "renewal": ("lease_renewal", {}),
    "lock_renewal": ("lease_renewal", {}),
    "lease_renewed": ("lease_renewal", {"renewal_outcome": "success"}),
    "lease_renewal_failed": ("lease_renewal", {"renewal_outcome": "error"}),
    "lease_renewal_rejected": ("lease_renewal", {"renewal_outcome": "rejected"}),
    "lease_renewal_timeout": ("lease_renewal", {"renewal_outcome": "timeout"}),
    "lease_lost": ("ownership_lost", {}),
    "lock_lost": ("ownership_lost", {}),
    "stop_requested": ("job_stop_requested", {}),
    "cancel_requested": ("job_stop_requested", {}),
    "stopped": ("job_stopped", {}),
    "job_cancelled": ("job_stopped", {}),
    "cancelled": ("job_stopped", {}),
    "finished": ("job_finished", {}),
    "job_completed": ("job_finished", {}),
    "job_done": ("job_finished", {}),
    "released": ("lock_released", {}),
    "lock_release": ("lock_released", {}),
    "release_deleted_1": ("lock_released", {"released": "true"}),
    "release_deleted_0": ("lock_released", {"released": "false"}),
    "release_failed": ("lock_released", {"release_outcome": "error"}),
    "completion_accepted": ("completion", {"outcome": "accepted"}),
    "completion_duplicate": ("completion", {"outcome": "duplicate"}),
    "completion_rejected": ("completion", {"outcome": "rejected"}),
    "result_committed": ("completion", {"outcome": "accepted"}),
    "still_running": ("job_progress", {}),
    "still_running_after_b_started": ("job_progress", {}),
    "heartbeat": ("job_progress", {}),
    "progress": ("job_progress", {}),
    "reconnected": ("lock_reconnected", {}),
    "redis_reconnected": ("lock_reconnected", {}),
    "lock_client_reconnected": ("lock_reconnected", {}),
    "master_changed": ("lock_reconnected", {}),
}

# canonical field -> source keys (after nested objects are flattened to dotted keys), in precedence order.
# Pod precedence follows docs/FORMATS.md; GELF's `host` (the application name) is only a last resort.
FIELD_ALIASES: dict[str, list[str]] = {
    # `wrapper.time` (Docker/kubectl/CRI/Fluent Bit's own time) only when the app's line has none
    "ts": [
        # loguru's serialized record's own time (leaselog.reading.formats.python_logging): the record's,
        # never a bound field's
        "loguru.time",
        "ts",
        "@timestamp",
        "timestamp",
        "time",
        "timeUnixNano",
        "observedTimeUnixNano",
        "date",
        # Python logging's `%(asctime)s` (python-json-logger's default key): `2026-12-03 11:10:54,365`,
        # local time without a zone (read in --timezone)
        "asctime",
        # Serilog's compact JSON (serilog/serilog-formatting-compact CompactJsonFormatter.cs, v1-3:
        # `@t`, DateTimeOffset's round-trip "O", `2026-11-02T10:00:00.0000000+00:00`) and
        # Microsoft.Extensions.Logging's JSON console formatter (dotnet/runtime
        # Microsoft.Extensions.Logging.Console/src/JsonConsoleFormatter.cs, .NET 6-9: `Timestamp`, written
        # only when `TimestampFormat` is set, in that format)
        "@t",
        "Timestamp",
        "wrapper.time",
    ],
    "pod": [
        "kubernetes.pod_name",
        "k8s.pod.name",
        "service.node.name",
        "pod",
        "podName",
        "pod_name",
        "HOSTNAME",
        "hostname",
        "host.name",
        "host.hostname",
        "gelf.host",
    ],
    # the thread or worker process that logged the line: with no execution id, (job, pod, thread) cut
    # into runs by the lifecycle identifies an execution (Celery's `processName` is its pool process)
    "thread": [
        "thread",
        "thread_name",
        "threadName",
        "process.thread.name",
        "thread.name",
        "logger_thread",
        "processName",
        "process_name",
    ],
    # the container instance that logged the line (a restarted container is a new one, with a new id):
    # Fluent Bit's kubernetes filter takes `docker_id` from the container log file's name
    # (fluent-bit plugins/filter_kubernetes/kube_regex.h, KUBE_TAG_TO_REGEX, v3.x); ECS `container.id`;
    # Docker's fluentd logging driver's `container_id` and its journald driver's `CONTAINER_ID_FULL`
    # (moby daemon/logger/fluentd/fluentd.go, daemon/logger/journald/journald.go)
    "container_id": ["kubernetes.docker_id", "container.id", "container_id", "CONTAINER_ID_FULL"],
    "job_id": ["jobId", "job_id", "job.id", "jobID", "jobid"],
    "execution_id": ["executionId", "execution_id", "execution.id", "executionID", "attemptId", "attempt_id"],
    "event": ["event", "event.name", "event.action", "eventName", "event_name", "evt"],
    "elapsed_ms": ["elapsedMs", "elapsed_ms", "elapsed"],
    "lease_ms": ["leaseMs", "lease_ms", "ttlMs", "ttl_ms", "leaseDurationMs", "lease.ms"],
    "fencing_token": ["fencingToken", "fencing_token", "fencing.token", "token"],
    "owner": ["owner", "ownerId", "owner_id", "lockValue", "lock.owner"],
    "renewal_outcome": ["renewalOutcome", "renewal_outcome", "renewal.outcome"],
    "latency_ms": ["latencyMs", "latency_ms", "renewalLatencyMs", "latency"],
    # the worker's own verdict on a renewal's success: it came after its local deadline (which keeps a
    # safety margin before the lease's expiry, so leaselog cannot tell from the times alone)
    "late": ["late", "renewalLate", "renewal_late", "renewal.late"],
    "reason": ["reason", "stopReason", "stop_reason"],
    "status": ["status", "jobStatus", "job_status"],
    "released": ["released", "deleted", "releaseDeleted"],
    "release_outcome": ["releaseOutcome", "release_outcome", "releaseError"],
    "outcome": ["outcome", "completionOutcome", "completion_outcome", "completion.outcome"],
    "trigger": ["trigger", "triggerType", "trigger_type", "messaging.system"],
    "topic": [
        "kafka.topic",
        "topic",
        "kafka_receivedTopic",
        "messaging.destination.name",
        "stream",
        "redis.stream",
    ],
    "partition": [
        "kafka.partition",
        "partition",
        "kafka_receivedPartitionId",
        "messaging.kafka.destination.partition",
        "messaging.destination.partition.id",
    ],
    "offset": ["kafka.offset", "offset", "kafka_offset", "messaging.kafka.message.offset"],
    "message_id": [
        "messageId",
        "message_id",
        "messaging.message.id",
        "msgId",
        "kafka_messageKey",
        "streamEntryId",
        "stream.entry_id",
    ],
    "delivery_count": [
        "deliveryCount",
        "delivery_count",
        "kafka_deliveryAttempt",
        "deliveryAttempt",
        "delivery_attempt",
        "messaging.delivery_count",
    ],
    # a redelivered message's line: how long it had been idle (pending, unacknowledged, not kept) at
    # least when this consumer claimed it (XAUTOCLAIM's min-idle-time)
    "idle_ms": ["idleMs", "idle_ms", "pendingIdleMs"],
    # a renewal line: since the execution's previous lease line, it reset its trigger entry's idle time
    # while the entry was still its delivery's
    "entry_kept": ["entryKept", "entry_kept"],
    "attempt": ["attempt", "retryAttempt", "retry_attempt", "retry.attempt"],
    # zap and log/slog write `msg`, zerolog `message`; Serilog's compact JSON `@m` (rendered, by
    # RenderedCompactJsonFormatter) or `@mt` (the template, by CompactJsonFormatter); .NET's JSON console
    # formatter `Message` (sources as for `ts`)
    "message": ["message", "msg", "short_message", "body", "@m", "@mt", "Message"],
}


_NORMALISE = re.compile(r"[\s.\-/:]+")


def normalise_event_name(name: str) -> str:
    return _NORMALISE.sub("_", name.strip().lower())
