"""Reads for screening: what the humans said, to calibrate and to compare machines against; the
calibration that scores an item; the candidates a run screens and what it decided; what the LLM
judge said."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count, F, Max, Q, QuerySet

from apps.judgments.models import ScoreAnswer
from apps.screening import calibration as calib
from apps.screening.models import (
    FunnyScoreCalibration,
    ItemFeatures,
    JudgeComparison,
    JudgeVerdict,
    ScreeningOutcome,
    ScreeningRun,
    ScreeningTiers,
)
from apps.studies.models import Item, Study


def human_means(*, study: Study, question: str | None = None) -> dict[int, tuple[float, int]]:
    """Item id -> (mean answer to `question`, number of answers), over collected and imported
    scorecards; attention checks left out. Without `question`, the rubric's primary question
    (what screening, the judge comparison and the calibration predict)."""
    if question is None:
        question = study.rubric.primary_question
    rows = (
        ScoreAnswer.objects.filter(
            response__study=study,
            response__item__is_attention_check=False,
            question__name=question,
        )
        .values("response__item_id")
        .annotate(mean=Avg("value"), n=Count("pk"))
        .values_list("response__item_id", "mean", "n")
    )
    return {item_id: (float(mean), int(n)) for item_id, mean, n in rows}


@dataclass(frozen=True)
class ModelCounts:
    model_name: str
    counts: list[tuple[str, str, int]]  # (status, label, number)
    total: int


def judge_verdict_counts(*, study: Study) -> list[ModelCounts]:
    """Per judge model: how many verdicts of each status."""
    rows = (
        JudgeVerdict.objects.filter(item__study=study)
        .values_list("model_name", "status")
        .annotate(n=Count("pk"))
        .order_by("model_name", "status")
    )
    by_model: dict[str, dict[str, int]] = {}
    for model_name, status, n in rows:
        by_model.setdefault(model_name, {})[status] = n
    return [
        ModelCounts(
            model_name=model_name,
            counts=[(s.value, str(s.label), counts.get(s.value, 0)) for s in JudgeVerdict.Status],
            total=sum(counts.values()),
        )
        for model_name, counts in by_model.items()
    ]


def judge_failed_verdicts(*, study: Study, limit: int) -> tuple[list[JudgeVerdict], int]:
    """The first `limit` verdicts that are not scores, and how many there are in all."""
    failed = (
        JudgeVerdict.objects.filter(item__study=study)
        .exclude(status=JudgeVerdict.Status.OK)
        .select_related("item")
        .order_by("model_name", "item__external_id")
    )
    return list(failed[:limit]), failed.count()


def judge_comparisons(*, study: Study) -> list[dict[str, Any]]:
    """The stored judge-versus-humans comparisons, one per judge model."""
    return [
        {
            "model_name": comparison.model_name,
            "computed_at": comparison.computed_at,
            "seed": comparison.seed,
            "rounds": comparison.rounds,
            "question": comparison.payload.get("question", study.rubric.primary_question),
            "overall": comparison.payload.get("overall"),
            "by_humor_type": comparison.payload.get("by_humor_type", []),
        }
        for comparison in JudgeComparison.objects.filter(study=study).order_by("model_name")
    ]


def calibration_rows(*, study: Study) -> list[calib.CalibrationRow]:
    """Items of the study with stored features and at least one human answer to the primary
    question.

    Every rated item counts once with its plain mean (no weighting by the number of ratings): the
    screen ranks items, and a weighted fit would mostly follow the few most-rated items."""
    means = human_means(study=study)
    features = ItemFeatures.objects.filter(
        item__study=study, item_id__in=list(means)
    ).select_related("item")
    rows = [
        calib.CalibrationRow(
            key=f.item_id,
            surprise=f.surprise,
            coherence=f.coherence,
            penalty=f.valence_penalty,
            human_mean=means[f.item_id][0],
            humor_type=f.item.humor_type,
            level=f.item.level,
        )
        for f in features
    ]
    return sorted(rows, key=lambda row: row.key)


def rated_items_without_features(*, study: Study) -> list[int]:
    """Rated items whose features were never computed (screening computes them for candidates
    only, and items imported straight into the study are never screened), or were computed
    before items had embeddings."""
    rated = list(human_means(study=study))
    complete = set(
        ItemFeatures.objects.filter(item__study=study)
        .exclude(embedding__isnull=True, embedding_missing="")
        .values_list("item_id", flat=True)
    )
    return sorted(pk for pk in rated if pk not in complete)


def calibration_default_stored(
    *, study: Study, features: Sequence[ItemFeatures | None] | None = None
) -> FunnyScoreCalibration:
    """The default scorer as a stored row (so an outcome can name what scored it): the study's
    row of it if it has one, else the unsaved default, for the caller to save."""
    default = calibration_default(study=study, features=features)
    stored = (
        FunnyScoreCalibration.objects.filter(
            study=study,
            is_default=True,
            kind=default.kind,
            a=default.a,
            b=default.b,
            c=default.c,
            intercept=default.intercept,
        )
        .order_by("-created_at")
        .first()
    )
    if stored is not None and stored.model == default.model:
        return stored
    return default


def calibration_default(
    *, study: Study, features: Sequence[ItemFeatures | None] | None = None
) -> FunnyScoreCalibration:
    """The default scorer (unsaved), used wherever no fit is applied: the shipped prior where it
    fits the configured embedding model, else the documented FunnyScore coefficients. Given the
    features of the items to score, the prior is the default only if at least one of them has
    an embedding (none has one when the encoder covers none of their languages, or features
    were computed without it): the prior cannot score them, and the formula can."""
    from apps.screening.scoring import prior_available

    prior, _ = prior_available()
    readable = features is None or any(f is not None and f.embedding for f in features)
    if prior is not None and readable:
        return FunnyScoreCalibration(
            study=study,
            scope="all",
            kind=FunnyScoreCalibration.Kind.PRIOR,
            model={"prior": prior.version},
            a=0.0,
            b=0.0,
            c=0.0,
            intercept=0.0,
            is_default=True,
        )
    defaults = calib.DEFAULT_COEFFICIENTS
    return FunnyScoreCalibration(
        study=study,
        scope="all",
        kind=FunnyScoreCalibration.Kind.DEFAULTS,
        a=defaults.a,
        b=defaults.b,
        c=defaults.c,
        intercept=defaults.intercept,
        is_default=True,
    )


def calibrations_current(*, study: Study) -> list[FunnyScoreCalibration]:
    """The study's latest fitted calibration set ("all" first, then by scope), applied or not;
    empty before any fit. (The stored rows of the defaults, which runs reference, are not a set.)"""
    fitted = FunnyScoreCalibration.objects.filter(study=study, is_default=False)
    latest = fitted.aggregate(at=Max("created_at"))
    if latest["at"] is None:
        return []
    rows = list(fitted.filter(created_at=latest["at"]))
    return sorted(
        rows,
        key=lambda row: (
            row.scope != "all",
            row.scope,
            row.kind != FunnyScoreCalibration.Kind.FEATURES,
        ),
    )


def calibrations_applied(*, study: Study) -> list[FunnyScoreCalibration]:
    """The fits of the current calibration that score items (applicable ones, or all of them
    when the researcher chose so); empty when the documented defaults score everything."""
    return [row for row in calibrations_current(study=study) if row.applied]


def calibration_for_item(
    *, item: Item, calibrations: Sequence[FunnyScoreCalibration], default: FunnyScoreCalibration
) -> FunnyScoreCalibration:
    """The most specific calibration for the item: its humor type's, else its level's, else
    "all", else `default`. A humor type comes first: it changes what makes a joke work (a pun
    lives on surprise, an observation on coherence) more than the item's format does."""
    by_scope = {row.scope: row for row in calibrations}
    for scope in (f"humor_type:{item.humor_type}", f"level:{item.level}", "all"):
        if scope in by_scope:
            return by_scope[scope]
    return default


