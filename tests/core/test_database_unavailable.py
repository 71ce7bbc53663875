"""A database failure is a clean, retryable 503, never a 500, wherever it strikes: in a view,
in a middleware (Django turns an exception there into its server-error response before any
other middleware sees it, so the rule also lives in the server-error handler, `handler500`), and
while the error page itself is drawn (a page that reads the logged-in user from the session
would fail a second time on the same database)."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.test import Client, override_settings

from apps.core.sessions import SessionStore as DatabaseSessionStore
from apps.core.views import server_error
from config.urls import handler500
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db


class SessionStore(DatabaseSessionStore):
    """Sessions whose database file cannot be opened, as SQLite says when the process has no
    descriptors left."""

    def save(self, must_create: bool = False) -> None:
        raise OperationalError("unable to open database file")

    def load(self) -> dict[str, object]:
        if getattr(SessionStore, "unreadable", False):
            raise OperationalError("unable to open database file")
        return super().load()


SESSION_ENGINE = __name__
FORM = {"background": "technical", "age_band": "25-34", "consent": "on", "languages": ["en"]}


@override_settings(SESSION_ENGINE=SESSION_ENGINE)
def test_a_session_that_cannot_be_saved_is_a_503_page_asking_to_retry():
    study = StudyFactory()
    client = Client(raise_request_exception=False)
    # Enrolment puts the rater in the session; saving it happens after the view.
    response = client.post(f"/s/{study.slug}/", FORM)
    assert response.status_code == 503, response.content[:300]
    assert response["Retry-After"] == "1"
    assert b"retry" in response.content


@override_settings(SESSION_ENGINE=SESSION_ENGINE)
def test_an_api_client_gets_the_503_as_json():
    study = StudyFactory()
    client = Client(raise_request_exception=False)
    response = client.post(f"/s/{study.slug}/", FORM, HTTP_ACCEPT="application/json")
    assert response.status_code == 503
    assert response.json()["code"] == "database_unavailable"


def test_a_researcher_page_whose_session_cannot_be_read_is_a_503(django_user_model):
    user = django_user_model.objects.create_user("ada", password="pw-12345-long")
    client = Client(raise_request_exception=False)
    client.force_login(user)
    with override_settings(SESSION_ENGINE=SESSION_ENGINE):
        SessionStore.unreadable = True  # type: ignore[attr-defined]
        try:
            page = client.get("/studies/")
            api = client.get("/api/v1/studies/")
        finally:
            SessionStore.unreadable = False  # type: ignore[attr-defined]
    assert page.status_code == 503, page.content[:300]
    assert page["Retry-After"] == "1"
    assert api.status_code == 503
    assert api.json()["code"] == "database_unavailable"


def test_any_other_failure_is_still_a_500_that_says_nothing_of_its_cause(rf):
    assert handler500 == "apps.core.views.server_error"
    try:
        raise ValueError("secret detail")
    except ValueError:
        response = server_error(rf.get("/"))
    assert response.status_code == 500
    assert b"secret detail" not in response.content
