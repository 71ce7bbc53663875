"""The rater links researchers copy (Progress and Set-up, Prolific's variant) and the ones
`make demo` prints: PUBLIC_BASE_URL when set, else the host and port the request came to."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils.html import escape

from apps.demo.management.commands.rundemo import banner
from apps.studies.models import Item, Study
from apps.studies.services import study_create

pytestmark = pytest.mark.django_db

PROLIFIC = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


@pytest.fixture
def owner_client(django_user_model, settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    owner = django_user_model.objects.create_user("owner", password="pw-owner-123")
    study = study_create(
        slug="pilot", rubric_slug="humor", name="Pilot", owner=owner, status=Study.Status.OPEN
    )
    Item.objects.create(study=study, external_id="a", text="A joke", source="human")
    client = Client()
    client.force_login(owner)
    return client


@pytest.mark.parametrize("page", ["/studies/pilot/", "/studies/pilot/settings/"])
def test_pages_link_raters_to_the_host_and_port_the_researcher_reached(owner_client, page):
    body = owner_client.get(page, HTTP_HOST="127.0.0.1:8061").content.decode()
    assert "http://127.0.0.1:8061/s/pilot/<" in body
    if "settings" in page:
        assert escape(f"http://127.0.0.1:8061/s/pilot/{PROLIFIC}") in body
    assert "127.0.0.1:8000" not in body


@pytest.mark.parametrize("page", ["/studies/pilot/", "/studies/pilot/settings/"])
def test_pages_link_raters_to_the_public_base_url_when_it_is_set(owner_client, settings, page):
    settings.PUBLIC_BASE_URL = "https://laughlab.example.org"
    body = owner_client.get(page, HTTP_HOST="127.0.0.1:8061").content.decode()
    assert "https://laughlab.example.org/s/pilot/<" in body
    if "settings" in page:
        assert escape(f"https://laughlab.example.org/s/pilot/{PROLIFIC}") in body
    assert "127.0.0.1:8061/s/" not in body


def test_the_demo_prints_the_links_its_pages_show_for_its_port(owner_client):
    printed = banner(host="127.0.0.1", port=8061, worker_pid=1)
    assert "http://127.0.0.1:8061/s/demo/" in printed
    assert "http://127.0.0.1:8061/s/demo-content/" in printed
    assert "http://127.0.0.1:8061/studies/" in printed
    assert "8000" not in printed
    # The printed link is the one the Progress page shows to a researcher on that port, and it
    # opens the study's enrolment page.
    shown = owner_client.get("/studies/pilot/", HTTP_HOST="127.0.0.1:8061").content.decode()
    link = "http://127.0.0.1:8061/s/pilot/"
    assert link in shown
    assert Client().get("/s/pilot/", HTTP_HOST="127.0.0.1:8061").status_code == 200


def test_the_demo_bound_to_every_interface_prints_a_link_that_opens_here():
    assert "http://127.0.0.1:8061/s/demo/" in banner(host="0.0.0.0", port=8061, worker_pid=1)


def test_the_demo_prints_the_public_base_url_when_it_is_set(settings):
    settings.PUBLIC_BASE_URL = "https://laughlab.example.org"
    printed = banner(host="127.0.0.1", port=8061, worker_pid=1)
    assert "https://laughlab.example.org/s/demo/" in printed
    assert "127.0.0.1" not in printed
