"""Thin Celery wrapper around the LLM judge's batch service."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from apps.screening.services.judge import judge_batch_run
from apps.studies.models import Study

logger = logging.getLogger(__name__)


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
    try:
        return judge_batch_run(study=study, item_ids=[int(pk) for pk in item_ids])
    except Exception:
        # A run's batches are chained (one after the other): a batch that fails must not take
        # the rest of the run with it. Its items keep their earlier verdicts (or none).
        logger.exception("judge batch of %s items for study %s failed", len(item_ids), study_id)
        return None
