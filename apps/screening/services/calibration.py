"""Calibrating FunnyScore against the human ratings a study already holds.

The fit is pure (`apps.screening.calibration`); this module computes the features it needs and
stores the result. Its rows, and which stored calibration scores an item, are read in
`apps.screening.selectors`. Its one random step, the order of the cross-validation folds, uses
the study's `random_seed`, so refitting the data a stored hash names gives the same numbers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.utils import timezone
from numpy.typing import NDArray

from apps.core.errors import DomainError
from apps.core.sentences import Sentence, joined
from apps.screening import calibration as calib
from apps.screening import learned, scoring
from apps.screening.models import FunnyScoreCalibration, ItemFeatures
from apps.screening.scoring import prior_available
from apps.screening.selectors import (
    calibration_default,
    calibration_rows,
    calibrations_current,
    human_means,
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
    rated = len(human_means(study=study))
    if rated < calib.MIN_ITEMS_TO_FIT:
        raise DomainError(
            f"only {rated} items have human ratings of {study.rubric.primary_question or 'a scale question'}; "
            f"a calibration needs at least "
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
    seed = study.random_seed
    fits = calib.fit_scopes(rows, seed=seed)
    if not any(f.scope == "all" for f in fits):
        usable = len(calib.usable_rows(rows))
        raise DomainError(
            f"only {usable} items have both computed features and human ratings of "
            f"{study.rubric.primary_question} "
            f"({len(rows)} rated items have features, some of them missing); a calibration "
            f"needs at least {calib.MIN_ITEMS_TO_FIT}; collect more ratings",
            field="calibration",
        )
    stored_features = {
        f.item_id: f for f in ItemFeatures.objects.filter(item_id__in=[row.key for row in rows])
    }
    default = calibration_default(study=study, features=list(stored_features.values()))
    learned_row = _learned_row(study, rows, stored_features, default)
    # The human means the fits used, by item: each scope's rows are a subset of them.
    human = {row.key: row.human_mean for row in rows}
    feature_rows = [_row(study, f, stored_features, default, human) for f in fits]
    if learned_row is not None and learned_row.applied:
        # One scorer ranks a study's items: the learned fit replaces every FunnyScore fit.
        for row in feature_rows:
            row.applied = False
    # "all" of the formula first, then the learned fit, then the formula's other scopes, as
    # `calibrations_current` lists them.
    stored = FunnyScoreCalibration.objects.bulk_create(
        feature_rows[:1] + ([learned_row] if learned_row is not None else []) + feature_rows[1:]
    )
    # One calibration is the set of rows sharing one created_at: a later calibration replaces the
    # whole set, including scopes it no longer has enough items for.
    stamp = stored[0].created_at
    FunnyScoreCalibration.objects.filter(pk__in=[c.pk for c in stored]).update(created_at=stamp)
    for row in stored:
        row.created_at = stamp
    screening_tiers_compute(study=study)
    return stored


def _validation_json(check: learned.Validation, keys: Sequence[int]) -> dict[str, object]:
    payload = check.to_json()
    payload["held_out"] = {str(key): value for key, value in zip(keys, check.held_out, strict=True)}
    return payload


def _learned_row(
    study: Study,
    rows: Sequence[calib.CalibrationRow],
    stored: dict[int, ItemFeatures],
    default: FunnyScoreCalibration,
) -> FunnyScoreCalibration | None:
    """The learned L1 fitted on every rated item with features, validated against the default
    scorer on the same items; None with fewer items than cross-validation needs."""
    if len(rows) < 2 * learned.DEFAULT_FOLDS:
        return None
    keys = [row.key for row in rows]
    features = [stored.get(key) for key in keys]
    prior, _ = prior_available()
    names = learned.FEATURE_COLUMNS + ((learned.PRIOR_COLUMN,) if prior is not None else ())
    blocks = scoring.embedding_blocks(features)
    columns, embeddings = scoring.learned_columns(features, names, prior, blocks)
    human = np.array([row.human_mean for row in rows], dtype=np.float64)
    current = _current_scores(features, default)
    check = learned.validate(
        learned.ridge_fitter(columns, embeddings, human, names=names),
        human,
        seed=study.random_seed,
        current=current,
        rounds=int(settings.BOOTSTRAP_ROUNDS),
    )
    model = learned.fit_ridge(columns, embeddings, human, names=names)
    reasons = _reasons(len(rows), check)
    english, sentences = joined(reasons)
    return FunnyScoreCalibration(
        study=study,
        scope="all",
        kind=FunnyScoreCalibration.Kind.LEARNED,
        model={
            **model.to_json(),
            "prior": prior.version if prior is not None else "",
            "blocks": list(blocks),
        },
        validation=_validation_json(check, keys),
        a=0.0,
        b=0.0,
        c=0.0,
        intercept=model.intercept,
        is_default=False,
        n_items=len(rows),
        cv_spearman=check.rho.value,
        cv_spearman_low=check.rho.ci_low,
        cv_spearman_high=check.rho.ci_high,
        applicable=not reasons,
        not_applicable_reason=english[:500],
        not_applicable_message=sentences,
        applied=not reasons,
        data_hash=calib.data_hash(rows),
    )


def _current_scores(
    features: Sequence[ItemFeatures | None], default: FunnyScoreCalibration
) -> NDArray[np.float64] | None:
    """The default scorer's scores of these items (NaN where it has none: such items count at the
    middle), or None when it scores none of them."""
    values = scoring.scores(features, default)
    if all(v is None for v in values):
        return None
    known = [v for v in values if v is not None]
    middle = float(np.median(known))
    return np.array([middle if v is None else v for v in values], dtype=np.float64)


def _reasons(n: int, check: learned.Validation) -> list[Sentence]:
    reasons = []
    if n < calib.MIN_ITEMS_PER_SCOPE:
        reasons.append(calib.too_few_items(n, calib.MIN_ITEMS_PER_SCOPE))
    return reasons + list(check.reasons)


def _row(
    study: Study,
    scope_fit: calib.ScopeFit,
    stored: dict[int, ItemFeatures],
    default: FunnyScoreCalibration,
    means: dict[int, float],
) -> FunnyScoreCalibration:
    fit = scope_fit.fit
    by_key = {key: stored.get(key) for key in scope_fit.keys}
    features = [by_key[key] for key in scope_fit.keys]
    matrix = np.array(
        [
            [
                np.nan if f is None or f.surprise is None else f.surprise,
                np.nan if f is None or f.coherence is None else f.coherence,
                np.nan if f is None or f.valence_penalty is None else f.valence_penalty,
            ]
            for f in features
        ],
        dtype=np.float64,
    ).reshape(-1, 3)
    human = np.array([means[key] for key in scope_fit.keys], dtype=np.float64)
    check = learned.validate(
        calib.ols_fitter(matrix, human),
        human,
        seed=study.random_seed,
        current=_current_scores(features, default),
        rounds=int(settings.BOOTSTRAP_ROUNDS),
    )
    reasons = _reasons(fit.n, check)
    english, sentences = joined(reasons)
    return FunnyScoreCalibration(
        study=study,
        scope=scope_fit.scope,
        kind=FunnyScoreCalibration.Kind.FEATURES,
        validation=_validation_json(check, scope_fit.keys),
        a=fit.a,
        b=fit.b,
        c=fit.c,
        intercept=fit.intercept,
        is_default=False,
        n_items=fit.n,
        r2=fit.r2,
        cv_spearman=check.rho.value,
        cv_spearman_low=check.rho.ci_low,
        cv_spearman_high=check.rho.ci_high,
        intervals={name: list(bounds) for name, bounds in fit.intervals.items()},
        applicable=not reasons,
        not_applicable_reason=english[:500],
        not_applicable_message=sentences,
        # Only a fit that meets the rules replaces the default scorer on its own.
        applied=not reasons,
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
    # One scorer at a time: applying takes the learned fit where there is one, else the
    # FunnyScore fits of every scope.
    has_learned = any(row.kind == FunnyScoreCalibration.Kind.LEARNED for row in current)
    chosen = [
        row.pk
        for row in current
        if not has_learned or row.kind == FunnyScoreCalibration.Kind.LEARNED
    ]
    now = timezone.now()
    FunnyScoreCalibration.objects.filter(pk__in=[row.pk for row in current]).update(
        applied=False, applied_by=who, applied_at=now
    )
    if apply:
        FunnyScoreCalibration.objects.filter(pk__in=chosen).update(applied=True)
    return calibrations_current(study=study)
