"""Task workers' heartbeats: recorded by a periodic task (and at a worker's start), read by
the researcher pages' banner and by /readyz.

A worker that runs the heartbeat task is consuming its queue; one that died, or whose broker
lost its messages, stops beating, and after WORKER_STALE_SECONDS the pages say results may be
out of date. Where tasks run inline (CELERY_TASK_ALWAYS_EAGER) there is no worker to miss.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from apps.core.models import WorkerHeartbeat


def worker_heartbeat_record(*, hostname: str) -> None:
    """Upsert this worker's heartbeat (one row per worker host name)."""
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname[:200] or "worker", defaults={"seen_at": timezone.now()}
    )


@dataclass(frozen=True)
class WorkerState:
    # The newest heartbeat of any worker, None if none was ever recorded.
    last_seen: datetime | None
    stale: bool


def worker_state(*, now: datetime | None = None) -> WorkerState:
    """Whether background work is being done: stale when no worker has beaten within
    WORKER_STALE_SECONDS (never stale where tasks run inline)."""
    last = WorkerHeartbeat.objects.aggregate(at=Max("seen_at"))["at"]
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return WorkerState(last_seen=last, stale=False)
    now = now or timezone.now()
    limit = timedelta(seconds=int(settings.WORKER_STALE_SECONDS))
    return WorkerState(last_seen=last, stale=last is None or now - last > limit)
