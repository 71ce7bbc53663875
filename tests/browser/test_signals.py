"""The behavioural signals on the rater's scorecard, in both languages at 375 and 1280 px: the
two yes/no questions open after funniness, fit the screen, and are stored as answered."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from apps.judgments.models import ScoreAnswer
from apps.studies.models import Rubric
from tests.browser.tasks import enroll, task_answer
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROMPTS = {
    "en": ("Would you retell this to a friend?", "Would you reply to it, or ask a follow-up?"),
    "zh": ("您会把它讲给朋友听吗？", "您会回应它，或者追问下去吗？"),
}


def test_the_signals_open_after_funniness_and_are_stored_in_both_languages(
    new_context, screenshots, live_server, builtin_rubrics: None
) -> None:
    study = StudyFactory(
        rubric=Rubric.objects.get(slug="humor-signals"),
        task_mix={"scorecard": 1.0},
        tasks_per_session=1,
        attention_check_rate=0,
        languages=["en"],
    )
    for i in range(6):
        ItemFactory(study=study, external_id=f"joke-{i}", topic="cats")
    for lang, width in [("en", 375), ("zh", 375), ("en", 1280), ("zh", 1280)]:
        context = new_context(viewport={"width": width, "height": 900})
        page: Page = screenshots.watch(context.new_page())
        page.set_default_timeout(10_000)
        enroll(page, study.slug, lang)
        for name, prompt in zip(("retell", "follow_up"), PROMPTS[lang], strict=True):
            fieldset = page.locator(f"fieldset[data-question={name}]")
            expect(fieldset).to_contain_text(prompt)
            # Asked after funniness: closed until the server has it.
            expect(fieldset.locator("input[type=radio]").first).to_be_disabled()
        assert page.evaluate(f"() => document.documentElement.scrollWidth <= {width}")
        task_answer(page)
        context.close()
    stored = ScoreAnswer.objects.filter(question__name__in=["retell", "follow_up"])
    assert stored.count() == 8
    assert set(stored.values_list("value", flat=True)) == {1}
