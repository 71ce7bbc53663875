"""Reads for exports: a study's jobs, and its raw judgments as one tidy stream of rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from apps.core.errors import NotFound
from apps.exclusions.selectors import ExclusionReasons, exclusion_reasons
from apps.judgments.importing import NOT_UNDERSTOOD
from apps.judgments.models import NotUnderstood, PairJudgment, ScoreAnswer, TuringJudgment
from apps.reports.models import ExportJob
from apps.studies import scales
from apps.studies.models import Study

# One row per answer: a scorecard gives one row per question answered, a pair judgment one row,
# a Turing judgment one row. Columns that do not apply to a kind are left empty.
RAW_COLUMNS = (
    "kind",
    "rater",
    "background",
    "age_band",
    "item",
    "left",
    "right",
    "winner",
    "side_chosen",
    "question",
    "value",
    "answered_at",
    "seconds_into_session",
    "active_seconds",
    "explanation_match",
    "idempotency_key",
    "origin",
    "submitted_at",
    "attention_check",
    # Why the analysis leaves this row out ("" when it uses it): rows are never deleted.
    "excluded",
    # The judgment's own metadata as imported (a JSON object; "" when it has none).
    "meta",
)

# Rows fetched per database round trip: a 300,000-row study never sits in memory at once.
RAW_CHUNK_SIZE = 2000


def export_job_list(*, study: Study, limit: int = 50) -> list[ExportJob]:
    return list(
        ExportJob.objects.filter(study=study)
        .select_related("requested_by")
        .order_by("-created_at", "-pk")[:limit]
    )


def export_job_get(*, study: Study, job_id: int) -> ExportJob:
    """The job if it belongs to this study; another study's job is simply not found."""
    job = ExportJob.objects.filter(study=study, pk=job_id).first()
    if job is None:
        raise NotFound(f"no export {job_id} in study {study.slug!r}", field="job")
    return job


def raw_judgment_count(*, study: Study) -> int:
    return (
        ScoreAnswer.objects.filter(response__study=study).count()
        + NotUnderstood.objects.filter(response__study=study).count()
        + PairJudgment.objects.filter(study=study).count()
        + TuringJudgment.objects.filter(study=study).count()
    )


_RATER = ("rater__external_id", "rater__background__code", "rater__age_band")
_TIMES = ("seconds_into_session", "active_seconds", "idempotency_key", "origin", "submitted_at")


def _scorecard_rows(
    study: Study,
    chunk_size: int,
    out: ExclusionReasons,
    model: type[ScoreAnswer] | type[NotUnderstood] = ScoreAnswer,
) -> Iterator[tuple[Any, ...]]:
    """A scorecard's answers, one row each; with `model=NotUnderstood`, its "I don't get it"
    answers, whose value is written as NOT_UNDERSTOOD (what the import reads back)."""
    said = model is NotUnderstood
    answers = (
        model.objects.filter(response__study=study)
        .order_by("response_id", "question__position")
        .values_list(
            *(f"response__{name}" for name in _RATER),
            "response__item__external_id",
            "question__name",
            "pk" if said else "value",
            "answered_at",
            *(f"response__{name}" for name in _TIMES[:2]),
            "response__explanation_match",
            *(f"response__{name}" for name in _TIMES[2:]),
            "response__item__is_attention_check",
            "response__rater_id",
            "response__item_id",
            "response_id",
            "response__meta",
        )
    )
    for (
        rater,
        background,
        age_band,
        item,
        question,
        value,
        answered_at,
        seconds,
        active,
        explanation,
        key,
        origin,
        submitted,
        gold,
        rater_pk,
        item_pk,
        response_pk,
        meta,
    ) in answers.iterator(chunk_size=chunk_size):
        yield (
            "score",
            rater,
            background,
            age_band,
            item,
            None,
            None,
            None,
            None,
            question,
            # As given: 3 for an integer point (stored as 3.0), 0.21875 as it is.
            NOT_UNDERSTOOD if said else scales.plain(value),
            answered_at,
            seconds,
            active,
            explanation,
            key,
            origin,
            submitted,
            gold,
            out.reason(rater=rater_pk, items=(item_pk,), kind="scorecard", judgment=response_pk),
            _meta(meta),
        )


