"""Every question kind a rubric allows, answered keyboard-only and mouse-only: what is stored is
what the rater typed or set, question by question, on a −3..3, a 0–10, a 0–100 (a number field
with a slider), a choice and a continuous slider (−10..10 in steps of 1/32), in both interface
languages, on a phone and on a laptop. Before, "10" stored 1 and gave the 0 to the next
question, "73" stored 7 and "−2" stored +2."""

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
            "name": "rating",
            "kind": "slider",
            "min_value": -10,
            "max_value": 10,
            "step": "1/32",
            "prompt": {"en": "How funny, on the slider?", "zh": "用滑块打分，有多好笑？"},
            "anchors": {
                "en": {"-10": "Not funny", "10": "Very funny"},
                "zh": {"-10": "不好笑", "10": "很好笑"},
            },
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
FIELD_LEGEND = {"en": "type the number", "zh": "输入数字"}


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
    expect(form.locator("[data-keymap]")).to_contain_text(FIELD_LEGEND[lang])
    # A wide scale is a number field and a slider, never 101 buttons; the slider is unset.
    expect(page.locator("input[name=hundred][type=radio]")).to_have_count(0)
    expect(page.locator("fieldset[data-question=hundred] input[data-slider]")).to_have_class(
        re.compile("unset")
    )
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
    # 73 typed quickly, digit by digit, into the number field; Enter confirms and moves on.
    expect(current).to_have_attribute("data-question", "hundred")
    page.keyboard.type("73", delay=30)
    page.keyboard.press("Enter")
    expect(page.locator("input[name=hundred][data-number]")).to_have_value("73")
    expect(page.locator("fieldset[data-question=hundred] input[data-slider]")).to_have_value("73")
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
    # The slider's question: a negative fraction typed whole, Enter confirms it.
    expect(current).to_have_attribute("data-question", "rating")
    page.keyboard.type("-3.65625", delay=20)
    page.keyboard.press("Enter")
    expect(page.locator("input[name=rating][data-number]")).to_have_value("-3.65625")
    expect(current).to_have_attribute("data-question", "mood")
    page.keyboard.press("2")
    expect(page.locator("input[name=mood][value='1']")).to_be_checked()
    first = form.get_attribute("data-assignment")
    page.keyboard.press("Enter")

    expect(form).not_to_have_attribute("data-assignment", first or "")
    expect(page.locator("fieldset.current")).to_have_attribute("data-question", "stance")
    # Second task: 3, then 0 at once, then 100 in the field.
    page.keyboard.press("3")
    expect(page.locator("input[name=stance][value='3']")).to_be_checked()
    page.keyboard.press("0")
    expect(page.locator("input[name=ten][value='0']")).to_be_checked()
    page.keyboard.type("100", delay=30)
    page.keyboard.press("Enter")
    expect(page.locator("input[name=hundred][data-number]")).to_have_value("100")
    # A number off the scale is refused and chooses nothing; Backspace corrects.
    page.keyboard.press("-")
    expect(page.locator("form.task .status")).to_have_class(re.compile("warning"))
    page.keyboard.press("1")
    page.keyboard.press("Enter")  # confirms the 1, does not submit
    expect(page.locator("input[name=again][value='1']")).to_be_checked()
    # Off the slider's grid (0.2 is not a multiple of 1/32): refused, nothing submitted.
    page.keyboard.type("0.2", delay=20)
    page.keyboard.press("Enter")
    expect(page.locator("form.task .status")).to_have_class(re.compile("warning"))
    expect(form).to_have_attribute("data-assignment", form.get_attribute("data-assignment") or "")
    page.keyboard.press("Backspace")  # 0.2 -> 0.
    page.keyboard.type("25", delay=20)
    page.keyboard.press("Enter")
    expect(page.locator("input[name=rating][data-number]")).to_have_value("0.25")
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
        {"stance": -2, "ten": 10, "hundred": 73, "again": 1, "rating": -3.65625, "mood": 1},
        {"stance": 3, "ten": 0, "hundred": 100, "again": 1, "rating": 0.25, "mood": 2},
    ]


