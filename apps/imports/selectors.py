"""Reads for import jobs, scoped to the study they belong to."""

from __future__ import annotations

from apps.core.errors import NotFound
from apps.imports.models import ImportJob
from apps.studies.models import Study


def import_job_get(*, study: Study, job_id: int) -> ImportJob:
    """The job if it belongs to this study; another study's job is simply not found."""
    job = ImportJob.objects.filter(study=study, pk=job_id).select_related("study").first()
    if job is None:
        raise NotFound(f"no import {job_id} in study {study.slug!r}", field="job")
    return job


def import_job_list(*, study: Study, limit: int = 10) -> list[ImportJob]:
    return list(
        ImportJob.objects.filter(study=study)
        .select_related("requested_by")
        .order_by("-created_at", "-pk")[:limit]
    )
