"""Prolific's lifecycle in the browser, in both languages at 375 and 1280 px: a participant who
declines consent leaves with the study's code; one who returns the study from its task page
ends their session and frees their place for the next; the researcher's Prolific page marks
returns (refusing a bad list line by line) and previews the bulk-bonus file."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.conf import settings
from playwright.sync_api import Page, expect

from apps.assignments.models import Assignment
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.raters.services import rater_enroll
from apps.studies.models import Study
from apps.studies.services import study_member_add
from tests.browser.conftest import researcher_page
from tests.factories import ItemFactory, StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENS = [("en", 375), ("zh", 375), ("en", 1280), ("zh", 1280)]
WORDS = {
    "en": {
        "decline": "I do not agree",
        "declined": "You chose not to take part",
        "return": "Return this study",
        "confirm": "Return the study",
        "returned": "You returned this study",
        "marked": "sessions marked returned",
        "nobody": "no Prolific participant",
    },
    "zh": {
        "decline": "我不同意",
        "declined": "您选择了不参加",
        "return": "退回这项研究",
        "confirm": "退回研究",
        "returned": "您已退回这项研究",
        "marked": "个会话已标记为退回",
        "nobody": "没有 Prolific 参与者",
    },
}


def _fits(page: Page) -> bool:
    return bool(
        page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")
    )


def _in_language(page: Page, lang: str) -> None:
    if lang == "zh":
        page.locator("#lang-select").select_option("zh-hans")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")


def _study() -> Study:
    study = StudyFactory(
        task_mix={"scorecard": 1.0},
        tasks_per_session=3,
        attention_check_rate=0,
        languages=["en"],
        prolific_completion_code="DONE77",
        prolific_no_consent_code="NOPE55",
        prolific_bonus_per_attention_pass=Decimal("0.25"),
    )
    for i in range(4):
        ItemFactory(study=study, external_id=f"joke-{i}", topic="cats")
    BackgroundGroup.objects.filter(study=study).update(quota=1)
    return study


def test_declining_and_returning_in_both_languages_give_codes_and_places_back(
    new_context, screenshots, live_server, builtin_rubrics: None
) -> None:
    study = _study()
    for n, (lang, width) in enumerate(SCREENS):
        words = WORDS[lang]
        context = new_context(viewport={"width": width, "height": 900})
        page: Page = screenshots.watch(context.new_page())
        page.set_default_timeout(10_000)
        page.goto(f"/s/{study.slug}/?PROLIFIC_PID=pid{n}&SESSION_ID=se{n}")
        _in_language(page, lang)
        page.locator("input[name=decline]").click()
        expect(page.locator("h1")).to_have_text(words["declined"])
        expect(page.locator("strong.code")).to_have_text("NOPE55")
        assert _fits(page), f"declined page scrolls sideways at {width} px in {lang}"
        assert not Rater.objects.filter(external_id=f"pid{n}").exists()

        # The same participant changes their mind, takes the group's one place, then returns.
        page.goto(f"/s/{study.slug}/?PROLIFIC_PID=pid{n}&SESSION_ID=se{n}")
        page.locator("input[name=background]").first.check()
        page.locator("#id_age_band").select_option("25-34")
        page.locator("#id_consent").check()
        page.locator("form[method=post] button[type=submit]").click()
        expect(page).to_have_url(re.compile(rf"/s/{study.slug}/task/$"))
        assert _fits(page), f"task page with its return link scrolls at {width} px in {lang}"
        page.get_by_role("link", name=words["return"]).click()
        expect(page).to_have_url(re.compile(rf"/s/{study.slug}/return/$"))
        assert _fits(page)
        page.get_by_role("button", name=words["confirm"]).click()
        expect(page).to_have_url(re.compile(rf"/s/{study.slug}/end/$"))
        expect(page.locator("h1")).to_have_text(words["returned"])
        expect(page.locator("body")).not_to_contain_text("DONE77")
        assert _fits(page)
        session = RaterSession.objects.get(rater__external_id=f"pid{n}")
        assert session.end_reason == "returned"
        assert not Assignment.objects.filter(session=session, status="pending").exists()
        # The one place is free again: the next screen's participant can take it.
        assert BackgroundGroup.objects.get(study=study, code="technical").filled == 0
        context.close()


def test_the_prolific_page_marks_returns_and_previews_bonuses_in_both_languages(
    new_context, screenshots, live_server, builtin_rubrics: None, django_user_model
) -> None:
    study = _study()
    BackgroundGroup.objects.filter(study=study).update(quota=None)
    user = django_user_model.objects.create_user(
        settings.DEMO_RESEARCHER_USERNAME, password=settings.DEMO_RESEARCHER_PASSWORD
    )
    study_member_add(study=study, user=user)
    for n in range(len(SCREENS)):
        enrollment = rater_enroll(
            study=study,
            background="technical",
            age_band="25-34",
            consent=True,
            external_id=f"64a1b2c3d4e5f6a7b8c9d0e{n}",
            prolific_session_id=f"se{n}",
            from_prolific=True,
        )
        Assignment.objects.create(
            study=study,
            rater=enrollment.rater,
            session=enrollment.session,
            kind="scorecard",
            item=study.items.all()[0],
            position=1,
            is_attention_check=True,
            status="done",
            attention_passed=True,
        )
    for n, (lang, width) in enumerate(SCREENS):
        words = WORDS[lang]
        context, page = researcher_page(new_context, screenshots, lang, width)
        page.goto(f"/studies/{study.slug}/prolific/")
        assert _fits(page), f"Prolific page scrolls sideways at {width} px in {lang}"
        rows = page.locator("table[aria-label] tbody tr")
        expect(rows).to_have_count(len(SCREENS))
        expect(page.locator("tfoot")).to_contain_text("1.00")
        href = page.locator("a[download]").get_attribute("href")
        assert href == f"/studies/{study.slug}/prolific/bonuses.csv"

        field = page.locator("textarea[name=participant_ids]")
        field.fill(f"64a1b2c3d4e5f6a7b8c9d0e{n}\nghost-{n}")
        page.locator("form[enctype] button[type=submit]").click()
        expect(page.locator("table.errors")).to_contain_text(words["nobody"])
        assert _fits(page)
        assert RaterSession.objects.filter(ended_at__isnull=True).count() == len(SCREENS) - n

        page.locator("textarea[name=participant_ids]").fill(f"64a1b2c3d4e5f6a7b8c9d0e{n}")
        page.locator("form[enctype] button[type=submit]").click()
        expect(page.locator("body")).to_contain_text(words["marked"])
        assert _fits(page)
        assert RaterSession.objects.filter(ended_at__isnull=True).count() == len(SCREENS) - n - 1
        context.close()
