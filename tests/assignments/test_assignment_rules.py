"""The rules for handing out tasks (apps/assignments/services.py), one test per rule."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta

import pytest
from django.test import Client

from apps.assignments.models import Assignment
from apps.assignments.services import assignment_next
from apps.core.errors import SessionExpired
from apps.judgments.models import PairJudgment, ScoreResponse
from apps.judgments.submission import (
    AnswerIn,
    pair_judgment_submit,
    turing_judgment_submit,
)
from apps.raters.models import Rater, RaterSession
from apps.raters.services import rater_session_check_open
from apps.studies.models import Item, Study
from tests.assignments.helpers import enroll
from tests.factories import AssignmentFactory, ItemFactory, StudyFactory
from tests.scorecards import submit_scorecard

pytestmark = pytest.mark.django_db

SEED = 20260417


def _study(**fields: object) -> Study:
    values: dict[str, object] = {
        "task_mix": {"scorecard": 1.0},
        "attention_check_rate": 0,
        "tasks_per_session": 40,
        "random_seed": SEED,
    }
    values.update(fields)
    return StudyFactory(**values)


def _items(study: Study, n: int, *, prefix: str = "j", **fields: object) -> list[Item]:
    start = Item.objects.filter(study=study, external_id__startswith=prefix).count()
    return [
        ItemFactory(study=study, external_id=f"{prefix}{start + i:03d}", **fields) for i in range(n)
    ]


def _answer(rater: Rater, assignment: Assignment, *, funniness: int = 5) -> None:
    key = uuid.uuid4().hex
    if assignment.kind == Assignment.Kind.SCORECARD:
        submit_scorecard(
            rater=rater,
            assignment_id=assignment.pk,
            idempotency_key=key,
            answers={
                "surprise": AnswerIn(3, 1000),
                "coherence": AnswerIn(4, 2000),
                "funniness": AnswerIn(funniness, 3000),
                "offensive": AnswerIn(0, 3500),
            },
            active_ms=4000,
        )
    elif assignment.kind == Assignment.Kind.PAIR:
        pair_judgment_submit(
            rater=rater,
            assignment_id=assignment.pk,
            idempotency_key=key,
            winner="right",
            active_ms=900,
        )
    else:
        turing_judgment_submit(
            rater=rater, assignment_id=assignment.pk, idempotency_key=key, guess="ai", active_ms=900
        )


def _run(
    rater: Rater, session: RaterSession, *, limit: int = 200, **answer: int
) -> list[Assignment]:
    """Ask for and answer tasks until the session has nothing left; the tasks in order."""
    given: list[Assignment] = []
    for _ in range(limit):
        assignment = assignment_next(rater=rater, session=session)
        if assignment is None:
            return given
        _answer(rater, assignment, **answer)
        given.append(assignment)
    raise AssertionError(f"the session never ran out of tasks in {limit} steps")


def _given(
    rater: Rater,
    session: RaterSession,
    item: Item,
    *,
    kind: str = Assignment.Kind.SCORECARD,
    right_item: Item | None = None,
    status: str = Assignment.Status.DONE,
) -> Assignment:
    """A task this rater was already given, as history for the rules to take into account."""
    return AssignmentFactory(
        session=session, rater=rater, item=item, kind=kind, right_item=right_item, status=status
    )


def _unique_tasks(given: list[Assignment]) -> None:
    singles = [(a.kind, a.item_id) for a in given if a.kind != Assignment.Kind.PAIR]
    pairs = [
        frozenset((a.item_id, a.right_item_id)) for a in given if a.kind == Assignment.Kind.PAIR
    ]
    assert len(singles) == len(set(singles))
    assert len(pairs) == len(set(pairs))
    assert all(len(pair) == 2 for pair in pairs)


# --- one open task -----------------------------------------------------------------------------


def test_asking_twice_returns_the_same_pending_task():
    study = _study()
    _items(study, 5)
    rater, session = enroll(study)
    first = assignment_next(rater=rater, session=session)
    again = assignment_next(rater=rater, session=session)
    assert first is not None
    assert again is not None
    assert again.pk == first.pk
    assert again.status == Assignment.Status.PENDING
    assert Assignment.objects.filter(rater=rater).count() == 1


def test_answering_the_pending_task_moves_on_to_a_new_one():
    study = _study()
    _items(study, 5)
    rater, session = enroll(study)
    first = assignment_next(rater=rater, session=session)
    assert first is not None
    _answer(rater, first)
    second = assignment_next(rater=rater, session=session)
    assert second is not None
    assert second.pk != first.pk
    assert second.item_id != first.item_id
    assert second.position == first.position + 1


# --- never the same task twice -----------------------------------------------------------------


def test_a_session_run_to_exhaustion_never_gives_the_same_task_twice():
    study = _study(task_mix={"scorecard": 0.5, "pair": 0.3, "turing": 0.2}, tasks_per_session=500)
    _items(study, 4, prefix="cat", topic="cats")
    _items(study, 4, prefix="dog", topic="dogs")
    rater, session = enroll(study)
    given = _run(rater, session)
    assert {a.kind for a in given} == {"scorecard", "pair", "turing"}
    _unique_tasks(given)
    # Every scorecard the study can give this rater was given: exhaustion, not an early stop.
    assert Counter(a.kind for a in given)["scorecard"] == 8
    assert [a.position for a in given] == list(range(1, len(given) + 1))


def test_several_raters_run_to_exhaustion_each_get_every_task_once():
    study = _study(task_mix={"scorecard": 0.4, "pair": 0.4, "turing": 0.2}, tasks_per_session=500)
    _items(study, 3, prefix="cat", topic="cats")
    _items(study, 3, prefix="dog", topic="dogs")
    for background in ("technical", "content_operations", "technical"):
        rater, session = enroll(study, background)
        given = _run(rater, session)
        assert given
        _unique_tasks(given)


# --- Turing: first exposure only ---------------------------------------------------------------


def test_turing_is_only_given_on_items_the_rater_has_never_been_shown():
    study = _study(task_mix={"turing": 1.0})
    a, b, c, d = _items(study, 4)
    rater, session = enroll(study)
    _given(rater, session, a)
    _given(rater, session, b, kind=Assignment.Kind.PAIR, right_item=c)
    given = _run(rater, session)
    assert [(x.kind, x.item_id) for x in given] == [("turing", d.pk)]


def test_turing_in_a_mixed_session_never_follows_another_task_on_the_same_item():
    study = _study(task_mix={"scorecard": 0.4, "pair": 0.3, "turing": 0.3}, tasks_per_session=500)
    _items(study, 5, prefix="cat", topic="cats")
    rater, session = enroll(study)
    given = _run(rater, session)
    seen: set[int] = set()
    turing = 0
    for assignment in given:
        if assignment.kind == Assignment.Kind.TURING:
            assert assignment.item_id not in seen
            turing += 1
        seen |= {assignment.item_id, assignment.right_item_id} - {None}
    assert turing > 0


def test_turing_target_is_respected_across_raters():
    study = _study(task_mix={"turing": 1.0}, turing_judgments_per_item=2)
    items = _items(study, 3)
    for background in ("technical", "content_operations", "administrative_support"):
        rater, session = enroll(study, background)
        _run(rater, session)
    counts = Counter(
        Assignment.objects.filter(study=study, kind="turing").values_list("item_id", flat=True)
    )
    assert counts == {item.pk: 2 for item in items}


# --- pairs -------------------------------------------------------------------------------------


def test_pairs_are_two_items_of_the_same_topic():
    study = _study(task_mix={"pair": 1.0}, tasks_per_session=500)
    _items(study, 3, prefix="cat", topic="cats")
    _items(study, 3, prefix="dog", topic="dogs")
    (lonely,) = _items(study, 1, prefix="bird", topic="birds")
    rater, session = enroll(study)
    given = _run(rater, session)
    # Every same-topic pair once: three among the cats, three among the dogs.
    assert len(given) == 6
    _unique_tasks(given)
    for pair in given:
        assert pair.kind == Assignment.Kind.PAIR
        assert pair.item.topic == pair.right_item.topic
        assert lonely.pk not in (pair.item_id, pair.right_item_id)


def test_pairs_keep_to_the_same_level_while_such_pairs_remain():
    study = _study(task_mix={"pair": 1.0}, tasks_per_session=500)
    _items(study, 2, prefix="s", topic="cats", level=Item.Level.SINGLE)
    _items(study, 2, prefix="m", topic="cats", level=Item.Level.MULTI_TURN)
    rater, session = enroll(study)
    given = _run(rater, session)
    first_two = given[:2]
    assert all(pair.item.level == pair.right_item.level for pair in first_two)
    assert {pair.item.level for pair in first_two} == {"single", "multi_turn"}
    assert all(pair.item.topic == pair.right_item.topic == "cats" for pair in given)


def test_pair_placement_is_drawn_at_random_and_recorded_as_shown():
    study = _study(task_mix={"pair": 1.0}, tasks_per_session=500, pair_appearances_per_item=20)
    _items(study, 4, prefix="cat", topic="cats")
    pairs: list[Assignment] = []
    for background in ("technical", "content_operations", "administrative_support"):
        rater, session = enroll(study, background)
        pairs += _run(rater, session)
    assert len(pairs) == 18
    in_id_order = [p.item.external_id < p.right_item.external_id for p in pairs]
    assert any(in_id_order)
    assert not all(in_id_order)
    for pair in pairs:
        judgment = PairJudgment.objects.get(assignment=pair)
        assert (judgment.left_id, judgment.right_id) == (pair.item_id, pair.right_item_id)
        # _answer always picks "right": the winner is the item shown on the right.
        assert judgment.winner_id == pair.right_item_id


# --- scorecards: targets and balance -----------------------------------------------------------


def test_scorecards_go_to_the_items_furthest_below_their_target():
    study = _study(target_scorecards_per_item=3)
    a, b, c, d = _items(study, 4)
    others = [enroll(study, "content_operations") for _ in range(3)]
    for item, count in ((a, 2), (b, 1), (c, 0), (d, 3)):
        for rater, session in others[:count]:
            _given(rater, session, item)
    rater, session = enroll(study)
    given = _run(rater, session)
    assert [x.item_id for x in given] == [c.pk, b.pk, a.pk]


def test_scorecard_target_is_respected_across_raters():
    study = _study(target_scorecards_per_item=2)
    items = _items(study, 3)
    runs = []
    for background in ("technical", "content_operations", "technical", "traditional_industries"):
        rater, session = enroll(study, background)
        runs.append(_run(rater, session))
    assert [len(run) for run in runs] == [3, 3, 0, 0]
    counts = Counter(
        Assignment.objects.filter(study=study, kind="scorecard").values_list("item_id", flat=True)
    )
    assert counts == {item.pk: 2 for item in items}


def test_imported_scorecards_count_toward_the_target_and_the_group_balance(demo_study):
    Study.objects.filter(pk=demo_study.pk).update(
        status=Study.Status.OPEN,
        task_mix={"scorecard": 1.0},
        attention_check_rate=0,
        # Above the demo's ~18 scorecards per item, so every item is still open.
        target_scorecards_per_item=30,
    )
    demo_study.refresh_from_db()
    responses = ScoreResponse.objects.filter(study=demo_study)
    total = Counter(responses.values_list("item_id", flat=True))
    group = Counter(
        responses.filter(rater__background__code="traditional_industries").values_list(
            "item_id", flat=True
        )
    )
    target = demo_study.target_scorecards_per_item
    per_group = -(-target // 4)

    def need(pk: int) -> tuple[int, int]:
        return (min(group[pk], per_group), total[pk])

    open_items = [
        item.pk
        for item in Item.objects.filter(study=demo_study, is_attention_check=False)
        if total[item.pk] < target
    ]
    assert len({need(pk) for pk in open_items}) > 1  # the real data leaves a choice to make
    rater, session = enroll(demo_study, "traditional_industries")
    first = assignment_next(rater=rater, session=session)
    assert first is not None
    assert first.item_id in open_items
    assert need(first.item_id) == min(need(pk) for pk in open_items)


def test_a_live_pending_task_holds_its_place_and_an_expired_one_frees_it():
    study = _study(target_scorecards_per_item=1)
    (only,) = _items(study, 1)
    first_rater, first_session = enroll(study)
    held = assignment_next(rater=first_rater, session=first_session)
    assert held is not None
    assert held.item_id == only.pk
    second_rater, second_session = enroll(study, "content_operations")
    assert assignment_next(rater=second_rater, session=second_session) is None
    with pytest.raises(SessionExpired):
        rater_session_check_open(
            session=first_session, now=first_session.deadline + timedelta(seconds=1)
        )
    freed = assignment_next(rater=second_rater, session=second_session)
    assert freed is not None
    assert freed.item_id == only.pk


def test_scorecards_are_balanced_across_background_groups():
    # Target 8 over four groups: two per group before a group counts as covered for an item.
    study = _study(target_scorecards_per_item=8)
    a, b = _items(study, 2)
    for background in ("content_operations", "content_operations", "administrative_support"):
        rater, session = enroll(study, background)
        _given(rater, session, b)
    first_rater, first_session = enroll(study)
    first = assignment_next(rater=first_rater, session=first_session)
    assert first is not None
    assert first.item_id == a.pk
    _answer(first_rater, first)
    second_rater, second_session = enroll(study)
    second = assignment_next(rater=second_rater, session=second_session)
    # b has more scorecards in total (3 against 1) but none from this rater's group.
    assert second is not None
    assert second.item_id == b.pk


def test_a_group_that_has_covered_every_item_falls_back_to_total_counts():
    study = _study(target_scorecards_per_item=8)
    a, b = _items(study, 2)
    for _ in range(2):
        rater, session = enroll(study)
        _given(rater, session, a)
        _given(rater, session, b)
    for background in ("content_operations", "administrative_support"):
        rater, session = enroll(study, background)
        _given(rater, session, b)
    newcomer, session = enroll(study)
    chosen = assignment_next(rater=newcomer, session=session)
    assert chosen is not None
    assert chosen.item_id == a.pk


# --- attention checks --------------------------------------------------------------------------


def _gold(study: Study, n: int = 1) -> list[Item]:
    return _items(
        study,
        n,
        prefix="gold",
        is_attention_check=True,
        attention_expected={"funniness": [1, 2]},
    )


def test_attention_check_is_given_and_a_matching_answer_is_recorded_as_passed():
    study = _study(attention_check_rate=0.5, tasks_per_session=12)
    _items(study, 12)
    (gold,) = _gold(study)
    rater, session = enroll(study)
    given = _run(rater, session, funniness=1)
    checks = [a for a in given if a.is_attention_check]
    assert [a.item_id for a in checks] == [gold.pk]
    checks[0].refresh_from_db()
    assert checks[0].kind == Assignment.Kind.SCORECARD
    assert checks[0].reason == "attention"
    assert checks[0].attention_passed is True
    others = Assignment.objects.filter(rater=rater, is_attention_check=False)
    assert others.count() == len(given) - 1
    assert set(others.values_list("attention_passed", flat=True)) == {None}


def test_attention_check_answered_outside_the_expected_answers_is_recorded_as_failed():
    study = _study(attention_check_rate=0.5, tasks_per_session=12)
    _items(study, 12)
    (gold,) = _gold(study)
    rater, session = enroll(study)
    _run(rater, session, funniness=6)
    check = Assignment.objects.get(rater=rater, is_attention_check=True)
    assert check.item_id == gold.pk
    assert check.attention_passed is False


def test_attention_checks_appear_at_about_the_study_rate():
    study = _study(attention_check_rate=0.5, tasks_per_session=30)
    _items(study, 40)
    _gold(study, 40)
    given: list[Assignment] = []
    for background in ("technical", "content_operations", "administrative_support"):
        rater, session = enroll(study, background)
        given += _run(rater, session, funniness=2)
    assert len(given) == 90
    checks = sum(a.is_attention_check for a in given)
    # Binomial(90, 0.5): mean 45, sd 4.7; these bounds are more than 3 sd away.
    assert 30 <= checks <= 60
    assert set(
        Assignment.objects.filter(study=study, is_attention_check=True).values_list(
            "attention_passed", flat=True
        )
    ) == {True}


def test_no_attention_checks_at_rate_zero_and_gold_items_are_never_ordinary_tasks():
    study = _study(attention_check_rate=0, tasks_per_session=500)
    items = _items(study, 6)
    _gold(study, 3)
    rater, session = enroll(study)
    given = _run(rater, session)
    assert not any(a.is_attention_check for a in given)
    assert {a.item_id for a in given} == {item.pk for item in items}


# --- reproducibility ---------------------------------------------------------------------------


def _twin(slug: str) -> Study:
    study = _study(
        slug=slug,
        task_mix={"scorecard": 0.5, "pair": 0.3, "turing": 0.2},
        attention_check_rate=0.2,
        tasks_per_session=25,
        random_seed=777,
    )
    _items(study, 5, prefix="cat", topic="cats")
    _items(study, 5, prefix="dog", topic="dogs")
    _gold(study, 2)
    return study


def _sequence(study: Study) -> list[list[tuple[str, str, str | None, bool]]]:
    sessions = []
    for pid, background in (("PID-A", "technical"), ("PID-B", "content_operations")):
        rater, session = enroll(study, background, external_id=pid)
        sessions.append(
            [
                (
                    a.kind,
                    a.item.external_id,
                    a.right_item.external_id if a.right_item else None,
                    a.is_attention_check,
                )
                for a in _run(rater, session, funniness=1)
            ]
        )
    return sessions


def test_the_sequence_of_tasks_is_reproducible_for_the_same_study_seed():
    first = _sequence(_twin("twin-one"))
    # Rows of other studies in between, so the twin's ids differ from the first one's.
    _twin("unrelated")
    second = _sequence(_twin("twin-two"))
    assert first == second
    assert len(first[0]) == 25
    kinds = {kind for session in first for kind, *_ in session}
    assert kinds == {"scorecard", "pair", "turing"}
    assert any(check for session in first for *_, check in session)


def test_a_different_seed_gives_a_different_sequence():
    one = _twin("seed-one")
    other = _twin("seed-other")
    Study.objects.filter(pk=other.pk).update(random_seed=778)
    other.refresh_from_db()
    assert _sequence(one) != _sequence(other)


# --- the end of a session ----------------------------------------------------------------------


def test_tasks_per_session_ends_the_session():
    study = _study(tasks_per_session=3)
    _items(study, 10)
    rater, session = enroll(study)
    given = _run(rater, session)
    assert len(given) == 3
    assert assignment_next(rater=rater, session=session) is None
    assert Assignment.objects.filter(rater=rater).count() == 3


def test_task_page_ends_the_session_as_completed_when_tasks_per_session_is_reached():
    study = _study(tasks_per_session=2)
    _items(study, 10)
    client = Client()
    client.post(
        f"/s/{study.slug}/",
        {
            "background": "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    rater = Rater.objects.get(study=study)
    for _ in range(2):
        assert client.get(f"/s/{study.slug}/task/").status_code == 200
        _answer(rater, Assignment.objects.get(rater=rater, status="pending"))
    response = client.get(f"/s/{study.slug}/task/")
    assert response.status_code == 302
    assert response["Location"] == f"/s/{study.slug}/end/"
    session = RaterSession.objects.get(rater=rater)
    assert session.end_reason == RaterSession.EndReason.COMPLETED
    assert Assignment.objects.filter(rater=rater).count() == 2


def test_an_expired_sessions_pending_task_becomes_expired():
    study = _study()
    _items(study, 3)
    rater, session = enroll(study)
    done = assignment_next(rater=rater, session=session)
    assert done is not None
    _answer(rater, done)
    pending = assignment_next(rater=rater, session=session)
    assert pending is not None
    with pytest.raises(SessionExpired):
        rater_session_check_open(session=session, now=session.deadline + timedelta(seconds=1))
    pending.refresh_from_db()
    done.refresh_from_db()
    assert pending.status == Assignment.Status.EXPIRED
    assert pending.completed_at is not None
    assert done.status == Assignment.Status.DONE


def test_adaptive_pairing_prefers_an_uncertain_pair_over_a_settled_one():
    from apps.assignments.services import _adaptive_order
    from apps.judgments.models import PairJudgment
    from tests.factories import ItemFactory, RaterSessionFactory, StudyFactory

    study = StudyFactory(adaptive_pairing=True)
    a, b, c, d = (ItemFactory(study=study, topic="cats", external_id=name) for name in "abcd")

    def judged(winner, loser, times):  # type: ignore[no-untyped-def]
        for _ in range(times):
            session = RaterSessionFactory(rater__study=study)
            PairJudgment.objects.create(
                study=study,
                rater=session.rater,
                session=session,
                left=winner,
                right=loser,
                outcome="left",
                winner=winner,
                idempotency_key=f"k{PairJudgment.objects.count()}-{winner.pk}",
            )

    judged(a, b, 20)  # a is clearly funnier than b
    judged(c, d, 2)
    judged(d, c, 2)  # c against d is still open
    order = _adaptive_order(study, [(a.pk, b.pk), (c.pk, d.pk)], [a, b, c, d])
    assert order[0] == (c.pk, d.pk)
