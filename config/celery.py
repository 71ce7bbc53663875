"""The Celery application; configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# One BLAS thread per process: statistics run in several worker processes at once, and a
# multi-threaded BLAS on a busy core runs many times slower. Set before numpy is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

app = Celery("laughlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _beat_at_start(sender: object = None, **kwargs: object) -> None:
    # A worker that just started has answered: the banner should not wait a whole period.
    from apps.core.heartbeat import worker_heartbeat_record

    hostname = getattr(sender, "hostname", "") or "worker"
    try:
        worker_heartbeat_record(hostname=str(hostname))
    except Exception:  # the database may be migrating; the periodic task beats soon after
        logging.getLogger(__name__).warning("could not record the worker's start", exc_info=True)
