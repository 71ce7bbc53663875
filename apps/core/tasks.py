"""The worker heartbeat task (thin: apps.core.heartbeat holds the rule)."""

from __future__ import annotations

from celery import shared_task

from apps.core.heartbeat import worker_heartbeat_record


@shared_task(bind=True, ignore_result=True)
def worker_heartbeat_task(self) -> None:  # type: ignore[no-untyped-def]
    worker_heartbeat_record(hostname=str(self.request.hostname or "worker"))
