"""Every rater page fits its screen: on a 375 px phone and a 1280 px desktop, in English and in
Chinese, no rater page of either demo study scrolls sideways. (The researcher pages are held to
the same rule, and to their tables' rules, in ``test_table_fit.py``, which loads each of them
at both widths in both languages.)

The rater's pages are every kind of task the study gives (scorecard, pair, Turing, the
self-explanation after a scorecard) and the end page, reached by answering tasks with a fixed
participant id per language and width, so each session replays."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Browser

from apps.analysis.models import AggregationState
from apps.studies.models import Study
from tests.browser.tasks import task_answer, task_state
from tests.pages.conftest import task_kinds

WIDTHS = (375, 1280)
LANGUAGES = ("en", "zh-hans")
# How far the page may be wider than the window: none (a rounding pixel at most).
SLACK = 1

MEASURE = """() => {
  const doc = document.documentElement;
  const wide = [];
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.right > doc.clientWidth + 1 && getComputedStyle(el).position !== 'fixed') {
      let scrolled = false;
      for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
        const o = getComputedStyle(p).overflowX;
        if (o === 'auto' || o === 'scroll' || o === 'hidden') { scrolled = true; break; }
      }
      if (!scrolled) wide.push(el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ')[0] : '') + ' ' + Math.round(box.right));
    }
  }
  return {scroll: doc.scrollWidth, client: doc.clientWidth, wide: wide.slice(0, 5)};
}"""


def _overflow(page: Any, url: str) -> str | None:
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, f"{url}: {response.status}"
    return _measured(page, url)


def _measured(page: Any, label: str) -> str | None:
    """The page on screen, measured where it is."""
    measured = page.evaluate(MEASURE)
    if measured["scroll"] > measured["client"] + SLACK:
        return f"{label}: page {measured['scroll']} px wide in {measured['client']} px ({', '.join(measured['wide'])})"
    return None


def _rater_session(page: Any, study: Study, pid: str, seen: set[str]) -> list[str]:
    """Enrol with a fixed participant id, then answer tasks until a page of every kind the study
    gives has been measured or the session ends. The problems found; `seen` gains the kinds."""
    problems = []
    problem = _overflow(page, f"/s/{study.slug}/?PROLIFIC_PID={pid}")
    if problem:
        problems.append(problem)
    page.locator("input[name=background]").first.check()
    page.locator("input[name=consent]").check()
    for box in page.locator("input[name=languages]").all():
        box.check()
    age = page.locator("select[name=age_band]")
    if age.count():
        age.select_option(index=1)
    with page.expect_navigation():
        page.locator("form button[type=submit]").first.click()
    expected = task_kinds(study)
    for _ in range(study.tasks_per_session * 2):
        kind, _key = task_state(page)
        if kind == "end" or expected <= seen:
            break
        if kind not in seen:
            seen.add(kind)
            problem = _measured(page, f"/s/{study.slug}/task/ ({kind})")
            if problem:
                problems.append(problem)
        task_answer(page)
    problem = _overflow(page, f"/s/{study.slug}/end/")
    if problem:
        problems.append(problem)
    return problems


def _rater_pages(
    browser: Browser, live_server: Any, studies: list[Study], width: int, language: str
) -> list[str]:
    """Each study's rater pages at this width and language, each rater in a fresh browser: the
    enrolment, every kind of task page the study gives, the end page. A session that ends
    before showing every kind is followed by another rater's."""
    problems = []
    for study in studies:
        seen: set[str] = set()
        for attempt in range(3):
            rater = browser.new_context(
                base_url=live_server.url,
                viewport={"width": width, "height": 900},
                extra_http_headers={"Accept-Language": language},
                bypass_csp=True,
            )
            page = rater.new_page()
            page.set_default_timeout(15_000)
            pid = f"page-fit-{language}-{width}-{attempt}"
            problems.extend(f"{width} px: {p}" for p in _rater_session(page, study, pid, seen))
            rater.close()
            if task_kinds(study) <= seen:
                break
        assert seen == task_kinds(study), f"{study.slug}: task pages shown {sorted(seen)}"
    return problems


# Rater sessions in both studies at two widths until every task kind has shown: minutes on a
# busy machine, longer than the suite's per-test limit allows.
@pytest.mark.timeout(900)
def test_no_rater_page_of_the_demo_studies_scrolls_sideways(
    demo_site, browser: Browser, live_server
):
    # A run of the results is already queued while these raters answer, as in a study in the
    # field: the answers only mark it (tasks run eagerly here, and each answer would otherwise
    # recompute the study's results inside its own request, seconds each, measuring nothing).
    for study in demo_site.values():
        AggregationState.objects.update_or_create(
            study=study, defaults={"scheduled": True, "scheduled_at": timezone.now()}
        )
    # Both languages on one seeding of the demo: each rater's id names its language and width.
    problems = []
    for language in LANGUAGES:
        for width in WIDTHS:
            problems.extend(
                _rater_pages(browser, live_server, list(demo_site.values()), width, language)
            )
    assert not problems, "\n".join(problems)
