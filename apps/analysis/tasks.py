"""Thin Celery wrappers around the aggregation services."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from django.conf import settings

from apps.analysis import services
from apps.studies.models import Study


@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def study_aggregate_task(
    study_id: int, claimed_at: str | None = None, queued_at: str | None = None
) -> str | None:
    study = Study.objects.filter(pk=study_id).first()
    if study is None:  # deleted since the run was queued
        return None
    # A message queued before claims travelled with their messages has none: it computes.
    claim = None
    if claimed_at is not None and queued_at is not None:
        claim = (datetime.fromisoformat(claimed_at), datetime.fromisoformat(queued_at))
    result = services.study_aggregate_queued(study=study, claim=claim)
    return None if result is None else result.input_hash


@shared_task
def aggregate_sweep() -> list[int]:
    return services.aggregate_sweep()
