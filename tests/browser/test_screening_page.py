"""The screening candidates page fits a 1280 px desktop and a 375 px phone: the page itself never
scrolls sideways, the wide table scrolls inside its own box, and the decision and FunnyScore
columns come first, visible without scrolling that box, after the item's id and text."""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.screening.models import ItemFeatures, ScreeningOutcome, ScreeningRun
from apps.studies.models import Item
from apps.studies.services import study_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-researcher-123"
LONG_REASON = (
    "the language model /srv/models/a-very-long-directory-name/for-a-causal-language-model "
    "covers en, not fr"
)


@pytest.fixture
def screened(builtin_rubrics, django_user_model):  # type: ignore[no-untyped-def]
    owner = django_user_model.objects.create_user("researcher", password=PASSWORD)
    study = study_create(slug="screen-page", rubric_slug="humor", name="Screen", owner=owner)
    run = ScreeningRun.objects.create(
        study=study,
        status="done",
        top_k=2,
        l1_keep=4,
        judge_model="jester-judge-1",
        judge_min=3,
        batch_size=250,
        batches_total=1,
        batches_done=1,
    )
    for i in range(6):
        lang = "zh" if i % 2 else "en"
        item = Item.objects.create(
            study=study,
            external_id=f"candidate-with-a-long-external-id-{i:02d}",
            text="程序员为什么分不清万圣节和圣诞节？" if lang == "zh" else "Why? Because.",
            source="a-model-with-a-rather-long-name-v2",
            language=lang,
            humor_type="self-deprecating",
            stage=Item.Stage.STUDY if i < 2 else Item.Stage.DROPPED,
        )
        ItemFeatures.objects.create(
            item=item,
            surprise=None,
            surprise_missing=LONG_REASON,
            coherence=0.41,
            valence=0.0,
            valence_penalty=0.0,
            computed_at=timezone.now(),
        )
        ScreeningOutcome.objects.create(
            run=run,
            item=item,
            funny_score=1.234 - i / 10,
            l1_rank=i + 1,
            judge_score=5 if i < 4 else None,
            judge_status="ok" if i < 4 else "",
            rank=i + 1 if i < 4 else None,
            stage="top_k" if i < 4 else "l1",
            kept=i < 2,
            reason=(
                f"rank {i + 1} of 4 for a-model-with-a-rather-long-name-v2: "
                + ("in the top 2" if i < 2 else "below the top 2")
            ),
        )
    return study


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (375, 812)])
def test_the_candidates_page_fits_without_scrolling_the_page_sideways(
    screened, page, live_server, screenshots, width, height
):  # type: ignore[no-untyped-def]
    page.set_viewport_size({"width": width, "height": height})
    screenshots.watch(page)
    page.goto(f"{live_server.url}/accounts/login/?next=/studies/{screened.slug}/screening/")
    page.fill("input[name=username]", "researcher")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.locator("form button[type=submit]").click()
    assert page.url.endswith(f"/studies/{screened.slug}/screening/")
    screenshots.settle()

    # The page itself does not scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    # The table scrolls inside its own box, which stays within the viewport.
    box = page.locator(".candidates-scroll").bounding_box()
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= width
    headings = page.locator("table.candidates thead th").all_inner_texts()
    assert headings[:4] == ["Item", "Model", "Decision", "L1 score"]
    # Each candidate's own text is in its item cell, under its id.
    first = page.locator("table.candidates tbody tr >> nth=0 >> td.item .text")
    assert first.inner_text().strip()
    # The decision (and on a desktop the FunnyScore) of the first row is on screen without
    # scrolling the box.
    for selector in ("td.decision", "td.score") if width >= 1280 else ("td.decision",):
        cell = page.locator(f"table.candidates tbody tr >> nth=0 >> {selector}").bounding_box()
        assert cell is not None
        assert cell["x"] + min(cell["width"], 40) <= width, selector
    screenshots.take(page, f"candidates-{width}", full_page=True)
