"""Thin Celery wrappers around the generation services."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.generation.services import generation_lane_work

# Seconds a lane waits before trying again when its endpoint is at its concurrency limit.
BUSY_COUNTDOWN = 2


# No Celery retry: retries of a call (429, 5xx, timeouts) happen inside, with backoff, and a
# call that still fails is stored as a failed output that resuming the run tries again.
# Redelivery after a lost worker is safe: an output is stored once (see services).
@shared_task(
    bind=True,
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def generation_lane_task(self, run_id: int, endpoint_id: int) -> str:  # type: ignore[no-untyped-def]
    outcome = generation_lane_work(
        run_id=int(run_id),
        endpoint_id=int(endpoint_id),
        budget_seconds=settings.CELERY_TASK_SOFT_TIME_LIMIT / 3,
    )
    if outcome == "budget":
        generation_lane_task.delay(run_id, endpoint_id)
    elif outcome == "busy" and not self.request.is_eager:
        # Eager (tests, `generate run --sync`): lanes run one after another, so a busy endpoint
        # is this same process's earlier lane, already finished.
        generation_lane_task.apply_async((run_id, endpoint_id), countdown=BUSY_COUNTDOWN)
    return outcome
