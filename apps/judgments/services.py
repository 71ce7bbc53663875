"""Writes for judgments.

Imports are one transaction: every line is validated, and compared with what is stored, before
anything is written. A line identical to a stored judgment is skipped (importing a file twice
changes nothing); a line that contradicts a stored judgment is an error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from apps.analysis.services import study_results_request
from apps.core.bulk import bulk_insert
from apps.core.bulk_references import MissingParent, references_checked_in_bulk
from apps.core.collector import cyclic_collector_paused
from apps.core.errors import Conflict, ImportRejected, LineError
from apps.core.lines import Record, read_records
from apps.core.progress import ImportProgress, reporting
from apps.core.sentences import Sentence
from apps.judgments.importing import (
    JUDGMENT_JSON_COLUMNS,
    ImportContext,
    ImportWarning,
    PairRow,
    ParsedJudgments,
    QuestionSpec,
    Row,
    ScoreRow,
    TuringRow,
    parse_judgments,
    rater_id_warnings,
)
from apps.judgments.models import (
    NotUnderstood,
    Origin,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.raters.models import BackgroundGroup, Rater
from apps.raters.services import ImportedRater, raters_check_imported, raters_ensure_imported
from apps.studies.models import Item, Study
from apps.studies.selectors import study_questions


@dataclass(frozen=True)
class JudgmentImportSummary:
    created: dict[str, int]
    unchanged: int
    raters_created: int
    warnings: list[ImportWarning] = field(default_factory=list)

    @property
    def total_created(self) -> int:
        return sum(self.created.values())


def _import_key(pk: int) -> str:
    """An imported judgment's idempotency key: `import:` and its own id, zero-padded. Unique
    as the id is; never a rater's key (those hold no colon); and in the order of the ids, so
    the unique index takes each new key at its right edge. A hash of the line's natural key went
    to a random page of that index instead, a third of PostgreSQL's time to store a million
    scorecards (`benchmarks/README.md`)."""
    return f"import:{pk:019d}"


# Passed to `bulk_insert`: the key is made from the id it draws for each row.
_KEYED = (("idempotency_key", _import_key),)


def _context(study: Study) -> ImportContext:
    questions = {
        q.name: QuestionSpec(
            q.name, q.min_value, q.max_value, q.kind, q.step, q.allow_not_understood
        )
        for q in study_questions(study=study)
    }
    items = {
        ext: bool(expl)
        for ext, expl in Item.objects.filter(study=study).values_list("external_id", "explanation")
    }
    backgrounds = frozenset(
        BackgroundGroup.objects.filter(study=study).values_list("code", flat=True)
    )
    return ImportContext(questions=questions, items_with_explanation=items, backgrounds=backgrounds)


def _imported_raters(
    rows: list[Row], raters: dict[str, tuple[str | None, str | None]]
) -> list[ImportedRater]:
    now = timezone.now()
    first_line: dict[str, int] = {}
    starts: dict[str, list[datetime]] = defaultdict(list)
    lasts: dict[str, list[datetime]] = defaultdict(list)
    for row in rows:
        header = row.header
        first_line.setdefault(header.rater, header.line)
        if header.submitted_at is not None:
            lasts[header.rater].append(header.submitted_at)
            offset = timedelta(seconds=header.seconds_into_session or 0.0)
            starts[header.rater].append(header.submitted_at - offset)
    result = []
    for external_id, (background, age_band) in raters.items():
        started = min(starts[external_id], default=now)
        last = max(lasts[external_id], default=started)
        result.append(
            ImportedRater(
                external_id,
                background,
                age_band,
                first_line[external_id],
                started,
                max(last, started),
            )
        )
    return result


def _stored_keys(study: Study, rater_ids: list[str]) -> dict[tuple[str, ...], object]:
    """Stored judgments of these raters, by the same natural key the rows use, with their content.

    Only raters already in the study can have any: a first import of a file (the usual case)
    reads nothing, and a re-import reads the judgments of its raters a few hundred at a time.
    """
    wanted = set(rater_ids)
    known = [
        pk
        for pk, external_id in Rater.objects.filter(study=study).values_list("pk", "external_id")
        if external_id in wanted
    ]
    stored: dict[tuple[str, ...], object] = {}
    for offset in range(0, len(known), 500):
        chunk = known[offset : offset + 500]
        scores = ScoreResponse.objects.filter(study=study, rater_id__in=chunk).values_list(
            "pk", "rater__external_id", "item__external_id", "explanation_match"
        )
        answers: dict[int, dict[str, float | None]] = defaultdict(dict)
        for response_id, name, value in ScoreAnswer.objects.filter(
            response__study=study, response__rater_id__in=chunk
        ).values_list("response_id", "question__name", "value"):
            answers[response_id][name] = value
        for response_id, name in NotUnderstood.objects.filter(
            response__study=study, response__rater_id__in=chunk
        ).values_list("response_id", "question__name"):
            answers[response_id][name] = None
        for pk, rater, item, match in scores:
            stored[("score", rater, item)] = (answers[pk], match)
        for rater, left, right, outcome in PairJudgment.objects.filter(
            study=study, rater_id__in=chunk
        ).values_list(
            "rater__external_id",
            "left__external_id",
            "right__external_id",
            "outcome",
        ):
            low, high = sorted((left, right))
            stored[("pair", rater, low, high)] = (left, right, outcome)
        for rater, item, guess in TuringJudgment.objects.filter(
            study=study, rater_id__in=chunk
        ).values_list("rater__external_id", "item__external_id", "guess"):
            stored[("turing", rater, item)] = guess
    return stored


def _content(row: Row) -> object:
    if isinstance(row, ScoreRow):
        return (dict(row.answers), row.explanation_match)
    if isinstance(row, PairRow):
        return (row.left, row.right, row.outcome)
    return row.guess


def study_judgments_import(
    *, study: Study, data: bytes, filename: str, progress: ImportProgress | None = None
) -> JudgmentImportSummary:
    return study_judgments_import_records(
        study=study,
        records=read_records(data, filename=filename, json_columns=JUDGMENT_JSON_COLUMNS),
        progress=progress,
    )


def study_judgments_import_records(
    *,
    study: Study,
    records: Iterable[Record | LineError],
    progress: ImportProgress | None = None,
) -> JudgmentImportSummary:
    """Check every line, then write the new judgments in one transaction (or nothing).

    The lines are read and checked before the transaction starts: checking writes nothing, and
    a background import's progress (committed as it reads) stays visible to its status page.
    """
    context = _context(study)
    # A million rows of small objects: the cyclic collector's passes over them cost a third of
    # the reading (apps/core/collector.py).
    with cyclic_collector_paused():
        parsed = parse_judgments(reporting(records, progress), context)
        if progress is not None:
            progress.storing()
        return _judgments_store(study, parsed)


@transaction.atomic
def _judgments_store(study: Study, parsed: ParsedJudgments) -> JudgmentImportSummary:
    errors = parsed.errors
    if not parsed.rows and not errors:
        raise ImportRejected(
            [LineError.said(0, "(file)", Sentence(gettext_noop("contains no judgments")))]
        )
    imported = _imported_raters(parsed.rows, parsed.raters)
    errors.extend(raters_check_imported(study=study, raters=imported))
    stored = _stored_keys(study, list(parsed.raters))
    new_rows: list[Row] = [] if stored else parsed.rows
    for row in parsed.rows if stored else ():
        if row.key not in stored:
            new_rows.append(row)
        elif stored[row.key] != _content(row):
            errors.append(
                LineError.said(
                    row.header.line,
                    "(line)",
                    Sentence(
                        gettext_noop(
                            "contradicts the judgment already stored for this rater and task"
                        )
                    ),
                )
            )
    if errors:
        raise ImportRejected(sorted(errors, key=lambda error: error.line))

    raters_before = Rater.objects.filter(study=study).count()
    try:
        # Foreign keys checked once per referenced table, not once per row (a third of a
        # million-row import's time).
        with transaction.atomic(), references_checked_in_bulk():
            people = raters_ensure_imported(study=study, raters=imported)
            created = _write_rows(study, new_rows, people)
    except (KeyError, MissingParent) as exc:
        # The lines were checked against the study's items and questions before this
        # transaction began; one of them was removed since (found while the rows were built,
        # or by the check of their foreign keys).
        raise Conflict(
            f"the study's items or questions changed during the import ({exc}); try again"
        ) from exc
    except IntegrityError as exc:
        raise Conflict(
            "another import stored some of these judgments at the same time; try again"
        ) from exc
    if new_rows:
        # Marked stale only: the worker (or `manage.py aggregate`) computes the results once,
        # never this import, however the task queue is configured.
        study_results_request(study_id=study.pk, inline=False)
    return JudgmentImportSummary(
        created=created,
        unchanged=len(parsed.rows) - len(new_rows),
        raters_created=Rater.objects.filter(study=study).count() - raters_before,
        warnings=rater_id_warnings(parsed.rows),
    )


def _write_rows(
    study: Study, rows: list[Row], people: dict[str, tuple[int, int]]
) -> dict[str, int]:
    """Insert the new judgments as plain rows (apps.core.bulk): an import of a million
    scorecards would otherwise spend most of its time building model instances."""
    items = dict(Item.objects.filter(study=study).values_list("external_id", "pk"))
    questions = {q.name: q.pk for q in study_questions(study=study)}
    now = timezone.now()
    imported = Origin.IMPORTED
    common_columns = (
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

    study_id = study.pk  # read once: a model's pk is a property, a million times over

    def common(row: Row) -> tuple[object, ...]:
        rater, session = people[row.header.rater]
        header = row.header
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
        (*common_columns, "item_id", "explanation_match", "explanation_answered_at"),
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
        (*common_columns, "left_id", "right_id", "outcome", "winner_id"),
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
        (*common_columns, "item_id", "guess"),
        ((*common(row), items[row.item], row.guess) for row in turing_rows),
        from_key=_KEYED,
    )
    return {"score": len(score_rows), "pair": len(pair_rows), "turing": len(turing_rows)}
