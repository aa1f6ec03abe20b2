"""The python-redis-lock lab's Celery settings, queues and environment, shared by the lab
(`leaselog.reproduce.prl_lab`, the producer) and its workers (`leaselog.reproduce.prl_worker`, the Celery
app). Plain data: importing it imports neither Celery nor the lock library (the worker process does)."""

from __future__ import annotations

from typing import Any

TASK_NAME = "reports.render"
QUEUE = "reports"  # the render tasks (first deliveries and redeliveries)
POLL_QUEUE = "polls"  # the poller's task, for its own pod only
# a killed worker's unacked task is restored after this long (longer than any lab task runs)
VISIBILITY_TIMEOUT_S = 30
ENV_BROKER = "LEASELOG_LAB_BROKER"
ENV_POD = "LEASELOG_LAB_POD"
ENV_TRUTH = "LEASELOG_LAB_TRUTH"
ENV_PREFIX = "LEASELOG_LAB_PREFIX"
ENV_VISIBILITY = "LEASELOG_LAB_VISIBILITY_S"


def celery_base(broker: str, queue: str, visibility_s: int) -> dict[str, Any]:
    """What every lab's Celery workers and producer share: late acks, one message prefetched, the
    Redis broker's visibility timeout, and unacked messages swept every second."""
    return {
        "broker_url": broker,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": visibility_s,
            # sweep for expired unacked messages every second (Celery's default: every 100 s)
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
        },
        "task_acks_late": True,
        "task_ignore_result": True,
        "task_default_queue": queue,
        "worker_prefetch_multiplier": 1,
        "worker_enable_remote_control": False,
    }


def celery_settings(broker: str, visibility_s: int = VISIBILITY_TIMEOUT_S) -> dict[str, Any]:
    """The settings of the lab's workers and of the lab's producer."""
    return {
        **celery_base(broker, QUEUE, visibility_s),
        "task_reject_on_worker_lost": True,
        "worker_cancel_long_running_tasks_on_connection_loss": False,
    }


def run_name(task_id: str, delivery: int) -> str:
    """The attempt's name in the truth: the task id, `#N` appended for its Nth delivery."""
    return task_id if delivery <= 1 else f"{task_id}#{delivery}"
