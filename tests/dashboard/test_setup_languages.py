"""The cross-language pairs setting on the set-up page and in the admin, in both languages."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.dashboard.test_setup_pages import _settings_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


def _study(owner, languages: list[str]) -> Study:  # type: ignore[no-untyped-def]
    study = study_create(
        slug="pilot", rubric_slug="humor", name="Pilot", owner=owner, languages=languages
    )
    Item.objects.create(study=study, external_id="a", text="A joke", source="human")
    return study


def _client(user, language: str = "en") -> Client:  # type: ignore[no-untyped-def]
    client = Client(headers={"accept-language": language})
    client.force_login(user)
    return client


def test_the_set_up_page_offers_cross_language_pairs_off_and_saves_them_on(owner):
    study = _study(owner, ["en", "zh"])
    page = _client(owner).get("/studies/pilot/settings/").content.decode()
    assert "Allow cross-language pairs" in page
    assert 'name="s-allow_cross_language_pairs"' in page
    response = _client(owner).post(
        "/studies/pilot/settings/", _settings_post(study, **{"s-allow_cross_language_pairs": "on"})
    )
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.allow_cross_language_pairs is True


@pytest.mark.parametrize(
    ("language", "message"),
    [
        ("en", "Cross-language pairs need a study with several languages."),
        ("zh-hans", "跨语言配对需要研究包含多种语言。"),
    ],
)
def test_the_set_up_page_refuses_cross_language_pairs_for_one_language(owner, language, message):
    study = _study(owner, ["en"])
    response = _client(owner, language).post(
        "/studies/pilot/settings/",
        _settings_post(study, **{"s-allow_cross_language_pairs": "on", "s-session_minutes": 20}),
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    study.refresh_from_db()
    assert (study.allow_cross_language_pairs, study.session_minutes) == (False, 30)


def test_the_admin_shows_the_setting_and_its_check_refuses_it_for_one_language(owner, admin_client):
    study = _study(owner, ["en"])
    page = admin_client.get(f"/admin/studies/study/{study.pk}/change/").content.decode()
    assert 'name="allow_cross_language_pairs"' in page
    study.allow_cross_language_pairs = True
    with pytest.raises(ValidationError) as refused:
        study.full_clean()
    assert "allow_cross_language_pairs" in refused.value.message_dict
    study.languages = ["en", "zh"]
    study.full_clean()


@pytest.mark.parametrize("languages", [[], ["en", "en"], ["English!"], "en"])
def test_the_admin_check_refuses_malformed_study_languages(owner, languages):
    study = _study(owner, ["en", "zh"])
    study.languages = languages
    with pytest.raises(ValidationError) as refused:
        study.full_clean()
    assert "languages" in refused.value.message_dict
