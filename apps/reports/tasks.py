"""Thin Celery wrapper: build one export job's file."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.reports import services


@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def export_job_run_task(job_id: int) -> str | None:
    # Failures are recorded on the job (the page shows them), so the task itself never retries.
    job = services.export_job_run(job_id=job_id)
    return None if job is None else job.status
