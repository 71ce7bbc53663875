"""Choosing a rater's next task. The server decides; the page shows what it is given.

Rules, in order:
- one open task per rater: asking again returns the same task;
- the kind is drawn from the study's task mix with a generator seeded by (study seed, rater,
  position), so a session's sequence is reproducible; attention checks at the study's rate;
- scorecards go to the items furthest below their target, counting first the rater's own
  background group (balanced coverage), then the total;
- Turing judgments only on items this rater has never been shown;
- every task is in a language the rater reads (Rater.languages);
- pairs are two items of the same topic (and level when possible) and language (unless the
  study allows cross-language pairs) that this rater has not compared, preferring items below their minimum pairings or opponents; with adaptive pairing,
  after a warm-up the most informative pair under the current Bradley-Terry estimates;
- the item given out is locked (SELECT ... FOR NO KEY UPDATE SKIP LOCKED, the first free
  candidate in rank order) and its count re-read under the lock, so concurrent raters never
  push an item past its target;
- the ranking itself may use counts this process read a few seconds before (ranking_counts):
  only the order of the candidates depends on them, and "nothing left" is decided on fresh ones;
- "every candidate is locked by someone else right now" is not "nothing left": the choice is
  rolled back and made again after a short pause, so a busy moment never ends a session.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import NamedTuple

import numpy as np
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from apps.assignments import ranking_counts, selectors
from apps.assignments.models import Assignment
from apps.core.compiled import CompiledInsert, prepared_read
from apps.core.errors import Busy
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Item, Study

CANDIDATES_PER_LOCK = 12
ADAPTIVE_WARMUP_PAIRS = 20
# When every candidate was locked by other raters' choices (each holds its locks a few
# milliseconds): how often, and after what pauses, the choice is made again.
BUSY_RETRY_PAUSES = (0.01, 0.02, 0.05, 0.1, 0.2)


class _AllLocked(Exception):
    """Candidates exist, but other transactions hold every one of them this moment."""


# Raters and items enter the random draws by their external ids, not their primary keys: the
# ids are fixed by the study (Prolific PID, the items file), while primary keys depend on
# whatever else the database holds, so the same study and seed replay the same sequence.
def _rng(study: Study, rater: Rater, position: int) -> np.random.Generator:
    rater_key = int.from_bytes(
        hashlib.blake2b(rater.external_id.encode(), digest_size=8).digest(), "big"
    )
    return np.random.default_rng([study.random_seed, rater_key, position])


def _tiebreak(study: Study, rater: Rater, item_key: str) -> str:
    """A fixed pseudo-random order per rater, so raters do not all queue on the same item."""
    return hashlib.blake2b(
        f"{study.random_seed}:{rater.external_id}:{item_key}".encode(), digest_size=8
    ).hexdigest()


def _lock(ids: Sequence[int], held: dict[int, Item], *, first_only: bool = False) -> list[int]:
    """Of `ids`, in the given order, those this transaction could lock now and that may still
    be given out; with `first_only`, just the first such one. The rows locked are read whole
    into `held`: the one given out is shown on the page, and reading it again after the insert
    cost a statement.

    "May still be given out" is checked here, on the row itself, because the candidates come
    from the study's items as kept for a few seconds (ranking_counts.study_items): an item the
    offense filter held, or screening moved out of the study, since then is never given.

    FOR NO KEY UPDATE, not FOR UPDATE: a submission's insert that refers to the item checks its
    foreign key with a KEY SHARE lock, which FOR UPDATE would make wait for this whole choice
    (and each choice used to hold a dozen items). Only the item(s) given out are locked.

    Written in SQL: it runs on every task page, and building it with the ORM (a CASE per
    candidate for the order) cost ten times more than running it. SQLite has no row locks;
    there a write transaction is IMMEDIATE and already holds the whole database, so the rows
    are only read.
    """
    if not ids:
        return []
    table = Item._meta.db_table
    # The same items as selectors.study_items_to_rank: in the study stage, not attention checks.
    eligible = "stage = %s AND NOT is_attention_check"
    if connection.features.has_select_for_update_skip_locked:
        lock = connection.ops.for_update_sql(skip_locked=True, no_key=True)
        # ORDER BY + LIMIT 1 with SKIP LOCKED: the database locks the first free row in rank
        # order and stops there.
        order = "ORDER BY array_position(%s, id) LIMIT 1" if first_only else ""
        sql = f"SELECT * FROM {table} WHERE id = ANY(%s) AND {eligible} {order} {lock}"
        params: list[object] = [list(ids), Item.Stage.STUDY.value]
        if first_only:
            params.append(list(ids))
        # Planned once per connection: the candidates are one array, so the text is fixed.
        rows = prepared_read(sql).run(
            lambda text: list(Item.objects.raw(text, params)), len(params)
        )
    else:
        sql = f"SELECT * FROM {table} WHERE id IN ({', '.join(['%s'] * len(ids))}) AND {eligible}"
        rows = list(Item.objects.raw(sql, [*ids, Item.Stage.STUDY.value]))
    found = {item.pk: item for item in rows}
    chosen = [pk for pk in ids if pk in found]
    if first_only:
        chosen = chosen[:1]
    held.update((pk, found[pk]) for pk in chosen)
    return chosen


def _first_below_target(
    ids: Sequence[int], below: Callable[[int], bool], held: dict[int, Item]
) -> int | None:
    """The first of `ids` (in rank order) that this transaction locks and that is still below
    its target, re-counted under the lock: another rater may have taken the last place since
    the ranking was read. Raises _AllLocked when every remaining candidate is locked."""
    remaining = list(ids)
    while remaining:
        locked = _lock(remaining, held, first_only=True)
        if not locked:
            raise _AllLocked
        pk = locked[0]
        if below(pk):
            return pk
        remaining = remaining[remaining.index(pk) + 1 :]
    return None


class _Candidate(NamedTuple):
    """What the choosers need of an item: read as plain rows, not model instances, because
    every task page reads every item of the study."""

    pk: int
    external_id: str
    topic: str
    level: str
    language: str


# Every task handed out is one INSERT, compiled once (apps/core/compiled.py).
_NEW_ASSIGNMENT = CompiledInsert(Assignment)


def _study_items(study: Study, rater: Rater, *, fresh: bool) -> tuple[list[_Candidate], bool]:
    """The study's items this rater may be given: those in a language they read (every item
    when they stated none: imported, or enrolled before raters were asked); and whether they
    were kept from an earlier request (ranking_counts.study_items)."""
    reads = set(rater.languages or ())
    listing = ranking_counts.study_items(study=study, fresh=fresh)
    return [
        _Candidate(*row) for row in listing.counts if not reads or row[4] in reads
    ], listing.kept


def _choose_scorecard_item(
    study: Study,
    rater: Rater,
    items: list[_Candidate],
    tasks: selectors.RaterTasks,
    held: dict[int, Item],
) -> int | None:
    done = tasks.items_of_kind(Assignment.Kind.SCORECARD)
    target = study.target_scorecards_per_item
    n_groups = max(1, ranking_counts.background_groups(study=study).counts)
    per_group_target = -(-target // n_groups)
    # A second ranking, on fresh counts, if the first was on kept ones or every candidate
    # filled up meanwhile: "nothing left" is only ever decided on fresh counts.
    for fresh in (False, True):
        ranking = ranking_counts.scorecards(study=study, fresh=fresh)
        total, by_group = ranking.counts
        mine: Counter[int] = by_group.get(rater.background_id, Counter())
        ranked = sorted(
            (
                min(mine.get(item.pk, 0), per_group_target),
                total[item.pk],
                _tiebreak(study, rater, item.external_id),
                item.pk,
            )
            for item in items
            if item.pk not in done and total[item.pk] < target
        )
        if not ranked:
            if ranking.kept:
                continue
            return None
        chosen = _first_below_target(
            [row[3] for row in ranked[:CANDIDATES_PER_LOCK]],
            lambda pk: selectors.scorecard_totals(study=study, item_ids=[pk])[pk] < target,
            held,
        )
        if chosen is not None:
            return chosen
    return None


def _choose_turing_item(
    study: Study,
    rater: Rater,
    items: list[_Candidate],
    tasks: selectors.RaterTasks,
    held: dict[int, Item],
) -> int | None:
    seen = tasks.items_shown()
    target = study.turing_judgments_per_item
    for fresh in (False, True):
        ranking = ranking_counts.turing(study=study, fresh=fresh)
        counts = ranking.counts
        ranked = sorted(
            (counts[item.pk], _tiebreak(study, rater, item.external_id), item.pk)
            for item in items
            if item.pk not in seen and counts[item.pk] < target
        )
        chosen = _first_below_target(
            [row[2] for row in ranked[:CANDIDATES_PER_LOCK]],
            lambda pk: selectors.turing_counts(study=study, item_ids=[pk])[pk] < target,
            held,
        )
        if chosen is not None or not ranking.kept:
            return chosen
    return None


def _pair_need(
    study: Study, pk: int, appearances: dict[int, int], opponents: dict[int, set[int]]
) -> int:
    short_appearances = max(0, study.pair_appearances_per_item - appearances.get(pk, 0))
    short_opponents = max(0, study.pair_min_opponents - len(opponents.get(pk, set())))
    return max(short_appearances, short_opponents)


def _candidate_pairs(
    study: Study, items: list[_Candidate], tasks: selectors.RaterTasks
) -> list[tuple[int, int]]:
    """Pairs of one topic and level, or of one topic across levels when there are none; both
    items in one language unless the study allows cross-language pairs (`items` are already
    only those in the rater's languages)."""
    compared = tasks.pairs_compared()
    within_language = not study.allow_cross_language_pairs
    by_topic: dict[tuple[str, str, str], list[int]] = {}
    for item in items:
        language = item.language if within_language else ""
        by_topic.setdefault((item.topic, item.level, language), []).append(item.pk)
    pairs = [
        (a, b)
        for members in by_topic.values()
        for i, a in enumerate(members)
        for b in members[i + 1 :]
        if (min(a, b), max(a, b)) not in compared
    ]
    if not pairs:
        # Same topic across levels when a topic has one item per level.
        by_topic_only: dict[tuple[str, str], list[int]] = {}
        for item in items:
            language = item.language if within_language else ""
            by_topic_only.setdefault((item.topic, language), []).append(item.pk)
        pairs = [
            (a, b)
            for members in by_topic_only.values()
            for i, a in enumerate(members)
            for b in members[i + 1 :]
            if (min(a, b), max(a, b)) not in compared
        ]
    return pairs


def _adaptive_order(
    study: Study, pairs: list[tuple[int, int]], items: list[_Candidate]
) -> list[tuple[int, int]]:
    """Pairs ordered by the value of one more judgment under the current Bradley-Terry fit.

    The value is the statistics engine's (`stats.active.pair_values`, the criterion measured
    in benchmarks/sim_active_pairs.py), computed per topic: pairs never cross topics, so each
    topic is its own small comparison graph and the fit stays cheap on large studies.
    """
    from apps.analysis.stats.active import pair_values
    from apps.judgments.models import PairJudgment

    rows = list(
        PairJudgment.objects.filter(study=study)
        .exclude(outcome=PairJudgment.Outcome.NEITHER)
        .values_list("winner_id", "left_id", "right_id")
    )
    if len(rows) < ADAPTIVE_WARMUP_PAIRS:
        return pairs
    topic = {item.pk: item.topic for item in items}
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for pair in pairs:
        by_topic.setdefault(topic[pair[0]], []).append(pair)
    valued: list[tuple[float, tuple[int, int]]] = []
    for name, group in by_topic.items():
        members = sorted(
            {pk for pair in group for pk in pair} | {pk for pk, t in topic.items() if t == name}
        )
        index = {pk: i for i, pk in enumerate(members)}
        wins = np.zeros((len(members), len(members)))
        for winner, left, right in rows:
            if left not in index or right not in index:
                continue
            if winner is None:
                # A tie: half a win each way, the usual reading of a draw in paired comparisons.
                wins[index[left], index[right]] += 0.5
                wins[index[right], index[left]] += 0.5
            else:
                loser = right if winner == left else left
                wins[index[winner], index[loser]] += 1
        values = pair_values(
            wins, np.array([(index[a], index[b]) for a, b in group], dtype=np.int64)
        )
        valued.extend(zip(values.tolist(), group, strict=True))
    return [pair for _, pair in sorted(valued, key=lambda entry: -entry[0])]


def _choose_pair(
    study: Study,
    rater: Rater,
    items: list[_Candidate],
    tasks: selectors.RaterTasks,
    rng: np.random.Generator,
    held: dict[int, Item],
) -> tuple[int, int, str] | None:
    pairs = _candidate_pairs(study, items, tasks)
    if not pairs:
        return None
    for fresh in (False, True):
        ranking = ranking_counts.pairs(study=study, fresh=fresh)
        chosen = _choose_pair_by(study, rater, items, pairs, ranking.counts, rng, held)
        if chosen is not None or not ranking.kept:
            return chosen
    return None


def _choose_pair_by(
    study: Study,
    rater: Rater,
    items: list[_Candidate],
    pairs: list[tuple[int, int]],
    counts: tuple[Counter[int], dict[int, set[int]]],
    rng: np.random.Generator,
    held: dict[int, Item],
) -> tuple[int, int, str] | None:
    appearances, opponents = counts
    external = {item.pk: item.external_id for item in items}
    need = {item.pk: _pair_need(study, item.pk, appearances, opponents) for item in items}
    needy = [(need[a] + need[b], a, b) for a, b in pairs if need[a] or need[b]]
    reason = "coverage"
    if needy:
        # Most needy first, ties in the rater's own random order. Only the pairs that can be
        # among the first CANDIDATES_PER_LOCK get their tie-break (a hash each): a large study
        # has thousands of needy pairs.
        cutoff = heapq.nlargest(CANDIDATES_PER_LOCK, (total for total, _, _ in needy))[-1]
        ranked = [
            (a, b)
            for _, _, a, b in sorted(
                (-total, _tiebreak(study, rater, f"{external[a]}|{external[b]}"), a, b)
                for total, a, b in needy
                if total >= cutoff
            )
        ]
    elif study.adaptive_pairing:
        ranked = _adaptive_order(study, pairs, items)
        reason = "adaptive"
    else:
        return None
    for a, b in ranked[:CANDIDATES_PER_LOCK]:
        if len(_lock([a, b], held)) == 2:
            left, right = (a, b) if rng.random() < 0.5 else (b, a)
            return left, right, reason
    if ranked:
        raise _AllLocked
    return None


def _choose_attention_item(study: Study, rater: Rater, tasks: selectors.RaterTasks) -> int | None:
    done = {task.item_id for task in tasks.tasks}
    reads = set(rater.languages or ())
    gold = [
        (_tiebreak(study, rater, external_id), pk)
        for pk, external_id, language in Item.objects.filter(
            study=study, is_attention_check=True, stage=Item.Stage.STUDY
        )
        .order_by()
        .values_list("pk", "external_id", "language")
        if pk not in done and (not reads or language in reads)
    ]
    return min(gold)[1] if gold else None


def _share(value: object) -> float:
    """A stored task-mix share as a weight; anything but a finite non-negative number is 0
    (the settings refuse such shares, see apps.studies.rules; this guards older rows)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    try:
        share = float(value)
    except OverflowError:
        return 0.0
    return share if math.isfinite(share) and share > 0 else 0.0


def _kind_order(study: Study, rng: np.random.Generator) -> list[str]:
    """Kinds in the order to try: one drawn by the task mix first, the rest by weight."""
    mix = {kind: _share((study.task_mix or {}).get(kind)) for kind in Assignment.Kind.values}
    kinds = [kind for kind, weight in mix.items() if weight > 0]
    if not kinds:
        return []
    weights = np.array([mix[kind] for kind in kinds])
    weights = weights / weights.max()  # shares near the float limit would sum to infinity
    first = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
    return [first, *sorted((k for k in kinds if k != first), key=lambda k: -mix[k])]


def _choose_kind(
    kind: str,
    study: Study,
    rater: Rater,
    items: list[_Candidate],
    tasks: selectors.RaterTasks,
    rng: np.random.Generator,
    held: dict[int, Item],
) -> dict[str, object] | None:
    """The new assignment's fields for a task of this kind, or None if there is none to give.
    The items locked on the way are read into `held`."""
    if kind == Assignment.Kind.SCORECARD:
        pk = _choose_scorecard_item(study, rater, items, tasks, held)
        return None if pk is None else {"kind": kind, "item_id": pk, "reason": "coverage"}
    if kind == Assignment.Kind.TURING:
        pk = _choose_turing_item(study, rater, items, tasks, held)
        return None if pk is None else {"kind": kind, "item_id": pk, "reason": "first_exposure"}
    chosen = _choose_pair(study, rater, items, tasks, rng, held)
    if chosen is None:
        return None
    return {"kind": kind, "item_id": chosen[0], "right_item_id": chosen[1], "reason": chosen[2]}


def _choose(
    study: Study,
    rater: Rater,
    tasks: selectors.RaterTasks,
    rng: np.random.Generator,
    held: dict[int, Item],
) -> dict[str, object] | None:
    """The new task's fields, trying each kind in the study's mix order; None when there is
    nothing to give. Raises _AllLocked when candidates exist but others hold every one.

    The kept items are tried first (ranking_counts.study_items). When they give nothing, the
    study's items as they are now are tried before "nothing left" or "all taken" is decided.
    """
    # Items whose self-explanation this rater was shown never come back to them.
    revealed = tasks.items_revealed()
    kinds = _kind_order(study, rng)
    all_locked = False
    for fresh in (False, True):
        listing, kept = _study_items(study, rater, fresh=fresh)
        items = [item for item in listing if item.pk not in revealed]
        all_locked = False
        for kind in kinds:
            try:
                fields = _choose_kind(kind, study, rater, items, tasks, rng, held)
            except _AllLocked:
                all_locked = True  # another kind may still be free
            else:
                if fields is not None:
                    return fields
        if not kept:
            break
    if all_locked:
        raise _AllLocked
    return None


def _with_items(assignment: Assignment, held: dict[int, Item]) -> Assignment:
    """The new assignment with its item(s), for the page that shows them: as their lock read
    them, else (an attention check) in one query."""
    ids = [assignment.item_id]
    if assignment.right_item_id is not None:
        ids.append(assignment.right_item_id)
    items = {pk: held[pk] for pk in ids if pk in held}
    if len(items) < len(ids):
        items = Item.objects.in_bulk(ids)
    assignment.item = items[assignment.item_id]
    if assignment.right_item_id is not None:
        assignment.right_item = items[assignment.right_item_id]
    return assignment


def assignment_next(
    *,
    rater: Rater,
    session: RaterSession,
    tasks: selectors.RaterTasks | None = None,
    now: datetime | None = None,
) -> Assignment | None:
    """The rater's open task, or a new one; None when the session has nothing left to give.

    The caller checks the session is open first (raters.services.rater_session_check_open).
    `tasks` is the rater's own assignments (selectors.rater_tasks), read here if not given; the
    task page passes the one it also uses for the progress bar.
    """
    for pause in (*BUSY_RETRY_PAUSES, None):
        try:
            with transaction.atomic():
                return _assignment_next(rater=rater, session=session, tasks=tasks)
        except (_AllLocked, _Raced):
            pass  # rolled back, so this request holds no lock while it waits
        if pause is None:
            break
        time.sleep(pause)
        tasks = None  # the other request may have been this rater's, in another tab
    raise Busy("every task is being handed to someone else this moment; please try again")


def assignment_next_in_transaction(
    *, rater: Rater, session: RaterSession, tasks: selectors.RaterTasks | None = None
) -> Assignment | None:
    """`assignment_next` inside the caller's transaction (an answer's, so that the answer and
    the task after it are one commit): one try, with no savepoint and no wait.

    Raises Busy when others hold every candidate this moment, or another tab's task was
    handed out and answered meanwhile; nothing is written then, and the caller's transaction
    stays as it was, so the caller may commit what it did and let the next page ask again.
    """
    if not transaction.get_connection().in_atomic_block:
        raise TransactionManagementError("assignment_next_in_transaction needs a transaction")
    try:
        return _assignment_next(rater=rater, session=session, tasks=tasks)
    except (_AllLocked, _Raced):
        raise Busy(
            "every task is being handed to someone else this moment; please try again"
        ) from None


class _Raced(Exception):
    """Another request of this rater (a second tab) handed out a task, and it was answered,
    between this request's read of the rater's tasks and its insert: choose again, from a
    fresh view."""


def _assignment_next(
    *, rater: Rater, session: RaterSession, tasks: selectors.RaterTasks | None
) -> Assignment | None:
    """The choice itself, in the caller's transaction. Raises _AllLocked or _Raced having
    written nothing, and leaves the transaction usable (no statement failed)."""
    if tasks is None:
        tasks = selectors.rater_tasks(rater=rater)
    if tasks.pending_id is not None:
        pending = selectors.assignment_pending_for_rater(rater=rater)
        if pending is not None:
            return pending
        # Answered or expired since `tasks` was read: choose from a fresh view.
        tasks = selectors.rater_tasks(rater=rater)
    study = rater.study
    position = tasks.next_position(session_id=session.pk)
    if position > study.tasks_per_session:
        return None
    rng = _rng(study, rater, position)
    fields: dict[str, object] | None = None
    if study.attention_check_rate > 0 and rng.random() < study.attention_check_rate:
        gold = _choose_attention_item(study, rater, tasks)
        if gold is not None:
            fields = {
                "kind": Assignment.Kind.SCORECARD,
                "item_id": gold,
                "is_attention_check": True,
                "reason": "attention",
            }
    held: dict[int, Item] = {}
    if fields is None:
        fields = _choose(study, rater, tasks, rng, held)
    if fields is None:
        return None
    created = _NEW_ASSIGNMENT.unless_conflict(
        study=study, rater=rater, session=session, position=position, **fields
    )
    if created is None:
        # The same rater asked twice at once (two tabs): the other request's task stands. Its
        # insert is committed (a conflicting insert waits for it), so this statement sees it.
        pending = selectors.assignment_pending_for_rater(rater=rater)
        if pending is not None:
            return pending
        raise _Raced
    transaction.on_commit(
        partial(
            ranking_counts.note_assigned,
            study_id=study.pk,
            kind=created.kind,
            item_id=created.item_id,
            right_item_id=created.right_item_id,
            group_id=rater.background_id,
        )
    )
    return _with_items(created, held)


def assignments_expire_for_session(*, session: RaterSession) -> int:
    return Assignment.objects.filter(session=session, status=Assignment.Status.PENDING).update(
        status=Assignment.Status.EXPIRED, completed_at=timezone.now()
    )


# Written in SQL, as _lock is: every answer closes its task, and the ORM's UPDATE compiler
# cost more CPU than the statement. The status condition is what makes a concurrent second
# answer find nothing to close.
_COMPLETE = (
    f"UPDATE {Assignment._meta.db_table} SET status = %s, completed_at = %s, "
    "attention_passed = %s WHERE id = %s AND status = %s"
)


def assignment_complete(*, assignment: Assignment, attention_passed: bool | None = None) -> bool:
    """Mark an open task answered; False when it was not open any more (a concurrent answer)."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            _COMPLETE,
            [
                Assignment.Status.DONE.value,
                now,
                attention_passed,
                assignment.pk,
                Assignment.Status.PENDING.value,
            ],
        )
        return cursor.rowcount > 0
