"""Items with pictures in the browser, in both languages at 375 and 1280 px: the picture of a
scorecard or a Turing task and the two of a pair are shown whole within the screen, with their
descriptions."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from PIL import Image, ImageDraw
from playwright.sync_api import Page, expect

from apps.studies.models import Study
from apps.studies.services import study_items_import
from tests.browser.tasks import enroll, task_answer, task_state
from tests.factories import StudyFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALT = {"en": "A cat asleep on a keyboard", "zh": "一只睡在键盘上的猫"}
KINDS = ("scorecard", "pair", "turing")


def _drawing(colour: tuple[int, int, int]) -> bytes:
    # Wider than any phone: the page must scale it down, not scroll.
    image = Image.new("RGB", (1600, 900), (250, 250, 245))
    ImageDraw.Draw(image).ellipse((500, 200, 1100, 700), fill=colour)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _zip() -> bytes:
    rows = [
        {
            "id": f"cap-{n}",
            "text": f"Caption number {n}",
            "source": "m" if n % 2 else "human",
            "topic": "cats",
            "image_file": f"pics/{n % 2}.png",
            "image_alt": ALT,
        }
        for n in range(6)
    ]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("items.jsonl", "\n".join(json.dumps(row) for row in rows))
        archive.writestr("pics/0.png", _drawing((200, 80, 60)))
        archive.writestr("pics/1.png", _drawing((60, 90, 200)))
    return out.getvalue()


def _fits(page: Page, width: int) -> None:
    assert page.evaluate(f"() => document.documentElement.scrollWidth <= {width}")
    for img in page.locator("figure.item-image img").all():
        # Loaded whole (a next task shown in place loads its picture once it is on the page).
        assert img.evaluate("i => i.decode().then(() => i.naturalWidth)") == 1600
        box = img.bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width + 1


def _next_kind(study: Study, kind: str) -> None:
    # The next task's kind is drawn from the task mix when it is handed out: a mix of one kind
    # makes it that kind, so every screen and language shows each kind (a random mix left
    # out a kind now and then).
    Study.objects.filter(pk=study.pk).update(task_mix={kind: 1.0})


def test_pictures_show_whole_on_phones_and_desktops_in_both_languages(
    new_context, screenshots, live_server, builtin_rubrics: None, settings, tmp_path
) -> None:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    study = StudyFactory(
        task_mix={"scorecard": 1.0, "pair": 1.0, "turing": 1.0},
        tasks_per_session=3,
        attention_check_rate=0,
        languages=["en"],
    )
    study_items_import(study=study, data=_zip(), filename="cartoons.zip")
    screens = [("en", 375), ("zh", 375), ("en", 1280), ("zh", 1280)]
    for n, (lang, width) in enumerate(screens):
        # Each screen takes the kinds in another order.
        order = KINDS[n % 3 :] + KINDS[: n % 3]
        context = new_context(viewport={"width": width, "height": 900})
        page: Page = screenshots.watch(context.new_page())
        page.set_default_timeout(10_000)
        _next_kind(study, order[0])
        enroll(page, study.slug, lang)
        for step, expected in enumerate(order):
            kind, _key = task_state(page)
            assert kind == expected, f"task {step + 1} at {lang} {width} px"
            pictures = page.locator("figure.item-image img")
            if kind == "pair":
                # Two captions of one picture show it once; of two pictures, each its own.
                shared = page.locator("figure.item-image.shared").count()
                expect(pictures).to_have_count(1 if shared else 2)
            else:
                expect(pictures).to_have_count(1)
            for img in pictures.all():
                expect(img).to_have_attribute("alt", ALT[lang])
            _fits(page, width)
            if step + 1 < len(order):
                _next_kind(study, order[step + 1])
            task_answer(page)
        context.close()
