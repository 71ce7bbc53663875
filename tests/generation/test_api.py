"""The generation API for every role: prompt sets, models and runs; bad input is a 400 naming
the field (or line) with nothing stored; the API key is never returned."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from apps.generation.models import GenerationRun, ModelEndpoint, PromptSet
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.api.conftest import assert_error, token_client
from tests.generation.conftest import API_KEY, FakeProvider
from tests.generation.helpers import single

pytestmark = pytest.mark.django_db
Capture = Callable[..., Any]


@pytest.fixture
def owner(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def study(owner: User) -> Study:
    return study_create(slug="gen", rubric_slug="humor", owner=owner)


@pytest.fixture
def outsider(django_user_model: type[User]) -> User:
    user = django_user_model.objects.create_user("outsider", password="pw")
    study_create(slug="theirs", rubric_slug="humor", owner=user)
    return user


BASE = "/api/v1/studies/gen"


def test_prompt_sets_are_imported_all_or_nothing(study: Study, owner: User) -> None:
    client = token_client(owner)
    bad = client.post(
        f"{BASE}/prompt-sets/",
        {"name": "s", "prompts": [single("p1", "cats"), {"id": "p2", "level": "x", "lang": "en"}]},
        format="json",
    )
    body = assert_error(bad, 400, None, code="import_rejected")
    assert body["errors"][0]["line"] == 2
    assert body["errors"][0]["field"] == "level"
    assert not PromptSet.objects.exists()
    good = client.post(
        f"{BASE}/prompt-sets/",
        {"name": "s", "humor_type": "pun", "prompts": [single("p1", "cats")]},
        format="json",
    )
    assert good.status_code == 201
    assert good.json()["created"] == 1
    again = client.post(
        f"{BASE}/prompt-sets/", {"name": "s", "prompts": [single("p1", "cats")]}, format="json"
    )
    assert again.status_code == 200
    set_id = good.json()["prompt_set"]["id"]
    detail = client.get(f"{BASE}/prompt-sets/{set_id}/").json()
    assert detail["prompts"][0]["id"] == "p1"
    assert [s["name"] for s in client.get(f"{BASE}/prompt-sets/").json()] == ["s"]


def test_models_and_runs_through_the_api(
    study: Study,
    owner: User,
    provider: FakeProvider,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    client = token_client(owner)
    created = client.post(
        f"{BASE}/prompt-sets/", {"name": "s", "prompts": [single("p1", "cats")]}, format="json"
    ).json()
    bad_model = client.post(
        f"{BASE}/models/", {"name": "m", "kind": "chat", "url": "gopher://x"}, format="json"
    )
    assert_error(bad_model, 400, "url")
    assert not ModelEndpoint.objects.exists()
    model = client.post(
        f"{BASE}/models/",
        {"name": "m", "kind": "chat", "url": provider.url, "model": "jester-1"},
        format="json",
    )
    assert model.status_code == 201
    body = {
        "prompt_sets": [created["prompt_set"]["id"]],
        "models": [model.json()["id"]],
        "samples_per_prompt": 2,
        "seed": 1,
        "api_key": API_KEY,
    }
    assert_error(
        client.post(f"{BASE}/generation-runs/", {**body, "top_p": 3}, format="json"), 400, "top_p"
    )
    assert_error(
        client.post(f"{BASE}/generation-runs/", {**body, "extra": 1}, format="json"), 400, "extra"
    )
    assert not GenerationRun.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(f"{BASE}/generation-runs/", body, format="json")
    assert started.status_code == 201
    assert API_KEY not in started.content.decode()
    run_id = started.json()["id"]
    shown = client.get(f"{BASE}/generation-runs/{run_id}/")
    assert API_KEY not in shown.content.decode()
    progress = shown.json()["progress"][0]
    assert progress["generated"] == 2
    assert shown.json()["status"] == "done"
    assert Item.objects.filter(study=study, stage=Item.Stage.CANDIDATE).count() == 2
    assert_error(
        client.post(f"{BASE}/generation-runs/{run_id}/cancel/"), 409, "status", code="conflict"
    )
    assert_error(
        client.post(f"{BASE}/generation-runs/{run_id}/resume/", {}, format="json"),
        409,
        "status",
        code="conflict",
    )
    assert len(client.get(f"{BASE}/generation-runs/").json()) == 1


def test_other_roles_get_401_or_404_and_change_nothing(
    study: Study, owner: User, outsider: User, provider: FakeProvider
) -> None:
    paths = ["prompt-sets/", "models/", "generation-runs/"]
    for path in paths:
        assert token_client(None).get(f"{BASE}/{path}").status_code == 401
        assert token_client(outsider).get(f"{BASE}/{path}").status_code == 404
        assert token_client(owner).get(f"{BASE}/{path}").status_code == 200
    denied = token_client(outsider).post(
        f"{BASE}/models/", {"name": "m", "kind": "local"}, format="json"
    )
    assert denied.status_code == 404
    assert token_client(outsider).get(f"{BASE}/generation-runs/1/").status_code == 404
    assert not ModelEndpoint.objects.exists()
