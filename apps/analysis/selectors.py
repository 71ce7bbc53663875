"""Reads for analysis: the raw judgments of a study as StudyInputs arrays, and stored results."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from django.db.models import Case, Exists, OuterRef, Q, TextField, When
from django.db.models.functions import Cast

from apps.analysis.models import StudyResult
from apps.analysis.stats.inputs import (
    UNDECIDED_NEITHER,
    UNDECIDED_TIE,
    QuestionInfo,
    StudyInputs,
    Thresholds,
)
from apps.core.errors import NotFound
from apps.core.numeric_read import numeric_columns
from apps.exclusions.selectors import ExclusionSet, exclusion_set_for_study
from apps.judgments.models import (
    NotUnderstood,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.raters.models import BackgroundGroup, Rater
from apps.studies import languages
from apps.studies.lengths import text_length
from apps.studies.models import Item, Study
from apps.studies.selectors import study_questions


def _meta_number(meta: object, name: str) -> float:
    """An item's metadata value as a number for a style covariate; nan when absent or not one
    (a yes/no value counts as 1/0)."""
    value = meta.get(name) if isinstance(meta, dict) else None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return float("nan")
    return float("nan")


def study_inputs_load(*, study: Study, exclusions: ExclusionSet | None = None) -> StudyInputs:
    """Every judgment of the study as arrays; rows in primary-key order so the digest is stable.

    With `exclusions`, what they name is left out: excluded items with every judgment about
    them, excluded raters with all their judgments, and the excluded judgments themselves.
    """
    out = exclusions or ExclusionSet()
    # Items the offense filter holds count (flagged "held") unless the study leaves them out:
    # then they go with every judgment about them, as excluded items do.
    left_out = set(out.items)
    if not study.count_held_items:
        left_out |= set(
            Item.objects.filter(study=study, stage=Item.Stage.HELD).values_list("pk", flat=True)
        )
    item_rows = list(
        # Attention checks (gold items) test raters, not models: never part of the analysis.
        # Items outside the human study (candidates, screened out, held) count only if they
        # hold judgments (imported ones, or collected before a hold).
        Item.objects.filter(study=study, is_attention_check=False)
        .filter(
            Q(stage=Item.Stage.STUDY)
            | Exists(ScoreResponse.objects.filter(item=OuterRef("pk")))
            | Exists(PairJudgment.objects.filter(left=OuterRef("pk")))
            | Exists(PairJudgment.objects.filter(right=OuterRef("pk")))
            | Exists(TuringJudgment.objects.filter(item=OuterRef("pk")))
        )
        .exclude(pk__in=left_out)
        .order_by("pk")
        .values_list(
            "pk",
            "external_id",
            "source",
            "level",
            "humor_type",
            "topic",
            "safety_intercepted",
            "explanation",
            "content_type",
            "language",
            "stage",
            "text",
            "meta",
        )
    )
    rater_rows = list(
        Rater.objects.filter(study=study)
        .exclude(pk__in=out.raters)
        .order_by("pk")
        # As text, decoded once per distinct value below: a crowd study has a few language
        # lists among tens of thousands of raters, and decoding each rater's cost 0.4 s for
        # 75,000 (benchmarks/bench_import.py).
        .values_list("pk", "external_id", "background__code", Cast("languages", TextField()))
    )
    questions = study_questions(study=study)

    # float64 holds primary keys exactly (below 2**53) and turns a missing time (NULL) into nan.
    # Read without a Python tuple per row (apps/core/numeric_read.py): a study's answers are
    # its largest read.
    answers = numeric_columns(
        ScoreAnswer.objects.filter(response__study=study, response__item__is_attention_check=False)
        .exclude(response__rater_id__in=out.raters)
        .exclude(response__item_id__in=left_out)
        .exclude(response_id__in=out.scorecards)
        .order_by("pk"),
        [
            "response__item_id",
            "response__rater_id",
            "question_id",
            "value",
            "response__seconds_into_session",
        ],
        np.float64,
    )
    pairs = numeric_columns(
        PairJudgment.objects.filter(
            study=study, left__is_attention_check=False, right__is_attention_check=False
        )
        .exclude(rater_id__in=out.raters)
        .exclude(left_id__in=left_out)
        .exclude(right_id__in=left_out)
        .exclude(pk__in=out.pairs)
        .order_by("pk"),
        [
            "left_id",
            "right_id",
            Case(
                When(outcome=PairJudgment.Outcome.LEFT, then=0),
                When(outcome=PairJudgment.Outcome.RIGHT, then=1),
                When(outcome=PairJudgment.Outcome.TIE, then=UNDECIDED_TIE),
                default=UNDECIDED_NEITHER,
            ),
            "rater_id",
        ],
        np.int64,
    )
    undecided = pairs[pairs[:, 2] >= UNDECIDED_TIE]
    pairs = pairs[pairs[:, 2] < UNDECIDED_TIE]
    turing = list(
        TuringJudgment.objects.filter(study=study, item__is_attention_check=False)
        .exclude(rater_id__in=out.raters)
        .exclude(item_id__in=left_out)
        .exclude(pk__in=out.turing)
        .order_by("pk")
        .values_list("item_id", "rater_id", "guess")
    )
    explanations = list(
        ScoreResponse.objects.filter(study=study, item__is_attention_check=False)
        .exclude(explanation_match="")
        .exclude(rater_id__in=out.raters)
        .exclude(item_id__in=left_out)
        .exclude(pk__in=out.scorecards)
        .order_by("pk")
        .values_list("item_id", "explanation_match")
    )

    not_understood = numeric_columns(
        NotUnderstood.objects.filter(
            response__study=study, response__item__is_attention_check=False
        )
        .exclude(response__rater_id__in=out.raters)
        .exclude(response__item_id__in=left_out)
        .exclude(response_id__in=out.scorecards)
        .order_by("pk"),
        ["response__item_id", "response__rater_id", "question_id"],
        np.int64,
    )

    item_pks = np.array([row[0] for row in item_rows], dtype=np.int64)
    rater_pks = np.array([row[0] for row in rater_rows], dtype=np.int64)
    question_pks = np.array([q.pk for q in questions], dtype=np.int64)

    def positions(column: np.ndarray, pks: np.ndarray) -> np.ndarray:
        # Primary keys are loaded in ascending order, so a binary search maps each foreign
        # key to its position without a Python loop over hundreds of thousands of rows.
        return np.searchsorted(pks, np.asarray(column, dtype=np.int64)).astype(np.int64)

    return StudyInputs(
        item_ids=[row[1] for row in item_rows],
        item_source=[row[2] for row in item_rows],
        item_level=[row[3] for row in item_rows],
        item_humor_type=[row[4] or "unspecified" for row in item_rows],
        item_topic=[row[5] or "" for row in item_rows],
        item_safety_intercepted=np.array([row[6] for row in item_rows], dtype=bool),
        item_has_explanation=np.array([bool(row[7]) for row in item_rows], dtype=bool),
        item_held=np.array([row[10] == Item.Stage.HELD for row in item_rows], dtype=bool),
        item_length=np.array(
            [float(text_length(row[11] or "", row[9] or "")) for row in item_rows], dtype=float
        ).reshape(-1),
        item_covariates={
            name: np.array([_meta_number(row[12], name) for row in item_rows], dtype=float)
            for name in study.style_covariates or []
        },
        rater_ids=[row[1] for row in rater_rows],
        # "" where the background is unknown (imported raters that did not say).
        rater_group=[row[2] or "" for row in rater_rows],
        groups=list(
            BackgroundGroup.objects.filter(study=study)
            .order_by("position", "code")
            .values_list("code", flat=True)
        ),
        questions=[
            QuestionInfo(
                q.name,
                q.kind,
                q.min_value,
                q.max_value,
                q.step,
                q.allow_not_understood,
                tuple(
                    str(option.get("en") or k) if isinstance(option, dict) else str(option)
                    for k, option in enumerate(q.choices or [])
                ),
            )
            for q in questions
        ],
        score_item=positions(answers[:, 0], item_pks),
        score_rater=positions(answers[:, 1], rater_pks),
        score_question=positions(answers[:, 2], question_pks),
        score_value=answers[:, 3],
        score_seconds=answers[:, 4],
        pair_left=positions(pairs[:, 0], item_pks),
        pair_right=positions(pairs[:, 1], item_pks),
        pair_winner_is_left=pairs[:, 2] == 0,
        pair_rater=positions(pairs[:, 3], rater_pks),
        undecided_left=positions(undecided[:, 0], item_pks),
        undecided_right=positions(undecided[:, 1], item_pks),
        undecided_rater=positions(undecided[:, 3], rater_pks),
        undecided_kind=undecided[:, 2].copy(),
        turing_item=positions(np.array([row[0] for row in turing], dtype=np.int64), item_pks),
        turing_rater=positions(np.array([row[1] for row in turing], dtype=np.int64), rater_pks),
        turing_guess_ai=np.array([row[2] == "ai" for row in turing], dtype=bool),
        explanation_item=positions(
            np.array([row[0] for row in explanations], dtype=np.int64), item_pks
        ),
        explanation_match=np.array(
            [1 if row[1] == "yes" else 0 for row in explanations], dtype=np.int64
        ),
        not_understood_item=positions(not_understood[:, 0], item_pks),
        not_understood_rater=positions(not_understood[:, 1], rater_pks),
        not_understood_question=positions(not_understood[:, 2], question_pks),
        thresholds=Thresholds(
            min_items_per_model=study.min_items_per_model,
            min_raters_per_item=study.min_raters_per_item,
            culture_fdr=float(study.culture_fdr),
        ),
        primary_question=study.rubric.primary_question,
        item_content_type=[row[8] or "" for row in item_rows],
        item_language=[row[9] for row in item_rows],
        rater_languages=_language_keys([row[3] for row in rater_rows]),
    )


def study_result_get(*, study: Study) -> StudyResult:
    try:
        return StudyResult.objects.get(study=study)
    except StudyResult.DoesNotExist:
        raise NotFound(
            f"study {study.slug!r} has no computed results yet; run aggregation first"
        ) from None


@dataclass(frozen=True)
class InputHashes:
    """What a result was computed from, as two sha256 digests: `input` over the items and
    judgments exactly as the statistics read them (exclusions applied), `exclusions` over the
    set left out (by the study's own ids, so another database with the same choices agrees)."""

    input: str
    exclusions: str


def study_input_hashes(*, study: Study) -> InputHashes:
    """The hashes of the study's data as they are now, computed the way aggregation computes
    the ones it stores: equal to the stored ones exactly when the results are of this data."""
    excluded = exclusion_set_for_study(study=study)
    inputs = study_inputs_load(study=study, exclusions=excluded)
    return InputHashes(input=inputs.digest(), exclusions=excluded.digest)


def _language_keys(stored: list[str | None]) -> list[str]:
    """Each rater's languages as its results group (languages.rater_key), from the JSON text
    of their `languages`, decoded once per distinct text."""
    keys: dict[str | None, str] = {}
    for text in set(stored):
        keys[text] = languages.rater_key((json.loads(text) if text else None) or ())
    return [keys[text] for text in stored]
