"""Reads for assignments: a rater's own tasks, and how far each item is from its targets."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, F, Q
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.core.compiled import CompiledRead, prepared_read
from apps.core.errors import NotFound
from apps.judgments.models import EarlyAnswer, PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.studies.models import Item, Study

_ASSIGNMENT_FOR_RATER = CompiledRead(
    lambda assignment_id, rater_id: Assignment.objects.select_related("item", "session").filter(
        pk=assignment_id, rater_id=rater_id
    )[:1]
)


def assignment_get_for_rater(*, rater: Rater, assignment_id: int) -> Assignment:
    """The rater's own assignment, with its (left) item and session; someone else's looks
    exactly like a missing one (404).

    Its study is the rater's, as the caller read it (with the rubric): joining the study again
    cost more than the rest of the query on every answer.
    """
    return _owned(_ASSIGNMENT_FOR_RATER(assignment_id, rater.pk), rater)


def _owned(rows: Sequence[Any], rater: Rater) -> Assignment:
    """The first row read for this rater's task (404 when none), with the rater's study."""
    if not rows:
        raise NotFound("no such task for you", field="assignment")
    assignment = rows[0]
    if assignment.study_id == rater.study_id:
        assignment.study = rater.study
    return assignment


# A scorecard's task with the answers already received for it, one row per answer (one row of
# nulls when there is none): the first step and the submit both need them, and reading them
# apart cost a statement on each.
_SCORECARD_FOR_RATER = CompiledRead(
    lambda assignment_id, rater_id: (
        Assignment.objects.select_related("item", "session")
        .filter(pk=assignment_id, rater_id=rater_id)
        .annotate(
            early_id=F("early_answers__id"),
            early_question_id=F("early_answers__question_id"),
            early_value=F("early_answers__value"),
            early_answered_at=F("early_answers__answered_at"),
            early_received_at=F("early_answers__received_at"),
        )
        .order_by("early_answers__id")
    )
)


def scorecard_get_for_rater(
    *, rater: Rater, assignment_id: int
) -> tuple[Assignment, list[EarlyAnswer]]:
    """`assignment_get_for_rater`, with the answers received for the task in earlier requests
    (a scorecard's first step), in one statement. The same 404 for someone else's task."""
    rows = _SCORECARD_FOR_RATER(assignment_id, rater.pk)
    assignment = _owned(rows, rater)
    early = [
        EarlyAnswer(
            id=row.early_id,
            assignment_id=assignment.pk,
            question_id=row.early_question_id,
            value=row.early_value,
            answered_at=row.early_answered_at,
            received_at=row.early_received_at,
        )
        for row in rows
        if row.early_id is not None
    ]
    return assignment, early


_PENDING_FOR_RATER = CompiledRead(
    lambda rater_id: (
        Assignment.objects.select_related("item", "right_item", "session")
        .filter(rater_id=rater_id, status=Assignment.Status.PENDING)
        .order_by("pk")[:1]
    )
)


def assignment_pending_for_rater(*, rater: Rater) -> Assignment | None:
    pending = _PENDING_FOR_RATER(rater.pk)
    return pending[0] if pending else None


@dataclass(frozen=True)
class _Task:
    pk: int
    kind: str
    status: str
    item_id: int
    right_item_id: int | None
    session_id: int
    position: int
    is_attention_check: bool
    # The (left) item has a self-explanation: read only to know what was revealed.
    explained: bool


@dataclass(frozen=True)
class RaterTasks:
    """One rater's own assignments, read in one query: what the task chooser and the progress
    bar need to know (the open task, the next position, what this rater has already been shown).

    A rater holds a few dozen assignments at most, so reading them all is cheaper than asking
    the database five separate questions on every task page.
    """

    tasks: tuple[_Task, ...]

    @property
    def pending_id(self) -> int | None:
        return next((t.pk for t in self.tasks if t.status == Assignment.Status.PENDING), None)

    def next_position(self, *, session_id: int) -> int:
        return max((t.position for t in self.tasks if t.session_id == session_id), default=0) + 1

    def done_in_session(self, *, session_id: int) -> int:
        return sum(
            1
            for t in self.tasks
            if t.session_id == session_id and t.status == Assignment.Status.DONE
        )

    def items_of_kind(self, kind: str) -> set[int]:
        """Items this rater was given as the (left) item of a task of this kind."""
        return {t.item_id for t in self.tasks if t.kind == kind}

    def items_shown(self) -> set[int]:
        """Every item this rater has been shown, on either side of a pair."""
        shown = {t.item_id for t in self.tasks}
        shown.update(t.right_item_id for t in self.tasks if t.right_item_id is not None)
        return shown

    def items_revealed(self) -> set[int]:
        """Items whose self-explanation this rater has been shown (or is about to be: it is
        revealed right after their scorecard). None of them is given to this rater again, in
        any kind of task: the reveal says a model wrote it."""
        return {
            t.item_id
            for t in self.tasks
            if t.explained
            and t.kind == Assignment.Kind.SCORECARD
            and t.status == Assignment.Status.DONE
            and not t.is_attention_check
        }

    def pairs_compared(self) -> set[tuple[int, int]]:
        return {
            (min(t.item_id, t.right_item_id), max(t.item_id, t.right_item_id))
            for t in self.tasks
            if t.kind == Assignment.Kind.PAIR and t.right_item_id is not None
        }


_RATER_TASKS = CompiledRead(
    lambda rater_id: (
        Assignment.objects.filter(rater_id=rater_id)
        .order_by()
        .annotate(explained=ExpressionWrapper(~Q(item__explanation=""), BooleanField()))
        .values_list(
            "pk",
            "kind",
            "status",
            "item_id",
            "right_item_id",
            "session_id",
            "position",
            "is_attention_check",
            "explained",
        )
    )
)


def rater_tasks(*, rater: Rater) -> RaterTasks:
    return RaterTasks(tuple(_Task(*row) for row in _RATER_TASKS(rater.pk)))


# The target counts run on every task a rater is given. They are written in SQL (portable:
# PostgreSQL and SQLite) because building them with the ORM cost several times more CPU than
# running them; tests/assignments/test_counts.py holds each to the same counts made row by row.
# The assignment half counts the claims on an item: tasks answered, or still open in a live
# session (not ended, deadline ahead). The imported half counts judgments that came in without
# an assignment (an import), which count toward the targets too.
_LIVE_AND_IMPORTED = """
    SELECT {assigned}, COUNT(*)
    FROM {assignment} a
    JOIN {session} s ON s.id = a.session_id
    {assigned_join}
    WHERE a.study_id = %s AND a.kind = %s {assigned_items}
      AND (a.status = %s OR (a.status = %s AND s.ended_at IS NULL AND s.deadline > %s))
    GROUP BY {assigned}
    UNION ALL
    SELECT {imported}, COUNT(*)
    FROM {judgment} j
    {imported_join}
    WHERE j.study_id = %s AND j.assignment_id IS NULL {imported_items}
    GROUP BY {imported}
"""


def _counted(
    study: Study,
    *,
    kind: str,
    judgment: type[ScoreResponse | PairJudgment | TuringJudgment],
    assigned: str,
    imported: str,
    by_group: bool = False,
    item_ids: Collection[int] | None = None,
) -> list[tuple[Any, ...]]:
    """Rows of (`assigned` columns..., count) over live assignments of `kind`, then (`imported`
    columns..., count) over imported judgments; with `by_group`, the rater's background group
    is the last column before the count."""
    ids = list(item_ids) if item_ids is not None else []
    if item_ids is not None and not ids:
        return []
    in_items = "AND {col} IN (" + ", ".join(["%s"] * len(ids)) + ")" if item_ids is not None else ""
    rater = Rater._meta.db_table
    sql = _LIVE_AND_IMPORTED.format(
        assigned=assigned + (", r.background_id" if by_group else ""),
        imported=imported + (", r.background_id" if by_group else ""),
        assignment=Assignment._meta.db_table,
        session=RaterSession._meta.db_table,
        judgment=judgment._meta.db_table,
        assigned_join=f"JOIN {rater} r ON r.id = a.rater_id" if by_group else "",
        imported_join=f"JOIN {rater} r ON r.id = j.rater_id" if by_group else "",
        assigned_items=in_items.format(col="a.item_id"),
        imported_items=in_items.format(col="j.item_id"),
    )
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    live = [Assignment.Status.DONE.value, Assignment.Status.PENDING.value, now]
    params = [study.pk, kind, *ids, *live, study.pk, *ids]
    with connection.cursor() as cursor:
        if len(ids) <= 1:
            # Every count, and the re-count of one item under its lock on every task given,
            # planned once per connection: a few fixed texts. Lists of items are not (a text
            # per length).
            prepared_read(sql).run(lambda text: cursor.execute(text, params), len(params))
        else:
            cursor.execute(sql, params)
        return cursor.fetchall()


_STUDY_ITEMS = CompiledRead(
    lambda study_id: (
        Item.objects.filter(study_id=study_id, is_attention_check=False, stage=Item.Stage.STUDY)
        .order_by("external_id")
        .values_list("pk", "external_id", "topic", "level", "language")
    )
)


def study_items_to_rank(*, study: Study) -> list[tuple[int, str, str, str, str]]:
    """(pk, external_id, topic, level, language) of every item raters may be given: in the
    study stage, not an attention check; the task chooser ranks them."""
    return _STUDY_ITEMS(study.pk)


def background_group_count(*, study: Study) -> int:
    return BackgroundGroup.objects.filter(study=study).count()


def scorecard_counts(*, study: Study) -> tuple[Counter[int], dict[int, Counter[int]]]:
    """Scorecards per item, in total and per background group of the rater: answered or still
    open in a live session, plus scores imported from elsewhere (they count toward targets)."""
    total: Counter[int] = Counter()
    by_group: dict[int, Counter[int]] = defaultdict(Counter)
    rows = _counted(
        study,
        kind=Assignment.Kind.SCORECARD,
        judgment=ScoreResponse,
        assigned="a.item_id",
        imported="j.item_id",
        by_group=True,
    )
    for item_id, group_id, n in rows:
        total[item_id] += n
        by_group[group_id][item_id] += n
    return total, by_group


def scorecard_totals(*, study: Study, item_ids: Collection[int]) -> Counter[int]:
    """Scorecards per item of `item_ids`, in total: the re-count under the lock, which needs no
    groups and so no join to the raters."""
    return _totals(study, Assignment.Kind.SCORECARD, ScoreResponse, item_ids)


def turing_counts(*, study: Study, item_ids: Collection[int] | None = None) -> Counter[int]:
    return _totals(study, Assignment.Kind.TURING, TuringJudgment, item_ids)


def _totals(
    study: Study,
    kind: str,
    judgment: type[ScoreResponse | TuringJudgment],
    item_ids: Collection[int] | None,
) -> Counter[int]:
    counts: Counter[int] = Counter()
    rows = _counted(
        study,
        kind=kind,
        judgment=judgment,
        assigned="a.item_id",
        imported="j.item_id",
        item_ids=item_ids,
    )
    for item_id, n in rows:
        counts[item_id] += n
    return counts


def pair_counts(*, study: Study) -> tuple[Counter[int], dict[int, set[int]]]:
    """Pairings per item and each item's distinct opponents."""
    appearances: Counter[int] = Counter()
    opponents: dict[int, set[int]] = defaultdict(set)
    # One row per distinct (left, right) placement with its count, not one per judgment.
    rows = _counted(
        study,
        kind=Assignment.Kind.PAIR,
        judgment=PairJudgment,
        assigned="a.item_id, a.right_item_id",
        imported="j.left_id, j.right_id",
    )
    for left, right, n in rows:
        appearances[left] += n
        appearances[right] += n
        opponents[left].add(right)
        opponents[right].add(left)
    return appearances, opponents


_AWAITING_VERDICT = CompiledRead(
    lambda rater_id, session_id, item_id: (
        ScoreResponse.objects.select_related("item")
        .filter(
            rater_id=rater_id,
            session_id=session_id,
            item_id=item_id,
            explanation_match="",
            origin="collected",
        )
        .order_by("submitted_at")[:1]
    )
)


def score_response_awaiting_verdict(
    *, rater: Rater, tasks: RaterTasks, session_id: int
) -> ScoreResponse | None:
    """This session's scorecard whose self-explanation is revealed and not yet judged: the
    rater's next page, before any new task.

    Only ever the rater's latest answer: no new task is handed out while a reveal waits, so
    the database is asked only when that answer is a scorecard with an explanation."""
    if tasks.pending_id is not None:
        return None
    answered = [
        t for t in tasks.tasks if t.session_id == session_id and t.status == Assignment.Status.DONE
    ]
    latest = max(answered, key=lambda t: t.position, default=None)
    revealed = tasks.items_revealed()
    if latest is None or latest.item_id not in revealed or latest.kind != Assignment.Kind.SCORECARD:
        return None
    awaiting = _AWAITING_VERDICT(rater.pk, session_id, latest.item_id)
    return awaiting[0] if awaiting else None


def session_done_count(*, session: RaterSession) -> int:
    """Tasks answered in this session, for the progress bar."""
    return Assignment.objects.filter(session=session, status=Assignment.Status.DONE).count()
