"""The model comparison page: which model is funnier, by how much, how sure.

Reads the stored `models` section (apps/analysis/stats/model_comparison.py): per source, the
mean of every question with items and raters random, the fixed-items and leniency-adjusted
means beside it, the model-level Bradley-Terry strength, the judged-human rate, both offense
readings and the simultaneous rank range; then every pairwise difference with Holm-adjusted
p-values. One view at a time: overall, or one level, humor type or language (`?view_of=`).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from apps.analysis.labels import group_label, rank_basis_label
from apps.dashboard.results.common import (
    Payload,
    Questions,
    Table,
    download_url,
    group_order,
    items_view,
    load_questions,
)
from apps.findings.answer import Answer, study_answer
from apps.findings.document import items_left_out
from apps.reports.tables import models_table
from apps.studies.models import Question, Study

DIMENSIONS = ("by_level", "by_humor_type", "by_language")


def _dimension_label(dimension: str, *, humor: bool) -> str:
    return {
        "by_level": _("Level"),
        "by_humor_type": _("Humor type") if humor else _("Type"),
        "by_language": _("Language"),
    }[dimension]


def view_choices(models: Payload, *, humor: bool = True) -> list[tuple[str, str]]:
    """The views of the page, each named in the reader's language: levels, humor types and item
    languages by their labels (a code nobody has named is shown as it is)."""
    choices = [("overall", _("All items"))]
    for dimension in DIMENSIONS:
        for name in sorted((models.get(dimension) or {}).keys()):
            label = group_label(name, dimension.removeprefix("by_"), humor=humor)
            choices.append(
                (f"{dimension}:{name}", f"{_dimension_label(dimension, humor=humor)}: {label}")
            )
    return choices


def chosen_view(models: Payload, key: str | None) -> tuple[str, Payload]:
    if key and ":" in key:
        dimension, name = key.split(":", 1)
        view = (models.get(dimension) or {}).get(name)
        if dimension in DIMENSIONS and view:
            return key, view
    return "overall", models


def source_rows(view: Payload, questions: Questions) -> list[dict[str, Any]]:
    by_model = view.get("by_model") or {}
    rows = []
    for name in group_order(by_model.keys(), "source"):
        entry = by_model[name]
        offense = entry.get("offense") or {}
        rows.append(
            {
                "name": name,
                "n_items": entry.get("n_items"),
                "n_raters": entry.get("n_raters"),
                "questions": [
                    {
                        "name": q,
                        "random": (entry.get("questions") or {}).get(q),
                        "fixed": (entry.get("fixed_items") or {}).get(q),
                        "adjusted": (entry.get("adjusted") or {}).get(q),
                    }
                    for q in questions.scale
                ],
                "bt": entry.get("bt"),
                "judged_human": entry.get("judged_human"),
                "offense_any": offense.get("any_rater"),
                "offense_share": offense.get("share_of_raters"),
                "rank": entry.get("rank"),
            }
        )
    return rows


def primary_scale(study: Study, question: str | None) -> tuple[float, float] | None:
    """The primary question's scale ends, for "on the 1–7 scale"."""
    bounds = (
        Question.objects.filter(rubric_id=study.rubric_id, name=question)
        .values_list("min_value", "max_value")
        .first()
    )
    return (float(bounds[0]), float(bounds[1])) if bounds else None


def answer_for(
    study: Study,
    payload: Payload,
    view: Payload,
    *,
    view_label: str,
    items: str,
    questions: Questions,
) -> Answer | None:
    """The study's answer for the shown view, from the same stored section as the tables."""
    named = study.rubric.primary_question
    primary = named if named in questions.scale else None
    return study_answer(
        view,
        question=primary,
        scale=primary_scale(study, primary),
        humor=study.rubric.kind == "humor",
        view_label=view_label,
        warnings=payload.get("warnings") or [],
        not_evidence=items_left_out(payload),
        evidence_only=items == "evidence",
        exclusions=len((payload.get("exclusions") or {}).get("entries") or []),
    )


def models_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    models = payload.get("models") or {}
    questions = load_questions(study, payload)
    key, view = chosen_view(models, request.GET.get("view_of"))
    choices = view_choices(models, humor=study.rubric.kind == "humor")
    differences = [
        row
        for row in view.get("differences") or []
        if row.get("question") in (*questions.scale, "bt", "judged_human")
    ]
    return {
        "models": models,
        "questions": questions,
        "view_key": key,
        "view_choices": choices,
        "answer": answer_for(
            study,
            payload,
            view,
            view_label=_("the whole study") if key == "overall" else dict(choices).get(key, key),
            items=items_view(request, study),
            questions=questions,
        ),
        "rows": source_rows(view, questions),
        "differences": differences,
        "rank_basis": rank_basis_label(view.get("rank_basis")),
        "download": download_url(request, study, "models"),
    }


def models_csv(payload: Payload, questions: Questions) -> Table:
    """Every view's sources and differences, one row each (the page shows one view): the
    export's `models` table."""
    table = models_table(dict(payload), questions.all)
    return table.columns, table.rows
