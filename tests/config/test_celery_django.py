"""Between a worker's tasks the database connection is kept as Django keeps it between
requests (config/celery_django.py): not closed before and after every task, as Celery's own
Django fix-up does, but when it is too old, unusable or left in error."""

from __future__ import annotations

import time

import pytest
from celery.fixups.django import DjangoFixup
from django.db import connection

from apps.analysis.tasks import study_aggregate_task
from config.celery import app

# SQLite's test database lives in memory, and Django never closes its connection.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres_only")]


def _worker_fixup():  # type: ignore[no-untyped-def]
    (fixup,) = [f for f in app._fixups if isinstance(f, DjangoFixup)]
    return fixup.worker_fixup


def _around_a_task() -> None:
    """What the worker does around each task it runs (not an eager call)."""
    worker = _worker_fixup()
    assert study_aggregate_task.request.is_eager is False
    worker.on_task_prerun(sender=study_aggregate_task)
    worker.on_task_postrun(sender=study_aggregate_task)


def test_a_connection_in_good_order_is_kept_from_one_task_to_the_next():
    connection.ensure_connection()
    connection.close_at = time.monotonic() + 60  # within DB_CONN_MAX_AGE
    before = connection.connection
    _around_a_task()
    assert connection.connection is before
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_a_connection_older_than_its_age_is_closed_between_tasks():
    connection.ensure_connection()
    connection.close_at = time.monotonic() - 1  # past DB_CONN_MAX_AGE
    _around_a_task()
    assert connection.connection is None


def test_a_connection_left_in_error_and_unusable_is_closed_between_tasks():
    connection.ensure_connection()
    connection.close_at = time.monotonic() + 60
    connection.errors_occurred = True
    connection.connection.close()  # the server went away meanwhile
    _around_a_task()
    assert connection.connection is None
    with connection.cursor() as cursor:  # the next task connects again
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_an_eager_task_leaves_the_connection_alone():
    connection.ensure_connection()
    connection.close_at = time.monotonic() - 1
    before = connection.connection
    worker = _worker_fixup()
    study_aggregate_task.push_request(is_eager=True)
    try:
        worker.on_task_prerun(sender=study_aggregate_task)
    finally:
        study_aggregate_task.pop_request()
    assert connection.connection is before
