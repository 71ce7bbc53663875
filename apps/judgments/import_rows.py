"""The rows an import of judgments writes: its checked lines as plain rows (apps.core.bulk).

An import of a million scorecards would otherwise spend most of its time building model
instances. The writer reads the study's items and questions once, and is then given the rows a
batch at a time, or all at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from django.utils import timezone

from apps.core.bulk import bulk_insert
from apps.judgments.importing import PairRow, Row, ScoreRow, TuringRow
from apps.judgments.models import (
    NotUnderstood,
    Origin,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.studies.models import Item, Study
from apps.studies.selectors import study_questions


def import_key(pk: int) -> str:
    """An imported judgment's idempotency key: `import:` and its own id, zero-padded. Unique
    as the id is; never a rater's key (those hold no colon); and in the order of the ids, so
    the unique index takes each new key at its right edge. A hash of the line's natural key went
    to a random page of that index instead, a third of PostgreSQL's time to store a million
    scorecards (`benchmarks/README.md`)."""
    return f"import:{pk:019d}"


# Passed to `bulk_insert`: the key is made from the id it draws for each row.
_KEYED = (("idempotency_key", import_key),)

_COMMON_COLUMNS = (
    "study_id",
    "rater_id",
    "session_id",
    "seconds_into_session",
    "active_seconds",
    "origin",
    "submitted_at",
    "created_at",
    "meta",
)


class RowWriter:
    """Writes checked rows of one study's import, dated by one instant (the import's)."""

    def __init__(self, study: Study) -> None:
        self.study_id = study.pk  # read once: a model's pk is a property, a million times over
        self.items = dict(Item.objects.filter(study=study).values_list("external_id", "pk"))
        self.questions = {q.name: q.pk for q in study_questions(study=study)}
        self.now = timezone.now()

    def write(self, rows: Sequence[Row], people: Mapping[str, tuple[int, int]]) -> Counter[str]:
        """Insert `rows`, each rater's by their (rater pk, session pk) in `people`; how many of
        each kind. KeyError if a row names an item or question the study no longer has."""
        items, questions = self.items, self.questions
        study_id, now, imported = self.study_id, self.now, Origin.IMPORTED

        def common(row: Row) -> tuple[object, ...]:
            # Locals, not attributes: this runs once per row.
            header = row.header
            rater, session = people[header.rater]
            return (
                study_id,
                rater,
                session,
                header.seconds_into_session,
                header.active_seconds,
                imported,
                header.submitted_at or now,
                now,
                header.meta or {},
            )

        score_rows = [row for row in rows if isinstance(row, ScoreRow)]
        response_ids = bulk_insert(
            ScoreResponse,
            (*_COMMON_COLUMNS, "item_id", "explanation_match", "explanation_answered_at"),
            (
                (
                    *common(row),
                    items[row.item],
                    row.explanation_match,
                    row.header.submitted_at if row.explanation_match else None,
                )
                for row in score_rows
            ),
            returning=True,
            from_key=_KEYED,
        )
        bulk_insert(
            ScoreAnswer,
            ("response_id", "question_id", "value", "answered_at"),
            (
                (response, questions[name], value, row.header.submitted_at)
                for row, response in zip(score_rows, response_ids, strict=True)
                for name, value in row.answers
                if value is not None
            ),
        )
        bulk_insert(
            NotUnderstood,
            ("response_id", "question_id", "answered_at"),
            (
                (response, questions[name], row.header.submitted_at)
                for row, response in zip(score_rows, response_ids, strict=True)
                for name, value in row.answers
                if value is None
            ),
        )
        pair_rows = [row for row in rows if isinstance(row, PairRow)]
        bulk_insert(
            PairJudgment,
            (*_COMMON_COLUMNS, "left_id", "right_id", "outcome", "winner_id"),
            (
                (
                    *common(row),
                    items[row.left],
                    items[row.right],
                    row.outcome,
                    items[row.winner] if row.winner else None,
                )
                for row in pair_rows
            ),
            from_key=_KEYED,
        )
        turing_rows = [row for row in rows if isinstance(row, TuringRow)]
        bulk_insert(
            TuringJudgment,
            (*_COMMON_COLUMNS, "item_id", "guess"),
            ((*common(row), items[row.item], row.guess) for row in turing_rows),
            from_key=_KEYED,
        )
        return Counter(score=len(score_rows), pair=len(pair_rows), turing=len(turing_rows))
