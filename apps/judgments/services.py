"""Writes for judgments.

Imports are one transaction: every line is validated, and compared with what is stored, before
anything is written. A line identical to a stored judgment is skipped (importing a file twice
changes nothing); a line that contradicts a stored judgment is an error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from apps.analysis.services import study_results_request
from apps.core.bulk_references import MissingParent, references_checked_in_bulk
from apps.core.collector import cyclic_collector_paused
from apps.core.errors import Conflict, ImportRejected, LineError
from apps.core.lines import Record, read_records
from apps.core.progress import ImportProgress, reporting
from apps.core.sentences import Sentence
from apps.judgments.import_rows import RowWriter
from apps.judgments.import_stream import written_while_read
from apps.judgments.importing import (
    JUDGMENT_JSON_COLUMNS,
    ImportContext,
    ImportWarning,
    PairRow,
    ParsedJudgments,
    QuestionSpec,
    Row,
    ScoreRow,
    parse_judgments,
    rater_id_warnings,
    widen_bounds,
)
from apps.judgments.models import (
    NotUnderstood,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.raters.models import BackgroundGroup, Rater
from apps.raters.services import (
    ImportedRater,
    raters_check_imported,
    raters_ensure_imported,
    raters_mend_imported,
)
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
    rows: list[Row],
    raters: dict[str, tuple[str | None, str | None]],
    *,
    now: datetime | None = None,
) -> list[ImportedRater]:
    """Each rater of the file with their first line and the bounds of their dated lines (the
    import's own time when none is dated). One pass, each rater's bounds kept as a pair: a
    crowd file names as many raters as lines."""
    now = now or timezone.now()
    first_line: dict[str, int] = {}
    bounds: dict[str, tuple[datetime, datetime]] = {}
    for row in rows:
        header = row.header
        rater = header.rater
        if rater not in first_line:
            first_line[rater] = header.line
        widen_bounds(bounds, header)
    undated = (now, now)
    result = []
    for external_id, (background, age_band) in raters.items():
        started, last = bounds.get(external_id, undated)
        result.append(
            ImportedRater(external_id, background, age_band, first_line[external_id], started, last)
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

    With a progress reporter, the lines are read and checked before the transaction starts:
    checking writes nothing, and a background import's progress (committed as it reads) stays
    visible to its status page. Without one, on PostgreSQL, the rows are written while the file
    is read (apps/judgments/import_stream.py), in the transaction, and kept only if every line
    is new and right; otherwise they are rolled back and the file is stored as before.
    """
    context = _context(study)
    # A million rows of small objects: the cyclic collector's passes over them cost a third of
    # the reading (apps/core/collector.py).
    with cyclic_collector_paused():
        if progress is None and connection.vendor == "postgresql":
            return _judgments_streamed(study, records, context)
        parsed = parse_judgments(reporting(records, progress), context)
        if progress is not None:
            progress.storing()
        return _judgments_store(study, parsed)


class _NotStreamed(Exception):
    def __init__(self, parsed: ParsedJudgments) -> None:
        self.parsed = parsed


@transaction.atomic
def _judgments_streamed(
    study: Study, records: Iterable[Record | LineError], context: ImportContext
) -> JudgmentImportSummary:
    raters_before = Rater.objects.filter(study=study).count()
    try:
        with _conflicts_named(), transaction.atomic(), references_checked_in_bulk():
            streamed = written_while_read(study, records, context)
            if not streamed.complete:
                raise _NotStreamed(streamed.parsed)  # rolls back what was written
            parsed = streamed.parsed
            # The raters and sessions were written as their lines were read so far; a later
            # line may have given an age band, or moved a session's bounds.
            final = _imported_raters(parsed.rows, parsed.raters, now=streamed.now)
            raters_mend_imported(
                study=study,
                written=streamed.written,
                raters=streamed.changed(final),
                keys=streamed.people,
            )
    except _NotStreamed as not_streamed:
        return _judgments_store(study, not_streamed.parsed)
    return _stored(study, parsed, len(parsed.rows), dict(streamed.created), raters_before)


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
    # Foreign keys checked once per referenced table, not once per row (a third of a
    # million-row import's time).
    with _conflicts_named(), transaction.atomic(), references_checked_in_bulk():
        people = raters_ensure_imported(study=study, raters=imported)
        created = dict(RowWriter(study).write(new_rows, people))
    return _stored(study, parsed, len(new_rows), created, raters_before)


@contextmanager
def _conflicts_named() -> Iterator[None]:
    try:
        yield
    except (KeyError, MissingParent) as exc:
        # The lines were checked against the study's items and questions before the rows
        # were written; one of them was removed since (found while the rows were built, or by
        # the check of their foreign keys).
        raise Conflict(
            f"the study's items or questions changed during the import ({exc}); try again"
        ) from exc
    except IntegrityError as exc:
        raise Conflict(
            "another import stored some of these judgments at the same time; try again"
        ) from exc


def _stored(
    study: Study,
    parsed: ParsedJudgments,
    n_new: int,
    created: dict[str, int],
    raters_before: int,
) -> JudgmentImportSummary:
    if n_new:
        # Marked stale only: the worker (or `manage.py aggregate`) computes the results once,
        # never this import, however the task queue is configured.
        study_results_request(study_id=study.pk, inline=False)
    return JudgmentImportSummary(
        created={kind: created.get(kind, 0) for kind in ("score", "pair", "turing")},
        unchanged=len(parsed.rows) - n_new,
        raters_created=Rater.objects.filter(study=study).count() - raters_before,
        warnings=rater_id_warnings(parsed.rows),
    )
