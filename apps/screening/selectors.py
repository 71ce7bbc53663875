"""Reads for screening: what the humans said, to calibrate and to compare machines against."""

from __future__ import annotations

from django.db.models import Avg, Count

from apps.judgments.models import ScoreAnswer
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
