"""The next task shown in place, in the browser: the answer brings it, so the page is never
loaded again within a session. A task like the one answered gets only its items swapped, and
starts afresh as a new page would (no answer carried over, the later questions locked again, the
progress moved on, reading resumed at the new items); any other (a self-explanation to judge,
then the next scorecard) replaces the whole form and still works by keys. On a 375 px phone in
Chinese and a 1280 px screen in English; every answer is stored once, on its own task."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from apps.assignments.models import Assignment
from apps.judgments.models import ScoreResponse, TuringJudgment
from apps.raters.models import Rater
from apps.studies.models import Item
from tests.browser.tasks import enroll, task_answer, task_state
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROGRESS = {"en": "{done} of {planned} done", "zh": "已完成{done}/{planned}"}
TITLES = {
    "en": {"scorecard": "Rate this", "explanation": "The writer's explanation"},
    "zh": {"scorecard": "请打分", "explanation": "作者的解释"},
}
# Set on the page once: a page load would drop it.
MARK = "() => { window.laughlabSamePage = true; }"
SAME_PAGE = "() => window.laughlabSamePage === true"
FOCUSED_ITEMS = (
    "() => document.activeElement && document.activeElement.matches('[data-task-content]')"
)


def _study(tasks: int, explained: bool):  # type: ignore[no-untyped-def]
    study = StudyFactory(
        task_mix={"scorecard": 1},
        tasks_per_session=tasks,
        attention_check_rate=0,
        languages=["en"],
    )
    for name in "abcdef":
        ItemFactory(
            study=study,
            topic="cats",
            external_id=f"joke-{name}",
            text=f"Joke {name}: the cat sat on the keyboard.",
            explanation="The keyboard is warm." if explained else "",
        )
    return study


def _open(new_context, screenshots, width: int) -> Page:  # type: ignore[no-untyped-def]
    context = new_context(viewport={"width": width, "height": 900})
    page: Page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    return page


@pytest.mark.parametrize(("lang", "width"), [("zh", 375), ("en", 1280)])
def test_the_next_scorecard_replaces_only_its_item_and_starts_afresh(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str, width: int
) -> None:
    study = _study(tasks=3, explained=False)
    page = _open(new_context, screenshots, width)
    enroll(page, study.slug, lang)
    page.evaluate(MARK)
    form = page.locator("form.task[data-task=scorecard]")
    funniness = form.locator("fieldset[data-question=funniness]")
    expect(funniness).to_be_disabled()
    for done in (1, 2):
        before = task_state(page)
        text = page.locator("article.item .joke").inner_text()
        task_answer(page)
        assert task_state(page)[0] == "scorecard"
        assert task_state(page) != before
        assert page.evaluate(SAME_PAGE), "the page was loaded again"
        # A new item, nothing answered, funniness waiting for surprise and coherence again.
        expect(page.locator("article.item .joke")).not_to_have_text(text)
        expect(form.locator("input:checked")).to_have_count(0)
        expect(funniness).to_be_disabled()
        expect(page.locator(".progress-text")).to_have_text(
            PROGRESS[lang].format(done=done, planned=3)
        )
        assert page.evaluate(FOCUSED_ITEMS)
        assert page.evaluate(f"() => document.documentElement.scrollWidth <= {width}")
    # The third answered by keys alone, as on any page.
    page.keyboard.press("3")
    page.keyboard.press("4")
    expect(funniness).to_be_enabled()
    page.keyboard.press("5")
    page.keyboard.press("n")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))

    rater = Rater.objects.get(study=study)
    responses = ScoreResponse.objects.filter(rater=rater)
    assert responses.count() == 3
    assert responses.values("item").distinct().count() == 3
    assert set(responses.values_list("assignment__status", flat=True)) == {"done"}


def test_an_explanation_and_the_scorecard_after_it_replace_the_whole_form(
    new_context, screenshots, live_server, builtin_rubrics: None
) -> None:
    lang = "zh"
    study = _study(tasks=2, explained=True)
    page = _open(new_context, screenshots, 375)
    enroll(page, study.slug, lang)
    page.evaluate(MARK)
    expect(page).to_have_title(re.compile(TITLES[lang]["scorecard"]))
    task_answer(page)
    # The reveal, in place: its own form, title and keys.
    explanation = page.locator("form.task[data-task=explanation]")
    expect(explanation).to_be_visible()
    expect(page).to_have_title(re.compile(TITLES[lang]["explanation"]))
    expect(explanation).to_contain_text("The keyboard is warm.")
    assert page.evaluate(SAME_PAGE), "the page was loaded again"
    assert page.evaluate(FOCUSED_ITEMS)
    page.keyboard.press("1")
    expect(explanation.locator("input[value=yes]")).to_be_checked()
    page.keyboard.press("Enter")
    # The next scorecard, whole, and working by keys in the form that replaced the reveal.
    form = page.locator("form.task[data-task=scorecard]")
    expect(form).to_be_visible()
    expect(page).to_have_title(re.compile(TITLES[lang]["scorecard"]))
    assert page.evaluate(SAME_PAGE), "the page was loaded again"
    expect(page.locator(".progress-text")).to_have_text(PROGRESS[lang].format(done=1, planned=2))
    page.keyboard.press("2")
    page.keyboard.press("3")
    expect(form.locator("fieldset[data-question=funniness]")).to_be_enabled()
    page.keyboard.press("4")
    page.keyboard.press("n")
    expect(form.locator("input:checked")).to_have_count(4)
    page.keyboard.press("Enter")
    explanation = page.locator("form.task[data-task=explanation]")
    expect(explanation).to_be_visible()
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))

    rater = Rater.objects.get(study=study)
    verdicts = list(
        ScoreResponse.objects.filter(rater=rater)
        .order_by("submitted_at")
        .values_list("explanation_match", flat=True)
    )
    assert verdicts == ["yes", "no"]
    assert Item.objects.filter(study=study).count() == 6


def _next_kind(study, kind: str) -> None:  # type: ignore[no-untyped-def]
    # The next task's kind is drawn from the mix when the answer hands it out.
    type(study).objects.filter(pk=study.pk).update(task_mix={kind: 1.0})


@pytest.mark.parametrize(("lang", "width"), [("zh", 375), ("en", 1280)])
def test_a_kind_shown_before_comes_back_as_its_items_in_the_form_the_page_kept(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str, width: int
) -> None:
    """Scorecard, Turing, scorecard, Turing: from the third task on, the page has shown the
    next task's layout before, so the answer brings only its items, and the page rebuilds the
    form from its own unanswered copy. That form starts afresh (nothing checked, funniness
    locked again), shows the new items, and answers its own task by keys."""
    study = _study(tasks=4, explained=False)
    page = _open(new_context, screenshots, width)
    enroll(page, study.slug, lang)
    page.evaluate(MARK)
    kinds = ["scorecard", "turing", "scorecard", "turing"]
    for done, (kind, following) in enumerate(zip(kinds, [*kinds[1:], None], strict=True)):
        assert task_state(page)[0] == kind
        if following:
            _next_kind(study, following)
        submit = "/scorecards" if kind == "scorecard" else "/turing"
        with page.expect_response(lambda r, s=submit: r.url.endswith(s)) as answered:
            task_answer(page)
        if following is None:
            break
        task = answered.value.json()["task"]
        assert task["kind"] == following
        # Brought whole the first time its kind follows; as its items alone once the page has it.
        assert ("form" in task) == (done == 0), task.keys()
        form = page.locator(f"form.task[data-task={following}]")
        expect(form).to_have_attribute("data-assignment", str(task["id"]))
        assert page.evaluate(SAME_PAGE), "the page was loaded again"
        # Its own item (a Turing task may show an item the rater has just scored, and back).
        given = Assignment.objects.get(pk=task["id"]).item.text
        expect(page.locator("article.item .joke")).to_have_text(given)
        expect(form.locator("input:checked")).to_have_count(0)
        if following == "scorecard":
            expect(form.locator("fieldset[data-question=funniness]")).to_be_disabled()
        expect(page.locator(".progress-text")).to_have_text(
            PROGRESS[lang].format(done=done + 1, planned=4)
        )
        assert page.evaluate(FOCUSED_ITEMS)
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))

    rater = Rater.objects.get(study=study)
    scorecards = ScoreResponse.objects.filter(rater=rater)
    guesses = TuringJudgment.objects.filter(rater=rater)
    assert (scorecards.count(), guesses.count()) == (2, 2)
    # Each answer stored once, on its own task and that task's item.
    stored = [*scorecards, *guesses]
    assert len({judgment.assignment_id for judgment in stored}) == 4
    assert all(judgment.item_id == judgment.assignment.item_id for judgment in stored)
    assert set(Assignment.objects.filter(rater=rater).values_list("status", flat=True)) == {"done"}
