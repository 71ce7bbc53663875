"""Exports: building each format from a study's stored results or raw judgments, and the jobs
that build the large ones in the background.

A file is written next to its final name and renamed into place when complete, so a reader (the
download view, a researcher's script) never sees half a file, and a failed export leaves none.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.analysis.exports import result_document
from apps.analysis.selectors import study_result_get
from apps.core.errors import Conflict, DomainError, NotFound
from apps.raters.models import BackgroundGroup
from apps.reports import writers
from apps.reports.models import ExportFormat, ExportJob
from apps.reports.selectors import RAW_COLUMNS, raw_judgment_count, raw_judgment_rows
from apps.reports.tables import (
    SELECTABLE_TABLES,
    Table,
    provenance_table,
    result_table,
    result_tables,
)
from apps.studies.models import Item, Study
from apps.studies.selectors import study_questions

logger = logging.getLogger(__name__)

Progress = Callable[[int], None]

FILE_NAMES: dict[str, str] = {
    ExportFormat.RAW: "raw-judgments.csv",
    ExportFormat.JSON: "results.json",
    ExportFormat.TABLES: "tables.zip",
    ExportFormat.XLSX: "results.xlsx",
    ExportFormat.REPORT_HTML: "report.html",
    ExportFormat.REPORT_PDF: "report.pdf",
}
# Formats that cannot go to a terminal: the command writes them to --out only.
BINARY_FORMATS = frozenset({ExportFormat.TABLES, ExportFormat.XLSX, ExportFormat.REPORT_PDF})
EXPORTS_DIR = "exports"


def export_format_parse(value: str) -> ExportFormat:
    try:
        return ExportFormat(value)
    except ValueError:
        choices = ", ".join(choice.value for choice in ExportFormat)
        raise DomainError(
            f"unknown export format {value!r}; choose one of: {choices}", field="format"
        ) from None


def export_table_parse(name: str) -> str:
    if name not in SELECTABLE_TABLES:
        raise DomainError(
            f"unknown table {name!r}; choose one of: {', '.join(SELECTABLE_TABLES)}",
            field="table",
        )
    return name


# --- building each format ----------------------------------------------------------------------


def study_result_document(*, study: Study) -> dict[str, Any]:
    """The stored results with their provenance (DESIGN.md shape); not found before aggregation."""
    return result_document(study_result_get(study=study))


def _question_order(study: Study) -> list[str]:
    return [question.name for question in study_questions(study=study)]


def study_result_tables(*, study: Study, document: dict[str, Any] | None = None) -> list[Table]:
    """Every results table, then provenance (the last sheet of the workbook, a CSV in the zip)."""
    document = document if document is not None else study_result_document(study=study)
    tables = result_tables(document, _question_order(study))
    return [*tables, provenance_table(document, study=study.slug)]


def study_table_csv(*, study: Study, name: str) -> str:
    name = export_table_parse(name)
    document = study_result_document(study=study)
    if name == "provenance":
        return writers.table_csv(provenance_table(document, study=study.slug))
    return writers.table_csv(result_table(document, name, _question_order(study)))


def _report_study(study: Study, document: dict[str, Any]) -> writers.ReportStudy:
    language = "en"
    questions = [
        writers.ReportQuestion(
            name=q.name,
            kind=q.kind,
            min_value=q.min_value,
            max_value=q.max_value,
            prompt=(q.prompt or {}).get(language) or next(iter((q.prompt or {}).values()), ""),
        )
        for q in study_questions(study=study)
    ]
    groups = [
        (group.code, (group.label or {}).get(language) or group.code)
        for group in BackgroundGroup.objects.filter(study=study).order_by("position", "code")
    ]
    shown = {row["item"] for row in document.get("bradley_terry") or []}
    for rows in (document.get("bradley_terry_by_level") or {}).values():
        shown.update(row["item"] for row in rows)
    texts = dict(
        Item.objects.filter(study=study, external_id__in=shown).values_list("external_id", "text")
    )
    return writers.ReportStudy(
        name=study.name,
        slug=study.slug,
        questions=questions,
        groups=groups,
        session_minutes=study.session_minutes,
        pair_appearances_per_item=study.pair_appearances_per_item,
        pair_min_opponents=study.pair_min_opponents,
        min_items_per_model=study.min_items_per_model,
        min_raters_per_item=study.min_raters_per_item,
        exclude_items_not_evidence=study.exclude_items_not_evidence,
        item_texts=texts,
        rubric_kind=study.rubric.kind,
    )


def study_report_html(*, study: Study, document: dict[str, Any] | None = None) -> str:
    document = document if document is not None else study_result_document(study=study)
    context = writers.report_context(
        document, study=_report_study(study, document), generated_at=timezone.now()
    )
    return writers.render_report_html(context)


def study_raw_write(*, study: Study, stream: Any, progress: Progress | None = None) -> int:
    """The tidy raw judgments as CSV into a text stream; returns the number of rows."""
    total = raw_judgment_count(study=study) if progress is not None else 0
    return writers.write_raw_csv(
        raw_judgment_rows(study=study), RAW_COLUMNS, stream, total=total, progress=progress
    )


def export_write(*, study: Study, fmt: str, path: Path, progress: Progress | None = None) -> int:
    """Write one export format to `path` (complete or not at all); returns its size in bytes."""
    fmt = export_format_parse(fmt)
    report = progress or (lambda percent: None)
    partial = path.with_name(path.name + ".part")
    try:
        if fmt == ExportFormat.RAW:
            with partial.open("w", encoding="utf-8", newline="") as stream:
                study_raw_write(study=study, stream=stream, progress=progress)
        else:
            document = study_result_document(study=study)
            report(5)
            if fmt == ExportFormat.JSON:
                writers.write_json(document, partial)
            elif fmt == ExportFormat.TABLES:
                writers.write_tables_zip(
                    study_result_tables(study=study, document=document), partial
                )
            elif fmt == ExportFormat.XLSX:
                tables = study_result_tables(study=study, document=document)
                report(20)
                writers.write_xlsx(tables, partial, progress=lambda p: report(20 + int(0.75 * p)))
            else:
                html = study_report_html(study=study, document=document)
                report(30)
                if fmt == ExportFormat.REPORT_HTML:
                    partial.write_text(html, encoding="utf-8")
                else:
                    writers.write_pdf(html, partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path.stat().st_size


# --- jobs --------------------------------------------------------------------------------------


def _media_root() -> Path:
    return Path(settings.MEDIA_ROOT)


def _enqueue(job_id: int) -> None:
    from apps.reports.tasks import export_job_run_task

    try:
        export_job_run_task.delay(job_id)
    except Exception:  # the broker is down: say so on the page instead of queueing forever
        logger.warning("could not queue export job %s", job_id, exc_info=True)
        ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
            status=ExportJob.Status.FAILED,
            error="the export could not be queued (the task queue is unavailable); try again",
            finished_at=timezone.now(),
        )


@transaction.atomic
def export_job_create(
    *, study: Study, user: AbstractBaseUser | AnonymousUser | None, fmt: str
) -> ExportJob:
    """Queue an export; it starts after this transaction commits. Refused requests store nothing."""
    export_format = export_format_parse(fmt)
    if export_format != ExportFormat.RAW:
        try:
            study_result_get(study=study)
        except NotFound as exc:
            raise Conflict(exc.message, field="format") from None
    requested_by = user.pk if user is not None and user.is_authenticated else None
    job = ExportJob.objects.create(study=study, requested_by_id=requested_by, format=export_format)
    transaction.on_commit(lambda: _enqueue(job.pk))
    return job


def _claim(job_id: int) -> bool:
    """Take the job for this run: queued, or running for longer than a task may live (its worker
    died and the broker redelivered it). A job already done or failed is never run again."""
    now = timezone.now()
    stale = now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    return bool(
        ExportJob.objects.filter(pk=job_id)
        .filter(
            Q(status=ExportJob.Status.QUEUED)
            | Q(status=ExportJob.Status.RUNNING, started_at__lt=stale)
        )
        .update(status=ExportJob.Status.RUNNING, started_at=now, progress=1, error="")
    )


def _progress_recorder(job_id: int) -> Progress:
    last = [0]

    def record(percent: int) -> None:
        percent = max(0, min(99, int(percent)))
        if percent > last[0]:
            last[0] = percent
            # Only ever raised, by a conditional UPDATE: a late report cannot lower the bar.
            ExportJob.objects.filter(pk=job_id, progress__lt=percent).update(progress=percent)

    return record


def export_job_run(*, job_id: int) -> ExportJob | None:
    """Build the job's file. Idempotent: a job already taken or finished is left alone."""
    if not _claim(job_id):
        return ExportJob.objects.filter(pk=job_id).first()
    job = ExportJob.objects.select_related("study").get(pk=job_id)
    relative = Path(EXPORTS_DIR) / job.study.slug / f"{job.pk}-{FILE_NAMES[job.format]}"
    target = _media_root() / relative
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        size = export_write(
            study=job.study, fmt=job.format, path=target, progress=_progress_recorder(job.pk)
        )
    except Exception as exc:
        logger.exception("export job %s failed", job_id)
        message = exc.message if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}"
        ExportJob.objects.filter(pk=job_id).update(
            status=ExportJob.Status.FAILED, error=message[:2000], finished_at=timezone.now()
        )
    else:
        ExportJob.objects.filter(pk=job_id).update(
            status=ExportJob.Status.DONE,
            progress=100,
            file_path=str(relative),
            size=size,
            finished_at=timezone.now(),
        )
    job.refresh_from_db()
    return job


def export_job_file(*, job: ExportJob) -> Path:
    """The finished job's file on disk: 409 while it is being built, 404 if it is gone."""
    if job.status != ExportJob.Status.DONE:
        raise Conflict(
            f"export {job.pk} is {job.get_status_display().lower()}, not ready for download",
            field="job",
        )
    root = (_media_root() / EXPORTS_DIR).resolve()
    path = (_media_root() / job.file_path).resolve()
    if root not in path.parents or not path.is_file():
        raise NotFound(f"the file of export {job.pk} no longer exists", field="job")
    return path


def export_download_name(*, job: ExportJob) -> str:
    return f"{job.study.slug}-{FILE_NAMES[job.format]}"
