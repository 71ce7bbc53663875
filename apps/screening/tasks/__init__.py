"""Celery tasks of screening; importing the modules registers them with the worker."""

from apps.screening.tasks import features, judge, runs  # noqa: F401
