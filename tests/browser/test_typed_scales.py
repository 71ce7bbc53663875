"""Scales beyond single digits and choice questions, answered from the keyboard: what is stored is the number the
rater typed, on a −3..3, a 0–10 and a 0–100 question, in both interface languages, on a phone
and on a laptop. Before, "10" stored 1 and gave the 0 to the next question, "73" stored 7 and
"−2" stored +2."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from apps.judgments.models import ScoreResponse
from apps.raters.models import Rater
from apps.studies.rubrics import rubric_create
from tests.browser.tasks import enroll
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SPEC = {
    "slug": "wide-scales",
    "name": "Wide scales",
    "questions": [
        {
            "name": "stance",
            "kind": "likert",
            "min_value": -3,
            "max_value": 3,
            "prompt": {"en": "Against or for?", "zh": "反对还是支持？"},
        },
        {
            "name": "ten",
            "kind": "likert",
            "min_value": 0,
            "max_value": 10,
            "prompt": {"en": "Out of ten?", "zh": "十分制？"},
        },
        {
            "name": "hundred",
            "kind": "likert",
            "min_value": 0,
            "max_value": 100,
            "prompt": {"en": "Out of a hundred?", "zh": "百分制？"},
        },
        {
            "name": "again",
            "kind": "likert",
            "min_value": 0,
            "max_value": 10,
            "prompt": {"en": "And again, out of ten?", "zh": "再来一次，十分制？"},
        },
        {
            "name": "mood",
            "kind": "choice",
            "prompt": {"en": "Its mood?", "zh": "它的情绪？"},
            "choices": [
                {"en": "Gentle", "zh": "温和"},
                {"en": "Dry", "zh": "冷幽默"},
                {"en": "Biting", "zh": "尖刻"},
            ],
        },
    ],
}
MOODS = {"en": ["Gentle", "Dry", "Biting"], "zh": ["温和", "冷幽默", "尖刻"]}
LEGEND = {"en": "type the whole number", "zh": "输入完整的数字"}


@pytest.mark.parametrize(("lang", "width"), [("en", 1280), ("zh", 375)])
def test_typed_numbers_are_stored_as_typed(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str, width: int
) -> None:
    rubric = rubric_create(spec=SPEC)
    study = StudyFactory(
        rubric=rubric,
        task_mix={"scorecard": 1},
        tasks_per_session=3,
        attention_check_rate=0,
        languages=["en"],
    )
    for n in range(3):
        ItemFactory(study=study, topic="cats", external_id=f"typed-{n}")
    context = new_context(viewport={"width": width, "height": 900})
    page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    enroll(page, study.slug, lang)

    form = page.locator("form.task[data-task=scorecard]")
    expect(form.locator("[data-keymap]")).to_contain_text(LEGEND[lang])
    current = page.locator("fieldset.current")
    typed = page.locator("fieldset.current [data-typed-value]")

    # −2: the sign, then the digit; chosen at once (no longer number starts with −2).
    expect(current).to_have_attribute("data-question", "stance")
    page.keyboard.press("-")
    expect(typed).to_have_text("\u2212")
    page.keyboard.press("2")
    expect(page.locator("input[name=stance][value='-2']")).to_be_checked()
    expect(page.locator("input[name=stance][value='2']")).not_to_be_checked()
    # 10: "1" waits (it could be the start of 10), the "0" completes it.
    expect(current).to_have_attribute("data-question", "ten")
    page.keyboard.press("1")
    expect(typed).to_have_text("1")
    expect(page.locator("input[name=ten]:checked")).to_have_count(0)
    page.keyboard.press("0")
    expect(page.locator("input[name=ten][value='10']")).to_be_checked()
    # The 0 of 10 answered nothing else.
    expect(page.locator("input[name=hundred]:checked")).to_have_count(0)
    # 73 typed quickly, digit by digit: chosen after the 3 (730 is off the scale).
    expect(current).to_have_attribute("data-question", "hundred")
    page.keyboard.type("73", delay=30)
    expect(page.locator("input[name=hundred][value='73']")).to_be_checked()
    # A lone 1 on 0-10, confirmed by the pause.
    expect(current).to_have_attribute("data-question", "again")
    page.keyboard.press("1")
    expect(page.locator("input[name=again][value='1']")).to_be_checked(timeout=5_000)
    # A choice shows its words in the rater's language, numbered from 1 for the keys.
    mood = page.locator("fieldset[data-question=mood] .point")
    expect(mood).to_have_count(3)
    for index, word in enumerate(MOODS[lang]):
        expect(mood.nth(index)).to_contain_text(word)
        expect(mood.nth(index).locator("kbd")).to_have_text(str(index + 1))
    expect(current).to_have_attribute("data-question", "mood")
    page.keyboard.press("2")
    expect(page.locator("input[name=mood][value='1']")).to_be_checked()
    first = form.get_attribute("data-assignment")
    page.keyboard.press("Enter")

    expect(form).not_to_have_attribute("data-assignment", first or "")
    expect(page.locator("fieldset.current")).to_have_attribute("data-question", "stance")
    # Second task: 3, then 100 (waits after 1 and 10), then 0 at once, then Enter confirms 1.
    page.keyboard.press("3")
    expect(page.locator("input[name=stance][value='3']")).to_be_checked()
    page.keyboard.press("0")
    expect(page.locator("input[name=ten][value='0']")).to_be_checked()
    page.keyboard.type("100", delay=30)
    expect(page.locator("input[name=hundred][value='100']")).to_be_checked()
    # A number off the scale is refused and chooses nothing; Backspace corrects.
    page.keyboard.press("-")
    expect(page.locator("form.task .status")).to_have_class(re.compile("warning"))
    page.keyboard.press("1")
    page.keyboard.press("Enter")  # confirms the 1, does not submit
    expect(page.locator("input[name=again][value='1']")).to_be_checked()
    page.locator("fieldset[data-question=mood] .point").nth(2).click()
    second = form.get_attribute("data-assignment")
    page.keyboard.press("Enter")
    expect(form).not_to_have_attribute("data-assignment", second or "")

    rater = Rater.objects.get(study=study)
    stored = [
        {a.question.name: a.value for a in r.answers.select_related("question")}
        for r in ScoreResponse.objects.filter(rater=rater).order_by("submitted_at")
    ]
    assert stored == [
        {"stance": -2, "ten": 10, "hundred": 73, "again": 1, "mood": 1},
        {"stance": 3, "ten": 0, "hundred": 100, "again": 1, "mood": 2},
    ]
