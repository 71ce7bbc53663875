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

from apps.judgments.models import ScoreResponse
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
