"""The health check of a kept PostgreSQL connection (apps/core/postgresql): Django checks one
at its first use in each request. Here that check sends nothing while the connection is idle
and sound, and still finds one the server has ended, so the request after a database restart
is served on a new connection instead of failing."""

from __future__ import annotations

import time
from contextlib import closing

import pytest
from django.core.signals import request_started
from django.db import connection

from apps.studies.models import Study
from tests.factories import StudyFactory
from tests.faults import other_connection

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _fresh_connection_after():  # type: ignore[no-untyped-def]
    yield
    # A connection a test had the server end is not left to the test database's teardown.
    connection.close()


def _last_statement(pid: int) -> str:
    with closing(other_connection()) as other, other.cursor() as cursor:
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return str(cursor.fetchone()[0])


def _terminate(pid: int) -> None:
    """End the backend as a restart or an idle timeout would, and wait until it is gone."""
    with closing(other_connection()) as other, other.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        for _ in range(100):
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
            if cursor.fetchone() == (0,):
                return
            time.sleep(0.02)
    raise AssertionError(f"backend {pid} is still there")


def _backend_pid() -> int:
    connection.ensure_connection()
    return int(connection.connection.get_backend_pid())


def test_a_sound_idle_connection_is_found_usable_without_a_statement(
    postgres_only: None, settings
) -> None:  # type: ignore[no-untyped-def]
    pid = _backend_pid()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'the last statement sent'")
    assert connection.is_usable()
    assert _last_statement(pid) == "SELECT 'the last statement sent'"
    # Asked of the server on every request when set so, as Django does.
    settings.DB_HEALTH_CHECK_QUERY = True
    assert connection.is_usable()
    assert _last_statement(pid) == "SELECT 1"


def test_a_connection_the_server_ended_is_found_unusable(postgres_only: None) -> None:
    pid = _backend_pid()
    _terminate(pid)
    assert not connection.is_usable()


def test_the_request_after_the_server_ended_the_kept_connection_is_served(
    postgres_only: None,
) -> None:
    StudyFactory()
    pid = _backend_pid()
    _terminate(pid)
    # What Django does when a request starts (the test client leaves it out): the kept
    # connection is checked at its first use, and replaced.
    request_started.send(sender=None)
    assert Study.objects.count() == 1
    assert _backend_pid() != pid
