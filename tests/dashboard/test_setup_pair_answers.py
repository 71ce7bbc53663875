"""The set-up page's three-way pair answers and style covariates, in both languages, and the
API's: saved when valid, refused with the field named and nothing changed when not."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.dashboard.test_setup_pages import _settings_post

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


def _study(owner) -> Study:  # type: ignore[no-untyped-def]
    study = study_create(slug="pilot", rubric_slug="humor", name="Pilot", owner=owner)
    Item.objects.create(study=study, external_id="a", text="A joke", source="human")
    return study


def _client(user, language: str = "en") -> Client:  # type: ignore[no-untyped-def]
    client = Client(headers={"accept-language": language})
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("language", "tie_label", "neither_label"),
    [
        ("en", "Offer “about the same” in A/B pairs", "Offer “neither” in A/B pairs"),
        ("zh-hans", "在 A/B 比较中提供“差不多”", "在 A/B 比较中提供“都不”"),
    ],
)
def test_the_set_up_page_offers_both_answers_off_and_saves_them(
    owner, language, tie_label, neither_label
):
    study = _study(owner)
    client = _client(owner, language)
    page = client.get("/studies/pilot/settings/").content.decode()
    assert tie_label in page
    assert neither_label in page
    assert 'name="s-pair_offers_tie"' in page
    assert 'name="s-style_covariates"' in page
    response = client.post(
        "/studies/pilot/settings/",
        _settings_post(
            study,
            **{
                "s-pair_offers_tie": "on",
                "s-pair_offers_neither": "on",
                "s-style_covariates": " punchline_words , rhymes ",
            },
        ),
    )
    assert response.status_code == 302
    study.refresh_from_db()
    assert (study.pair_offers_tie, study.pair_offers_neither) == (True, True)
    assert study.style_covariates == ["punchline_words", "rhymes"]
    # The page shows the stored list as it was typed, once.
    page = client.get("/studies/pilot/settings/").content.decode()
    assert 'value="punchline_words, rhymes"' in page


@pytest.mark.parametrize(
    ("value", "language", "message"),
    [
        ("a, a", "en", "a style covariate is named twice"),
        (",".join(f"k{i}" for i in range(9)), "en", "at most 8 style covariates"),
        ("x" * 65, "en", "each style covariate is a metadata key of 1 to 64 characters"),
        ("a, a", "zh-hans", "风格协变量重复命名"),
    ],
)
def test_bad_style_covariates_are_refused_naming_the_problem(owner, value, language, message):
    study = _study(owner)
    response = _client(owner, language).post(
        "/studies/pilot/settings/",
        _settings_post(study, **{"s-style_covariates": value, "s-session_minutes": 20}),
    )
    assert response.status_code == 400
    assert message in response.content.decode()
    study.refresh_from_db()
    assert (study.style_covariates, study.session_minutes) == ([], 30)


def test_the_api_sets_and_refuses_the_pair_answers_and_style_covariates(owner):
    study = _study(owner)
    client = _client(owner)
    url = f"/api/v1/studies/{study.slug}/"
    ok = client.patch(
        url,
        {"pair_offers_neither": True, "style_covariates": ["rhymes"]},
        content_type="application/json",
    )
    assert ok.status_code == 200, ok.content
    assert ok.json()["pair_offers_neither"] is True
    assert ok.json()["style_covariates"] == ["rhymes"]
    bad = client.patch(
        url, {"style_covariates": ["rhymes", "rhymes"]}, content_type="application/json"
    )
    assert bad.status_code == 400
    assert "style_covariates" in bad.content.decode()
    study.refresh_from_db()
    assert study.style_covariates == ["rhymes"]
