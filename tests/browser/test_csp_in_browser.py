"""The pages work under their own Content-Security-Policy (no inline scripts or handlers), in a
real browser that enforces it. The other browser tests bypass the policy, which Playwright's
polling waits need, so an inline handler the policy blocks would pass them unnoticed: here no
page of either demo study may trigger a violation, and the controls that react do react."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser

from apps.studies.models import Study
from tests.browser.conftest import log_in_as_researcher
from tests.pages.conftest import SITE_PAGES, researcher_pages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Violations reach the page as `securitypolicyviolation` events; collected from before any of
# the page's own scripts run.
LISTEN = """window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__violations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline') + ' ' +
    (e.sourceFile || '') + ':' + e.lineNumber);
});"""


def _enforcing(browser: Browser, live_server: Any) -> Any:
    context = browser.new_context(base_url=live_server.url, bypass_csp=False)
    context.add_init_script(LISTEN)
    return context


def _violations(page: Any, url: str, console: list[str]) -> list[str]:
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, f"{url}: {response.status}"
    assert "Content-Security-Policy" in response.headers or "content-security-policy" in (
        response.headers
    )
    page.wait_for_load_state("load")
    found = [f"{url}: {v}" for v in page.evaluate("() => window.__violations")]
    found += [f"{url}: {message}" for message in console]
    console.clear()
    return found


def test_no_page_of_the_demo_studies_breaks_its_content_security_policy(
    demo_site: dict[str, Study], browser: Browser, live_server: Any
) -> None:
    context = _enforcing(browser, live_server)
    page = context.new_page()
    page.set_default_timeout(15_000)
    console: list[str] = []
    page.on(
        "console",
        lambda m: console.append(m.text) if "Content Security Policy" in m.text else None,
    )
    log_in_as_researcher(page)
    problems: list[str] = []
    for study in demo_site.values():
        for url in [*SITE_PAGES, *researcher_pages(study), f"/s/{study.slug}/"]:
            problems += _violations(page, url, console)
    context.close()
    assert not problems, "\n".join(problems)


def test_the_models_page_switches_its_view_when_another_is_chosen(
    demo_site: dict[str, Study], browser: Browser, live_server: Any
) -> None:
    context = _enforcing(browser, live_server)
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in_as_researcher(page)
    page.goto(f"/studies/{demo_site['humor'].slug}/results/models/")
    select = page.locator("#view-of")
    options = select.locator("option").evaluate_all("els => els.map(e => e.value)")
    chosen = next(value for value in options if value.startswith("by_level:"))
    with page.expect_navigation():
        select.select_option(chosen)
    assert f"view_of={chosen.replace(':', '%3A')}" in page.url
    assert page.locator("#view-of").input_value() == chosen
    assert not page.evaluate("() => window.__violations")
    context.close()


def test_the_coverage_heat_maps_column_names_stand_over_their_columns(
    demo_site: dict[str, Study], browser: Browser, live_server: Any
) -> None:
    """Their widths come from the style sheet (an inline width would be blocked): each name is
    as wide as its column of the map, and no two overlap."""
    context = _enforcing(browser, live_server)
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in_as_researcher(page)
    page.goto(f"/studies/{demo_site['humor'].slug}/")
    boxes = page.locator(".heatmap-labels span").evaluate_all(
        "els => els.map(e => { const b = e.getBoundingClientRect(); return [b.left, b.right]; })"
    )
    svg = page.locator("svg.heatmap").bounding_box()
    assert svg is not None
    assert len(boxes) == 4
    column = svg["width"] / len(boxes)
    for k, (left, right) in enumerate(boxes):
        assert right - left == pytest.approx(column, abs=1)
        assert left == pytest.approx(svg["x"] + k * column, abs=1.5)
    assert not page.evaluate("() => window.__violations")
    context.close()
