"""API tokens a researcher makes on the account page: created with a name and an optional list
of their studies, the key shown once and stored only as a hash, listed without the key, revoked
at once; a token limited to some studies finds no other study through any API endpoint."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken
from apps.accounts.services import api_token_create, api_token_revoke
from apps.core.errors import DomainError, NotFound
from apps.studies.models import Study
from apps.studies.services import study_create, study_member_add
from tests.core.test_ownership_walk import _other_studys_objects, _snapshot, _url, researcher_routes

pytestmark = pytest.mark.django_db

PAGE = "/account/tokens/"


@pytest.fixture
def alice(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def bob(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def first(alice: User) -> Study:
    return study_create(slug="first", rubric_slug="humor", name="First", owner=alice)


@pytest.fixture
def second(alice: User) -> Study:
    return study_create(slug="second", rubric_slug="humor", name="Second", owner=alice)


def page_client(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def api(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def shown_key(html: str) -> str:
    found = re.search(r'data-token-key="([^"]+)"', html)
    assert found, "the new key is not on the page"
    return found.group(1)


def slugs(response: Any) -> set[str]:
    assert response.status_code == 200, response.content[:300]
    return {row["slug"] for row in response.json()["results"]}


# --- the page --------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_login() -> None:
    response = Client().get(PAGE)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    response = Client().post(PAGE, {"name": "sneaky"})
    assert response.status_code == 302
    assert not ApiToken.objects.exists()


def test_a_token_made_on_the_page_is_shown_once_and_stored_only_as_a_hash(
    alice: User, first: Study
) -> None:
    client = page_client(alice)
    response = client.post(PAGE, {"name": "laptop script"})
    assert response.status_code == 200
    key = shown_key(response.content.decode())
    token = ApiToken.objects.get()
    assert token.user == alice
    assert token.name == "laptop script"
    assert token.key_hash == hashlib.sha256(key.encode()).hexdigest()
    stored = [str(value) for value in ApiToken.objects.values().get().values()]
    assert key not in stored
    assert not any(key in value for value in stored)
    # Shown once: the list afterwards names the token and never its key.
    html = client.get(PAGE).content.decode()
    assert "laptop script" in html
    assert key not in html
    assert 'data-token-key="' not in html
    # And it works.
    assert slugs(api(key).get("/api/v1/studies/")) == {"first"}


def test_the_page_lists_name_created_last_used_and_scope(
    alice: User, first: Study, second: Study
) -> None:
    _, key = api_token_create(user=alice, name="everything", study_ids=None)
    api_token_create(user=alice, name="only first", study_ids=[first.pk])
    api(key).get("/api/v1/studies/")
    html = page_client(alice).get(PAGE).content.decode()
    everything = html.split('data-token="everything"', 1)[1].split("</tr>", 1)[0]
    only_first = html.split('data-token="only first"', 1)[1].split("</tr>", 1)[0]
    assert "All your studies" in everything
    assert "First" in only_first
    assert "Second" not in only_first
    assert "Never" in only_first  # not used yet
    assert "Never" not in everything  # used just now
    assert ApiToken.objects.get(name="everything").last_used_at is not None


def test_a_token_limited_on_the_page_sees_only_its_studies(
    alice: User, first: Study, second: Study
) -> None:
    response = page_client(alice).post(PAGE, {"name": "first only", "studies": [first.pk]})
    key = shown_key(response.content.decode())
    client = api(key)
    assert slugs(client.get("/api/v1/studies/")) == {"first"}
    assert client.get("/api/v1/studies/first/").status_code == 200
    assert client.get("/api/v1/studies/second/").status_code == 404


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "nul\x00name"}, "name"),
        ({"name": "other's study", "studies": ["999999"]}, "studies"),
    ],
)
def test_bad_input_on_the_page_is_a_400_naming_the_field_and_stores_nothing(
    alice: User, first: Study, data: dict[str, Any], field: str
) -> None:
    response = page_client(alice).post(PAGE, data)
    assert response.status_code == 400
    html = response.content.decode()
    assert f'data-field-error="{field}"' in html
    assert 'data-token-key="' not in html
    assert not ApiToken.objects.exists()


def test_a_study_of_another_researcher_cannot_be_put_in_a_token(
    alice: User, bob: User, first: Study
) -> None:
    theirs = study_create(slug="bobs", rubric_slug="humor", owner=bob)
    response = page_client(alice).post(PAGE, {"name": "grab", "studies": [theirs.pk]})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()
    with pytest.raises(DomainError) as caught:
        api_token_create(user=alice, name="grab", study_ids=[theirs.pk])
    assert caught.value.field == "studies"
    assert not ApiToken.objects.exists()


def test_revoking_on_the_page_makes_the_token_fail_at_once(alice: User, first: Study) -> None:
    token, key = api_token_create(user=alice, name="old", study_ids=None)
    client = api(key)
    assert client.get("/api/v1/studies/").status_code == 200
    response = page_client(alice).post(f"{PAGE}{token.pk}/revoke/")
    assert response.status_code == 302
    assert response["Location"] == PAGE
    refused = client.get("/api/v1/studies/")
    assert refused.status_code == 401
    assert refused.json()["code"] == "authentication_failed"
    assert client.get("/api/v1/studies/first/").status_code == 401
    html = page_client(alice).get(PAGE).content.decode()
    row = html.split('data-token="old"', 1)[1].split("</tr>", 1)[0]
    assert "Revoked" in row


def test_someone_else_cannot_revoke_a_token_and_learns_nothing(
    alice: User, bob: User, first: Study
) -> None:
    token, key = api_token_create(user=alice, name="mine", study_ids=None)
    response = page_client(bob).post(f"{PAGE}{token.pk}/revoke/")
    assert response.status_code == 404
    assert page_client(bob).post(f"{PAGE}999999/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None
    assert api(key).get("/api/v1/studies/").status_code == 200
    with pytest.raises(NotFound):
        api_token_revoke(user=bob, token_id=token.pk)
    assert "mine" not in page_client(bob).get(PAGE).content.decode()


def test_the_page_only_revokes_by_post(alice: User) -> None:
    token, _ = api_token_create(user=alice, name="t", study_ids=None)
    assert page_client(alice).get(f"{PAGE}{token.pk}/revoke/").status_code == 405
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_top_bar_links_to_the_account_page(alice: User, first: Study) -> None:
    html = page_client(alice).get("/studies/").content.decode()
    assert f'href="{PAGE}"' in html


def test_the_page_speaks_chinese(alice: User) -> None:
    api_token_create(user=alice, name="t", study_ids=None)
    client = page_client(alice)
    client.cookies["django_language"] = "zh-hans"
    html = client.get(PAGE, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "API 令牌" in html
    assert "您的全部研究" in html


# --- the API -----------------------------------------------------------------------------------


def test_a_wrong_or_malformed_key_is_401() -> None:
    for header in ("Token ll_nope", "Token " + "a" * 40, "Token", "Token a b"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        assert client.get("/api/v1/studies/").status_code == 401, header


def test_drf_tokens_keep_working(alice: User, first: Study) -> None:
    legacy, _ = Token.objects.get_or_create(user=alice)
    assert slugs(api(legacy.key).get("/api/v1/studies/")) == {"first"}


def test_a_token_of_an_inactive_user_is_refused(alice: User, first: Study) -> None:
    _, key = api_token_create(user=alice, name="t", study_ids=None)
    alice.is_active = False
    alice.save()
    assert api(key).get("/api/v1/studies/").status_code == 401


def test_another_researchers_token_cannot_see_the_study(
    alice: User, bob: User, first: Study
) -> None:
    _, key = api_token_create(user=bob, name="bobs", study_ids=None)
    client = api(key)
    assert slugs(client.get("/api/v1/studies/")) == set()
    assert client.get("/api/v1/studies/first/").status_code == 404


def test_a_limited_token_loses_a_study_when_its_owner_does(
    alice: User, bob: User, first: Study
) -> None:
    study_member_add(study=first, user=bob)
    _, key = api_token_create(user=bob, name="helper", study_ids=[first.pk])
    assert api(key).get("/api/v1/studies/first/").status_code == 200
    first.memberships.filter(user=bob).delete()
    assert api(key).get("/api/v1/studies/first/").status_code == 404


def test_a_limited_token_whose_studies_are_gone_sees_none_rather_than_all(
    alice: User, first: Study, second: Study
) -> None:
    _, key = api_token_create(user=alice, name="first only", study_ids=[first.pk])
    first.delete()
    assert slugs(api(key).get("/api/v1/studies/")) == set()
    assert api(key).get("/api/v1/studies/second/").status_code == 404


def test_a_limited_token_cannot_create_a_study(alice: User, first: Study) -> None:
    _, key = api_token_create(user=alice, name="first only", study_ids=[first.pk])
    response = api(key).post(
        "/api/v1/studies/", {"slug": "third", "rubric": "humor"}, format="json"
    )
    assert response.status_code == 403
    assert not Study.objects.filter(slug="third").exists()
    _, full = api_token_create(user=alice, name="all", study_ids=None)
    response = api(full).post(
        "/api/v1/studies/", {"slug": "third", "rubric": "humor"}, format="json"
    )
    assert response.status_code == 201, response.content


def test_a_limited_token_gets_404_on_every_endpoint_of_another_study_of_the_same_owner(
    alice: User, first: Study, second: Study
) -> None:
    ids = _other_studys_objects(second, alice)
    before = _snapshot(second)
    _, key = api_token_create(user=alice, name="first only", study_ids=[first.pk])
    client = api(key)
    routes = [route for route in researcher_routes() if route.startswith("api/")]
    assert len(routes) > 15
    answered = []
    for route in routes:
        url = _url(route, second.slug, ids)
        absent = _url(route, "no-such-study", ids)
        for method in ("get", "post", "put", "patch", "delete"):
            status = getattr(client, method)(url).status_code
            unknown = getattr(client, method)(absent).status_code
            if status not in (404, 405) or status != unknown:
                answered.append((method.upper(), url, status, unknown))
    assert answered == []
    assert _snapshot(second) == before
    # Not a walk of closed doors: the same token answers for its own study.
    assert client.get(f"/api/v1/studies/{first.slug}/progress/").status_code == 200
