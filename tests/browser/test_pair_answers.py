"""Three-way A/B pairs in the browser: "about the same" on key 3 and "neither" on key 4 (or a
tap), on a 375 px phone in Chinese and a 1280 px screen in English, stored as the outcome the
rater meant with no winner."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from apps.judgments.models import PairJudgment
from apps.raters.models import Rater
from tests.browser.tasks import enroll
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LABELS = {
    "en": {"tie": "About the same", "neither": "Neither is funny, or I don't get them"},
    "zh": {"tie": "差不多", "neither": "都不好笑，或我看不懂"},
}


@pytest.mark.parametrize(("lang", "width"), [("zh", 375), ("en", 1280)])
def test_tie_by_key_and_neither_by_tap_are_stored_as_meant(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str, width: int
) -> None:
    study = StudyFactory(
        task_mix={"pair": 1},
        tasks_per_session=2,
        attention_check_rate=0,
        languages=["en"],
        pair_offers_tie=True,
        pair_offers_neither=True,
    )
    for name in "abcd":
        ItemFactory(study=study, topic="cats", external_id=f"joke-{name}")
    context = new_context(viewport={"width": width, "height": 900})
    page: Page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    enroll(page, study.slug, lang)

    form = page.locator("form.task[data-task=pair]")
    expect(form).to_be_visible()
    expect(form.locator(".undecided-options")).to_contain_text(LABELS[lang]["tie"])
    expect(form.locator(".undecided-options")).to_contain_text(LABELS[lang]["neither"])
    assert page.evaluate(f"() => document.documentElement.scrollWidth <= {width}")
    first = form.get_attribute("data-assignment")
    page.keyboard.press("3")
    expect(form.locator("input[value=tie]")).to_be_checked()
    page.keyboard.press("Enter")

    form = page.locator("form.task[data-task=pair]")
    expect(form).not_to_have_attribute("data-assignment", first or "")
    form.locator("label.undecided", has_text=LABELS[lang]["neither"]).click()
    expect(form.locator("input[value=neither]")).to_be_checked()
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))

    rater = Rater.objects.get(study=study)
    stored = list(
        PairJudgment.objects.filter(rater=rater)
        .order_by("submitted_at")
        .values_list("outcome", "winner_id")
    )
    assert stored == [("tie", None), ("neither", None)]
