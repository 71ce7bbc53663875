"""Import jobs: an uploaded items or judgments file imported in the background.

The job row is the page's and the API's view of the import (state, lines read, the summary or
every bad line); the import itself is one transaction of the importing service, so a failed
job has stored nothing but this row.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.studies.models import Study


class ImportKind(models.TextChoices):
    ITEMS = "items", _("Items")
    JUDGMENTS = "judgments", _("Judgments")


class ImportJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    class Stage(models.TextChoices):
        WAITING = "waiting", _("Waiting for a worker")
        READING = "reading", _("Reading and checking lines")
        STORING = "storing", _("Storing what is new")
        FINISHED = "finished", _("Finished")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="import_jobs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="import_jobs",
    )
    kind = models.CharField(max_length=16, choices=ImportKind.choices)
    as_candidates = models.BooleanField(default=False)
    # The name the file was uploaded under (its suffix chooses JSONL or CSV).
    filename = models.CharField(max_length=255)
    # Relative to MEDIA_ROOT while the job waits or runs; removed when it finishes.
    file_path = models.CharField(max_length=500, blank=True)
    size = models.BigIntegerField(default=0)
    # Lines of the file (counted on upload) and how far the worker has read; only raised.
    lines_total = models.PositiveIntegerField(default=0)
    lines_read = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.WAITING)
    # A done job: what was imported and the import's warnings ({"warnings": [{code, message}]}).
    summary = models.JSONField(default=dict, blank=True)
    # A failed job: why, and its bad lines ([{line, field, message}], the first
    # IMPORT_MAX_STORED_ERRORS of `error_count`).
    error = models.TextField(blank=True)
    # The same, as a sentence (apps/core/sentences.py) shown in the reader's language; each bad
    # line's sentence is kept beside its message in `errors`.
    error_message = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)
    error_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Renewed with each progress report; a running job silent for IMPORT_LEASE_SECONDS has lost
    # its worker and may be taken over by the redelivered task.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=[choice.value for choice in ImportKind]),
                name="import_kind_known",
            ),
            models.CheckConstraint(
                condition=Q(lines_read__lte=models.F("lines_total")),
                name="import_lines_read_within_total",
            ),
        ]
        indexes = [models.Index(fields=["study", "-created_at"])]

    def __str__(self) -> str:
        return f"import {self.pk} of {self.study_id} ({self.kind}, {self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        """Reading is the first 90%, storing the rest; 100 only when done."""
        if self.status == self.Status.DONE:
            return 100
        if self.stage == self.Stage.STORING:
            return 90
        if not self.lines_total:
            return 0
        return min(90, self.lines_read * 90 // self.lines_total)

    @property
    def warnings(self) -> list[dict[str, Any]]:
        return list((self.summary or {}).get("warnings") or [])
