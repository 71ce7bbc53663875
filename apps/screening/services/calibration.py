"""Calibrating FunnyScore against the human ratings a study already holds.

The fit is pure (`apps.screening.calibration`); this module computes the features it needs and
stores the result. Its rows, and which stored calibration scores an item, are read in
`apps.screening.selectors`. Its one random step, the order of the cross-validation folds, uses
the study's `random_seed`, so refitting the data a stored hash names gives the same numbers.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.utils import timezone

from apps.core.errors import DomainError
from apps.screening import calibration as calib
from apps.screening.models import FunnyScoreCalibration
from apps.screening.selectors import (
    calibration_rows,
    calibrations_current,
    human_mean_funniness,
    rated_items_without_features,
)
from apps.screening.services.tiers import screening_tiers_compute
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
    if rated < calib.MIN_ITEMS_TO_FIT:
        raise DomainError(
            f"only {rated} items have human funniness ratings; a calibration needs at least "
            f"{calib.MIN_ITEMS_TO_FIT} (and {calib.MIN_ITEMS_PER_SCOPE} to replace the defaults)",
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
            f"needs at least {calib.MIN_ITEMS_TO_FIT}; collect more ratings",
            field="calibration",
        )
    stored = FunnyScoreCalibration.objects.bulk_create(_row(study, f) for f in fits)
    # One calibration is the set of rows sharing one created_at: a later calibration replaces the
    # whole set, including scopes it no longer has enough items for.
    stamp = stored[0].created_at
    FunnyScoreCalibration.objects.filter(pk__in=[c.pk for c in stored]).update(created_at=stamp)
    for row in stored:
        row.created_at = stamp
    screening_tiers_compute(study=study)
    return stored


def _row(study: Study, scope_fit: calib.ScopeFit) -> FunnyScoreCalibration:
    fit = scope_fit.fit
    judged = calib.verdict(fit)
    low, high = fit.cv_spearman_ci if fit.cv_spearman_ci is not None else (None, None)
    return FunnyScoreCalibration(
        study=study,
        scope=scope_fit.scope,
        a=fit.a,
        b=fit.b,
        c=fit.c,
        intercept=fit.intercept,
        is_default=False,
        n_items=fit.n,
        r2=fit.r2,
        cv_spearman=fit.cv_spearman,
        cv_spearman_low=low,
        cv_spearman_high=high,
        intervals={name: list(bounds) for name, bounds in fit.intervals.items()},
        applicable=judged.applicable,
        not_applicable_reason="; ".join(judged.reasons)[:500],
        # Only a fit that meets the rules replaces the defaults on its own.
        applied=judged.applicable,
        data_hash=scope_fit.data_hash,
    )


@transaction.atomic
def funnyscore_calibration_choose(
    *, study: Study, user: AbstractBaseUser | AnonymousUser | None, apply: bool
) -> list[FunnyScoreCalibration]:
    """The researcher's explicit choice for the current calibration: apply every fit of it
    (also those that do not meet the rules), or score with the documented defaults. Refused when
    the study has no calibration yet. Who chose and when is kept on each row."""
    current = calibrations_current(study=study)
    if not current:
        raise DomainError("the study has no calibration yet; calibrate first", field="calibration")
    who = user if isinstance(user, User) else None
    FunnyScoreCalibration.objects.filter(pk__in=[row.pk for row in current]).update(
        applied=apply, applied_by=who, applied_at=timezone.now()
    )
    return calibrations_current(study=study)
