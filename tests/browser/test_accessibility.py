"""The rater pages pass axe-core's WCAG 2.1 A and AA rules, in English and Chinese, in every state
a rater meets: enrolment (and its errors), a scorecard of every entry kind (points, a number field
with a slider, yes or no, choices, "I don't get it", a locked question and an opened one, a number
being typed), a pair, a Turing task, the explanation step, the end page, and the pages that turn a
rater away (full, in use, not open). Every control is reached with Tab and shows its focus.

axe-core is the copy packaged with axe-playwright-python, injected into the page: nothing is
fetched while the tests run.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from apps.assignments.models import Assignment
from apps.raters.models import BackgroundGroup
from apps.studies.models import Rubric, Study
from apps.studies.rubrics import rubric_create
from tests.browser.tasks import enroll
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
AXE = Axe()
LANGS = ["en", "zh"]
PROLIFIC = "?PROLIFIC_PID=5f0c1e2d3b4a&STUDY_ID=st-1&SESSION_ID=se-1"

# Points, a 0-100 number field with a slider, a continuous slider, and choices: with the humor
# rubric's yes-or-no question and "I don't get it", every way a scorecard asks for an answer.
ENTRY_KINDS = {
    "slug": "every-entry",
    "name": "Every entry kind",
    "questions": [
        {
            "name": "ten",
            "kind": "likert",
            "min_value": 0,
            "max_value": 10,
            "prompt": {"en": "Out of ten?", "zh": "十分制？"},
            "anchors": {"en": {"0": "None", "10": "Most"}, "zh": {"0": "无", "10": "最多"}},
        },
        {
            "name": "hundred",
            "kind": "likert",
            "min_value": 0,
            "max_value": 100,
            "prompt": {"en": "Out of a hundred?", "zh": "百分制？"},
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

# Every control a rater can Tab to shows where the focus is: an outline of at least 2 px on the
# control or on the label it sits in, whose colour stands out 3:1 against what is behind it
# (WCAG 1.4.11), or a ring drawn with a box shadow.
FOCUS_SHOWN = """() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
    const lum = c => {
        const [r, g, b] = rgb(c).slice(0, 3).map(v => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const behind = e => {
        for (let p = e.parentElement; p; p = p.parentElement) {
            const c = getComputedStyle(p).backgroundColor;
            const parts = rgb(c);
            if (parts.length === 3 || (parts.length === 4 && parts[3] > 0)) return c;
        }
        return "rgb(255, 255, 255)";
    };
    const contrast = (a, b) => {
        const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
        return (hi + 0.05) / (lo + 0.05);
    };
    const shows = e => {
        const s = getComputedStyle(e);
        if (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) >= 2) {
            return contrast(s.outlineColor, behind(e)) >= 3;
        }
        return s.boxShadow !== "none" && s.boxShadow !== "";
    };
    const label = el.closest("label");
    const name = el.tagName.toLowerCase() + (el.name ? "[name=" + el.name + "]" : "")
        + (el.value && el.type === "radio" ? "[value=" + el.value + "]" : "")
        + (el.id ? "#" + el.id : "");
    return [name, shows(el) || (label !== null && shows(label))];
}"""


def _violations(page: Page, where: str) -> list[str]:
    results = AXE.run(
        page,
        options={"runOnly": {"type": "tag", "values": AXE_TAGS}, "resultTypes": ["violations"]},
    )
    found = []
    for violation in results.response["violations"]:
        nodes = "\n".join(
            f"      {' '.join(map(str, node['target']))}: "
            + (node.get("failureSummary") or "").replace("\n", " ")
            for node in violation["nodes"]
        )
        found.append(
            f"{where}: {violation['id']} ({violation['impact']}) {violation['help']}\n{nodes}"
        )
    return found


def _unfocused(page: Page, where: str) -> list[str]:
    """Tab through the page from the top: every control reached must show its focus."""
    page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
    seen: list[str] = []
    problems = []
    for _ in range(80):
        page.keyboard.press("Tab")
        state: Any = page.evaluate(FOCUS_SHOWN)
        if state is None:
            break
        name, shown = state
        if name in seen:
            break
        seen.append(name)
        if not shown:
            problems.append(f"{where}: no visible focus on {name}")
    if not seen:
        problems.append(f"{where}: Tab reaches no control")
    return problems


class Audit:
    def __init__(self, page: Page, lang: str) -> None:
        self.page = page
        self.lang = lang
        self.problems: list[str] = []
        self.pages = 0

    def __call__(self, where: str, *, focus: bool = True) -> None:
        self.page.wait_for_load_state("load")
        label = f"[{self.lang}] {where}"
        expect(self.page.locator("html")).to_have_attribute(
            "lang", "zh-hans" if self.lang == "zh" else "en"
        )
        self.problems += _violations(self.page, label)
        if focus:
            self.problems += _unfocused(self.page, label)
        self.pages += 1

    def check(self) -> None:
        assert not self.problems, "\n".join(self.problems)


def _switch_language(page: Page, lang: str) -> None:
    if lang == "zh":
        page.locator("#lang-select").select_option("zh-hans")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")


def _next_kind(study: Study, kind: str) -> None:
    Study.objects.filter(pk=study.pk).update(task_mix={kind: 1})


def _submit(page: Page) -> None:
    page.locator("form.task button[type=submit]").click()


def _task(page: Page, kind: str) -> None:
    expect(page.locator(f"form.task[data-task={kind}]")).to_be_visible()
    expect(page.locator("[data-countdown]")).to_have_text(re.compile(r"^\d+:\d\d$"))


@pytest.mark.parametrize("lang", LANGS)
def test_enrolment_tasks_explanation_and_end_pass_axe(
    rater_page: Page, builtin_rubrics: None, lang: str
) -> None:
    page = rater_page
    audit = Audit(page, lang)
    study = StudyFactory(
        rubric=Rubric.objects.get(slug="humor-not-understood"),
        languages=["en", "zh"],
        task_mix={"scorecard": 1},
        tasks_per_session=4,
        attention_check_rate=0,
        prolific_completion_code="LAUGH7Q2X",
    )
    ItemFactory(study=study, topic="cats", language="en", explanation="Cats chase red dots.")

    page.goto(f"/s/{study.slug}/{PROLIFIC}")
    _switch_language(page, lang)
    audit("enrolment")
    page.locator("form[method=post] button[type=submit]").click()
    expect(page.locator("[role=alert]").first).to_be_visible()
    audit("enrolment with errors")
    page.locator("input[name=languages]").first.check()
    page.locator("input[name=background]").first.check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("#id_consent").check()
    page.locator("form[method=post] button[type=submit]").click()

    # Yes/no, points, "I don't get it"; funniness is locked until surprise and coherence.
    _task(page, "scorecard")
    funniness = page.locator("fieldset[data-question=funniness]")
    expect(funniness).to_have_attribute("aria-disabled", "true")
    audit("scorecard, a question locked")
    _submit(page)
    expect(page.locator("form.task .status")).not_to_be_empty()
    audit("scorecard, an answer missing", focus=False)
    page.locator("input[name=surprise][value='4']").check()
    page.locator("input[name=coherence][value='5']").check()
    expect(funniness).to_have_attribute("aria-disabled", "false")
    page.locator("input[name=funniness][value=not_understood]").check()
    page.locator("input[name=offensive][value='0']").check()
    audit("scorecard, answered")
    ItemFactory(study=study, topic="cats", language="en")
    ItemFactory(study=study, topic="cats", language="en")
    _next_kind(study, Assignment.Kind.PAIR)
    _submit(page)

    _task(page, "explanation")
    audit("explanation")
    page.locator("input[name=verdict][value=yes]").check()
    _submit(page)

    _task(page, "pair")
    audit("pair")
    page.keyboard.press("1")
    ItemFactory(study=study, topic="dogs", language="en")
    _next_kind(study, Assignment.Kind.TURING)
    _submit(page)

    _task(page, "turing")
    audit("turing")
    page.keyboard.press("2")
    _submit(page)

    expect(page.locator("[data-page=end]")).to_be_visible()
    expect(page.locator("[data-page=end] .code")).to_have_text("LAUGH7Q2X")
    audit("end, with the completion code")
    assert audit.pages == 9
    audit.check()


@pytest.mark.parametrize("lang", LANGS)
def test_every_scorecard_entry_kind_passes_axe(
    rater_page: Page, builtin_rubrics: None, lang: str
) -> None:
    page = rater_page
    audit = Audit(page, lang)
    study = StudyFactory(
        rubric=rubric_create(spec={**ENTRY_KINDS, "slug": f"entry-{lang}"}),
        languages=["en"],
        task_mix={"scorecard": 1},
        tasks_per_session=1,
        attention_check_rate=0,
        session_minutes=1,
    )
    ItemFactory(study=study, topic="cats", language="en")
    enroll(page, study.slug, lang)

    _task(page, "scorecard")
    # Tabbing moves the highlight; the keys are tried first, Tab comes once all is answered.
    audit("scorecard of points, field, slider and choices", focus=False)
    current = page.locator("fieldset.current")
    expect(current).to_have_attribute("data-question", "ten")
    page.keyboard.press("1")  # "1" waits: it may be the start of 10
    expect(page.locator("fieldset.current [data-typed-value]")).to_have_text("1")
    audit("scorecard, a number being typed", focus=False)
    page.keyboard.press("0")
    expect(current).to_have_attribute("data-question", "hundred")
    page.keyboard.type("73", delay=30)
    page.keyboard.press("Enter")
    expect(current).to_have_attribute("data-question", "rating")
    page.keyboard.type("0.2", delay=30)  # off the slider's grid: a warning
    page.keyboard.press("Enter")
    expect(page.locator("form.task .status")).to_have_class(re.compile("warning"))
    audit("scorecard, a warning", focus=False)
    page.keyboard.press("Backspace")
    page.keyboard.type("25", delay=30)
    page.keyboard.press("Enter")
    page.locator("fieldset[data-question=mood] .point").nth(1).click()
    audit("scorecard, every question answered")
    _submit(page)

    # One minute: the countdown is urgent, and the last answer ends the session.
    expect(page.locator("[data-page=end]")).to_be_visible()
    # Not from Prolific: a plain thank-you.
    audit("end, without a completion code", focus=False)
    audit.check()


@pytest.mark.parametrize("lang", LANGS)
def test_the_pages_that_turn_a_rater_away_pass_axe(
    rater_page: Page, builtin_rubrics: None, lang: str
) -> None:
    page = rater_page
    audit = Audit(page, lang)
    closed = StudyFactory(status=Study.Status.CLOSED)
    page.goto(f"/s/{closed.slug}/")
    _switch_language(page, lang)
    audit("closed study")
    draft = StudyFactory(status=Study.Status.DRAFT)
    page.goto(f"/s/{draft.slug}/")
    audit("study not open yet")

    full = StudyFactory(prolific_screenout_code="SCREEN42", languages=["en"])
    BackgroundGroup.objects.filter(study=full).update(quota=0)
    page.goto(f"/s/{full.slug}/{PROLIFIC}")
    page.locator("input[name=background]").first.check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("#id_consent").check()
    page.locator("form[method=post] button[type=submit]").click()
    expect(page.locator(".code")).to_have_text("SCREEN42")
    audit("group full")

    open_study = StudyFactory(languages=["en"], task_mix={"turing": 1}, attention_check_rate=0)
    ItemFactory(study=open_study, language="en")
    page.goto(f"/s/{open_study.slug}/{PROLIFIC}")
    page.locator("input[name=background]").first.check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("#id_consent").check()
    page.locator("form[method=post] button[type=submit]").click()
    _task(page, "turing")
    page.context.clear_cookies()
    # The same participant id from another browser, without Prolific's session id.
    page.goto(f"/s/{open_study.slug}/?PROLIFIC_PID=5f0c1e2d3b4a")
    _switch_language(page, lang)
    expect(page.locator("[data-page=in-use]")).to_be_visible()
    audit("participant id in use")
    audit.check()
