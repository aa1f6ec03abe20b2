"""The Celery visibility-timeout lab's settings, queue and environment, shared by the lab
(`leaselog.reproduce.celery_vt_lab`, the producer) and its workers (`leaselog.reproduce.celery_vt_worker`,
the Celery app). Plain data: importing it imports no Celery (the worker process does)."""

from __future__ import annotations

from typing import Any

from leaselog.reproduce.prl_settings import (
    ENV_BROKER,
    ENV_POD,
    ENV_PREFIX,
    ENV_TRUTH,
    ENV_VISIBILITY,
    celery_base,
)

TASK_NAME = "reports.export"
QUEUE = "exports"
VISIBILITY_TIMEOUT_S = 2
__all__ = [
    "ENV_BROKER",
    "ENV_POD",
    "ENV_PREFIX",
    "ENV_TRUTH",
    "ENV_VISIBILITY",
    "QUEUE",
    "TASK_NAME",
    "VISIBILITY_TIMEOUT_S",
    "celery_settings",
]


def celery_settings(broker: str, visibility_s: int = VISIBILITY_TIMEOUT_S) -> dict[str, Any]:
    """The settings of the lab's workers and of its producer."""
    return celery_base(broker, QUEUE, visibility_s)
