"""The study's navigation in the browser: on a desktop the four groups with their labels and
every entry; on a phone a row of the groups and only the current group's entries, reached by the
keyboard, in both languages, without the page scrolling sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from apps.studies.models import Item
from apps.studies.services import study_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-researcher-123"
LABELS = {
    "en": ["Prepare", "Collect", "Results", "Exports"],
    "zh-hans": ["准备", "收集", "结果", "导出"],
}


@pytest.fixture
def study(builtin_rubrics, django_user_model):  # type: ignore[no-untyped-def]
    owner = django_user_model.objects.create_user("researcher", password=PASSWORD)
    study = study_create(slug="nav", rubric_slug="humor", name="Nav", owner=owner)
    Item.objects.create(study=study, external_id="a", text="A joke", source="human")
    return study


def _open(browser: Browser, live_server, width: int, language: str, path: str):  # type: ignore[no-untyped-def]
    context = browser.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": 800},
        locale=language,
        extra_http_headers={"Accept-Language": language},
    )
    page = context.new_page()
    page.goto(f"/accounts/login/?next={path}")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.locator("form button[type=submit]").click()
    assert page.url.endswith(path)
    return context, page


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_desktop_shows_every_group_with_its_label_and_the_page_marked(
    study, browser: Browser, live_server, screenshots, language
):  # type: ignore[no-untyped-def]
    context, page = _open(
        browser, live_server, 1280, language, f"/studies/{study.slug}/results/agreement/"
    )
    screenshots.watch(page)
    screenshots.take(page, "agreement")
    nav = page.locator("nav.tabs")
    groups = nav.get_by_role("group")
    expect(groups).to_have_count(4)
    for group, label in zip(groups.all(), LABELS[language], strict=True):
        expect(group).to_have_accessible_name(label)
    expect(nav.locator(".tab-groups")).to_be_hidden()
    expect(nav.locator(".tab-group a:visible")).to_have_count(17)
    expect(nav.locator("a[aria-current=page]")).to_have_count(1)
    expect(nav.locator("a[aria-current=page]")).to_have_attribute(
        "href", f"/studies/{study.slug}/results/agreement/"
    )
    context.close()


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_phone_shows_the_groups_and_the_current_groups_entries_by_keyboard(
    study, browser: Browser, live_server, screenshots, language
):  # type: ignore[no-untyped-def]
    context, page = _open(browser, live_server, 375, language, f"/studies/{study.slug}/")
    screenshots.watch(page)
    screenshots.take(page, "progress")
    nav = page.locator("nav.tabs")
    row = nav.locator(".tab-groups a")
    expect(row).to_have_text(LABELS[language])
    # On the progress page: Collect is marked, and only its entries are shown.
    expect(row.nth(1)).to_have_attribute("aria-current", "true")
    shown = nav.locator(".tab-group a:visible")
    expect(shown).to_have_count(4)
    expect(nav.locator(".tab-group.current")).to_have_attribute("data-group", "collect")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375

    # The keyboard reaches the row of groups: Results opens the summary and shows its entries.
    row.nth(2).focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.endswith(f"/studies/{study.slug}/results/")
    expect(nav.locator(".tab-group.current")).to_have_attribute("data-group", "results")
    expect(nav.locator(".tab-group a:visible")).to_have_count(7)
    expect(nav.locator(".tab-group a[aria-current=page]")).to_be_visible()
    box = nav.bounding_box()
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= 375
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    context.close()
