"""Prometheus metrics for the operator, off by default (METRICS_ENABLED).

Requests (count, latency, status per view) come from django-prometheus's middleware. What a
web process cannot see by counting its own requests is read at scrape time, from the database
and the broker every process shares, so one scrape of any web server tells the whole story:

- `laughlab_queue_depth{queue}`: messages waiting in each task queue (rater, research,
  external), from Redis or the embedded broker's folder;
- `laughlab_jobs{kind,status}`: export, import, screening and generation jobs by status;
- `laughlab_job_failures_total{kind}`: jobs that failed, in all;
- `laughlab_job_duration_seconds{kind}`: durations of the jobs finished in the last hour
  (a summary: `_count` and `_sum`);
- `laughlab_worker_heartbeat_age_seconds`: since the newest worker heartbeat (inf without one);
- `laughlab_results_stale_studies`: studies whose results wait for a newer aggregation.

`GET /metrics` answers 404 unless METRICS_ENABLED; with METRICS_TOKEN set it asks for
`Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, F, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

RECENT = timedelta(hours=1)


def _jobs() -> list[tuple[str, Any, str, str]]:
    """(kind, model, its started-at field, its finished-at field) of every job table."""
    from apps.generation.models import GenerationRun
    from apps.imports.models import ImportJob
    from apps.reports.models import ExportJob
    from apps.screening.models import ScreeningRun

    return [
        ("export", ExportJob, "started_at", "finished_at"),
        ("import", ImportJob, "started_at", "finished_at"),
        ("screening", ScreeningRun, "created_at", "finished_at"),
        ("generation", GenerationRun, "created_at", "finished_at"),
    ]


def queue_depths() -> dict[str, int]:
    """Messages waiting per task queue, as the broker holds them."""
    queues = list(getattr(settings, "TASK_QUEUES", ()))
    if settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1)
        return {queue: int(client.llen(queue)) for queue in queues}
    folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    names = [path.name for path in folder.glob("*.msg")] if folder.is_dir() else []
    # The embedded broker names a message file "<time>_<id>.<queue>.msg".
    return {queue: sum(1 for name in names if name.endswith(f".{queue}.msg")) for queue in queues}


class LaughLabCollector:
    """Read at every scrape; nothing is kept between scrapes."""

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "laughlab_queue_depth", "Task messages waiting in each queue", labels=["queue"]
        )
        try:
            for queue, count in queue_depths().items():
                depth.add_metric([queue], count)
        except Exception:  # the broker is down: say so by leaving the gauge empty
            pass
        yield depth
        now = timezone.now()
        jobs = GaugeMetricFamily(
            "laughlab_jobs", "Jobs by kind and status", labels=["kind", "status"]
        )
        failures = CounterMetricFamily(
            "laughlab_job_failures", "Jobs that failed, in all", labels=["kind"]
        )
        durations = SummaryMetricFamily(
            "laughlab_job_duration_seconds",
            "Durations of the jobs finished in the last hour",
            labels=["kind"],
        )
        for kind, model, started, finished in _jobs():
            for status, count in model.objects.values_list("status").annotate(n=Count("pk")):
                jobs.add_metric([kind, str(status)], count)
            failures.add_metric([kind], model.objects.filter(status="failed").count())
            recent = model.objects.filter(
                **{f"{finished}__gte": now - RECENT, f"{started}__isnull": False}
            ).values_list(started, finished)
            seconds = [(end - start).total_seconds() for start, end in recent]
            durations.add_metric([kind], count_value=len(seconds), sum_value=sum(seconds))
        yield jobs
        yield failures
        yield durations
        from apps.analysis.models import AggregationState
        from apps.core.models import WorkerHeartbeat

        newest = WorkerHeartbeat.objects.order_by("-seen_at").values_list("seen_at", flat=True)
        seen = newest.first()
        yield GaugeMetricFamily(
            "laughlab_worker_heartbeat_age_seconds",
            "Seconds since the newest task worker heartbeat",
            value=(now - seen).total_seconds() if seen is not None else math.inf,
        )
        stale = AggregationState.objects.filter(
            Q(last_finished_at__isnull=True) | Q(requested_at__gt=F("last_finished_at")),
            requested_at__isnull=False,
        ).count()
        yield GaugeMetricFamily(
            "laughlab_results_stale_studies",
            "Studies whose results wait for a newer aggregation",
            value=stale,
        )


_registered: list[LaughLabCollector] = []


def _registry() -> CollectorRegistry:
    if not _registered:
        collector = LaughLabCollector()
        REGISTRY.register(collector)
        _registered.append(collector)
    return REGISTRY


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_ENABLED:
        raise Http404("metrics are off (METRICS_ENABLED)")
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return HttpResponse(
                "a metrics token is required", status=401, content_type="text/plain"
            )
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
