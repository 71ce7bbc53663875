"""The Celery application; configuration comes from Django settings (CELERY_* names)."""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import celeryd_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# One BLAS thread per process: statistics run in several worker processes at once, and a
# multi-threaded BLAS on a busy core runs many times slower. Set before numpy is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Django's fix-up with the connections kept between tasks (config/celery_django.py).
app = Celery("laughlab", fixups=["config.celery_django:fixup"])
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


@celeryd_init.connect
def _below_the_web_server(sender: object = None, **kwargs: object) -> None:
    """A `celery worker` process (and the pool processes it forks, which inherit it) runs at a
    lower priority than the web server: an aggregation is seconds of CPU that may wait, a
    rater's request milliseconds that should not. On cores the two share, the scheduler then
    gives a request its core when it needs one, and the worker every moment no request does.
    `WORKER_NICE=0` keeps the worker at the web server's priority.

    With `WORKER_IDLE_CLASS` (the default) it also moves to Linux's idle scheduling class (see
    settings.py): a nice value only weighs the worker's share of a core, while a request that
    wakes to find both cores busy, one of them with an aggregation, still waits its turn."""
    from django.conf import settings

    if settings.WORKER_NICE:
        os.nice(settings.WORKER_NICE)
    if settings.WORKER_IDLE_CLASS:
        _into_the_idle_class()


def _into_the_idle_class() -> None:
    """Every thread of this process into SCHED_IDLE; threads and processes it starts later
    inherit it. Where the class does not exist (not Linux) or is refused, the nice value
    stays, and the worker says so."""
    setter = getattr(os, "sched_setscheduler", None)
    idle = getattr(os, "SCHED_IDLE", None)
    if setter is None or idle is None:
        # Not Linux (a laptop's demo): expected, so not a warning at every start.
        logging.getLogger(__name__).info("no idle scheduling class here; the nice value only")
        return
    # The policy is a thread's own (pid 0 would be the calling thread alone).
    for task in os.listdir("/proc/self/task"):
        try:
            setter(int(task), idle, os.sched_param(0))
        except ProcessLookupError:  # a thread that ended meanwhile
            continue
        except OSError:
            logging.getLogger(__name__).warning(
                "could not enter the idle scheduling class; the nice value only", exc_info=True
            )
            return