def coefficients_of(row: FunnyScoreCalibration) -> calib.Coefficients:
    return calib.Coefficients(a=row.a, b=row.b, c=row.c, intercept=row.intercept)


def screening_pool(*, study: Study) -> QuerySet[Item]:
    """What a screening run screens: candidates, and candidates held by the offense filter, in
    a deterministic order."""
    return (
        Item.objects.filter(study=study)
        .filter(
            Q(stage=Item.Stage.CANDIDATE)
            | Q(stage=Item.Stage.HELD, held_from_stage=Item.Stage.CANDIDATE)
        )
        .order_by("external_id")
    )


def features_of(*, item: Item) -> ItemFeatures | None:
    try:
        return item.features
    except ItemFeatures.DoesNotExist:
        return None


@dataclass(frozen=True)
class CandidateRow:
    item: Item
    features: ItemFeatures | None
    outcome: ScreeningOutcome | None


@dataclass(frozen=True)
class ScreeningOverview:
    run: ScreeningRun | None
    rows: list[CandidateRow]
    pending: int
    calibrations: list[FunnyScoreCalibration]
    # Whether a fit exists, whether all of it scores, and whether the defaults score anything.
    has_fit: bool = False
    fit_applied: bool = False
    defaults_score: bool = True
    learned_applied: bool = False


def screening_tiers_of(*, study: Study) -> ScreeningTiers | None:
    return ScreeningTiers.objects.filter(study=study).first()


def sieve_audit_of(*, study: Study) -> dict[str, Any] | None:
    """The stored sieve audit (`learned.sieve_audit`, computed with the tiers), or None."""
    tiers = screening_tiers_of(study=study)
    if tiers is None:
        return None
    audit = tiers.payload.get("audit")
    return audit if isinstance(audit, dict) else None


def screening_run_latest(*, study: Study) -> ScreeningRun | None:
    return (
        ScreeningRun.objects.filter(study=study)
        .select_related("created_by", "study")
        .order_by("-created_at", "-pk")
        .first()
    )


def screening_overview(*, study: Study) -> ScreeningOverview:
    """The latest run with its outcomes, the candidates still waiting for a run, and the current
    calibration (the unsaved defaults before any). A fixed number of queries whatever the size."""
    run = screening_run_latest(study=study)
    rows: list[CandidateRow] = []
    waiting_items = screening_pool(study=study).select_related("features")
    if run is not None:
        waiting_items = waiting_items.exclude(screening_outcomes__run=run)
        outcomes = (
            ScreeningOutcome.objects.filter(run=run)
            .select_related("item__features", "calibration")
            .order_by("item__source", F("rank").asc(nulls_last=True), "item__external_id")
        )
        for outcome in outcomes:
            rows.append(CandidateRow(outcome.item, features_of(item=outcome.item), outcome))
    waiting = [CandidateRow(item, features_of(item=item), None) for item in waiting_items]
    waiting.sort(key=lambda row: (row.item.source, row.item.external_id))
    current = calibrations_current(study=study)
    return ScreeningOverview(
        run=run,
        rows=waiting + rows,
        pending=len(waiting),
        calibrations=current,
        has_fit=bool(current),
        fit_applied=bool(current) and all(row.applied for row in current),
        defaults_score=not any(row.applied and row.scope == "all" for row in current),
        learned_applied=any(
            row.applied and row.kind == FunnyScoreCalibration.Kind.LEARNED for row in current
        ),
    )
