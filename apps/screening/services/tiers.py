"""L1 / L2 / L3 against the humans for a humor study: agreement and cost per item.

The same table as the content evaluation's tiers (`apps.content.tiers`, whose pure functions
compute it), on the humor rubric's funniness:

* L1: each rated item's L1 score under the scorer in place (the applied fit of its scope, else
  the default scorer); for a fitted scorer, its cross-validated prediction, never the in-sample
  one; cost from the features' compute time
  (`ItemFeatures.compute_seconds`, each item's share of its batch);
* L2: the LLM judge's funniness (the judge model with the most scored verdicts); cost from the
  sum of its latencies, one request at a time;
* L3: the human raters, as the ceiling: split-half reliability of the scorecards' funniness;
  cost from the scorecards' active seconds, in human minutes.

Agreement is Spearman's rho with the human mean funniness per item, with a percentile bootstrap
interval over items (estimand: the rank correlation for items like these). Stored per study
(`ScreeningTiers`) and read by the LLM judge page; recomputed after judge batches, screening runs
and calibrations.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from apps.content import tiers
from apps.judgments.models import ScoreAnswer
from apps.screening import learned, scoring
from apps.screening.models import ItemFeatures, JudgeVerdict, ScreeningTiers
from apps.screening.selectors import (
    calibration_default,
    calibration_for_item,
    calibrations_applied,
    human_means,
)
from apps.studies.models import Rubric, Study
from apps.studies.selectors import study_primary_name


def screening_tiers_compute(*, study: Study, rounds: int | None = None) -> ScreeningTiers | None:
    """Compute and store the study's tiers table on the rubric's primary question; None
    (nothing stored) for a study that is not a humor study or whose rubric has no scale
    question (content studies have their own tiers)."""
    question = study_primary_name(study=study)
    if not question or study.rubric.kind != Rubric.Kind.HUMOR:
        return None
    human = human_means(study=study, question=question)
    rounds = int(rounds or settings.BOOTSTRAP_ROUNDS)
    seed = study.random_seed
    ids = sorted(human)
    human_values = [human[pk][0] for pk in ids]

    current = calibrations_applied(study=study)
    features = {
        f.item_id: f for f in ItemFeatures.objects.filter(item_id__in=ids).select_related("item")
    }
    default = next(
        (c for c in current if c.scope == "all"),
        calibration_default(study=study, features=list(features.values())),
    )
    rated = [features.get(pk) for pk in ids]
    used_all = [
        calibration_for_item(item=f.item, calibrations=current, default=default)
        if f is not None
        else default
        for f in rated
    ]
    automatic = scoring.scores_each(rated, used_all)
    # A fitted scorer has seen these items: the audit reads its held-out prediction.
    audited: list[float | None] = []
    for pk, f, used, value in zip(ids, rated, used_all, automatic, strict=True):
        held_out = (used.validation or {}).get("held_out") or {}
        audited.append(
            None if f is None else value if used.is_default else held_out.get(str(pk), value)
        )
    timed = [f.compute_seconds for f in features.values() if f.compute_seconds is not None]

    verdicts = list(
        JudgeVerdict.objects.filter(item__study=study, status=JudgeVerdict.Status.OK).values_list(
            "item_id", "model_name", "scores", "latency_ms"
        )
    )
    per_model = Counter(model for _, model, scores, _ in verdicts if question in scores)
    judge_model = per_model.most_common(1)[0][0] if per_model else None
    judge_scores: dict[int, float] = {}
    latency = 0.0
    for item_id, model, scores, latency_ms in verdicts:
        if model != judge_model or not isinstance(scores.get(question), int | float):
            continue
        judge_scores[item_id] = float(scores[question])
        latency += float(latency_ms or 0.0) / 1000.0

    answers = list(
        ScoreAnswer.objects.filter(
            response__study=study,
            response__item__is_attention_check=False,
            question__name=question,
        ).values_list("response__item_id", "response__rater_id", "value")
    )
    active = (
        ScoreAnswer.objects.filter(
            response__study=study, question__name=question, response__active_seconds__isnull=False
        ).aggregate(total=Sum("response__active_seconds"))["total"]
        or 0.0
    )
    rows = tiers.evaluate_tiers(
        human=human_values,
        # Held-out for a fitted scorer, as in the audit: its agreement with the items it was
        # fitted on would flatter it.
        automatic=audited,
        automatic_seconds=float(sum(timed)) if timed else None,
        automatic_items=len(timed),
        judge=[judge_scores.get(pk) for pk in ids] if judge_model else None,
        judge_model=judge_model,
        judge_latency_seconds=latency if judge_scores else None,
        judge_items=len(judge_scores),
        scorecard_item=[a[0] for a in answers],
        scorecard_rater=[a[1] for a in answers],
        scorecard_value=[float(a[2]) for a in answers],
        active_seconds=float(active),
        seed=seed,
        rounds=rounds,
    )
    rows[0]["label"] = f"L1 ({default.kind})"
    keep = [i for i, value in enumerate(audited) if value is not None]
    audit = learned.sieve_audit(
        np.array([audited[i] for i in keep], dtype=np.float64),
        np.array([human_values[i] for i in keep], dtype=np.float64),
        seed=seed,
        rounds=rounds,
    )
    audit["scorer_kind"] = default.kind
    stored, _ = ScreeningTiers.objects.update_or_create(
        study=study,
        defaults={
            "payload": {
                "question": question,
                "tiers": rows,
                "rated_items": len(ids),
                "audit": audit,
            },
            "seed": seed,
            "rounds": rounds,
            "computed_at": timezone.now(),
        },
    )
    return stored
