"""The feature batch task: one batch of items per task, so more workers finish sooner."""

from __future__ import annotations

from celery import shared_task

from apps.screening.services.features import item_features_compute


# Idempotent (an upsert per item), so a redelivered batch just recomputes. A batch of 250 takes
# seconds once the models are loaded; the limits only stop a stuck worker.
@shared_task(time_limit=600, soft_time_limit=540)
def item_features_compute_task(item_ids: list[int]) -> int:
    return item_features_compute(item_ids=item_ids)
