"""Chinese everywhere a researcher or a rater looks: every page of both demo studies, rendered
in Simplified Chinese, shows no interface string in English.

Item texts, study names, model names, topics and other values the researcher entered are left
out (they are data, in whatever language they were written); what remains must be Chinese,
numbers, or one of the method's proper names (Bradley-Terry, Krippendorff, ...).
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from apps.judgments.models import ScoreResponse
from apps.raters.models import BackgroundGroup
from apps.studies.models import Study
from tests.pages.conftest import SITE_PAGES, researcher_pages
from tests.pages.untranslated import untranslated

pytestmark = pytest.mark.django_db


def _rater_pages(client: Client, study: Study) -> dict[str, str]:
    """The enrolment page, then every kind of task page the study gives, and the end page."""
    pages = {f"/s/{study.slug}/": client.get(f"/s/{study.slug}/").content.decode()}
    group = BackgroundGroup.objects.filter(study=study).order_by("position").first()
    assert group is not None
    enrolled = client.post(
        f"/s/{study.slug}/",
        {
            "background": group.code,
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    assert enrolled.status_code in (200, 302)
    task = client.get(f"/s/{study.slug}/task/")
    pages[f"/s/{study.slug}/task/"] = task.content.decode()
    pages[f"/s/{study.slug}/end/"] = client.get(f"/s/{study.slug}/end/").content.decode()
    return pages


def _page_texts(study: Study) -> dict[str, str]:
    researcher = get_user_model().objects.get(username=settings.DEMO_RESEARCHER_USERNAME)
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(researcher)
    pages = {}
    for url in [*SITE_PAGES, *researcher_pages(study)]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["Content-Language"] == "zh-hans", url
        pages[url] = response.content.decode()
    pages.update(_rater_pages(Client(HTTP_ACCEPT_LANGUAGE="zh-hans"), study))
    return pages


@pytest.mark.parametrize("which", ["humor", "content"])
def test_every_page_of_the_demo_studies_is_chinese_in_chinese(demo_site, which):
    study = getattr(demo_site, which)
    assert ScoreResponse.objects.filter(study=study).exists()
    found = untranslated(_page_texts(study))
    report = "\n".join(f"{url}\n  " + "\n  ".join(lines) for url, lines in found.items())
    assert not found, "English on Chinese pages:\n" + report
