"""What the demo studies let a rater meet: quotas for the four background groups (counted per
language), attention checks in each language, and work only in the languages the rater reads."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from apps.assignments.models import Assignment
from apps.assignments.services import assignment_complete, assignment_next
from apps.raters.models import BackgroundGroup
from apps.raters.services import StudyFull, rater_enroll
from apps.studies.models import Item, Study

pytestmark = pytest.mark.django_db

GROUPS = {"technical", "content_operations", "administrative_support", "traditional_industries"}


@pytest.fixture
def demos() -> list[Study]:
    call_command("seed_demo", "--skip-aggregate", stdout=StringIO(), stderr=StringIO())
    # A fixed seed, so the session's draws (and its attention checks) are the same every run.
    Study.objects.filter(slug__in=["demo", "demo-content"]).update(random_seed=16)
    return [Study.objects.get(slug="demo"), Study.objects.get(slug="demo-content")]


@pytest.mark.parametrize("index", [0, 1], ids=["jokes", "articles"])
def test_both_demos_have_quotas_for_the_four_groups(demos, index):
    study = demos[index]
    quotas = dict(BackgroundGroup.objects.filter(study=study).values_list("code", "quota"))
    assert set(quotas) == GROUPS
    assert all(quota is not None and quota > 0 for quota in quotas.values())


@pytest.mark.parametrize("index", [0, 1], ids=["jokes", "articles"])
def test_both_demos_have_attention_checks_in_each_language(demos, index):
    study = demos[index]
    assert study.attention_check_rate > 0
    gold = Item.objects.filter(study=study, is_attention_check=True)
    assert set(gold.values_list("language", flat=True)) == {"en", "zh"}
    assert all(item.attention_expected for item in gold)
    # In the human study, so raters are handed them.
    assert set(gold.values_list("stage", flat=True)) == {Item.Stage.STUDY}


@pytest.mark.parametrize("index", [0, 1], ids=["jokes", "articles"])
@pytest.mark.parametrize("reads", [["en"], ["zh"], ["en", "zh"]], ids=["en", "zh", "both"])
def test_a_demo_rater_meets_attention_checks_and_work_only_in_their_languages(demos, index, reads):
    study = demos[index]
    enrollment = rater_enroll(
        study=study,
        background="technical",
        age_band="25-34",
        consent=True,
        languages=reads,
        external_id=f"visitor-{'-'.join(reads)}",
    )
    tasks = []
    while (task := assignment_next(rater=enrollment.rater, session=enrollment.session)) is not None:
        tasks.append(task)
        assignment_complete(assignment=task)
    assert len(tasks) == study.tasks_per_session
    shown = {task.item.language for task in tasks}
    shown |= {task.right_item.language for task in tasks if task.right_item_id is not None}
    assert shown == set(reads)
    assert any(task.is_attention_check for task in tasks)
    assert {task.kind for task in tasks} >= {Assignment.Kind.SCORECARD, Assignment.Kind.PAIR}
    assert all(
        task.item.language == task.right_item.language
        for task in tasks
        if task.kind == Assignment.Kind.PAIR
    )


def test_the_demo_quota_counts_per_language(demos):
    study = demos[0]
    quota = BackgroundGroup.objects.get(study=study, code="technical").quota
    assert quota is not None
    for n in range(quota):
        rater_enroll(
            study=study,
            background="technical",
            age_band="25-34",
            consent=True,
            languages=["en"],
            external_id=f"en-{n}",
        )
    with pytest.raises(StudyFull):
        rater_enroll(
            study=study,
            background="technical",
            age_band="25-34",
            consent=True,
            languages=["en"],
            external_id="en-extra",
        )
    # The English places are taken; Chinese readers of the same group still have theirs.
    rater_enroll(
        study=study,
        background="technical",
        age_band="25-34",
        consent=True,
        languages=["zh"],
        external_id="zh-0",
    )
