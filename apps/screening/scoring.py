"""Scoring items at L1 with a stored calibration: the one place runs, tiers and the sieve audit
read an item's score from, whatever the calibration's kind.

Reads only (no writes). Scores are comparable within one calibration, not across kinds: a run
ranks the items of a model and level by one scorer (the study's "all" scope decides which).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from django.conf import settings
from numpy.typing import NDArray

from apps.screening import calibration as calib
from apps.screening import learned
from apps.screening.features.embedding import from_bytes
from apps.screening.models import FunnyScoreCalibration, ItemFeatures
from apps.screening.prior import PRIOR_PATH, Prior, packaged_prior
from apps.textmodels.registry import embedding_info

Kind = FunnyScoreCalibration.Kind


def prior_available() -> tuple[Prior | None, str]:
    """The shipped prior if it fits the configured embedding model, else None and why not."""
    configured_path = str(settings.L1_PRIOR_PATH).strip()
    if configured_path.lower() in ("off", "none"):
        return None, "the prior is turned off (L1_PRIOR_PATH=off)"
    prior = packaged_prior(configured_path or None)
    if prior is None:
        return None, (
            f"no prior file at {configured_path or PRIOR_PATH} "
            "(build it with manage.py build_l1_prior)"
        )
    configured = embedding_info()
    if configured.unavailable:
        return None, configured.unavailable
    if configured.short_name != prior.embedding_model:
        return None, (
            f"the prior was trained on {prior.embedding_model} embeddings, and the configured "
            f"embedding model is {configured.short_name}"
        )
    return prior, ""


@functools.cache
def _ridge(model_json: str) -> learned.RidgeModel:
    import json

    return learned.RidgeModel.from_json(json.loads(model_json))


def _ridge_of(calibration: FunnyScoreCalibration) -> learned.RidgeModel:
    import json

    return _ridge(json.dumps(calibration.model, sort_keys=True))


def embedding_of(features: ItemFeatures | None) -> NDArray[np.float64] | None:
    return None if features is None else from_bytes(features.embedding)


def context_embedding_of(features: ItemFeatures | None) -> NDArray[np.float64] | None:
    return None if features is None else from_bytes(features.context_embedding)


TEXT_BLOCK, CONTEXT_BLOCK = "text", "context"


def _block(vectors: Sequence[NDArray[np.float64] | None]) -> NDArray[np.float64] | None:
    width = next((len(v) for v in vectors if v is not None), 0)
    if not width:
        return None
    return np.vstack([v if v is not None else np.full(width, np.nan) for v in vectors])


def embedding_blocks(features: Sequence[ItemFeatures | None]) -> tuple[str, ...]:
    """The embedding blocks a learned L1 fitted on these items reads: the item text's, and the
    context's where any item has one."""
    has_context = any(f is not None and f.context_embedding for f in features)
    return (TEXT_BLOCK, CONTEXT_BLOCK) if has_context else (TEXT_BLOCK,)


def learned_columns(
    features: Sequence[ItemFeatures | None],
    names: Sequence[str],
    prior: Prior | None,
    blocks: Sequence[str] = (TEXT_BLOCK,),
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """The learned L1's unpenalised columns (`names`) and its embeddings: the `blocks` side by
    side (NaN where an item lacks one; None when no item has a text embedding)."""
    block = learned.feature_block(
        [None if f is None else f.surprise for f in features],
        [None if f is None else f.coherence for f in features],
        [None if f is None else f.valence_penalty for f in features],
    )
    text = _block([embedding_of(f) for f in features])
    parts = [text] if text is not None else []
    if text is not None and CONTEXT_BLOCK in blocks:
        context = _block([context_embedding_of(f) for f in features])
        parts.append(context if context is not None else np.full(text.shape, np.nan))
    embeddings = np.hstack(parts) if parts else None
    columns = [
        block[:, learned.FEATURE_COLUMNS.index(name)]
        for name in names
        if name in learned.FEATURE_COLUMNS
    ]
    if learned.PRIOR_COLUMN in names:
        prior_scores = np.full(len(features), np.nan)
        if prior is not None and text is not None:
            present = ~np.isnan(text).any(axis=1)
            if present.any():
                prior_scores[present] = prior.predict(text[present])
        columns.append(prior_scores)
    matrix = np.column_stack(columns) if columns else np.zeros((len(features), 0))
    return matrix, embeddings


def scores(
    features: Sequence[ItemFeatures | None], calibration: FunnyScoreCalibration
) -> list[float | None]:
    """Each item's L1 score under `calibration`, or None when it cannot be scored (no features;
    for the prior, no embedding; for the formula, every feature missing)."""
    if calibration.kind in (Kind.DEFAULTS, Kind.FEATURES):
        coefficients = calib.Coefficients(
            a=calibration.a, b=calibration.b, c=calibration.c, intercept=calibration.intercept
        )
        return [
            None
            if f is None
            else calib.funny_score(f.surprise, f.coherence, f.valence_penalty, coefficients)
            for f in features
        ]
    prior, _ = prior_available()
    if calibration.kind == Kind.PRIOR:
        out: list[float | None] = [None] * len(features)
        text = _block([embedding_of(f) for f in features])
        if prior is None or text is None:
            return out
        present = np.flatnonzero(~np.isnan(text).any(axis=1))
        for i, value in zip(present, prior.predict(text[present]), strict=True):
            out[int(i)] = float(value)
        return out
    model = _ridge_of(calibration)
    blocks = tuple((calibration.model or {}).get("blocks") or (TEXT_BLOCK,))
    columns, embeddings = learned_columns(features, model.columns, prior, blocks)
    predicted = model.predict(columns, embeddings)
    return [
        None if f is None else float(value) for f, value in zip(features, predicted, strict=True)
    ]


def scores_each(
    features: Sequence[ItemFeatures | None], used: Sequence[FunnyScoreCalibration]
) -> list[float | None]:
    """Each item's score under its own calibration (`used[i]` for `features[i]`), computed in
    one batch per calibration: a run or the tiers score thousands of items."""
    out: list[float | None] = [None] * len(features)
    groups: dict[int, list[int]] = {}
    for i, calibration in enumerate(used):
        groups.setdefault(id(calibration), []).append(i)
    for members in groups.values():
        values = scores([features[i] for i in members], used[members[0]])
        for i, value in zip(members, values, strict=True):
            out[i] = value
    return out
