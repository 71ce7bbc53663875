"""Which of the study's languages a rater reads: asked at enrolment (preselected from the
interface language), refused when unknown or missing, and the quota counted per language."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from django.test import Client

from apps.core.errors import DomainError
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.raters.services import StudyFull, rater_enroll
from apps.studies.models import Study
from apps.studies.services import study_quotas_set
from tests.factories import ItemFactory, StudyFactory

pytestmark = pytest.mark.django_db

FORM = {"background": "technical", "age_band": "25-34", "consent": "on"}
CHECKED = re.compile(r'<input type="checkbox" name="languages" value="(\w+)"[^>]*\bchecked\b')
OFFERED = re.compile(r'<input type="checkbox" name="languages" value="(\w+)"')


def _enroll(study: Study, languages: list[str] | None, background: str = "technical"):  # type: ignore[no-untyped-def]
    return rater_enroll(
        study=study, background=background, age_band="25-34", consent=True, languages=languages
    )


def _stored() -> tuple[int, int, list[int]]:
    return (
        Rater.objects.count(),
        RaterSession.objects.count(),
        list(BackgroundGroup.objects.order_by("pk").values_list("filled", flat=True)),
    )


# --- the page ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("interface", "checked"), [("en", ["en"]), ("zh-hans", ["zh"])], ids=["english", "chinese"]
)
def test_the_enrolment_page_asks_the_languages_read_preselecting_the_interface_one(
    interface, checked
):
    study = StudyFactory(languages=["en", "zh"])
    client = Client(headers={"accept-language": interface})
    body = client.get(f"/s/{study.slug}/").content.decode()
    assert OFFERED.findall(body) == ["en", "zh"]
    assert CHECKED.findall(body) == checked
    # Named in the interface's language, with what the choice does.
    if interface == "en":
        assert "English" in body
        assert "Chinese" in body
        assert "You will only be shown texts in the languages you choose." in body
    else:
        assert "英语" in body
        assert "中文" in body
        assert "只会看到您所选语言的内容" in body


def test_a_study_with_one_language_asks_nothing_and_gives_that_language():
    study = StudyFactory(languages=["zh"])
    client = Client()
    body = client.get(f"/s/{study.slug}/").content.decode()
    assert 'name="languages"' not in body
    response = client.post(f"/s/{study.slug}/", FORM)
    assert response.status_code == 302
    assert Rater.objects.get(study=study).languages == ["zh"]


@pytest.mark.parametrize(
    ("chosen", "stored"),
    [(["en"], ["en"]), (["zh"], ["zh"]), (["zh", "en"], ["en", "zh"])],
    ids=["english", "chinese", "both"],
)
def test_the_languages_chosen_are_stored_on_the_rater(chosen, stored):
    study = StudyFactory(languages=["en", "zh"])
    response = Client().post(f"/s/{study.slug}/", {**FORM, "languages": chosen})
    assert response.status_code == 302
    rater = Rater.objects.get(study=study)
    assert rater.languages == stored
    assert rater.language == "en"  # the interface language, kept apart


@pytest.mark.parametrize("interface", ["en", "zh-hans"])
def test_enrolling_with_no_language_chosen_is_a_form_error_and_stores_nothing(interface):
    study = StudyFactory(languages=["en", "zh"])
    before = _stored()
    client = Client(headers={"accept-language": interface})
    response = client.post(f"/s/{study.slug}/", FORM)
    assert response.status_code == 400
    body = response.content.decode()
    message = "Choose at least one language you read." if interface == "en" else "请至少选择一种"
    assert message in body
    assert 'role="alert"' in body
    assert _stored() == before


def test_enrolling_with_an_unknown_language_code_is_a_form_error_and_stores_nothing():
    study = StudyFactory(languages=["en", "zh"])
    before = _stored()
    response = Client().post(f"/s/{study.slug}/", {**FORM, "languages": ["en", "fr"]})
    assert response.status_code == 400
    body = response.content.decode()
    assert "fr" in body
    assert 'role="alert"' in body
    assert _stored() == before


# --- the service ---------------------------------------------------------------------------------


def test_the_service_refuses_an_unknown_language_naming_the_field_and_stores_nothing():
    study = StudyFactory(languages=["en", "zh"])
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _enroll(study, ["en", "klingon"])
    assert refused.value.field == "languages"
    assert "'klingon'" in refused.value.message
    assert "en, zh" in refused.value.message
    assert _stored() == before


def test_the_service_refuses_an_empty_choice_in_a_study_with_several_languages():
    study = StudyFactory(languages=["en", "zh"])
    before = _stored()
    with pytest.raises(DomainError) as refused:
        _enroll(study, [])
    assert refused.value.field == "languages"
    assert _stored() == before


def test_the_service_refuses_a_language_the_single_language_study_does_not_have():
    study = StudyFactory(languages=["en"])
    with pytest.raises(DomainError) as refused:
        _enroll(study, ["zh"])
    assert refused.value.field == "languages"
    assert Rater.objects.count() == 0


def test_interface_codes_are_read_as_the_studys_codes():
    study = StudyFactory(languages=["en", "zh"])
    assert _enroll(study, ["zh-Hans"]).rater.languages == ["zh"]


# --- quotas per language -------------------------------------------------------------------------


def test_in_a_bilingual_study_the_quota_counts_per_language():
    study = StudyFactory(languages=["en", "zh"])
    study_quotas_set(study=study, quotas={"technical": 2})
    _enroll(study, ["zh"])
    _enroll(study, ["zh"])
    # Chinese readers filled the Chinese places; the English places are still there.
    with pytest.raises(StudyFull):
        _enroll(study, ["zh"])
    assert _enroll(study, ["en"]).rater.languages == ["en"]
    # A bilingual rater takes a place where there is room, and is given work there.
    assert _enroll(study, ["en", "zh"]).rater.languages == ["en"]
    before = _stored()
    with pytest.raises(StudyFull):
        _enroll(study, ["en", "zh"])
    assert _stored() == before
    group = BackgroundGroup.objects.get(study=study, code="technical")
    assert group.filled == 2  # places taken in the fullest language, within the quota
    assert Rater.objects.filter(study=study).count() == 4


def test_other_groups_keep_their_own_places_per_language():
    study = StudyFactory(languages=["en", "zh"])
    study_quotas_set(study=study, quotas={"technical": 1, "content_operations": 1})
    _enroll(study, ["en"])
    assert _enroll(study, ["en"], background="content_operations").rater.languages == ["en"]


def test_the_quota_cannot_be_set_below_the_places_taken_in_a_language():
    study = StudyFactory(languages=["en", "zh"])
    for _ in range(3):
        _enroll(study, ["zh"])
    _enroll(study, ["en"])
    with pytest.raises(DomainError):
        study_quotas_set(study=study, quotas={"technical": 2})
    study_quotas_set(study=study, quotas={"technical": 3})
    with pytest.raises(StudyFull):
        _enroll(study, ["zh"])
    assert _enroll(study, ["en"]).rater.languages == ["en"]


def test_in_a_single_language_study_the_quota_counts_raters():
    study = StudyFactory(languages=["en"])
    ItemFactory(study=study)
    study_quotas_set(study=study, quotas={"technical": 1})
    _enroll(study, None)
    with pytest.raises(StudyFull):
        _enroll(study, ["en"])


@pytest.mark.django_db(transaction=True)
def test_many_enrolling_at_once_fill_each_languages_places_exactly(postgres_only, builtin_rubrics):
    from tests.assignments.test_concurrency import _in_threads

    study = StudyFactory(languages=["en", "zh"], backgrounds=[("technical", {"en": "Technical"})])
    BackgroundGroup.objects.filter(study=study).update(quota=3)
    reads = [["zh"], ["en"], ["en", "zh"]]

    def enroll(i: int) -> list[str]:
        try:
            return _enroll(study, reads[i % 3]).rater.languages
        except StudyFull:
            return []

    results, errors = _in_threads(30, enroll)
    assert errors == []
    places = Counter(code for got in results for code in got)
    assert places == {"en": 3, "zh": 3}
    stored = Counter(
        code
        for codes in Rater.objects.filter(study=study).values_list("languages", flat=True)
        for code in codes
    )
    assert stored == places
    assert BackgroundGroup.objects.get(study=study).filled == 3
    assert RaterSession.objects.filter(rater__study=study).count() == sum(1 for r in results if r)
