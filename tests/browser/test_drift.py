"""Sessions that drift, on the researcher's quality page in both languages at 375 and 1280 px:
the within-session test says late answers differ, with its size per 10 minutes, and the block
fits the screen."""

from __future__ import annotations

import pytest
from django.conf import settings
from playwright.sync_api import expect

from apps.analysis.services import study_aggregate
from apps.studies.services import study_member_add
from tests.analysis.drift_data import drifting_study
from tests.browser.conftest import researcher_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = [("en", 375), ("zh", 375), ("en", 1280), ("zh", 1280)]
WORDS = {
    "en": ("Drift within sessions", "Late answers differ.", "Per 10 minutes"),
    "zh": ("会话内漂移", "较晚的回答有差异。", "每 10 分钟"),
}


def test_the_quality_page_shows_the_drift_in_both_languages(
    new_context, screenshots, live_server, builtin_rubrics: None, django_user_model
) -> None:
    study = drifting_study()
    study_aggregate(study=study, rounds=199)
    user = django_user_model.objects.create_user(
        settings.DEMO_RESEARCHER_USERNAME, password=settings.DEMO_RESEARCHER_PASSWORD
    )
    study_member_add(study=study, user=user)
    for lang, width in SCREENS:
        heading, headline, unit = WORDS[lang]
        context, page = researcher_page(new_context, screenshots, lang, width)
        page.goto(f"/studies/{study.slug}/results/quality/")
        expect(page.get_by_role("heading", name=heading)).to_be_visible()
        drift = page.locator("p.drift[data-drifts=yes]")
        expect(drift).to_be_visible()
        expect(drift).to_contain_text(headline)
        expect(drift).to_contain_text(unit)
        assert page.evaluate(f"() => document.documentElement.scrollWidth <= {width}"), (
            f"the quality page scrolls sideways at {width} px in {lang}"
        )
        context.close()
