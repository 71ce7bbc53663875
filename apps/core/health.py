"""/healthz (the process answers) and /readyz (it can do its work: database, broker, a task
worker's heartbeat, file storage), for load balancers and orchestrators. Plain JSON, no login,
no database write; /readyz answers 503 naming what is not ready."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from apps.core import files
from apps.core.heartbeat import worker_state


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _broker() -> str:
    if settings.REDIS_URL:
        import redis

        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()
        return "ok"
    folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    if not os.access(folder, os.W_OK):
        raise OSError(f"the broker folder {folder} is missing or not writable")
    return "ok"


def _worker() -> str:
    state = worker_state()
    if state.stale:
        since = state.last_seen.isoformat(timespec="seconds") if state.last_seen else "never"
        raise RuntimeError(f"no task worker has answered since {since}")
    return "ok"


def _storage() -> str:
    # Through the storage API: the local folder, or the object store a deployment set.
    files.probe()
    return "ok"


CHECKS = {"database": _database, "broker": _broker, "worker": _worker, "storage": _storage}


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results: dict[str, str] = {}
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except Exception as exc:  # each check reports its own failure, never a 500
            results[name] = f"failed: {exc}"[:300]
    ready = all(value == "ok" for value in results.values())
    return JsonResponse(
        {"status": "ready" if ready else "not ready", "checks": results},
        status=200 if ready else 503,
    )
