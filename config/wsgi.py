from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# One BLAS thread per process: statistics run in several worker processes at once, and a
# multi-threaded BLAS on a busy core runs many times slower. Set before numpy is imported.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
application = get_wsgi_application()
