"""The generation pages in Chromium: a researcher adds the example sets, edits a prompt, adds a
model (the stand-in chat-completions service), starts a run and reads its progress; every page
fits a 375 px phone and a 1280 px laptop without scrolling sideways."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from apps.generation.models import GenerationOutput, GenerationRun, Prompt
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.generation.conftest import FakeProvider, fast_backoff, provider  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PASSWORD = "pw-generation-4711"
WIDTHS = (375, 1280)


@pytest.fixture
def researcher(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("gen-researcher", password=PASSWORD)


@pytest.fixture
def study(builtin_rubrics: None, researcher: Any) -> Study:
    return study_create(slug="gen-browser", rubric_slug="humor", name="Gen", owner=researcher)


def log_in(page: Page) -> None:
    page.goto("/accounts/login/")
    page.fill("input[name=username]", "gen-researcher")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.locator("form button[type=submit]").click()


def fits(page: Page, width: int, label: str) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        """(w) => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > w + 1)
        .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""",
        width,
    )
    assert scroll <= width, f"{label} at {width} px scrolls sideways ({scroll} px): {wide}"


def test_from_example_sets_to_a_run_in_the_browser(
    rater_page: Page,
    browser: Any,
    live_server: Any,
    study: Study,
    provider: FakeProvider,  # noqa: F811
    fast_backoff: None,  # noqa: F811
) -> None:
    page = rater_page
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page)
    base = f"/studies/{study.slug}/generation/"
    page.goto(base)
    with page.expect_navigation():
        page.get_by_role("button", name="Add the example sets (English and Chinese)").click()
    expect(page.locator("table.prompt-sets tbody tr")).to_have_count(2)

    # Edit a prompt of the English set in the browser.
    page.get_by_role("link", name="Example (English)").click()
    page.get_by_role("link", name="en-single-1").click()
    page.fill("input[name=topic]", "compilers")
    with page.expect_navigation():
        page.get_by_role("button", name="Save the prompt").click()
    assert Prompt.objects.get(external_id="en-single-1").topic == "compilers"

    # Add the stand-in service as a model.
    page.goto(base)
    page.locator("summary", has_text="Add a model").click()
    form = page.locator("form.add-endpoint")
    form.locator("input[name=name]").fill("jester-1")
    form.locator("input[name=url]").fill(provider.url)
    form.locator("input[name=model]").fill("jester-1")
    with page.expect_navigation():
        form.get_by_role("button", name="Add the model").click()
    expect(page.locator("table.endpoints tr[data-endpoint='jester-1']")).to_be_visible()

    # Start a run on both example sets.
    run_form = page.locator("form.new-run")
    run_form.get_by_label("Example (English)").check()
    run_form.get_by_label("示例（中文）").check()
    run_form.get_by_label("jester-1").check()
    run_form.locator("input[name=seed]").fill("11")
    with page.expect_navigation():
        run_form.get_by_role("button", name="Start the run").click()
    run = GenerationRun.objects.get(study=study)
    expect(page.locator("h1")).to_have_text(f"Generation run {run.pk}")
    page.reload()
    total = Prompt.objects.filter(prompt_set__study=study).count()
    row = page.locator("table.run-models tr[data-model='jester-1']")
    expect(row.locator("[data-field=done]")).to_have_text(str(total))
    assert GenerationOutput.objects.filter(run=run).count() == total
    assert Item.objects.filter(study=study, stage=Item.Stage.CANDIDATE).count() == total

    set_id = run.prompt_sets.order_by("pk").first().pk
    pages = {
        "overview": base,
        "prompt set": f"{base}sets/{set_id}/",
        "run": f"{base}runs/{run.pk}/",
    }
    for width, language in [(375, "en"), (1280, "en"), (375, "zh-Hans")]:
        context = browser.new_context(
            base_url=live_server.url,
            viewport={"width": width, "height": 900},
            extra_http_headers={"Accept-Language": language},
        )
        try:
            tab = context.new_page()
            log_in(tab)
            for label, url in pages.items():
                tab.goto(url)
                tab.wait_for_load_state("load")
                fits(tab, width, f"{label} ({language})")
            if language != "en":
                tab.goto(base)
                expect(tab.locator("h1")).to_have_text("生成候选")
        finally:
            context.close()
