"""The language journey in a real browser, on both interface languages, on a desktop and a
375 px phone: the rater says at enrolment which of the study's languages they read (the
interface's is preselected), then is shown only items in those languages, and every A/B pair
in one language. Choosing none is a form error in the interface's language, and stores nothing.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from apps.assignments.models import Assignment
from apps.raters.models import Rater
from apps.studies.models import Item, Study
from tests.browser.tasks import task_answer, task_state
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The checkbox labels and the form error, per interface language (locale/zh_Hans's .po).
TEXT = {
    "en": {
        "names": {"en": "English", "zh": "Chinese"},
        "background": "Technical",
        "none_chosen": "Choose at least one language you read.",
    },
    "zh": {
        "names": {"en": "英语", "zh": "中文"},
        "background": "技术",
        "none_chosen": "请至少选择一种您能读懂的语言。",
    },
}
JOKES = {
    "en": [
        "My cat walked across the keyboard and fixed three bugs. Now she wants equity.",
        "I told my cat a joke about a laser pointer. She didn't get it, but she chased it.",
        "The cat knocked my coffee off the desk, then filed a ticket about the mess.",
    ],
    "zh": [
        "我家的猫在键盘上走了一圈，修好了三个bug，现在它要求入股。",
        "我给猫讲了个激光笔的笑话，它没听懂，但追了一晚上。",
        "猫把我的咖啡推下桌子，然后提交了一个工单投诉地板太脏。",
    ],
}
TASKS = 8
# (interface, languages read, phone): each reader on each interface, both viewports covered.
JOURNEYS = [
    ("en", ["en"], False),
    ("zh", ["zh"], False),
    ("en", ["en", "zh"], True),
    ("zh", ["en", "zh"], False),
    ("en", ["zh"], True),
    ("zh", ["en"], True),
]


def _study() -> Study:
    study = StudyFactory(
        languages=["en", "zh"],
        task_mix={"scorecard": 0.4, "pair": 0.4, "turing": 0.2},
        attention_check_rate=0,
        tasks_per_session=TASKS,
        random_seed=16,
    )
    for language, texts in JOKES.items():
        for topic in ("cats", "office"):
            for k, text in enumerate(texts):
                ItemFactory(
                    study=study,
                    external_id=f"{language}-{topic}-{k}",
                    language=language,
                    topic=topic,
                    text=text,
                    source="human" if k == 0 else "model-a",
                )
    return study


def _enroll(
    page: Page, study: Study, interface: str, reads: list[str], phone: bool, pid: str
) -> None:
    text = TEXT[interface]
    # A fixed participant id makes the session replay: the kinds and items are drawn from
    # (study seed, rater id, position), and an enrolment without one gets a fresh random id.
    page.goto(f"/s/{study.slug}/?PROLIFIC_PID={pid}")
    if interface == "zh":
        page.locator("#lang-select").select_option("zh-hans")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    boxes = {
        code: page.get_by_role("checkbox", name=name, exact=True)
        for code, name in text["names"].items()
    }
    # The interface's language is preselected, the other is not.
    expect(boxes[interface]).to_be_checked()
    expect(boxes["zh" if interface == "en" else "en"]).not_to_be_checked()
    if phone:
        assert page.evaluate("() => document.documentElement.scrollWidth <= 375")

    page.get_by_role("radio", name=text["background"], exact=True).check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("#id_consent").check()
    # None chosen: the form comes back with the error in the interface's language, nothing stored.
    for box in boxes.values():
        box.set_checked(False)
    page.locator("form[method=post] button[type=submit]").click()
    expect(page.locator("[role=alert]").first).to_have_text(text["none_chosen"])
    assert not Rater.objects.filter(study=study).exists()

    for code, box in boxes.items():
        box.set_checked(code in reads)
    page.get_by_role("radio", name=text["background"], exact=True).check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("#id_consent").check()
    page.locator("form[method=post] button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/task/$"))


@pytest.mark.parametrize(
    ("interface", "reads", "phone"),
    JOURNEYS,
    ids=[f"{i}-interface-reads-{'+'.join(r)}{'-375px' if p else ''}" for i, r, p in JOURNEYS],
)
def test_a_rater_is_shown_only_the_languages_they_read_and_pairs_in_one_language(
    new_context, screenshots, live_server, builtin_rubrics: None, interface, reads, phone
) -> None:
    viewport = {"width": 375, "height": 812} if phone else {"width": 1280, "height": 900}
    context = new_context(viewport=viewport, is_mobile=phone, has_touch=phone)
    page = screenshots.watch(context.new_page())
    page.set_default_timeout(10_000)
    study = _study()
    pid = f"journey-{interface}-{'-'.join(reads)}{'-phone' if phone else ''}"
    _enroll(page, study, interface, reads, phone, pid)
    rater = Rater.objects.get(study=study)
    assert rater.external_id == pid
    assert rater.languages == [code for code in ("en", "zh") if code in reads]

    seen: list[tuple[str, list[str]]] = []
    while (state := task_state(page))[0] != "end":
        if phone:
            assert page.evaluate("() => document.documentElement.scrollWidth <= 375")
        seen.append((state[0], task_answer(page)))
        assert len(seen) <= TASKS + 1, "the session did not end"
    expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))

    tasks = [(kind, languages) for kind, languages in seen if kind != "explanation"]
    assert len(tasks) == TASKS
    shown = {language for _, languages in tasks for language in languages}
    assert shown == set(reads)
    pairs = [languages for kind, languages in tasks if kind == "pair"]
    assert pairs, "no pair was given"
    assert all(len(languages) == 2 and languages[0] == languages[1] for languages in pairs)
    # The server's record agrees with what the pages showed.
    stored = Assignment.objects.filter(rater=rater).select_related("item", "right_item")
    assert {a.item.language for a in stored} | {
        a.right_item.language for a in stored if a.right_item_id
    } == set(reads)
    assert all(a.item.language == a.right_item.language for a in stored if a.right_item_id)
    assert Item.objects.filter(study=study).count() == 12
