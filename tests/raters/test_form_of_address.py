"""One form of address in Chinese: the interface says 您 to raters (and researchers), never 你. The
catalogue is checked whole, and every rater page is rendered in zh-hans and read: enrolment and
its errors, each kind of task, the explanation step, the end page, the answers' replies, and the
pages that turn a rater away."""

from __future__ import annotations

import gettext
from pathlib import Path

import pytest
from django.conf import settings
from django.db.models import F
from django.test import Client

from apps.raters.models import BackgroundGroup
from apps.studies.models import Study
from tests.factories import ItemFactory, StudyFactory
from tests.raters.test_blinding import TASK_MARKERS, _walk_session

pytestmark = pytest.mark.django_db

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
INFORMAL = "你"
PID = "5f3a9c0d"


def _zh_client() -> Client:
    client = Client()
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "zh-hans"
    return client


def _informal(bodies: list[str]) -> list[str]:
    found = []
    for body in bodies:
        for line in body.splitlines():
            if INFORMAL in line:
                found.append(line.strip()[:200])
    return found


def test_the_catalogue_addresses_the_reader_as_nin():
    # The compiled catalogue, as the pages read it (every msgstr, plural forms included).
    with CATALOGUE.with_suffix(".mo").open("rb") as handle:
        catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    informal = [
        f"{(key[0] if isinstance(key, tuple) else key)[:60]!r}: {text}"
        for key, text in catalog.items()
        if INFORMAL in text
    ]
    assert not informal, "msgstrs with 你:\n" + "\n".join(informal)


def test_every_rater_page_in_chinese_says_nin():
    study = StudyFactory(
        task_mix={"scorecard": 0.5, "pair": 0.3, "turing": 0.2},
        tasks_per_session=10,
        attention_check_rate=0,
        prolific_completion_code="DONE4242",
        prolific_screenout_code="SCREEN42",
    )
    for n in range(12):
        ItemFactory(study=study, topic="cats", explanation="Cats chase red dots." if n % 2 else "")
    bodies: list[str] = []
    # The task mix is drawn per task: raters walk their sessions until every kind was seen.
    for n in range(8):
        client = _zh_client()
        _walk_session(client, study.slug, bodies, pid=f"{PID}{n}")
        if all(marker in "\n".join(bodies) for marker in TASK_MARKERS):
            break
    bodies.append(client.get(f"/s/{study.slug}/end/").content.decode())
    text = "\n".join(bodies)
    for marker in TASK_MARKERS:
        assert marker in text
    assert "DONE4242" in text  # the end page, with its code, was read
    assert 'lang="zh-hans"' in text

    # Enrolment, and its errors.
    client = _zh_client()
    bodies.append(client.get(f"/s/{study.slug}/").content.decode())
    refused = client.post(f"/s/{study.slug}/", {"background": "technical"})
    assert refused.status_code == 400
    bodies.append(refused.content.decode())
    # In use: the same participant id from another browser.
    in_use = _zh_client().get(f"/s/{study.slug}/?PROLIFIC_PID={PID}0")
    assert in_use.status_code == 409
    bodies.append(in_use.content.decode())
    # Full for the group, to a participant sent by Prolific.
    BackgroundGroup.objects.filter(study=study).update(quota=F("filled"))
    full = _zh_client().post(
        f"/s/{study.slug}/?PROLIFIC_PID=other",
        {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en"]},
    )
    assert full.status_code == 409
    assert "SCREEN42" in full.content.decode()
    bodies.append(full.content.decode())
    for status in (Study.Status.CLOSED, Study.Status.DRAFT):
        Study.objects.filter(pk=study.pk).update(status=status)
        bodies.append(_zh_client().get(f"/s/{study.slug}/").content.decode())

    informal = _informal(bodies)
    assert not informal, "rater pages say 你:\n" + "\n".join(sorted(set(informal)))
