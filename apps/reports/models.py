"""Export jobs: a file built in the background from a study's judgments or stored results.

The file is derived data, like the results it is written from: deleting a job (or its file)
loses nothing that cannot be rebuilt.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.studies.models import Study


class ExportFormat(models.TextChoices):
    RAW = "raw", _("Raw judgments (tidy CSV)")
    JSON = "json", _("Results (JSON)")
    TABLES = "tables", _("Results tables (zip of CSV)")
    XLSX = "xlsx", _("Results workbook (XLSX)")
    REPORT_HTML = "report-html", _("Printable report (HTML)")
    REPORT_PDF = "report-pdf", _("Printable report (PDF)")


class ExportLanguage(models.TextChoices):
    """The languages a report and its tables' labels are written in (settings.LANGUAGES)."""

    EN = "en", _("English")
    ZH_HANS = "zh-hans", _("Simplified Chinese")


class ExportJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="export_jobs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="export_jobs",
    )
    format = models.CharField(max_length=16, choices=ExportFormat.choices)
    # The report's language, and that of the labels and warning texts of the tables; the
    # requester's interface language unless they chose another.
    language = models.CharField(
        max_length=16, choices=ExportLanguage.choices, default=ExportLanguage.EN
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # Percent done, only ever raised by the worker's UPDATE; the page polls it.
    progress = models.PositiveSmallIntegerField(default=0)
    # Relative to MEDIA_ROOT; served only by the permission-checked download view.
    file_path = models.CharField(max_length=500, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease: a running job's worker renews this every few seconds; a running job whose
    # lease is older than EXPORT_LEASE_SECONDS has lost its worker and is taken over or failed.
    # For a queued job it is when the job was last handed to the queue.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Runs started (a killed worker's run counts); past EXPORT_MAX_ATTEMPTS the job fails.
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=100),
                name="export_progress_percent",
            ),
            models.CheckConstraint(
                condition=Q(format__in=[choice.value for choice in ExportFormat]),
                name="export_format_known",
            ),
            models.CheckConstraint(
                condition=Q(language__in=[choice.value for choice in ExportLanguage]),
                name="export_language_known",
            ),
            models.CheckConstraint(
                condition=~Q(status="done") | ~Q(file_path=""),
                name="export_done_has_file",
            ),
        ]
        indexes = [models.Index(fields=["study", "-created_at"])]

    def __str__(self) -> str:
        return f"export {self.pk} of {self.study_id} ({self.format}, {self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)
