"""Background imports: an uploaded file is kept on disk, a job row tracks it, and a worker runs
the same importing service as `manage.py import_items` / `import_judgments` on it.

The job's progress is written as the worker reads the file, outside the import's transaction
(the services check every line before they open it), so the status page sees it move; the
import itself stores everything or, on any bad line, nothing but the job's list of errors.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.text import get_valid_filename
from django.utils.translation import gettext_noop

from apps.core import files
from apps.core.errors import DomainError, ImportRejected, LineError
from apps.core.sentences import Sentence
from apps.imports.models import ImportJob, ImportKind
from apps.studies.models import Study

logger = logging.getLogger(__name__)

IMPORTS_DIR = "imports"
# The file types the importers read (apps.core.lines.read_records).
# A zip only for items: their file and the pictures it names (apps/studies/item_zip.py).
SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".zip")


class PayloadTooLarge(DomainError):
    status_code = 413
    code = "too_large"


def import_upload_check(*, upload: UploadedFile) -> None:
    """Refuse a file no import could take, before it is kept: a wrong type, or over the limit."""
    name = upload.name or ""
    if Path(name).suffix.lower() not in SUFFIXES:
        suffix = Path(name).suffix.lower() or "(none)"
        raise ImportRejected(
            [
                LineError.said(
                    0,
                    "(file)",
                    Sentence(
                        gettext_noop("has an unknown type %(suffix)s; use .jsonl or .csv"),
                        {"suffix": repr(suffix)},
                    ),
                )
            ]
        )
    if (upload.size or 0) > settings.IMPORT_UPLOAD_MAX_BYTES:
        raise PayloadTooLarge(
            f"the file is larger than {settings.IMPORT_UPLOAD_MAX_BYTES} bytes "
            "(IMPORT_UPLOAD_MAX_BYTES)",
            field="file",
        )


class _Counted:
    """The upload's chunks, counting bytes and lines as they pass on to the storage."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = chunks
        self.size = 0
        self.newlines = 0
        self.last = b"\n"

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            self.size += len(chunk)
            self.newlines += chunk.count(b"\n")
            if chunk:
                self.last = chunk[-1:]
            yield chunk

    def lines(self) -> int:
        return self.newlines + (0 if self.last == b"\n" else 1)  # an unended last line


def _keep(upload: UploadedFile, study: Study) -> tuple[str, int, int]:
    """Keep the upload (in memory or Django's temporary file) in the file storage, counting
    its lines on the way: the worker that imports it may run on another machine. Returns
    (stored name, bytes, lines)."""
    try:
        safe = get_valid_filename(Path(upload.name or "upload").name)[-100:]
    except SuspiciousFileOperation:  # a name of dots only: the file is kept under another
        safe = "upload"
    relative = f"{IMPORTS_DIR}/{study.slug}/{uuid.uuid4().hex}-{safe}"
    counted = _Counted(upload.chunks())
    stored = files.save_chunks(relative, counted)
    return stored, counted.size, counted.lines()


def import_job_create(
    *,
    study: Study,
    user: AbstractBaseUser | AnonymousUser | None,
    kind: str,
    upload: UploadedFile,
    as_candidates: bool = False,
) -> ImportJob:
    """Keep the file and queue its import; the worker starts after this transaction commits."""
    import_upload_check(upload=upload)
    if kind not in ImportKind.values:
        raise DomainError(f"unknown import kind {kind!r}", field="kind")
    relative, size, lines = _keep(upload, study)
    requested_by = user.pk if user is not None and user.is_authenticated else None
    try:
        with transaction.atomic():
            job = ImportJob.objects.create(
                study=study,
                requested_by_id=requested_by,
                kind=kind,
                as_candidates=as_candidates and kind == ImportKind.ITEMS,
                filename=(upload.name or "")[:255],
                file_path=relative,
                size=size,
                lines_total=lines,
            )
            transaction.on_commit(lambda: _enqueue(job.pk))
    except BaseException:
        files.delete(relative)
        raise
    return job


def _enqueue(job_id: int) -> None:
    from apps.imports.tasks import import_job_run_task

    try:
        import_job_run_task.delay(job_id)
    except Exception:  # the broker is down: say so on the page instead of waiting forever
        logger.warning("could not queue import job %s", job_id, exc_info=True)
        _finish_failed(
            ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.QUEUED),
            Sentence(
                gettext_noop(
                    "the import could not be queued (the task queue is unavailable); upload it "
                    "again"
                )
            ),
        )


def _finish_failed(jobs: Any, message: str | Sentence | None, **fields: Any) -> None:
    """Fail the jobs with `message`: in English, and as a sentence when it is one, for the page
    to show in its reader's language."""
    if isinstance(message, Sentence):
        fields["error_message"] = message.as_dict()
        message = message.english()
    paths = list(jobs.values_list("file_path", flat=True))
    jobs.update(
        status=ImportJob.Status.FAILED,
        stage=ImportJob.Stage.FINISHED,
        error=(message or "")[:2000],
        finished_at=timezone.now(),
        file_path="",
        **fields,
    )
    for path in paths:
        files.delete(path)


def _expired_before() -> Any:
    return timezone.now() - timedelta(seconds=settings.IMPORT_LEASE_SECONDS)


def _lost() -> Q:
    return Q(status=ImportJob.Status.RUNNING, heartbeat_at__lt=_expired_before())


def _stale_queued() -> Q:
    """Queued a lease ago and never taken: its message was lost (a broker restart that kept
    nothing, a worker killed before it acknowledged), or it waits behind other work."""
    expired = _expired_before()
    return Q(status=ImportJob.Status.QUEUED) & (
        Q(heartbeat_at__lt=expired) | Q(heartbeat_at__isnull=True, created_at__lt=expired)
    )


