"""Thin Celery wrapper: build one export job's file."""

from __future__ import annotations

from celery import Task, shared_task
from django.conf import settings

from apps.reports import services


@shared_task(
    bind=True,
    acks_late=True,
    max_retries=None,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def export_job_run_task(self: Task, job_id: int) -> str | None:
    # Failures are recorded on the job (the page shows them), so a failed build never retries.
    job = services.export_job_run(job_id=job_id)
    if (
        job is not None
        and not self.request.is_eager
        and services.export_job_lease_held(job_id=job_id)
        and self.request.retries < 4 * settings.EXPORT_MAX_ATTEMPTS
    ):
        # Another run holds the lease: alive (it will finish) or killed, with the broker
        # redelivering its message at once. Come back when the lease would have expired.
        raise self.retry(countdown=settings.EXPORT_LEASE_SECONDS + 1)
    return None if job is None else job.status


@shared_task(ignore_result=True)
def export_sweep_task() -> list[int]:
    return services.export_sweep()
