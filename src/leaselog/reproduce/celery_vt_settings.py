"""The Celery visibility-timeout lab's settings, queue and environment, shared by the lab
(`leaselog.reproduce.celery_vt_lab`, the producer) and its workers (`leaselog.reproduce.celery_vt_worker`,
the Celery app). Plain data: importing it imports no Celery (the worker process does)."""

from __future__ import annotations

from typing import Any

TASK_NAME = "reports.export"
QUEUE = "exports"
VISIBILITY_TIMEOUT_S = 2
ENV_BROKER = "LEASELOG_LAB_BROKER"
ENV_TRUTH = "LEASELOG_LAB_TRUTH"
ENV_PREFIX = "LEASELOG_LAB_PREFIX"
ENV_POD = "LEASELOG_LAB_POD"
ENV_VISIBILITY = "LEASELOG_LAB_VISIBILITY_S"


def celery_settings(broker: str, visibility_s: int = VISIBILITY_TIMEOUT_S) -> dict[str, Any]:
    """The settings of the lab's workers and of its producer."""
    return {
        "broker_url": broker,
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            "visibility_timeout": visibility_s,
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
        },
        "task_acks_late": True,
        "task_ignore_result": True,
        "task_default_queue": QUEUE,
        "worker_prefetch_multiplier": 1,
        "worker_enable_remote_control": False,
    }
