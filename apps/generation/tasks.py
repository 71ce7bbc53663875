"""Thin Celery wrappers around the generation services."""

from __future__ import annotations

from celery import shared_task

from apps.generation.services import (
    LANE_BUDGET_SECONDS,
    generation_lane_work,
    lane_queue,
    run_waits_on_leases,
)

# Seconds before a lane tries again when its endpoint is at its concurrency limit, or when the
# run's last outputs are held by other workers.
BUSY_COUNTDOWN = 2
LEASE_COUNTDOWN = 30


# No Celery retry: retries of a call (429, 5xx, timeouts) happen inside, with backoff, and a
# call that still fails is stored as a failed output that resuming the run tries again.
# Redelivery after a lost worker is safe: an output is stored once (see services). Time limits
# are set per lane when it is queued (services.lane_queue), from its endpoint's longest call.
@shared_task(bind=True, acks_late=True)
def generation_lane_task(self, run_id: int, endpoint_id: int) -> str:  # type: ignore[no-untyped-def]
    run_id, endpoint_id = int(run_id), int(endpoint_id)
    outcome = generation_lane_work(
        run_id=run_id, endpoint_id=endpoint_id, budget_seconds=LANE_BUDGET_SECONDS
    )
    if outcome == "budget":
        lane_queue(run_id=run_id, endpoint_id=endpoint_id)
    elif self.request.is_eager:
        # Eager (tests, commands without a worker): lanes run one after another in this
        # process, so a busy endpoint or a held output is an earlier lane's, already finished.
        pass
    elif outcome == "busy":
        lane_queue(run_id=run_id, endpoint_id=endpoint_id, countdown=BUSY_COUNTDOWN)
    elif run_waits_on_leases(run_id=run_id):
        lane_queue(run_id=run_id, endpoint_id=endpoint_id, countdown=LEASE_COUNTDOWN)
    return outcome
