"""Reads for assignments: a rater's own tasks, and how far each item is from its targets."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.core.errors import NotFound
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Study


def assignment_get_for_rater(*, rater: Rater, assignment_id: int) -> Assignment:
    """The rater's own assignment, with its (left) item and session; someone else's looks
    exactly like a missing one (404).

    Its study is the rater's, as the caller read it (with the rubric): joining the study again
    cost more than the rest of the query on every answer.
    """
    assignment = (
        Assignment.objects.select_related("item", "session")
        .filter(pk=assignment_id, rater=rater)
        .first()
    )
    if assignment is None:
        raise NotFound("no such task for you", field="assignment")
    if assignment.study_id == rater.study_id:
        assignment.study = rater.study
    return assignment


def assignment_pending_for_rater(*, rater: Rater) -> Assignment | None:
    return (
        Assignment.objects.select_related("item", "right_item", "session")
        .filter(rater=rater, status=Assignment.Status.PENDING)
        .order_by()
        .first()
    )


@dataclass(frozen=True)
class _Task:
    pk: int
    kind: str
    status: str
    item_id: int
    right_item_id: int | None
    session_id: int
    position: int


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

    def pairs_compared(self) -> set[tuple[int, int]]:
        return {
            (min(t.item_id, t.right_item_id), max(t.item_id, t.right_item_id))
            for t in self.tasks
            if t.kind == Assignment.Kind.PAIR and t.right_item_id is not None
        }


def rater_tasks(*, rater: Rater) -> RaterTasks:
    rows = (
        Assignment.objects.filter(rater=rater)
        .order_by()
        .values_list("pk", "kind", "status", "item_id", "right_item_id", "session_id", "position")
    )
    return RaterTasks(tuple(_Task(*row) for row in rows))


def _live(study: Study) -> Q:
    """Assignments that count toward targets: answered, or still open in a live session."""
    return Q(status=Assignment.Status.DONE) | Q(
        status=Assignment.Status.PENDING,
        session__ended_at__isnull=True,
        session__deadline__gt=timezone.now(),
    )


# The two scorecard counts run on every scorecard task a rater is given. They are written in
# SQL (portable: PostgreSQL and SQLite) because building them with the ORM cost more CPU than
# running them; tests/assignments/test_counts.py holds them to the same counts made with the ORM.
# The assignment half is `_live` above, as SQL.
_LIVE_SCORECARDS = """
    SELECT a.item_id, {group} AS grp, COUNT(*)
    FROM {assignment} a
    JOIN {session} s ON s.id = a.session_id
    {rater_join}
    WHERE a.study_id = %s AND a.kind = %s {items}
      AND (a.status = %s OR (a.status = %s AND s.ended_at IS NULL AND s.deadline > %s))
    GROUP BY a.item_id{group_by}
    UNION ALL
    SELECT sr.item_id, {group} AS grp, COUNT(*)
    FROM {response} sr
    {imported_rater_join}
    WHERE sr.study_id = %s AND sr.assignment_id IS NULL {imported_items}
    GROUP BY sr.item_id{group_by}
"""


def _scorecard_rows(
    study: Study, *, by_group: bool, item_ids: list[int] | None
) -> list[tuple[int, int | None, int]]:
    """(item, background group or None, scorecards): live assignments plus imported scores."""
    in_items = ""
    params_items: list[int] = []
    if item_ids is not None:
        if not item_ids:
            return []
        in_items = "AND {alias}.item_id IN (" + ", ".join(["%s"] * len(item_ids)) + ")"
        params_items = list(item_ids)
    rater_table = Rater._meta.db_table
    sql = _LIVE_SCORECARDS.format(
        assignment=Assignment._meta.db_table,
        session=RaterSession._meta.db_table,
        response=ScoreResponse._meta.db_table,
        group="r.background_id" if by_group else "NULL",
        group_by=", r.background_id" if by_group else "",
        rater_join=f"JOIN {rater_table} r ON r.id = a.rater_id" if by_group else "",
        imported_rater_join=f"JOIN {rater_table} r ON r.id = sr.rater_id" if by_group else "",
        items=in_items.format(alias="a"),
        imported_items=in_items.format(alias="sr"),
    )
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    live = [Assignment.Status.DONE.value, Assignment.Status.PENDING.value, now]
    kind = Assignment.Kind.SCORECARD.value
    params = [study.pk, kind, *params_items, *live, study.pk, *params_items]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(int(item), group, int(n)) for item, group, n in cursor.fetchall()]


def scorecard_counts(*, study: Study) -> tuple[Counter[int], dict[int, Counter[int]]]:
    """Scorecards per item, in total and per background group of the rater: answered or still
    open in a live session, plus scores imported from elsewhere (they count toward targets)."""
    total: Counter[int] = Counter()
    by_group: dict[int, Counter[int]] = defaultdict(Counter)
    for item_id, group_id, n in _scorecard_rows(study, by_group=True, item_ids=None):
        total[item_id] += n
        by_group[group_id][item_id] += n  # type: ignore[index]
    return total, by_group


def scorecard_totals(*, study: Study, item_ids: Collection[int]) -> Counter[int]:
    """Scorecards per item of `item_ids`, in total: the re-count under the lock, which needs no
    groups and so no join to the raters."""
    counts: Counter[int] = Counter()
    for item_id, _, n in _scorecard_rows(study, by_group=False, item_ids=list(item_ids)):
        counts[item_id] += n
    return counts


def turing_counts(*, study: Study, item_ids: Collection[int] | None = None) -> Counter[int]:
    counts: Counter[int] = Counter()
    assigned = Assignment.objects.filter(study=study, kind=Assignment.Kind.TURING).filter(
        _live(study)
    )
    imported = TuringJudgment.objects.filter(study=study, assignment__isnull=True)
    if item_ids is not None:
        assigned = assigned.filter(item_id__in=list(item_ids))
        imported = imported.filter(item_id__in=list(item_ids))
    grouped = [
        queryset.order_by().values("item_id").annotate(n=Count("pk")).values_list("item_id", "n")
        for queryset in (assigned, imported)
    ]
    for item_id, n in grouped[0].union(grouped[1], all=True):
        counts[item_id] += n
    return counts


def pair_counts(*, study: Study) -> tuple[Counter[int], dict[int, set[int]]]:
    """Pairings per item and each item's distinct opponents."""
    appearances: Counter[int] = Counter()
    opponents: dict[int, set[int]] = defaultdict(set)
    # One row per distinct (left, right) placement with its count, not one per judgment.
    rows = (
        Assignment.objects.filter(study=study, kind=Assignment.Kind.PAIR)
        .filter(_live(study))
        .values("item_id", "right_item_id")
        .annotate(n=Count("pk"))
        .values_list("item_id", "right_item_id", "n")
    )
    imported = (
        PairJudgment.objects.filter(study=study, assignment__isnull=True)
        .values("left_id", "right_id")
        .annotate(n=Count("pk"))
        .values_list("left_id", "right_id", "n")
    )
    for left, right, n in rows.order_by().union(imported.order_by(), all=True):
        appearances[left] += n
        appearances[right] += n
        opponents[left].add(right)
        opponents[right].add(left)
    return appearances, opponents


def session_done_count(*, session: RaterSession) -> int:
    """Tasks answered in this session, for the progress bar."""
    return Assignment.objects.filter(session=session, status=Assignment.Status.DONE).count()
