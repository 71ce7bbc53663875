"""Reads for assignments: a rater's own tasks, and how far each item is from its targets."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from django.db.models import Count, Q
from django.utils import timezone

from apps.assignments.models import Assignment
from apps.core.errors import NotFound
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Study


def assignment_get_for_rater(*, rater: Rater, assignment_id: int) -> Assignment:
    """The rater's own assignment; someone else's looks exactly like a missing one (404)."""
    assignment = (
        Assignment.objects.select_related("item", "right_item", "session", "study")
        .filter(pk=assignment_id, rater=rater)
        .first()
    )
    if assignment is None:
        raise NotFound("no such task for you", field="assignment")
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


def scorecard_counts(*, study: Study) -> tuple[Counter[int], dict[int, Counter[int]]]:
    """Scorecards per item, in total and per background group of the rater."""
    total: Counter[int] = Counter()
    by_group: dict[int, Counter[int]] = defaultdict(Counter)
    assignments = Assignment.objects.filter(study=study, kind=Assignment.Kind.SCORECARD)
    responses = ScoreResponse.objects.filter(study=study, assignment__isnull=True)
    # Counted by the database: one row per (item, group), not one per scorecard.
    rows = (
        assignments.filter(_live(study))
        .values("item_id", "rater__background_id")
        .annotate(n=Count("pk"))
        .values_list("item_id", "rater__background_id", "n")
    )
    # Judgments imported from elsewhere have no assignment but count toward the targets too.
    imported = (
        responses.values("item_id", "rater__background_id")
        .annotate(n=Count("pk"))
        .values_list("item_id", "rater__background_id", "n")
    )
    for item_id, group_id, n in rows.order_by().union(imported.order_by(), all=True):
        total[item_id] += n
        by_group[group_id][item_id] += n
    return total, by_group


def scorecard_totals(*, study: Study, item_ids: Collection[int]) -> Counter[int]:
    """Scorecards per item of `item_ids`, in total: the re-count under the lock, which needs no
    groups and so no join to the raters."""
    ids = list(item_ids)
    assigned = (
        Assignment.objects.filter(study=study, kind=Assignment.Kind.SCORECARD, item_id__in=ids)
        .filter(_live(study))
        .order_by()
        .values("item_id")
        .annotate(n=Count("pk"))
        .values_list("item_id", "n")
    )
    imported = (
        ScoreResponse.objects.filter(study=study, assignment__isnull=True, item_id__in=ids)
        .order_by()
        .values("item_id")
        .annotate(n=Count("pk"))
        .values_list("item_id", "n")
    )
    counts: Counter[int] = Counter()
    for item_id, n in assigned.union(imported, all=True):
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


def session_progress(*, session: RaterSession, planned: int) -> tuple[int, int]:
    """(done, planned) tasks for the progress bar."""
    done = Assignment.objects.filter(session=session, status=Assignment.Status.DONE).count()
    return done, max(planned, done)
