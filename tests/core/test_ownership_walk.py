"""Every object is reached through its study, and a study only by its researchers: this walks
every researcher page and API URL pattern there is (new ones included, as they are added) as a
researcher of another study, with the other study's slug and then with their own slug and the
other study's object ids, by GET and by POST. Each must answer exactly as for a study or an
object that does not exist (404, or 405 for a method the route never takes) and change
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from apps.exclusions.models import Exclusion
from apps.generation.models import GenerationRun, ModelEndpoint, Prompt, PromptSet
from apps.imports.models import ImportJob
from apps.reports.models import ExportJob
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db

# Researcher pages and the researcher API; the rater pages and API go by the rater's session
# (tests/judgments/test_server_rules.py), the admin by staff status.
PREFIXES = ("studies/<slug:slug>/", "api/v1/studies/<slug:slug>/")


def _routes(patterns: list[Any], prefix: str = "") -> Iterator[str]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern)


def researcher_routes() -> list[str]:
    return sorted(
        {route for route in _routes(get_resolver().url_patterns) if route.startswith(PREFIXES)}
    )


def _other_studys_objects(study: Study, owner: User) -> dict[str, int]:
    """One object of each kind a URL can name, in `study`: their ids by the URL's parameter."""
    prompt_set = PromptSet.objects.create(study=study, name="theirs")
    prompt = Prompt.objects.create(
        prompt_set=prompt_set, external_id="p1", level="single", language="en", topic="cats"
    )
    endpoint = ModelEndpoint.objects.create(
        study=study, name="their-model", kind="chat", url="https://8.8.8.8/v1", model="x"
    )
    run = GenerationRun.objects.create(study=study)
    item = Item.objects.create(study=study, external_id="t1", text="their joke", source="human")
    exclusion = Exclusion.objects.create(
        study=study, target=Exclusion.Target.ITEM, item=item, reason="theirs"
    )
    return {
        "import_job": ImportJob.objects.create(
            study=study, kind="items", filename="theirs.jsonl"
        ).pk,
        "export_job": ExportJob.objects.create(study=study, format="json").pk,
        "set_id": prompt_set.pk,
        "prompt_id": prompt.pk,
        "endpoint_id": endpoint.pk,
        "run_id": run.pk,
        "exclusion_id": exclusion.pk,
    }


# Parameters that are not ids: a value the route accepts.
NAMED = {"section": "agreement", "name": "summary", "fmt": "json"}


def _url(route: str, slug: str, ids: dict[str, int]) -> str:
    path = route.replace("<slug:slug>", slug)
    for part in list(_params(path)):
        name = part.split(":")[-1]
        if name == "job_id":
            value = ids["import_job" if "/imports/" in route else "export_job"]
        elif name in ids:
            value = ids[name]
        elif name in NAMED:
            value = NAMED[name]
        else:
            raise AssertionError(
                f"{route}: no value for <{part}>; add one of its objects to the walk"
            )
        path = path.replace(f"<{part}>", str(value))
    return "/" + path


def _params(path: str) -> Iterator[str]:
    while "<" in path:
        start = path.index("<")
        end = path.index(">", start)
        yield path[start + 1 : end]
        path = path[end + 1 :]


def _snapshot(study: Study) -> dict[str, Any]:
    """What a request could change about the other study."""
    return {
        "study": Study.objects.filter(pk=study.pk).values().get(),
        "items": list(Item.objects.filter(study=study).values()),
        "exclusions": list(Exclusion.objects.filter(study=study).values()),
        "exports": list(ExportJob.objects.filter(study=study).values()),
        "imports": list(ImportJob.objects.filter(study=study).values()),
        "sets": list(PromptSet.objects.filter(study=study).values()),
        "prompts": list(Prompt.objects.filter(prompt_set__study=study).values()),
        "endpoints": list(ModelEndpoint.objects.filter(study=study).values()),
        "runs": list(GenerationRun.objects.filter(study=study).values()),
    }


def test_the_walk_covers_every_researcher_route() -> None:
    routes = researcher_routes()
    # The walk is only as good as its list: it grows with the URL configuration.
    assert len(routes) > 60
    assert any("/generation/runs/<int:run_id>/" in route for route in routes)
    assert any(route.startswith("api/v1/studies/") for route in routes)


def test_another_researchers_study_and_objects_are_404_everywhere_and_unchanged(
    django_user_model: type[User],
) -> None:
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    bob = django_user_model.objects.create_user("bob", password="pw-bob-123")
    mine = study_create(slug="alices", rubric_slug="humor", name="Alice's", owner=alice)
    theirs = study_create(slug="bobs", rubric_slug="humor", name="Bob's", owner=bob)
    ids = _other_studys_objects(theirs, bob)
    before = _snapshot(theirs)

    page = Client()
    page.force_login(alice)
    api = token_client(alice)
    nothing = {name: 10**9 + k for k, name in enumerate(ids)}
    answered: list[tuple[str, str, int, int]] = []
    for route in researcher_routes():
        client: Any = api if route.startswith("api/") else page
        # (his study's URL, the same URL where nothing exists) and, for routes with ids, her
        # own study's URL with his objects' ids (each object is looked up in her study).
        pairs = [(_url(route, theirs.slug, ids), _url(route, "no-such-study", nothing))]
        if "<int:" in route:
            pairs.append((_url(route, mine.slug, ids), _url(route, mine.slug, nothing)))
        for url, absent in pairs:
            for method in ("get", "post"):
                status = getattr(client, method)(url).status_code
                unknown = getattr(client, method)(absent).status_code
                # Not found, or a method the route never takes (405 wherever it points):
                # either way the same answer as for nothing at all.
                if status not in (404, 405) or status != unknown:
                    answered.append((method.upper(), url, status, unknown))
    assert answered == [], answered
    # Not a walk of closed doors: her own study answers her, and his answers him.
    assert page.get(f"/studies/{mine.slug}/").status_code == 200
    assert api.get(f"/api/v1/studies/{mine.slug}/").status_code == 200
    his = token_client(bob)
    assert his.get(f"/api/v1/studies/{theirs.slug}/exports/{ids['export_job']}/").status_code == 200
    assert _snapshot(theirs) == before
