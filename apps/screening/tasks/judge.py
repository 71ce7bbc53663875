"""Thin Celery wrapper around the LLM judge's batch service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from apps.screening.services.judge import judge_batch_run
from apps.studies.models import Study


# No retry: a failed call is already stored as that item's verdict, and judging again is the
# researcher's decision (another run), not the queue's. Redelivery after a lost worker is safe:
# verdicts and the comparison are upserts.
@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def judge_batch_task(study_id: int, item_ids: list[int]) -> dict[str, int] | None:
    study = Study.objects.filter(pk=study_id).select_related("rubric").first()
    if study is None:  # deleted since the run was queued
        return None
    return judge_batch_run(study=study, item_ids=[int(pk) for pk in item_ids])
