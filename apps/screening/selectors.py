"""Reads for screening: what the humans said, to calibrate and to compare machines against, and
what the LLM judge said."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Avg, Count

from apps.judgments.models import ScoreAnswer
from apps.screening.models import JudgeComparison, JudgeVerdict
from apps.studies.models import Study


def human_mean_funniness(
    *, study: Study, question: str = "funniness"
) -> dict[int, tuple[float, int]]:
    """Item id -> (mean answer to `question`, number of answers), over collected and imported
    scorecards; attention checks left out."""
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
            "question": comparison.payload.get("question", "funniness"),
            "overall": comparison.payload.get("overall"),
            "by_humor_type": comparison.payload.get("by_humor_type", []),
        }
        for comparison in JudgeComparison.objects.filter(study=study).order_by("model_name")
    ]
