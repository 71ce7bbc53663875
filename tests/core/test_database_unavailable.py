"""A database failure is a clean, retryable 503, never a 500, wherever it strikes: in a view,
in a middleware (Django turns an exception there into its server-error response before any
other middleware sees it, so the rule also lives in the server-error handler, `handler500`), and
while the error page itself is drawn (a page that reads the logged-in user from the session
would fail a second time on the same database)."""

from __future__ import annotations

import logging
import sqlite3

import pytest
from django.db import OperationalError
from django.test import Client, override_settings

from apps.core.middleware import database_error_name, database_unavailable_response
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


def _sqlite_busy(path, *, stale_read: bool) -> sqlite3.OperationalError:
    """A real "database is locked" from SQLite in WAL mode: with `stale_read`, a connection
    that still holds an unfinished read begins to write after another connection wrote
    (refused at once); without, a writer that gives up at once on another's write lock."""
    first = sqlite3.connect(path, timeout=0, isolation_level=None)
    first.execute("PRAGMA journal_mode=WAL")
    first.execute("CREATE TABLE t (x)")
    first.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        if stale_read:
            unfinished = first.execute("SELECT x FROM t")
            unfinished.fetchone()
            other.execute("INSERT INTO t VALUES (3)")
        else:
            other.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError, match="database is locked") as caught:
            first.execute("BEGIN IMMEDIATE")
        return caught.value
    finally:
        first.close()
        other.close()


@pytest.mark.parametrize(
    ("stale_read", "name"), [(True, "SQLITE_BUSY_SNAPSHOT"), (False, "SQLITE_BUSY")]
)
def test_the_503_logs_which_busy_sqlite_meant(rf, tmp_path, caplog, stale_read, name):
    cause = _sqlite_busy(str(tmp_path / "busy.sqlite3"), stale_read=stale_read)
    assert database_error_name(cause) == name
    request = rf.post("/s/demo/answer/")
    try:
        # As Django's wrapper raises it: its own OperationalError, SQLite's as the cause.
        raise OperationalError(*cause.args) from cause
    except OperationalError:
        with caplog.at_level(logging.WARNING, logger="apps.core.middleware"):
            response = database_unavailable_response(request)
    assert response.status_code == 503
    assert f"database unavailable during POST /s/demo/answer/ ({name})" in caplog.messages


def test_an_error_without_sqlite_behind_it_has_no_name():
    assert database_error_name(OperationalError("server closed the connection")) == ""
    assert database_error_name(None) == ""
