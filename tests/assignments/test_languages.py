"""Tasks come only in the languages a rater reads, and A/B pairs stay within one language
(unless the study allows cross-language pairs); targets are met per language. On SQLite and,
with DATABASE_URL, on PostgreSQL (the concurrency test needs it)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.test import Client

from apps.assignments import ranking_counts
from apps.assignments.models import Assignment
from apps.assignments.services import assignment_complete, assignment_next
from apps.core.errors import DomainError
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.raters.services import rater_enroll
from apps.studies.models import Item, Study
from apps.studies.services import study_configure, study_create
from tests.assignments.test_concurrency import _in_threads
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

MIX = {"scorecard": 0.5, "pair": 0.3, "turing": 0.2}


def _study(**fields: object) -> Study:
    values: dict[str, object] = {
        "languages": ["en", "zh"],
        "task_mix": MIX,
        "attention_check_rate": 0.2,
        "tasks_per_session": 60,
        "random_seed": 16,
    }
    values.update(fields)
    study = StudyFactory(**values)
    # Two topics x two levels, each with three English and three Chinese items; gold items in
    # both languages.
    for language in ("en", "zh"):
        for topic in ("cats", "office"):
            for level in (Item.Level.SINGLE, Item.Level.SCENARIO):
                for k in range(3):
                    ItemFactory(
                        study=study,
                        external_id=f"{language}-{topic}-{level}-{k}",
                        language=language,
                        topic=topic,
                        level=level,
                        source="human" if k == 0 else "model-a",
                        scenario="A scenario" if level == Item.Level.SCENARIO else "",
                    )
        for k in range(2):
            ItemFactory(
                study=study,
                external_id=f"gold-{language}-{k}",
                language=language,
                is_attention_check=True,
                attention_expected={"funniness": [1]},
            )
    return study


def _enroll(study: Study, languages: list[str] | None, n: int) -> tuple[Rater, RaterSession]:
    enrollment = rater_enroll(
        study=study,
        background=["technical", "content_operations"][n % 2],
        age_band="25-34",
        consent=True,
        languages=languages,
        external_id=f"PID-{n:03d}",
    )
    return enrollment.rater, enrollment.session


def _session(rater: Rater, session: RaterSession) -> list[Assignment]:
    """Every task the session gives, each marked answered as it comes (the choice is tested)."""
    given = []
    while (task := assignment_next(rater=rater, session=session)) is not None:
        given.append(task)
        assignment_complete(assignment=task)
    return given


def _languages(tasks: list[Assignment]) -> Counter[str]:
    shown = Counter(task.item.language for task in tasks)
    shown.update(task.right_item.language for task in tasks if task.right_item_id is not None)
    return shown


def _cross_language_pairs(tasks: list[Assignment]) -> list[Assignment]:
    return [
        task
        for task in tasks
        if task.kind == Assignment.Kind.PAIR and task.item.language != task.right_item.language
    ]


@pytest.mark.parametrize("reads", [["en"], ["zh"]], ids=["english-only", "chinese-only"])
def test_a_rater_who_reads_one_language_gets_every_kind_of_task_only_in_it(reads):
    study = _study()
    tasks = _session(*_enroll(study, reads, 1))
    assert {task.kind for task in tasks} == {"scorecard", "pair", "turing"}
    assert any(task.is_attention_check for task in tasks)
    assert set(_languages(tasks)) == set(reads)
    assert _cross_language_pairs(tasks) == []


def test_a_bilingual_rater_gets_both_languages_and_never_a_cross_language_pair():
    study = _study()
    tasks = _session(*_enroll(study, ["en", "zh"], 1))
    shown = _languages(tasks)
    assert shown["en"] > 0
    assert shown["zh"] > 0
    pairs = [task for task in tasks if task.kind == Assignment.Kind.PAIR]
    assert pairs
    assert _cross_language_pairs(tasks) == []


def test_pairs_across_levels_still_stay_within_one_language():
    # One item per topic, level and language: the only same-level pairs cross languages, so the
    # chooser falls back to the same topic across levels, in one language.
    study = StudyFactory(
        languages=["en", "zh"], task_mix={"pair": 1.0}, attention_check_rate=0, random_seed=3
    )
    for language in ("en", "zh"):
        for level in (Item.Level.SINGLE, Item.Level.MULTI_TURN, Item.Level.SCENARIO):
            ItemFactory(study=study, language=language, topic="cats", level=level)
    tasks = _session(*_enroll(study, ["en", "zh"], 1))
    assert len(tasks) == 6  # every same-language pair: three in English, three in Chinese
    assert _cross_language_pairs(tasks) == []


def test_a_study_may_allow_cross_language_pairs_for_raters_who_read_both():
    study = StudyFactory(
        languages=["en", "zh"],
        task_mix={"pair": 1.0},
        attention_check_rate=0,
        random_seed=3,
        allow_cross_language_pairs=True,
    )
    ItemFactory(study=study, language="en", topic="cats")
    ItemFactory(study=study, language="zh", topic="cats")
    bilingual = _session(*_enroll(study, ["en", "zh"], 1))
    assert len(_cross_language_pairs(bilingual)) == 1
    # A rater who reads one of them is still never shown the other.
    assert _session(*_enroll(study, ["en"], 2)) == []


def test_cross_language_pairs_are_off_by_default():
    study = StudyFactory(languages=["en", "zh"], task_mix={"pair": 1.0}, attention_check_rate=0)
    ItemFactory(study=study, language="en", topic="cats")
    ItemFactory(study=study, language="zh", topic="cats")
    assert study.allow_cross_language_pairs is False
    assert _session(*_enroll(study, ["en", "zh"], 1)) == []


def test_a_rater_who_stated_no_languages_is_not_restricted():
    # Raters enrolled before the question was asked keep the study's whole item set.
    study = _study(task_mix={"scorecard": 1.0}, attention_check_rate=0)
    rater, session = _enroll(study, None, 1)
    Rater.objects.filter(pk=rater.pk).update(languages=[])
    rater.refresh_from_db()
    assert set(_languages(_session(rater, session))) == {"en", "zh"}


def test_targets_are_met_per_language_by_the_readers_of_each():
    # Many Chinese readers and a few English ones: every English item still reaches its target
    # (Chinese readers never take English places), and the Chinese ones too.
    target = 2
    study = _study(
        task_mix={"scorecard": 1.0}, attention_check_rate=0, target_scorecards_per_item=target
    )
    for n in range(6):
        _session(*_enroll(study, ["zh"], n))
    for n in range(6, 8):
        _session(*_enroll(study, ["en"], n))
    counts = Counter(
        Assignment.objects.filter(study=study, kind="scorecard").values_list(
            "item__language", "item_id"
        )
    )
    per_item = dict(counts.items())
    assert len(per_item) == Item.objects.filter(study=study, is_attention_check=False).count()
    assert set(per_item.values()) == {target}
    # Each item's scorecards went to readers of its language only.
    for language, rater_languages in Assignment.objects.filter(study=study).values_list(
        "item__language", "rater__languages"
    ):
        assert language in rater_languages


# --- the demo, as the issue found it -------------------------------------------------------------


def test_a_rater_on_the_english_interface_of_the_demo_gets_no_chinese_and_no_mixed_pairs(
    demo_study,
):
    Study.objects.filter(pk=demo_study.pk).update(
        status=Study.Status.OPEN, target_scorecards_per_item=30, tasks_per_session=30
    )
    client = Client(headers={"accept-language": "en"})
    page = client.get(f"/s/{demo_study.slug}/").content.decode()
    assert re.search(r'name="languages" value="en"[^>]*checked', page)
    assert not re.search(r'name="languages" value="zh"[^>]*checked', page)
    # The English reader submits the form as it is preselected.
    response = client.post(
        f"/s/{demo_study.slug}/",
        {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en"]},
    )
    assert response.status_code == 302
    rater = Rater.objects.get(study=demo_study, origin=Rater.Origin.ENROLLED)
    tasks = _session(rater, RaterSession.objects.get(rater=rater))
    assert len(tasks) == 30
    assert set(_languages(tasks)) == {"en"}
    assert _cross_language_pairs(tasks) == []


# --- the setting ---------------------------------------------------------------------------------


def test_cross_language_pairs_need_a_study_with_several_languages(builtin_rubrics):
    with pytest.raises(DomainError) as refused:
        study_create(
            slug="one", rubric_slug="humor", languages=["en"], allow_cross_language_pairs=True
        )
    assert refused.value.field == "allow_cross_language_pairs"
    study = study_create(slug="one", rubric_slug="humor", languages=["en"])
    with pytest.raises(DomainError):
        study_configure(study=study, allow_cross_language_pairs=True)
    study.refresh_from_db()
    assert study.allow_cross_language_pairs is False


# --- PostgreSQL: per-language targets with everyone asking at once --------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("max_age", [0.0, 60.0], ids=["fresh-counts", "kept-counts"])
def test_readers_of_each_language_asking_at_once_meet_each_target_exactly(
    postgres_only, builtin_rubrics, monkeypatch, settings, max_age
):
    monkeypatch.setattr("apps.analysis.services._enqueue", lambda study_id, claimed_at: None)
    settings.TASK_COUNTS_MAX_AGE_SECONDS = max_age
    ranking_counts.forget_all()
    target = 3
    study = StudyFactory(
        languages=["en", "zh"],
        task_mix={"scorecard": 1.0},
        attention_check_rate=0,
        target_scorecards_per_item=target,
        tasks_per_session=20,
        random_seed=5,
    )
    for language in ("en", "zh"):
        for k in range(4):
            ItemFactory(study=study, external_id=f"{language}{k}", language=language)
    readers = [["zh"]] * 10 + [["en"]] * 4 + [["en", "zh"]] * 4
    raters = [_enroll(study, languages, n) for n, languages in enumerate(readers)]

    def work(i: int) -> list[tuple[str, int]]:
        rater, session = raters[i]
        got = []
        for _ in range(4):
            task = assignment_next(rater=rater, session=session)
            if task is None:
                break
            got.append((task.item.language, task.item_id))
            assignment_complete(assignment=task)
        return got

    results, errors = _in_threads(len(raters), work)
    assert errors == []
    for (rater, _), got in zip(raters, results, strict=True):
        assert {language for language, _ in got} <= set(rater.languages)
    # Whoever stopped early (every candidate locked at that moment) asks again one by one.
    for rater, session in raters:
        _session(rater, session)
    per_item = Counter(
        Assignment.objects.filter(study=study, status=Assignment.Status.DONE).values_list(
            "item_id", flat=True
        )
    )
    items = Item.objects.filter(study=study)
    assert per_item == {item.pk: target for item in items}
    for rater, _ in raters:
        shown = set(Assignment.objects.filter(rater=rater).values_list("item__language", flat=True))
        assert shown <= set(rater.languages)
    assert BackgroundGroup.objects.filter(study=study).count() == 4
    ranking_counts.forget_all()
