"""The exclusions page and its forms: who may exclude, bad input, nothing changed on a denial."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.exclusions.models import Exclusion, ExclusionProposal
from apps.exclusions.services import exclusion_proposals_refresh
from apps.studies.services import study_create, study_member_add

pytestmark = pytest.mark.django_db


def base(study) -> str:
    return f"/studies/{study.slug}/exclusions/"


@pytest.fixture
def member(demo_study, django_user_model):
    user = django_user_model.objects.create_user("member", password="pw-member-123")
    study_member_add(study=demo_study, user=user)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def outsider(django_user_model):
    user = django_user_model.objects.create_user("outsider", password="pw-outsider-123")
    study_create(slug="theirs", rubric_slug="humor", name="Theirs", owner=user)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-boss-123"))
    return client


def _state() -> tuple:
    return (
        list(Exclusion.objects.order_by("pk").values_list("pk", "undone_at", "reason")),
        list(ExclusionProposal.objects.order_by("pk").values_list("pk", "status")),
    )


POSTS = [
    ("exclude/", {"target": "rater", "subject": "r01", "reason": "r01 sped through"}),
    ("undo/", {"id": "1"}),
    ("proposals/confirm/", {"id": "1"}),
    ("proposals/dismiss/", {"id": "1"}),
    ("proposals/refresh/", {}),
]


def test_a_member_excludes_sees_it_and_undoes_it(demo_study, member):
    response = member.post(
        base(demo_study) + "exclude/",
        {"target": "item", "subject": "j002", "reason": "the punchline is cut off"},
    )
    assert response.status_code == 302
    exclusion = Exclusion.objects.get(study=demo_study)
    assert exclusion.item.external_id == "j002"
    assert exclusion.created_by.username == "member"
    page = member.get(base(demo_study)).content.decode()
    assert "the punchline is cut off" in page
    assert f'data-exclusion="{exclusion.pk}"' in page
    response = member.post(base(demo_study) + "undo/", {"id": exclusion.pk, "reason": "fixed"})
    assert response.status_code == 302
    exclusion.refresh_from_db()
    assert exclusion.undone_at is not None
    assert exclusion.undone_by.username == "member"
    page = member.get(base(demo_study)).content.decode()
    assert "fixed" in page
    assert f'data-exclusion="{exclusion.pk}"' not in page


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        ({"target": "rater", "subject": "r01", "reason": ""}, 400, "This field is required"),
        ({"target": "rater", "subject": "ghost", "reason": "x"}, 404, "no rater"),
        ({"target": "planet", "subject": "r01", "reason": "x"}, 400, "Select a valid choice"),
        ({"target": "judgment", "subject": "1", "reason": "x"}, 400, "judgment_kind must be"),
        (
            {"target": "judgment", "judgment_kind": "pair", "subject": "999999", "reason": "x"},
            404,
            "no pair judgment",
        ),
    ],
)
def test_bad_exclusions_are_refused_with_a_message(demo_study, member, data, status, message):
    before = _state()
    response = member.post(base(demo_study) + "exclude/", data)
    assert response.status_code == status
    assert message in response.content.decode()
    assert _state() == before


@pytest.mark.parametrize("path", ["undo/", "proposals/confirm/", "proposals/dismiss/"])
@pytest.mark.parametrize("value", ["", "abc", "-1", "99999999"])
def test_bad_row_numbers_are_refused(demo_study, member, path, value):
    before = _state()
    response = member.post(base(demo_study) + path, {"id": value})
    assert response.status_code in (400, 404)
    assert _state() == before


def test_a_proposal_is_confirmed_from_the_page(demo_study, member):
    from apps.judgments.services import study_judgments_import
    from tests.exclusions.conftest import _card, _lines

    rows = [_card("speedy", f"j{i:03d}", 10 + i, 3 + i % 2, seconds=0.5) for i in range(1, 7)]
    study_judgments_import(study=demo_study, data=_lines(rows), filename="fast.jsonl")
    assert member.post(base(demo_study) + "proposals/refresh/").status_code == 302
    proposal = ExclusionProposal.objects.get(study=demo_study, rater__external_id="speedy")
    page = member.get(base(demo_study)).content.decode()
    assert f'data-proposal="{proposal.pk}"' in page
    assert "median 0.5 s per task" in page
    assert (
        member.post(base(demo_study) + "proposals/confirm/", {"id": proposal.pk}).status_code == 302
    )
    assert Exclusion.objects.get(study=demo_study).rule == "speeder"
    # Confirming twice is a conflict that changes nothing.
    before = _state()
    response = member.post(base(demo_study) + "proposals/confirm/", {"id": proposal.pk})
    assert response.status_code == 409
    assert _state() == before


def test_anonymous_visitors_are_sent_to_login(demo_study):
    client = Client()
    assert client.get(base(demo_study)).status_code == 302
    for path, data in POSTS:
        before = _state()
        response = client.post(base(demo_study) + path, data)
        assert response.status_code == 302
        assert "/login" in response["Location"]
        assert _state() == before


def test_a_researcher_of_another_study_gets_not_found_and_changes_nothing(demo_study, outsider):
    exclusion_proposals_refresh(study=demo_study)
    assert outsider.get(base(demo_study)).status_code == 404
    for path, data in POSTS:
        before = _state()
        assert outsider.post(base(demo_study) + path, data).status_code == 404
        assert _state() == before


def test_a_rater_browser_gets_no_access(demo_study):
    client = Client()
    client.get(f"/s/{demo_study.slug}/")
    assert client.get(base(demo_study)).status_code == 302
    before = _state()
    client.post(base(demo_study) + "exclude/", POSTS[0][1])
    assert _state() == before


def test_an_admin_may_exclude_in_any_study(demo_study, admin):
    assert admin.get(base(demo_study)).status_code == 200
    response = admin.post(base(demo_study) + "exclude/", POSTS[0][1])
    assert response.status_code == 302
    assert Exclusion.objects.get(study=demo_study).created_by.username == "boss"


def test_get_is_refused_on_the_forms(demo_study, member):
    for path, _data in POSTS:
        assert member.get(base(demo_study) + path).status_code == 405
