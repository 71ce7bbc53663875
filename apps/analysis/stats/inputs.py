"""The arrays a study's analysis starts from: plain numpy, indexed by position, no Django.

Items, raters and questions are referred to by their index in the lists below; the aggregation
service builds one StudyInputs from the database and the statistics never see a model object.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

# Codes of undecided A/B answers in StudyInputs.undecided_kind (0 and 1 are the two sides).
UNDECIDED_TIE, UNDECIDED_NEITHER = 2, 3


@dataclass(frozen=True)
class QuestionInfo:
    name: str
    kind: str  # "likert" | "binary" | "choice" | "slider"
    min_value: int
    max_value: int
    step: float | None = None  # a slider's grid; None for the integer kinds
    not_understood: bool = False  # offers "I don't get it"
    # A choice question's options in English, by stored index (pages name them in the
    # reader's language from the rubric).
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Thresholds:
    min_items_per_model: int = 30
    min_raters_per_item: int = 15
    controversial_kappa: float = 0.4
    culture_dependent_agreement: float = 0.3
    # False-discovery rate of the culture-dependence test across items (Benjamini-Hochberg).
    culture_fdr: float = 0.1


@dataclass(frozen=True)
class StudyInputs:
    # Items (n_items)
    item_ids: list[str]
    item_source: list[str]
    item_level: list[str]
    item_humor_type: list[str]
    item_topic: list[str]
    item_safety_intercepted: np.ndarray  # bool
    item_has_explanation: np.ndarray  # bool
    # Raters (n_raters): background group code of each
    rater_ids: list[str]
    rater_group: list[str]
    groups: list[str]
    questions: list[QuestionInfo]
    # Scorecard answers, one row per (response, question)
    score_item: np.ndarray
    score_rater: np.ndarray
    score_question: np.ndarray
    score_value: np.ndarray  # float
    score_seconds: np.ndarray  # float, nan when unknown
    # Pair judgments, one row each
    pair_left: np.ndarray
    pair_right: np.ndarray
    pair_winner_is_left: np.ndarray  # bool
    pair_rater: np.ndarray
    # Turing judgments, one row each
    turing_item: np.ndarray
    turing_rater: np.ndarray
    turing_guess_ai: np.ndarray  # bool
    # Self-explanation verdicts, one row per scorecard that answered it
    explanation_item: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    explanation_match: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64)
    )  # 1 yes, 0 no/unsure
    # Items the offense filter holds whose ratings count (the study's setting): flagged "held".
    item_held: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    # "I don't get it", one row per (scorecard, question) that said it: never a value, so in
    # no mean and no agreement; reported as a rate of the scorecards that answered either way.
    not_understood_item: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    not_understood_rater: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    not_understood_question: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # A/B pairs answered "about the same" (kind 2, a tie) or "neither" (kind 3), one row each;
    # the pair_* arrays above hold only the decisive judgments, so every statistic that reads
    # them keeps its meaning, and the tie model and the rates read these beside them.
    undecided_left: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    undecided_right: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    undecided_rater: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    undecided_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Each item's length in its own units (characters for Chinese, words otherwise; nan when
    # unknown), and the numeric item metadata the study names as style covariates (nan where an
    # item has none): the covariates of the style-controlled boards.
    item_length: np.ndarray = field(default_factory=lambda: np.zeros(0))
    item_covariates: dict[str, np.ndarray] = field(default_factory=dict)
    thresholds: Thresholds = field(default_factory=Thresholds)
    # Name of the overall question (fatigue, summaries) and of the offense flag, when the rubric has them.
    primary_question: str = "funniness"
    offense_question: str = "offensive"
    # Content type of each item ("" when none: humor studies), for generated-content studies.
    item_content_type: list[str] = field(default_factory=list)
    # Language code of each item ("en", "zh"), and the languages each rater reads as one group
    # ("en", "zh", "en+zh"; "unstated" when not stated). Empty lists when not loaded.
    item_language: list[str] = field(default_factory=list)
    rater_languages: list[str] = field(default_factory=list)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_raters(self) -> int:
        return len(self.rater_ids)

    @property
    def tie_rows(self) -> np.ndarray:
        return np.flatnonzero(self.undecided_kind == UNDECIDED_TIE)

    @property
    def neither_rows(self) -> np.ndarray:
        return np.flatnonzero(self.undecided_kind == UNDECIDED_NEITHER)

    @property
    def item_is_human(self) -> np.ndarray:
        return np.array([source == "human" for source in self.item_source], dtype=bool)

    def digest(self) -> str:
        """sha256 over everything the statistics read, so stored results name their exact input."""
        hasher = hashlib.sha256()
        for values in (
            self.item_ids,
            self.item_source,
            self.item_level,
            self.item_humor_type,
            self.item_topic,
            self.rater_ids,
            self.rater_group,
            [
                f"{q.name}:{q.kind}:{q.min_value}:{q.max_value}"
                + (f":{q.step!r}" if q.step is not None else "")
                for q in self.questions
            ],
            # Only when present, so the digests of studies without content types are unchanged.
            *([self.item_content_type] if any(self.item_content_type) else []),
            self.item_language,
            self.rater_languages,
            *([sorted(self.item_covariates)] if self.item_covariates else []),
        ):
            hasher.update("\x1f".join(values).encode())
            hasher.update(b"\x1e")
        for array in (
            self.item_safety_intercepted,
            self.score_item,
            self.score_rater,
            self.score_question,
            self.score_value,
            self.score_seconds,
            self.pair_left,
            self.pair_right,
            self.pair_winner_is_left,
            self.pair_rater,
            self.turing_item,
            self.turing_rater,
            self.turing_guess_ai,
            self.explanation_item,
            self.explanation_match,
            # Only when present, so the digests of studies without any are unchanged.
            *([self.item_held] if self.item_held.any() else []),
            *(
                [self.not_understood_item, self.not_understood_rater, self.not_understood_question]
                if self.not_understood_item.size
                else []
            ),
            *([self.item_length] if self.item_length.size else []),
            *(self.item_covariates[name] for name in sorted(self.item_covariates)),
            *(
                [
                    self.undecided_left,
                    self.undecided_right,
                    self.undecided_rater,
                    self.undecided_kind,
                ]
                if self.undecided_left.size
                else []
            ),
        ):
            hasher.update(np.ascontiguousarray(array).tobytes())
            hasher.update(b"\x1e")
        return hasher.hexdigest()


def inputs_without_items(inputs: StudyInputs, keep: np.ndarray) -> StudyInputs:
    """The same inputs with only the items where `keep` is True, and the judgments about them.

    Item positions are renumbered; a pair stays only when both its items stay.
    """
    keep = np.asarray(keep, dtype=bool)
    new_index = np.cumsum(keep) - 1
    kept = np.flatnonzero(keep)
    score_rows = keep[inputs.score_item]
    pair_rows = keep[inputs.pair_left] & keep[inputs.pair_right]
    turing_rows = keep[inputs.turing_item]
    explanation_rows = keep[inputs.explanation_item]
    keep_nu = keep[inputs.not_understood_item]
    undecided_rows = keep[inputs.undecided_left] & keep[inputs.undecided_right]
    return replace(
        inputs,
        item_ids=[inputs.item_ids[i] for i in kept],
        item_source=[inputs.item_source[i] for i in kept],
        item_level=[inputs.item_level[i] for i in kept],
        item_humor_type=[inputs.item_humor_type[i] for i in kept],
        item_topic=[inputs.item_topic[i] for i in kept],
        item_content_type=[inputs.item_content_type[i] for i in kept]
        if inputs.item_content_type
        else [],
        item_language=[inputs.item_language[i] for i in kept] if inputs.item_language else [],
        item_safety_intercepted=inputs.item_safety_intercepted[kept],
        item_has_explanation=inputs.item_has_explanation[kept],
        item_held=inputs.item_held[kept] if inputs.item_held.size else inputs.item_held,
        score_item=new_index[inputs.score_item[score_rows]],
        score_rater=inputs.score_rater[score_rows],
        score_question=inputs.score_question[score_rows],
        score_value=inputs.score_value[score_rows],
        score_seconds=inputs.score_seconds[score_rows],
        pair_left=new_index[inputs.pair_left[pair_rows]],
        pair_right=new_index[inputs.pair_right[pair_rows]],
        pair_winner_is_left=inputs.pair_winner_is_left[pair_rows],
        pair_rater=inputs.pair_rater[pair_rows],
        turing_item=new_index[inputs.turing_item[turing_rows]],
        turing_rater=inputs.turing_rater[turing_rows],
        turing_guess_ai=inputs.turing_guess_ai[turing_rows],
        explanation_item=new_index[inputs.explanation_item[explanation_rows]],
        explanation_match=inputs.explanation_match[explanation_rows],
        not_understood_item=new_index[inputs.not_understood_item[keep_nu]],
        not_understood_rater=inputs.not_understood_rater[keep_nu],
        not_understood_question=inputs.not_understood_question[keep_nu],
        item_length=inputs.item_length[kept] if inputs.item_length.size else inputs.item_length,
        item_covariates={name: values[kept] for name, values in inputs.item_covariates.items()},
        undecided_left=new_index[inputs.undecided_left[undecided_rows]],
        undecided_right=new_index[inputs.undecided_right[undecided_rows]],
        undecided_rater=inputs.undecided_rater[undecided_rows],
        undecided_kind=inputs.undecided_kind[undecided_rows],
    )
