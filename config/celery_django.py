"""Celery's Django fix-up, with the database connections kept between tasks by Django's rules.

Celery's own fix-up closes every database connection before and after each task, so every
task, an aggregation as much as a 10 ms sweep, first opened a new connection: 6-8 ms on a quiet
machine (a PostgreSQL backend started, the first statements planned again) before a run's first
statement, in a worker that runs in the idle scheduling class. Between tasks the connections
now follow what Django does between requests (`close_old_connections`): one older than
DB_CONN_MAX_AGE, unusable (the health check), or left in error is closed, and any other is kept.

The rest is Celery's: a forked pool process or embedded beat still drops the connection it
inherited without using it, and the caches are closed after each task.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.fixups.django import DjangoFixup, DjangoWorkerFixup


class _WorkerFixup(DjangoWorkerFixup):
    def on_task_prerun(self, sender: Any, **kwargs: Any) -> None:
        if not getattr(sender.request, "is_eager", False):
            self._db.close_old_connections()

    def on_task_postrun(self, sender: Any, **kwargs: Any) -> None:
        if not getattr(sender.request, "is_eager", False):
            self._db.close_old_connections()
            self.close_cache()


class _Fixup(DjangoFixup):
    _worker_fixup: DjangoWorkerFixup | None

    @property
    def worker_fixup(self) -> DjangoWorkerFixup:
        if self._worker_fixup is None:
            self._worker_fixup = _WorkerFixup(self.app)
        return self._worker_fixup

    @worker_fixup.setter
    def worker_fixup(self, value: DjangoWorkerFixup) -> None:
        self._worker_fixup = value


def fixup(app: Celery) -> DjangoFixup | None:
    """Installed as Celery's own is: where a Django settings module is named."""
    if not os.environ.get("DJANGO_SETTINGS_MODULE"):
        return None
    return _Fixup(app).install()
