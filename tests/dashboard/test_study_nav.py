"""The study's navigation follows the study: prepare, collect, results, exports, each group
labelled, the page shown marked, and the pages below an entry (an import, a prompt set) marked
as inside it."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from apps.dashboard.nav import study_nav
from apps.studies.models import Item
from apps.studies.services import study_create

pytestmark = pytest.mark.django_db

ORDER = {
    "prepare": ["Set-up", "Generation", "Offense filter", "Screening", "LLM judge"],
    "collect": ["Progress", "Quality", "Exclusions", "Prolific"],
    "results": ["Summary", "Models", "Leaderboard", "Items", "Agreement", "Turing", "Safety"],
    "exports": ["Exports"],
}


@pytest.fixture
def owner(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def client(owner) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(owner)
    return client


def test_the_groups_run_in_the_order_of_a_study(owner) -> None:  # type: ignore[no-untyped-def]
    humor = study_create(slug="pilot", rubric_slug="humor", name="Pilot", owner=owner)
    content = study_create(slug="texts", rubric_slug="content", name="Texts", owner=owner)

    groups = study_nav(study=humor, path="/")
    assert {g.key: [str(e.label) for e in g.entries] for g in groups} == ORDER
    assert [str(g.label) for g in groups] == ["Prepare", "Collect", "Results", "Exports"]
    prepare = [str(e.label) for e in study_nav(study=content, path="/")[0].entries]
    assert prepare == [*ORDER["prepare"], "Content evaluation"]


def test_the_page_shown_is_current_and_a_page_below_an_entry_is_inside_it(owner) -> None:  # type: ignore[no-untyped-def]
    study = study_create(slug="pilot", rubric_slug="humor", name="Pilot", owner=owner)

    def marked(path: str) -> tuple[list[str], list[str], list[str]]:
        groups = study_nav(study=study, path=path)
        entries = [e for g in groups for e in g.entries]
        return (
            [str(e.label) for e in entries if e.current],
            [str(e.label) for e in entries if e.within],
            [g.key for g in groups if g.current],
        )

    assert marked("/studies/pilot/") == (["Progress"], [], ["collect"])
    assert marked("/studies/pilot/results/quality/") == (["Quality"], [], ["collect"])
    assert marked("/studies/pilot/screening/judge/") == (["LLM judge"], [], ["prepare"])
    assert marked("/studies/pilot/generation/sets/4/") == ([], ["Generation"], ["prepare"])
    assert marked("/studies/pilot/imports/9/") == ([], ["Set-up"], ["prepare"])
    assert marked("/studies/pilot/exports/") == (["Exports"], [], ["exports"])
    # The study's own page starts every path: it marks only itself.
    assert marked("/studies/pilot/unknown/") == ([], [], [])


def test_every_study_page_shows_the_groups_with_the_page_marked(client, owner) -> None:  # type: ignore[no-untyped-def]
    study = study_create(slug="pilot", rubric_slug="humor", name="Pilot", owner=owner)
    Item.objects.create(study=study, external_id="a", text="A joke", source="human")

    html = client.get(reverse("dashboard:results_section", args=[study.slug, "agreement"]))
    nav = re.search(r'<nav class="tabs".*?</nav>', html.content.decode(), re.S)
    assert nav is not None
    groups = re.findall(r'role="group" aria-labelledby="(tabs-\w+)"', nav[0])
    assert groups == ["tabs-prepare", "tabs-collect", "tabs-results", "tabs-exports"]
    for key in groups:
        assert f'id="{key}"' in nav[0]
    url = reverse("dashboard:results_section", args=[study.slug, "agreement"])
    assert nav[0].count('aria-current="page"') == 1
    assert f'href="{url}" aria-current="page">Agreement</a>' in nav[0]
    # The compact row of groups a phone shows marks the group the page is in.
    results = reverse("dashboard:results", args=[study.slug])
    assert f'<a href="{results}" aria-current="true">Results</a>' in nav[0]
