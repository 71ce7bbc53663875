"""Every numeric setting, the task mix and the quotas, through non-finite, negative, overflowing
and all-zero values: refused with a message naming the setting by the services, the set-up page,
the API and the admin, and nothing saved; a refused setting never reaches a rater's task page."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.forms.models import model_to_dict
from django.test import Client, RequestFactory

from apps.core.errors import DomainError
from apps.raters.models import BackgroundGroup
from apps.studies.models import Study
from apps.studies.rules import RANGES
from apps.studies.services import study_configure, study_quotas_set, study_settings_update
from tests.api.conftest import token_client
from tests.dashboard.test_setup_pages import _settings_post
from tests.factories import ItemFactory, StudyFactory
from tests.faults import FORM

pytestmark = pytest.mark.django_db

BAD_NUMBERS = [float("nan"), float("inf"), float("-inf"), -1, 1e308, 10**30, -(10**30)]
BAD_MIXES = [
    {"scorecard": 1e308, "pair": 1e308},
    {"scorecard": float("nan"), "pair": 1.0},
    {"scorecard": float("inf")},
    {"scorecard": -1.0, "pair": 2.0},
    {"scorecard": 0.0, "pair": 0.0, "turing": 0.0},
    {"scorecard": 10**30},
    {"scorecard": True},
    {"scorecard": "1"},
]
BAD_QUOTAS = [-1, 10**30, 2**31, True]


@pytest.fixture
def study(django_user_model):
    study = StudyFactory(
        status=Study.Status.OPEN, task_mix={"scorecard": 1.0}, attention_check_rate=0
    )
    for n in range(4):
        ItemFactory(study=study, external_id=f"i{n}", topic="t")
    return study


def _stored(study: Study) -> dict:
    study.refresh_from_db()
    return {**model_to_dict(study), "quotas": list(BackgroundGroup.objects.values("quota"))}


@pytest.mark.parametrize("name", list(RANGES))
@pytest.mark.parametrize("value", BAD_NUMBERS, ids=repr)
def test_every_numeric_setting_refuses_bad_values_in_the_service(study, name, value):
    before = _stored(study)
    with pytest.raises(DomainError) as caught:
        study_configure(study=study, **{name: value})
    assert caught.value.field == name
    assert caught.value.message
    assert _stored(study) == before


@pytest.mark.parametrize("mix", BAD_MIXES, ids=repr)
def test_bad_task_mixes_are_refused(study, mix):
    before = _stored(study)
    with pytest.raises(DomainError) as caught:
        study_configure(study=study, task_mix=mix)
    assert caught.value.field == "task_mix"
    assert "task_mix" in caught.value.message
    assert _stored(study) == before


@pytest.mark.parametrize("quota", BAD_QUOTAS, ids=repr)
def test_bad_quotas_are_refused(study, quota):
    before = _stored(study)
    with pytest.raises(DomainError) as caught:
        study_quotas_set(study=study, quotas={"technical": quota})
    assert caught.value.field == "quota_technical"
    assert _stored(study) == before


def test_closing_every_group_at_zero_is_refused(study):
    codes = list(BackgroundGroup.objects.filter(study=study).values_list("code", flat=True))
    with pytest.raises(DomainError, match="at least one background group"):
        study_settings_update(study=study, quotas=dict.fromkeys(codes, 0))
    study_quotas_set(study=study, quotas={codes[0]: 0})  # one closed group is fine
    assert BackgroundGroup.objects.get(study=study, code=codes[0]).quota == 0


@pytest.fixture
def owner_api(study, django_user_model):
    from apps.studies.services import study_member_add

    user = django_user_model.objects.create_user("owner", password="x")
    study_member_add(study=study, user=user)
    return token_client(user)


def test_the_api_refuses_the_overflowing_task_mix_and_raters_keep_their_task_page(study, owner_api):
    before = _stored(study)
    response = owner_api.patch(
        f"/api/v1/studies/{study.slug}/",
        {"task_mix": {"scorecard": 1e308, "pair": 1e308}},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["field"] == "task_mix"
    assert _stored(study) == before
    rater = Client()
    assert rater.post(f"/s/{study.slug}/", FORM).status_code == 302
    assert rater.get(f"/s/{study.slug}/task/").status_code == 200


@pytest.mark.parametrize("name", list(RANGES))
@pytest.mark.parametrize("value", [-1, 1e308, -1e308, 99999999999])
def test_the_api_refuses_every_numeric_setting_out_of_range(study, owner_api, name, value):
    before = _stored(study)
    response = owner_api.patch(f"/api/v1/studies/{study.slug}/", {name: value}, format="json")
    assert 400 <= response.status_code < 500, response.content
    assert response.json()["field"] == name
    assert _stored(study) == before


def test_the_api_refuses_bad_quotas(study, owner_api):
    for quota in (-1, 2**31, 10**15):
        response = owner_api.patch(
            f"/api/v1/studies/{study.slug}/", {"quotas": {"technical": quota}}, format="json"
        )
        assert response.status_code == 400, (quota, response.content)
        assert "quota" in response.json()["field"]


@pytest.fixture
def owner_page(study, django_user_model):
    from apps.studies.services import study_member_add

    user = django_user_model.objects.create_user("page-owner", password="x")
    study_member_add(study=study, user=user)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("name", list(RANGES))
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e308", str(10**30)])
def test_the_set_up_page_refuses_every_numeric_setting(study, owner_page, name, value):
    before = _stored(study)
    response = owner_page.post(
        f"/studies/{study.slug}/settings/", _settings_post(study, **{f"s-{name}": value})
    )
    assert response.status_code == 400
    assert _stored(study) == before


@pytest.mark.parametrize(
    "shares", [("1e308", "1e308", "0"), ("nan", "1", "0"), ("0", "0", "0"), ("-1", "1", "0")]
)
def test_the_set_up_page_refuses_bad_task_mixes(study, owner_page, shares):
    before = _stored(study)
    post = _settings_post(
        study,
        **{"s-share_scorecard": shares[0], "s-share_pair": shares[1], "s-share_turing": shares[2]},
    )
    response = owner_page.post(f"/studies/{study.slug}/settings/", post)
    assert response.status_code == 400
    assert _stored(study) == before


def _admin_form(study: Study, superuser, **changes):
    model_admin = admin.site._registry[Study]
    request = RequestFactory().post("/admin/")
    request.user = superuser
    form_class = model_admin.get_form(request, obj=study, change=True)
    data = {}
    for name, value in model_to_dict(study).items():
        if name in form_class.base_fields:
            field = form_class.base_fields[name]
            data[name] = field.prepare_value(value) if value is not None else ""
    for name in ("adaptive_pairing", "allow_cross_language_pairs", "exclusion_rules_automatic"):
        if not data.get(name):
            data.pop(name, None)
    data.update(changes)
    return form_class(data=data, instance=study)


def test_the_admin_form_accepts_the_stored_settings(study, admin_user):
    form = _admin_form(study, admin_user)
    assert form.is_valid(), form.errors


@pytest.mark.parametrize("name", list(RANGES))
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e308", str(10**30)])
def test_the_admin_refuses_every_numeric_setting(study, admin_user, name, value):
    form = _admin_form(study, admin_user, **{name: value})
    assert not form.is_valid()
    assert name in form.errors


@pytest.mark.parametrize(
    "mix",
    [
        '{"scorecard": 1e308, "pair": 1e308}',
        '{"scorecard": 0, "pair": 0}',
        '{"scorecard": -1, "pair": 2}',
        '{"bogus": 1}',
        '"scorecard"',
    ],
)
def test_the_admin_refuses_bad_task_mixes(study, admin_user, mix):
    form = _admin_form(study, admin_user, task_mix=mix)
    assert not form.is_valid()
    assert "task_mix" in form.errors


@pytest.mark.parametrize(
    "stored",
    [
        {"scorecard": 1e308, "pair": 1e308},
        {"scorecard": -5, "turing": 1.0},
        {"scorecard": "x", "turing": 1.0},
    ],
    ids=repr,
)
def test_a_bad_task_mix_stored_before_validation_still_gives_raters_a_task(study, stored):
    Study.objects.filter(pk=study.pk).update(task_mix=stored)
    rater = Client()
    assert rater.post(f"/s/{study.slug}/", FORM).status_code == 302
    assert rater.get(f"/s/{study.slug}/task/").status_code == 200
