"""Thin Celery wrappers: one batch of a screening run; a FunnyScore calibration."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from apps.core.errors import DomainError
from apps.screening.services import runs
from apps.screening.services.calibration import funnyscore_calibrate
from apps.studies.models import Study

logger = logging.getLogger(__name__)


@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def screening_batch_task(run_id: int, item_ids: list[int]) -> str | None:
    # Failures are recorded on the run (the page shows them), so the task itself never retries;
    # a redelivery after a lost worker is safe (features are upserted).
    run = runs.screening_run_batch(run_id=run_id, item_ids=item_ids)
    return None if run is None else run.status


@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def funnyscore_calibrate_task(study_id: int) -> int:
    study = Study.objects.filter(pk=study_id).first()
    if study is None:  # deleted since the calibration was queued
        return 0
    try:
        return len(funnyscore_calibrate(study=study))
    except DomainError as exc:
        # Too few items with features: nothing is stored, the page keeps the earlier calibration.
        logger.warning("calibration of study %s refused: %s", study_id, exc.message)
        return 0


@shared_task(
    acks_late=True,
    time_limit=settings.CELERY_TASK_TIME_LIMIT,
    soft_time_limit=settings.CELERY_TASK_SOFT_TIME_LIMIT,
)
def screening_judge_batch_task(run_id: int, item_ids: list[int]) -> str | None:
    # The judge stage of a run for one batch. No retry, as for the judge's own runs: a failed
    # call is stored as that item's verdict, and the item is then not sieved by the judge.
    run = runs.screening_run_judge_batch(run_id=run_id, item_ids=item_ids)
    return None if run is None else run.status
