"""Answering a rater's tasks in the browser, whatever kind the page shows: what is on screen,
read in one step, and the middle choice of every open question, submitted until the page moves
on. The language journey and the page-fit test walk their sessions with these."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

STATE = """() => {
    if (document.querySelector("[data-page=end]")) return ["end", ""];
    const form = document.querySelector("form.task");
    if (!form) return ["loading", ""];
    return [form.dataset.task || "", form.dataset.assignment || form.dataset.response || ""];
}"""


def enroll(page: Page, slug: str, lang: str) -> None:
    """Through the enrolment page of a study in this interface language: the first background,
    25-34, consent; on to the first task."""
    page.goto(f"/s/{slug}/")
    if lang == "zh":
        page.locator("#lang-select").select_option("zh-hans")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    page.locator("input[name=background]").first.check()
    page.locator("#id_age_band").select_option("25-34")
    page.locator("#id_consent").check()
    page.locator("form[method=post] button[type=submit]").click()
    expect(page).to_have_url(re.compile(rf"/s/{slug}/task/$"))


def task_state(page: Page) -> tuple[str, str]:
    """What is on screen, read in one step (the page may be navigating meanwhile)."""
    for _ in range(100):
        try:
            kind, key = page.evaluate(STATE)
        except PlaywrightError:  # the page navigated while it was read
            kind, key = "loading", ""
        if kind != "loading":
            return (kind, key)
        page.wait_for_timeout(100)
    raise AssertionError("no task page and no end page")


def _fill(page: Page, kind: str) -> None:
    """Answer what the page asks now, the middle choice of every open question."""
    form = page.locator("form.task")
    if kind == "scorecard":
        for fieldset in form.locator("fieldset[data-question]").all():
            inputs = fieldset.locator("input[type=radio]")
            if inputs.first.is_enabled() and not fieldset.locator("input:checked").count():
                inputs.nth(inputs.count() // 2).check()
    elif kind == "pair":
        form.locator("input[value=left]").check()
    elif kind == "turing":
        form.locator("input[name=guess][value=ai]").check()
    else:  # explanation
        form.locator("input[name=verdict][value=yes]").check()


# A question of the scorecard on screen that is open and not answered yet: a first step has
# unlocked it, and it is the next thing to answer.
OPEN_QUESTION = """() => [...document.querySelectorAll("form.task fieldset[data-question]")].some(
    f => !f.querySelector("input:checked") && f.querySelector("input[type=radio]:enabled"))"""


def _opened(page: Page) -> bool:
    try:
        return bool(page.evaluate(OPEN_QUESTION))
    except PlaywrightError:  # the page navigated while it was read
        return False


def task_answer(page: Page) -> list[str]:
    """Answer the task on screen until the page moves on; the languages of the items shown."""
    before = task_state(page)
    shown = page.locator("article.item").evaluate_all("els => els.map(e => e.lang)")
    for _ in range(3):  # a scorecard may unlock its later questions after a first step
        _fill(page, before[0])
        page.locator("form.task button[type=submit]").click()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and task_state(page) == before:
            if before[0] == "scorecard" and _opened(page):
                break
            page.wait_for_timeout(100)
        if task_state(page) != before:
            return shown
    raise AssertionError(f"the {before[0]} task did not move on")
