"""The counts the task chooser ranks candidates by, and the items it ranks, kept per process
for a few seconds.

Ranking needs every item's count: scorecards per item and per background group, pairings and
opponents, Turing judgments. Counting them reads every judgment of the study. On a study of
50,000 scorecards and 100,000 pair judgments that took about 50 ms for the scorecards and 70 ms
for the pairs, on every task given (benchmarks/bench_task_choice.py).

The ranking only decides the order in which candidates are tried. Whether a candidate is still
below its target is re-counted exactly, under its lock (services._first_below_target). So a
ranking a few seconds old never pushes an item past its target; at worst it tries a full item
first and moves on.

So each process keeps the counts for `TASK_COUNTS_MAX_AGE_SECONDS`. It adds its own new tasks to
them as they commit, so a process never ranks against an older view of its own work. Other
processes' tasks reach it within that age. The chooser never decides "nothing left to give" on
kept counts: it ranks again on fresh ones first. With 0 (the test settings), every ranking counts
afresh.

The study's items are kept the same way: reading every item on every task grows with the
study (2,000 rows a task on bench_task_choice.py's study). An item added since reaches the
ranking within the age, and "nothing left" is decided on the items as they are now too. An item
the offense filter held, or screening moved out of the study, since it was kept is never given:
the lock that gives an item out checks the row itself (services._lock).

Entries are replaced, never changed in place: a thread may be ranking on one while another
thread adds a task to the next.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from django.conf import settings

from apps.assignments import selectors
from apps.assignments.models import Assignment
from apps.studies.models import Study

T = TypeVar("T")


class Ranking(NamedTuple):
    """Counts to rank by, and whether they were kept from an earlier request."""

    counts: Any
    kept: bool


_entries: dict[tuple[int, str], tuple[float, Any]] = {}
_lock = threading.Lock()


def _max_age() -> float:
    return float(settings.TASK_COUNTS_MAX_AGE_SECONDS)


def _get(study: Study, kind: str, load: Callable[[], T], *, fresh: bool) -> Ranking:
    key = (study.pk, kind)
    max_age = _max_age()
    started = time.monotonic()  # before the count: the entry is at least as old as its data
    if not fresh and max_age > 0:
        entry = _entries.get(key)
        if entry is not None and started - entry[0] < max_age:
            return Ranking(entry[1], kept=True)
    counts = load()
    if max_age > 0:
        with _lock:
            _entries[key] = (started, counts)
    return Ranking(counts, kept=False)


def scorecards(*, study: Study, fresh: bool = False) -> Ranking:
    """(total, by_group), as selectors.scorecard_counts."""
    return _get(
        study,
        Assignment.Kind.SCORECARD,
        lambda: selectors.scorecard_counts(study=study),
        fresh=fresh,
    )


def turing(*, study: Study, fresh: bool = False) -> Ranking:
    """Turing judgments per item, as selectors.turing_counts."""
    return _get(
        study, Assignment.Kind.TURING, lambda: selectors.turing_counts(study=study), fresh=fresh
    )


def pairs(*, study: Study, fresh: bool = False) -> Ranking:
    """(appearances, opponents), as selectors.pair_counts."""
    return _get(
        study, Assignment.Kind.PAIR, lambda: selectors.pair_counts(study=study), fresh=fresh
    )


def background_groups(*, study: Study) -> Ranking:
    """How many background groups the study has: a scorecard's per-group target divides its
    target among them, and that target only orders the candidates, like the counts above."""
    return _get(
        study,
        "background-groups",
        lambda: selectors.background_group_count(study=study),
        fresh=False,
    )


def study_items(*, study: Study, fresh: bool = False) -> Ranking:
    """The study's items the chooser ranks, as selectors.study_items_to_rank."""
    return _get(study, "items", lambda: selectors.study_items_to_rank(study=study), fresh=fresh)


def _added(counts: Any, kind: str, item_id: int, right_id: int | None, group_id: int | None) -> Any:
    """A copy of kept counts with one more task of this kind."""
    if kind == Assignment.Kind.SCORECARD:
        total, by_group = counts
        total = Counter(total)
        total[item_id] += 1
        by_group = dict(by_group)
        by_group[group_id] = Counter(by_group.get(group_id, ()))
        by_group[group_id][item_id] += 1
        return total, by_group
    if kind == Assignment.Kind.TURING:
        total = Counter(counts)
        total[item_id] += 1
        return total
    appearances, opponents = counts
    assert right_id is not None
    appearances = Counter(appearances)
    appearances[item_id] += 1
    appearances[right_id] += 1
    opponents = dict(opponents)
    opponents[item_id] = {*opponents.get(item_id, ()), right_id}
    opponents[right_id] = {*opponents.get(right_id, ()), item_id}
    return appearances, opponents


def note_assigned(
    *, study_id: int, kind: str, item_id: int, right_item_id: int | None, group_id: int | None
) -> None:
    """Add a task this process just committed to the kept counts of its study, if any."""
    key = (study_id, kind)
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries[key] = (entry[0], _added(entry[1], kind, item_id, right_item_id, group_id))


def forget_all() -> None:
    """Drop every kept count (tests, and a process that wants to start clean)."""
    with _lock:
        _entries.clear()
