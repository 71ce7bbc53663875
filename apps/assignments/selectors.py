"""Reads for assignments: a rater's own tasks, and how far each item is from its targets."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection

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
        .first()
    )


def _live(study: Study) -> Q:
    """Assignments that count toward targets: answered, or still open in a live session."""
    return Q(status=Assignment.Status.DONE) | Q(
        status=Assignment.Status.PENDING,
        session__ended_at__isnull=True,
        session__deadline__gt=timezone.now(),
    )


def scorecard_counts(
    *, study: Study, item_ids: Collection[int] | None = None
) -> tuple[Counter[int], dict[int, Counter[int]]]:
    """Scorecards per item (of `item_ids`, or all), in total and per background group of the rater."""
    total: Counter[int] = Counter()
    by_group: dict[int, Counter[int]] = defaultdict(Counter)
    assignments = Assignment.objects.filter(study=study, kind=Assignment.Kind.SCORECARD)
    responses = ScoreResponse.objects.filter(study=study, assignment__isnull=True)
    if item_ids is not None:
        assignments = assignments.filter(item_id__in=list(item_ids))
        responses = responses.filter(item_id__in=list(item_ids))
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
    for item_id, group_id, n in [*rows, *imported]:
        total[item_id] += n
        by_group[group_id][item_id] += n
    return total, by_group


def turing_counts(*, study: Study, item_ids: Collection[int] | None = None) -> Counter[int]:
    counts: Counter[int] = Counter()
    for queryset in (
        Assignment.objects.filter(study=study, kind=Assignment.Kind.TURING).filter(_live(study)),
        TuringJudgment.objects.filter(study=study, assignment__isnull=True),
    ):
        if item_ids is not None:
            queryset = queryset.filter(item_id__in=list(item_ids))
        for item_id, n in (
            queryset.values("item_id").annotate(n=Count("pk")).values_list("item_id", "n")
        ):
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
    for left, right, n in [*rows, *imported]:
        appearances[left] += n
        appearances[right] += n
        opponents[left].add(right)
        opponents[right].add(left)
    return appearances, opponents


def items_seen_by_rater(*, rater: Rater) -> set[int]:
    seen: set[int] = set()
    for item_id, right_id in Assignment.objects.filter(rater=rater).values_list(
        "item_id", "right_item_id"
    ):
        seen.add(item_id)
        if right_id is not None:
            seen.add(right_id)
    return seen


def session_progress(*, session: RaterSession, planned: int) -> tuple[int, int]:
    """(done, planned) tasks for the progress bar."""
    done = Assignment.objects.filter(session=session, status=Assignment.Status.DONE).count()
    return done, max(planned, done)