@pytest.mark.parametrize(("lang", "width"), [("zh", 1280), ("en", 375)])
def test_a_mouse_or_finger_alone_answers_every_kind(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str, width: int
) -> None:
    """No key pressed: points clicked, sliders set by clicking on them (a tap on a phone); the
    stored answers are what the page showed. An untouched slider is no answer."""
    rubric = rubric_create(spec={**SPEC, "slug": f"mouse-{lang}"})
    study = StudyFactory(
        rubric=rubric,
        task_mix={"scorecard": 1},
        tasks_per_session=2,
        attention_check_rate=0,
        languages=["en"],
    )
    for n in range(2):
        ItemFactory(study=study, topic="cats", external_id=f"mouse-{n}")
    context = new_context(viewport={"width": width, "height": 900}, has_touch=width < 500)
    page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    enroll(page, study.slug, lang)
    form = page.locator("form.task[data-task=scorecard]")

    page.locator("fieldset[data-question=stance] .point").nth(1).click()  # -2
    page.locator("fieldset[data-question=ten] .point").last.click()  # 10
    page.locator("fieldset[data-question=again] .point").first.click()  # 0
    page.locator("fieldset[data-question=mood] .point").nth(2).click()
    # Both sliders untouched: the card is not complete, and nothing is sent.
    page.locator("button[type=submit]").click()
    expect(page.locator("form.task .status")).to_have_class(re.compile("error"))
    assert ScoreResponse.objects.count() == 0

    shown: dict[str, float] = {}
    for name, where in (("hundred", 0.8), ("rating", 0.25)):
        slider = page.locator(f"fieldset[data-question={name}] input[data-slider]")
        slider.scroll_into_view_if_needed()
        box = slider.bounding_box()
        assert box is not None
        slider.click(position={"x": box["width"] * where, "y": box["height"] / 2})
        expect(slider).not_to_have_class(re.compile("unset"))
        number = page.locator(f"input[name={name}][data-number]")
        expect(number).not_to_have_value("")
        shown[name] = float(number.input_value())
        assert float(slider.input_value()) == shown[name]
    first = form.get_attribute("data-assignment")
    page.locator("button[type=submit]").click()
    expect(form).not_to_have_attribute("data-assignment", first or "")

    stored = {
        a.question.name: a.value
        for a in ScoreResponse.objects.get(rater__study=study).answers.select_related("question")
    }
    assert stored == {
        "stance": -2,
        "ten": 10,
        "hundred": shown["hundred"],
        "again": 0,
        "rating": shown["rating"],
        "mood": 2,
    }
    # The clicks landed where they were aimed: 80% along 0-100, a quarter along -10..10.
    assert 70 <= shown["hundred"] <= 90
    assert -8 <= shown["rating"] <= -2


@pytest.mark.parametrize(("lang", "width"), [("en", 1280), ("zh", 375)])
def test_i_dont_get_it_is_a_key_and_a_tap_and_never_a_number(
    new_context, screenshots, live_server, builtin_rubrics: None, lang: str, width: int
) -> None:
    from apps.judgments.models import NotUnderstood
    from apps.studies.models import Rubric

    study = StudyFactory(
        rubric=Rubric.objects.get(slug="humor-not-understood"),
        task_mix={"scorecard": 1},
        tasks_per_session=2,
        attention_check_rate=0,
        languages=["en"],
    )
    for n in range(2):
        ItemFactory(study=study, topic="cats", external_id=f"nu-{n}")
    context = new_context(viewport={"width": width, "height": 900}, has_touch=width < 500)
    page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    enroll(page, study.slug, lang)
    form = page.locator("form.task[data-task=scorecard]")
    expect(form.locator("[data-keymap] .not-understood-key")).to_contain_text("X")
    # Keyboard: surprise 2, coherence 4, then X on funniness (open once the server says so).
    page.keyboard.press("2")
    page.keyboard.press("4")
    funniness = page.locator("fieldset[data-question=funniness]")
    expect(funniness).not_to_have_attribute("disabled", "")
    expect(funniness).to_have_class(re.compile("current"))
    page.keyboard.press("x")
    expect(funniness.locator("input[value=not_understood]")).to_be_checked()
    page.keyboard.press("n")
    first = form.get_attribute("data-assignment")
    page.keyboard.press("Enter")
    expect(form).not_to_have_attribute("data-assignment", first or "")
    # By touch or mouse: the same choice is a labelled button of its own.
    page.locator("fieldset[data-question=surprise] .point").nth(0).click()
    page.locator("fieldset[data-question=coherence] .point").nth(0).click()
    expect(funniness).not_to_have_attribute("disabled", "")
    funniness.locator(".not-understood").click()
    page.locator("fieldset[data-question=offensive] .point").nth(0).click()
    page.locator("button[type=submit]").click()
    expect(page.locator("[data-page=end]")).to_have_count(1)  # the session's two tasks are done

    said = NotUnderstood.objects.filter(response__study=study)
    assert said.count() == 2
    assert set(said.values_list("question__name", flat=True)) == {"funniness"}
    assert not ScoreResponse.objects.filter(
        study=study, answers__question__name="funniness"
    ).exists()


def test_a_slider_moves_by_its_step_with_the_arrow_keys(
    new_context, screenshots, live_server, builtin_rubrics: None
) -> None:
    rubric = rubric_create(spec={**SPEC, "slug": "arrow-keys"})
    study = StudyFactory(
        rubric=rubric,
        task_mix={"scorecard": 1},
        tasks_per_session=1,
        attention_check_rate=0,
        languages=["en"],
    )
    ItemFactory(study=study, topic="cats", external_id="arrows-0")
    page = screenshots.watch(new_context(viewport={"width": 1280, "height": 900}).new_page())
    page.set_default_timeout(10_000)
    enroll(page, study.slug, "en")
    slider = page.locator("fieldset[data-question=rating] input[data-slider]")
    number = page.locator("input[name=rating][data-number]")
    slider.focus()
    expect(number).to_have_value("")  # focusing is not answering
    for key in ("ArrowRight", "ArrowRight", "ArrowLeft"):
        page.keyboard.press(key)
    expect(number).to_have_value("0.03125")  # one step of 1/32 up from the unset middle
    page.keyboard.press("Enter")  # confirms and moves on to the next unanswered; no submit
    expect(page.locator("fieldset.current")).to_have_attribute("data-question", "mood")