def _pair_rows(study: Study, chunk_size: int, out: ExclusionReasons) -> Iterator[tuple[Any, ...]]:
    pairs = (
        PairJudgment.objects.filter(study=study)
        .order_by("pk")
        .values_list(
            *_RATER,
            "left__external_id",
            "right__external_id",
            "outcome",
            "left_id",
            "left__is_attention_check",
            "right__is_attention_check",
            *_TIMES,
            "rater_id",
            "right_id",
            "pk",
            "meta",
        )
    )
    for (
        rater,
        background,
        age_band,
        left,
        right,
        outcome,
        left_id,
        left_gold,
        right_gold,
        seconds,
        active,
        key,
        origin,
        submitted,
        rater_pk,
        right_pk,
        pair_pk,
        meta,
    ) in pairs.iterator(chunk_size=chunk_size):
        # Left and right are as shown on the screen. side_chosen is the outcome: a side, or
        # "tie" (about the same) / "neither", which have no winner.
        side = outcome
        winner = {"left": left, "right": right}.get(outcome)
        yield (
            "pair",
            rater,
            background,
            age_band,
            None,
            left,
            right,
            winner,
            side,
            "funnier",
            winner,
            None,
            seconds,
            active,
            None,
            key,
            origin,
            submitted,
            left_gold or right_gold,
            out.reason(rater=rater_pk, items=(left_id, right_pk), kind="pair", judgment=pair_pk),
            _meta(meta),
        )


def _turing_rows(study: Study, chunk_size: int, out: ExclusionReasons) -> Iterator[tuple[Any, ...]]:
    judgments = (
        TuringJudgment.objects.filter(study=study)
        .order_by("pk")
        .values_list(
            *_RATER,
            "item__external_id",
            "guess",
            *_TIMES,
            "item__is_attention_check",
            "rater_id",
            "item_id",
            "pk",
            "meta",
        )
    )
    for (
        rater,
        background,
        age_band,
        item,
        guess,
        seconds,
        active,
        key,
        origin,
        submitted,
        gold,
        rater_pk,
        item_pk,
        turing_pk,
        meta,
    ) in judgments.iterator(chunk_size=chunk_size):
        yield (
            "turing",
            rater,
            background,
            age_band,
            item,
            None,
            None,
            None,
            None,
            "turing",
            guess,
            None,
            seconds,
            active,
            None,
            key,
            origin,
            submitted,
            gold,
            out.reason(rater=rater_pk, items=(item_pk,), kind="turing", judgment=turing_pk),
            _meta(meta),
        )


def _meta(value: Any) -> str:
    """A judgment's metadata, unchanged, as one JSON cell."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else ""


def raw_judgment_rows(
    *, study: Study, chunk_size: int = RAW_CHUNK_SIZE
) -> Iterator[tuple[Any, ...]]:
    """Every stored judgment of the study as tuples in RAW_COLUMNS order, read in chunks.

    Scorecard answers first (by scorecard, then scorecard order), then "I don't get it"
    answers (value NOT_UNDERSTOOD, as the import reads it), then pairs, then Turing
    judgments, each in the order they were stored. Attention checks are included and marked:
    this is the evidence, not the analysis. Rows the analysis leaves out say why in `excluded`.
    """
    out = exclusion_reasons(study=study)
    yield from _scorecard_rows(study, chunk_size, out)
    yield from _scorecard_rows(study, chunk_size, out, NotUnderstood)
    yield from _pair_rows(study, chunk_size, out)
    yield from _turing_rows(study, chunk_size, out)
