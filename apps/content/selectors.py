"""Reads for the content evaluation: the human scorecards, the L1 metrics, the judge's verdicts,
the stored weights and evaluation. Exclusions (apps.exclusions) are honoured: excluded items,
raters and scorecards are left out, as in every other analysis."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from apps.content.models import ContentEvaluation, ContentMetrics, ContentWeights
from apps.content.weights import DIMENSIONS
from apps.exclusions.selectors import ExclusionSet, exclusion_set_for_study
from apps.judgments.models import ScoreAnswer, ScoreResponse
from apps.screening.models import JudgeVerdict
from apps.studies.models import Item, Question, Study


@dataclass(frozen=True)
class ContentItem:
    pk: int
    external_id: str
    content_type: str


@dataclass(frozen=True)
class Scorecard:
    pk: int
    item_id: int
    rater_id: int
    active_seconds: float | None
    answers: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Scale:
    min_value: int
    max_value: int


@dataclass(frozen=True)
class JudgeRun:
    model_name: str
    # Items the judge scored on all three dimensions: {item pk: {dimension: score}}.
    scores: dict[int, dict[str, float]]
    # Sum of the latencies of every verdict of this model, failed ones included (they cost
    # time too), and how many verdicts that covers.
    latency_seconds: float | None
    verdicts: int


def content_rubric_scales(*, study: Study) -> dict[str, Scale]:
    """The scales of the rubric's questions by name (the three dimensions, and any other)."""
    return {
        name: Scale(lo, hi)
        for name, lo, hi in Question.objects.filter(rubric_id=study.rubric_id).values_list(
            "name", "min_value", "max_value"
        )
    }


def study_is_content(*, study: Study) -> bool:
    """Whether the study's rubric asks fluency, informativeness and originality."""
    return set(DIMENSIONS) <= set(content_rubric_scales(study=study))


def content_exclusions(*, study: Study) -> ExclusionSet:
    return exclusion_set_for_study(study=study)


def content_items_list(*, study: Study, exclusions: ExclusionSet) -> list[ContentItem]:
    """The study's articles in primary-key order; attention checks are not articles."""
    return [
        ContentItem(pk=pk, external_id=external_id, content_type=content_type)
        for pk, external_id, content_type in Item.objects.filter(
            study=study, is_attention_check=False
        )
        .exclude(pk__in=exclusions.items)
        .order_by("pk")
        .values_list("pk", "external_id", "content_type")
    ]


def content_scorecards_list(*, study: Study, exclusions: ExclusionSet) -> list[Scorecard]:
    """Human scorecards with their answers to the three dimensions (other answers dropped)."""
    responses = (
        ScoreResponse.objects.filter(study=study, item__is_attention_check=False)
        .exclude(item_id__in=exclusions.items)
        .exclude(rater_id__in=exclusions.raters)
        .exclude(pk__in=exclusions.scorecards)
        .order_by("pk")
        .values_list("pk", "item_id", "rater_id", "active_seconds")
    )
    answers: dict[int, dict[str, float]] = defaultdict(dict)
    for response_id, name, value in (
        ScoreAnswer.objects.filter(response__study=study, question__name__in=DIMENSIONS)
        .order_by("response_id")
        .values_list("response_id", "question__name", "value")
    ):
        answers[response_id][name] = value
    return [
        Scorecard(
            pk=pk,
            item_id=item_id,
            rater_id=rater_id,
            active_seconds=active,
            answers=answers.get(pk, {}),
        )
        for pk, item_id, rater_id, active in responses
    ]


def content_metrics_map(*, study: Study) -> dict[int, dict[str, float]]:
    """Stored L1 metric values by item pk."""
    return {
        item_id: {str(k): float(v) for k, v in values.items() if v is not None}
        for item_id, values in ContentMetrics.objects.filter(item__study=study).values_list(
            "item_id", "values"
        )
    }


def content_items_without_metrics(*, study: Study) -> list[int]:
    return list(
        Item.objects.filter(study=study, is_attention_check=False, content_metrics__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def content_judge_runs(*, study: Study, item_ids: set[int]) -> list[JudgeRun]:
    """Each judge model's verdicts on the given items, most usable scores first."""
    by_model: dict[str, dict[int, dict[str, float]]] = defaultdict(dict)
    latency: dict[str, float] = defaultdict(float)
    timed: dict[str, int] = defaultdict(int)
    verdicts = JudgeVerdict.objects.filter(item__study=study, item_id__in=item_ids).values_list(
        "model_name", "item_id", "status", "scores", "latency_ms"
    )
    for model_name, item_id, status, scores, latency_ms in verdicts:
        if latency_ms is not None:
            latency[model_name] += float(latency_ms) / 1000.0
            timed[model_name] += 1
        if status != JudgeVerdict.Status.OK or not isinstance(scores, dict):
            continue
        picked = _numbers(scores)
        if picked is not None:
            by_model[model_name][item_id] = picked
        else:
            by_model.setdefault(model_name, {})
    runs = [
        JudgeRun(
            model_name=model_name,
            scores=scores,
            latency_seconds=latency[model_name] if timed[model_name] else None,
            verdicts=timed[model_name],
        )
        for model_name, scores in by_model.items()
    ]
    return sorted(runs, key=lambda run: (-len(run.scores), run.model_name))


def _numbers(scores: dict[str, Any]) -> dict[str, float] | None:
    out = {}
    for name in DIMENSIONS:
        value = scores.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        out[name] = float(value)
    return out


def content_evaluation_get(*, study: Study) -> ContentEvaluation | None:
    return ContentEvaluation.objects.filter(study=study).first()


def content_weights_current(*, study: Study) -> dict[str, ContentWeights]:
    """The latest stored weights of each content type."""
    current: dict[str, ContentWeights] = {}
    for row in ContentWeights.objects.filter(study=study).order_by(
        "content_type", "-created_at", "-pk"
    ):
        current.setdefault(row.content_type, row)
    return current
