"""Celery tasks of the content app: thin wrappers over its services."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.content.services.metrics import content_metrics_compute
from apps.studies.models import Study


# No retry: nothing here is transient but the worker itself, and a redelivery after a lost
# worker is safe because the metrics are upserted.
@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def content_metrics_compute_task(study_id: int) -> int:
    study = Study.objects.filter(pk=study_id).first()
    if study is None:  # deleted since the task was queued
        return 0
    return content_metrics_compute(study=study)


# --- The content evaluation (weights, independence, tiers) ---------------------------------


# No retry, for the same reason; the evaluation replaces the stored one as a whole.
@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def content_evaluation_task(study_id: int) -> int | None:
    from apps.content.services.evaluation import content_evaluation_compute

    study = Study.objects.filter(pk=study_id).select_related("rubric").first()
    if study is None:  # deleted since the task was queued
        return None
    return content_evaluation_compute(study=study).pk
