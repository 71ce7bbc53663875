from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# One BLAS thread per process: statistics run in several worker processes at once, and a
# multi-threaded BLAS on a busy core runs many times slower. Set before numpy is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
application = get_wsgi_application()


def _freeze_startup_objects() -> None:
    """Exempt everything loaded at start-up from the garbage collector's full passes.

    A web process holds some 140,000 long-lived objects (Django, DRF, numpy, scipy, the URL
    configuration and every view module). CPython's full collection walks all of them: 70 to
    180 ms on a two-core machine, every hundred or so requests, with every thread of the
    process stopped, which put those pauses straight into the rater flow's 99th percentile.
    Frozen objects are never collected (they live as long as the process anyway); full passes
    then walk only what requests created.
    """
    from django.urls import get_resolver

    _ = get_resolver().url_patterns  # imports every view module now, not on the first request
    gc.collect()
    gc.freeze()


_freeze_startup_objects()
