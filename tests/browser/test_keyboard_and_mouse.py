"""Whole sessions answered with the keyboard only, and with the mouse only, on a 375 px screen
in both interface languages: what is stored is what the rater meant, question by question.

The key map each page shows is the one that works: keys answer only the highlighted question,
digits never answer a yes-or-no question (Y and N do), and a key that answers nothing selects
nothing. The scorecard's order is held by the server: funniness opens once surprise and
coherence have arrived, and a key pressed before that is kept for it, not given to the next
question.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from apps.assignments.models import Assignment
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import Rater
from apps.studies.models import Item, Study
from tests.browser.tasks import enroll
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KEYMAP = {
    "en": {
        "scorecard": "answers a yes-or-no question (numbers never do)",
        "pair": "chooses A",
        "turing": "a person",
        "explanation": "not sure",
        "no_key": "That key answers nothing here",
    },
    "zh": {
        "scorecard": "回答“是/否”问题（数字键不会回答这类问题）",
        "pair": "选A",
        "turing": "人",
        "explanation": "不确定",
        "no_key": "这个键在这里不能作答",
    },
}
EXPLAINED = "I told my cat a joke about a laser pointer. She didn't get it, but she chased it."

# What the rater means, in the order the tasks come: the first scorecard (the explained item),
# its explanation, the second scorecard, the pair, the Turing task.
FIRST = {"surprise": 4, "coherence": 5, "funniness": 6, "offensive": 0}
SECOND = {"surprise": 2, "coherence": 3, "funniness": 7, "offensive": 1}


def _phone(new_context, screenshots, lang: str) -> Page:  # type: ignore[no-untyped-def]
    context = new_context(viewport={"width": 375, "height": 812})
    page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    return page


def _enroll(page: Page, study: Study, lang: str, mode: str) -> None:
    enroll(page, study.slug, lang)


def _fits(page: Page) -> None:
    assert page.evaluate("() => document.documentElement.scrollWidth <= 375")


def _task(page: Page, kind: str, lang: str):  # type: ignore[no-untyped-def]
    form = page.locator(f"form.task[data-task={kind}]")
    expect(form).to_be_visible()
    expect(form.locator("[data-keymap]")).to_contain_text(KEYMAP[lang][kind])
    _fits(page)
    return form


def _next_kind(study: Study, kind: str) -> None:
    Study.objects.filter(pk=study.pk).update(task_mix={kind: 1})


def _scorecard_by_keyboard(page: Page, values: dict[str, int], lang: str, *, fix: bool) -> None:
    funniness = page.locator("fieldset[data-question=funniness]")
    highlighted = page.locator("fieldset.current")
    expect(highlighted).to_have_attribute("data-question", "surprise")
    page.keyboard.press(str(values["surprise"]))
    expect(highlighted).to_have_attribute("data-question", "coherence")
    page.keyboard.press(str(values["coherence"]))
    # Pressed before the server opened funniness: kept for funniness, applied when it opens.
    page.keyboard.press(str(values["funniness"] if not fix else 1))
    expect(funniness).to_have_attribute("aria-disabled", "false")
    expect(
        page.locator(f"input[name=funniness][value='{values['funniness'] if not fix else 1}']")
    ).to_be_checked()
    expect(highlighted).to_have_attribute("data-question", "offensive")
    # The bug this key map ends: a digit on the yes-or-no question selects nothing.
    for digit in ("1", "2", "0"):
        page.keyboard.press(digit)
        expect(page.locator("input[name=offensive]:checked")).to_have_count(0)
    expect(page.locator("form.task .status")).to_contain_text(KEYMAP[lang]["no_key"])
    page.keyboard.press("y" if values["offensive"] == 1 else "n")
    expect(page.locator(f"input[name=offensive][value='{values['offensive']}']")).to_be_checked()
    if fix:
        # Changing an answer: the arrows move the highlight back to funniness.
        expect(page.locator("fieldset.current")).to_have_count(0)
        page.keyboard.press("ArrowUp")
        expect(highlighted).to_have_attribute("data-question", "offensive")
        page.keyboard.press("ArrowUp")
        expect(highlighted).to_have_attribute("data-question", "funniness")
        page.keyboard.press(str(values["funniness"]))
        expect(
            page.locator(f"input[name=funniness][value='{values['funniness']}']")
        ).to_be_checked()
        # The offense answer was not touched on the way.
        expect(
            page.locator(f"input[name=offensive][value='{values['offensive']}']")
        ).to_be_checked()
    page.keyboard.press("Enter")


def _scorecard_by_mouse(page: Page, values: dict[str, int]) -> None:
    funniness = page.locator("fieldset[data-question=funniness]")
    page.locator(f"input[name=surprise][value='{values['surprise']}']").click()
    expect(funniness).to_have_attribute("aria-disabled", "true")
    page.locator(f"input[name=coherence][value='{values['coherence']}']").click()
    expect(funniness).to_have_attribute("aria-disabled", "false")
    page.locator(f"input[name=funniness][value='{values['funniness']}']").click()
    page.locator(f"input[name=offensive][value='{values['offensive']}']").click()
    page.locator("form.task button[type=submit]").click()


@pytest.mark.parametrize("mode", ["keyboard", "mouse"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_whole_session_stores_exactly_the_answers_meant(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str, mode: str
) -> None:
    study = StudyFactory(
        task_mix={"scorecard": 1}, tasks_per_session=4, attention_check_rate=0, languages=["en"]
    )
    explained = ItemFactory(
        study=study, topic="cats", text=EXPLAINED, explanation="Cats chase dots."
    )
    page = _phone(new_context, screenshots, lang)
    _enroll(page, study, lang, mode)
    keyboard = mode == "keyboard"

    _task(page, "scorecard", lang)
    expect(page.locator(".joke")).to_have_text(EXPLAINED)
    # Added once the first task is shown: the second scorecard and the pair use them.
    ItemFactory(study=study, topic="cats", external_id="plain-b")
    ItemFactory(study=study, topic="cats", external_id="plain-c")
    if keyboard:
        _scorecard_by_keyboard(page, FIRST, lang, fix=False)
    else:
        _scorecard_by_mouse(page, FIRST)

    form = _task(page, "explanation", lang)
    expect(page).to_have_url(re.compile(r"/task/$"))
    if keyboard:
        page.keyboard.press("2")
        expect(form.locator("input[value=no]")).to_be_checked()
        page.keyboard.press("Enter")
    else:
        form.locator("input[value=yes]").click()
        form.locator("button[type=submit]").click()

    _task(page, "scorecard", lang)
    _next_kind(study, Assignment.Kind.PAIR)
    if keyboard:
        _scorecard_by_keyboard(page, SECOND, lang, fix=True)
    else:
        _scorecard_by_mouse(page, SECOND)

    form = _task(page, "pair", lang)
    _next_kind(study, Assignment.Kind.TURING)
    ItemFactory(study=study, topic="dogs", external_id="turing-d")
    if keyboard:
        page.keyboard.press("2")
        expect(form.locator("input[value=right]")).to_be_checked()
        page.keyboard.press("Enter")
    else:
        form.locator("input[value=left]").click()
        form.locator("button[type=submit]").click()

    form = _task(page, "turing", lang)
    if keyboard:
        page.keyboard.press("1")
        expect(form.locator("input[value=ai]")).to_be_checked()
        page.keyboard.press("Enter")
    else:
        form.locator("input[value=human]").click()
        form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))

    rater = Rater.objects.get(study=study)
    responses = list(ScoreResponse.objects.filter(rater=rater).order_by("submitted_at"))
    assert responses[0].item_id == explained.pk
    for response, meant in zip(responses, (FIRST, SECOND), strict=True):
        stored = {a.question.name: a.value for a in response.answers.select_related("question")}
        assert stored == meant, (mode, lang, response.item.external_id)
        answers = {a.question.name: a for a in response.answers.select_related("question")}
        for earlier in ("surprise", "coherence"):
            assert answers[earlier].received_at < answers["funniness"].received_at
            assert answers[earlier].answered_at < answers["funniness"].answered_at
    assert responses[0].explanation_match == ("no" if keyboard else "yes")
    assert responses[1].explanation_match == ""
    pair = PairJudgment.objects.get(rater=rater)
    # The explained item's explanation was revealed: it is in no later task.
    assert explained.pk not in (pair.left_id, pair.right_id)
    assert pair.winner_id == (pair.right_id if keyboard else pair.left_id)
    turing = TuringJudgment.objects.get(rater=rater)
    assert turing.item_id == Item.objects.get(external_id="turing-d").pk
    assert turing.guess == ("ai" if keyboard else "human")
