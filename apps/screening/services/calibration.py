"""Calibrating FunnyScore against the human ratings a study already holds.

The fit is pure (`apps.screening.calibration`); this module computes the features it needs and
stores the result. Its rows, and which stored calibration scores an item, are read in
`apps.screening.selectors`. Its one random step, the order of the cross-validation folds, uses
the study's `random_seed`, so refitting the data a stored hash names gives the same numbers.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

from apps.core.errors import DomainError
from apps.screening import calibration as calib
from apps.screening.models import FunnyScoreCalibration
from apps.screening.selectors import (
    calibration_rows,
    human_mean_funniness,
    rated_items_without_features,
)
from apps.studies.models import Study

logger = logging.getLogger(__name__)


def _rated_features_compute(study: Study) -> None:
    # Imported here: the features service loads its models lazily, and this module must import
    # without them. The models run outside any transaction, batch by batch.
    from apps.screening.services.features import item_features_compute

    missing = rated_items_without_features(study=study)
    size = int(settings.SCREENING_BATCH_SIZE)
    for start in range(0, len(missing), size):
        item_features_compute(item_ids=missing[start : start + size])


def funnyscore_calibrate_request(*, study: Study) -> int:
    """Queue a calibration (features of rated items first, then the fit) after commit. Refused at
    once when the study has too few rated items for any fit. Returns how many items are rated."""
    rated = len(human_mean_funniness(study=study))
    if rated < calib.MIN_ITEMS_PER_SCOPE:
        raise DomainError(
            f"only {rated} items have human funniness ratings; a calibration needs at least "
            f"{calib.MIN_ITEMS_PER_SCOPE}",
            field="calibration",
        )
    study_id = study.pk
    transaction.on_commit(lambda: _enqueue_calibration(study_id))
    return rated


def _enqueue_calibration(study_id: int) -> None:
    from apps.screening.tasks.runs import funnyscore_calibrate_task

    try:
        funnyscore_calibrate_task.delay(study_id)
    except Exception:  # the broker is down; nothing was stored, the researcher may retry
        logger.warning("could not queue the calibration of study %s", study_id, exc_info=True)


def funnyscore_calibrate(
    *, study: Study, compute_missing: bool = True
) -> list[FunnyScoreCalibration]:
    """Fit FunnyScore for "all" and for every humor type and level with enough rated items, and
    store the fits as the study's current calibration (earlier ones are kept for the runs that
    used them). With `compute_missing`, rated items without features get them first."""
    if compute_missing:
        _rated_features_compute(study)
    with transaction.atomic():
        return _calibrate(study)


def _calibrate(study: Study) -> list[FunnyScoreCalibration]:
    rows = calibration_rows(study=study)
    fits = calib.fit_scopes(rows, seed=study.random_seed)
    if not any(f.scope == "all" for f in fits):
        usable = len(calib.usable_rows(rows))
        raise DomainError(
            f"only {usable} items have both computed features and human funniness ratings "
            f"({len(rows)} rated items have features, some of them missing); a calibration "
            f"needs at least {calib.MIN_ITEMS_PER_SCOPE}; collect more ratings",
            field="calibration",
        )
    stored = FunnyScoreCalibration.objects.bulk_create(
        FunnyScoreCalibration(
            study=study,
            scope=f.scope,
            a=f.fit.a,
            b=f.fit.b,
            c=f.fit.c,
            intercept=f.fit.intercept,
            is_default=False,
            n_items=f.fit.n,
            r2=f.fit.r2,
            cv_spearman=f.fit.cv_spearman,
            data_hash=f.data_hash,
        )
        for f in fits
    )
    # One calibration is the set of rows sharing one created_at: a later calibration replaces the
    # whole set, including scopes it no longer has enough items for.
    stamp = stored[0].created_at
    FunnyScoreCalibration.objects.filter(pk__in=[c.pk for c in stored]).update(created_at=stamp)
    for row in stored:
        row.created_at = stamp
    return stored
