"""Thin Celery wrapper: the periodic sweep that ends sessions whose time ran out."""

from __future__ import annotations

from celery import shared_task

from apps.raters.services import sessions_release_timed_out


@shared_task(ignore_result=True)
def sessions_timeout_sweep_task() -> int:
    return sessions_release_timed_out()