def _claim(job_id: int) -> Any:
    """Take the job: queued, or running with a lease its worker stopped renewing. Returns the
    run's start time (later writes are conditioned on it) or None when the job is not free."""
    free = ImportJob.objects.filter(pk=job_id).filter(Q(status=ImportJob.Status.QUEUED) | _lost())
    _finish_failed(
        free.filter(attempts__gte=settings.IMPORT_MAX_ATTEMPTS),
        Sentence(
            gettext_noop(
                "the import stopped without finishing (its worker was lost); nothing was "
                "imported — upload the file again"
            )
        ),
    )
    now = timezone.now()
    taken = free.filter(attempts__lt=settings.IMPORT_MAX_ATTEMPTS).update(
        status=ImportJob.Status.RUNNING,
        stage=ImportJob.Stage.READING,
        started_at=now,
        heartbeat_at=now,
        lines_read=0,
        attempts=F("attempts") + 1,
    )
    return now if taken else None


class _JobProgress:
    """Writes the run's progress to its job row (autocommit: the page sees it at once)."""

    def __init__(self, job: ImportJob, started_at: Any) -> None:
        self.jobs = ImportJob.objects.filter(
            pk=job.pk, status=ImportJob.Status.RUNNING, started_at=started_at
        )
        self.total = job.lines_total

    def lines_read(self, line: int) -> None:
        self.jobs.update(lines_read=min(line, self.total), heartbeat_at=timezone.now())

    def storing(self) -> None:
        self.jobs.update(
            stage=ImportJob.Stage.STORING, lines_read=self.total, heartbeat_at=timezone.now()
        )


def _summary(kind: str, summary: Any) -> dict[str, Any]:
    if kind == ImportKind.ITEMS:
        return {"created": summary.created, "unchanged": summary.unchanged, "held": summary.held}
    return {
        "created": dict(summary.created),
        "unchanged": summary.unchanged,
        "raters_created": summary.raters_created,
        "warnings": [warning.as_dict() for warning in summary.warnings],
    }


def _import(job: ImportJob, data: bytes, progress: _JobProgress) -> Any:
    if job.kind == ImportKind.ITEMS:
        from apps.studies.services import study_items_import

        return study_items_import(
            study=job.study,
            data=data,
            filename=job.filename,
            as_candidates=job.as_candidates,
            progress=progress,
        )
    from apps.judgments.services import study_judgments_import

    return study_judgments_import(
        study=job.study, data=data, filename=job.filename, progress=progress
    )


def import_job_run(*, job_id: int) -> ImportJob | None:
    """Run the job's import. Idempotent: a job already taken or finished is left alone."""
    started_at = _claim(job_id)
    if started_at is None:
        return ImportJob.objects.filter(pk=job_id).first()
    job = ImportJob.objects.select_related("study").get(pk=job_id)
    mine = ImportJob.objects.filter(
        pk=job_id, status=ImportJob.Status.RUNNING, started_at=started_at
    )
    try:
        data = files.read_bytes(job.file_path)
        summary = _import(job, data, _JobProgress(job, started_at))
    except ImportRejected as exc:
        errors = [error.stored() for error in exc.errors[: settings.IMPORT_MAX_STORED_ERRORS]]
        _finish_failed(
            mine, exc.sentence or exc.message, errors=errors, error_count=len(exc.errors)
        )
    except DomainError as exc:
        _finish_failed(mine, exc.sentence or exc.message)
    except FileNotFoundError:
        _finish_failed(
            mine,
            Sentence(gettext_noop("the uploaded file is no longer on the server; upload it again")),
        )
    except Exception as exc:
        logger.exception("import job %s failed", job_id)
        _finish_failed(
            mine,
            Sentence(
                gettext_noop("the import failed and stored nothing (%(error)s)"),
                {"error": f"{type(exc).__name__}: {exc}"},
            ),
        )
    else:
        path = job.file_path
        mine.update(
            status=ImportJob.Status.DONE,
            stage=ImportJob.Stage.FINISHED,
            lines_read=job.lines_total,
            summary=_summary(job.kind, summary),
            finished_at=timezone.now(),
            file_path="",
        )
        files.delete(path)
    job.refresh_from_db()
    return job


def import_job_lease_held(*, job_id: int) -> bool:
    """Whether another run holds the job now (a redelivered task then tries again later)."""
    return (
        ImportJob.objects.filter(pk=job_id, status=ImportJob.Status.RUNNING)
        .exclude(_lost())
        .exists()
    )


def import_sweep() -> list[int]:
    """Periodic: a job whose worker died, or whose queue message was lost, is queued again
    (a run past IMPORT_MAX_ATTEMPTS then fails it with a message). Returns the ids queued.

    Queueing a job that is in fact still waiting its turn is harmless: a run takes a job only
    by a conditional update, so the second message finds it taken and leaves it."""
    ids = list(ImportJob.objects.filter(_lost() | _stale_queued()).values_list("pk", flat=True))
    queued = []
    for job_id in ids:
        # Conditional: a run that reported progress meanwhile keeps its job.
        if (
            ImportJob.objects.filter(pk=job_id)
            .filter(_lost() | _stale_queued())
            .update(
                status=ImportJob.Status.QUEUED,
                stage=ImportJob.Stage.WAITING,
                heartbeat_at=timezone.now(),
            )
        ):
            logger.warning(
                "import job %s lost its worker or its message; queueing it again", job_id
            )
            _enqueue(job_id)
            queued.append(job_id)
    return queued
