"""Thin Celery wrappers: run one import job; the periodic sweep of lost ones."""

from __future__ import annotations

from celery import Task, shared_task
from django.conf import settings

from apps.imports import services


@shared_task(
    bind=True,
    acks_late=True,
    max_retries=None,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def import_job_run_task(self: Task, job_id: int) -> str | None:
    # Failures are recorded on the job (the page shows them); a bad file never retries.
    job = services.import_job_run(job_id=job_id)
    if (
        job is not None
        and not self.request.is_eager
        and services.import_job_lease_held(job_id=job_id)
        and self.request.retries < 4 * settings.IMPORT_MAX_ATTEMPTS
    ):
        # Another run holds the job: alive (it will finish) or killed, with its message
        # redelivered at once. Come back when its lease would have expired.
        raise self.retry(countdown=settings.IMPORT_LEASE_SECONDS + 1)
    return None if job is None else job.status


@shared_task(ignore_result=True)
def import_sweep_task() -> list[int]:
    return services.import_sweep()
