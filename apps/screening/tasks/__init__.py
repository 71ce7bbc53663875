"""Celery tasks of screening; importing the modules registers them with the worker."""

from apps.screening.tasks import judge, runs  # noqa: F401
