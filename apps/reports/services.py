"""Exports: building each format from a study's stored results or raw judgments, and the jobs
that build the large ones in the background.

A file is written next to its final name and renamed into place when complete, so a reader (the
download view, a researcher's script) never sees half a file, and a failed export leaves none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.analysis.exports import result_document
from apps.analysis.selectors import study_input_hashes, study_result_get
from apps.content.selectors import content_evaluation_get
from apps.core import files
from apps.core.errors import Conflict, DomainError, NotFound
from apps.core.versions import software_versions
from apps.exclusions.evidence import rater_quality
from apps.raters.models import BackgroundGroup
from apps.reports import sections, writers
from apps.reports.models import ExportFormat, ExportJob, ExportLanguage
from apps.reports.selectors import RAW_COLUMNS, raw_judgment_count, raw_judgment_rows
from apps.reports.stored_tables import (
    BUILDERS,
    content_tables,
    screening_tables,
    stored_provenance_rows,
)
from apps.reports.tables import (
    CONTENT_TABLE_NAMES,
    PROVENANCE,
    SCREENING_TABLE_NAMES,
    SELECTABLE_TABLES,
    Table,
    provenance_table,
    result_table,
    result_tables,
)
from apps.screening.models import ScreeningOutcome
from apps.screening.scoring import prior_available
from apps.screening.selectors import (
    calibration_default,
    calibrations_current,
    judge_comparisons,
    screening_run_latest,
    screening_tiers_of,
    sieve_audit_of,
)
from apps.studies.models import Item, Study
from apps.studies.scales import step_text
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
# Formats whose words are in the export's language (the tables' labels and warnings, the
# report); the raw judgments and the results JSON hold codes and numbers only.
TRANSLATED_FORMATS = frozenset(
    {ExportFormat.TABLES, ExportFormat.XLSX, ExportFormat.REPORT_HTML, ExportFormat.REPORT_PDF}
)
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


def export_language_parse(value: str | None) -> ExportLanguage:
    """A report language by its code; None or "" is the reader's interface language."""
    if not value:
        current = (translation.get_language() or "en").lower()
        return ExportLanguage.ZH_HANS if current.startswith("zh") else ExportLanguage.EN
    try:
        return ExportLanguage(value.lower())
    except ValueError:
        choices = ", ".join(choice.value for choice in ExportLanguage)
        raise DomainError(
            f"unknown report language {value!r}; choose one of: {choices}", field="language"
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
    """Every results table, the content evaluation's and the pre-screening's (read through their
    selectors, as the report reads them), then provenance (the last sheet of the workbook, a CSV
    in the zip)."""
    document = document if document is not None else study_result_document(study=study)
    content, screening = _content_evaluation(study), _screening(study)
    return [
        *result_tables(document, _question_order(study)),
        *content_tables(content),
        *screening_tables(screening),
        _provenance(study, document, content, screening),
    ]


def _provenance(
    study: Study,
    document: dict[str, Any],
    content: dict[str, Any] | None,
    screening: dict[str, Any] | None,
) -> Table:
    more = stored_provenance_rows(content=content, screening=screening)
    return provenance_table(document, study=study.slug, more=more)


def study_table_csv(*, study: Study, name: str) -> str:
    name = export_table_parse(name)
    # The stored records' tables need no results document, only their own record.
    if name in CONTENT_TABLE_NAMES:
        return writers.table_csv(BUILDERS[name](_content_evaluation(study)))
    if name in SCREENING_TABLE_NAMES:
        return writers.table_csv(BUILDERS[name](_screening(study)))
    document = study_result_document(study=study)
    if name == PROVENANCE:
        return writers.table_csv(
            _provenance(study, document, _content_evaluation(study), _screening(study))
        )
    return writers.table_csv(result_table(document, name, _question_order(study)))


def _anchors(anchors: Any) -> tuple[tuple[int, str], ...]:
    """A question's anchors ({"en": {"1": "..."}, "zh": {...}}) in the reader's language."""
    if not isinstance(anchors, dict):
        return ()
    chosen = anchors.get(labels.language_key()) or anchors.get("en") or {}
    if not isinstance(chosen, dict):
        return ()
    points = []
    for point, text in chosen.items():
        with contextlib.suppress(TypeError, ValueError):
            points.append((int(point), str(text)))
    return tuple(sorted(points))


def _rater_counts(study: Study) -> sections.RaterCounts:
    quality = rater_quality(study=study)
    return sections.RaterCounts(
        raters=len(quality),
        attention_failures=sum(1 for q in quality if q.attention_failed),
        speeders=sum(1 for q in quality if q.speeder),
        straight_liners=sum(1 for q in quality if q.straight_liner),
        speeder_seconds=float(study.exclusion_speeder_seconds),
        straight_line_run=study.exclusion_straight_line_tasks,
    )


def _content_evaluation(study: Study) -> dict[str, Any] | None:
    evaluation = content_evaluation_get(study=study)
    if evaluation is None:
        return None
    return {
        "payload": evaluation.payload,
        "seed": evaluation.seed,
        "rounds": evaluation.rounds,
        "input_hash": evaluation.input_hash,
        "computed_at": evaluation.computed_at.isoformat(timespec="seconds"),
    }


def _default_scorer(study: Study) -> dict[str, Any]:
    """What scores items no applied fit covers: the prior (with its measured quality) or the
    documented FunnyScore coefficients."""
    default = calibration_default(study=study)
    prior, _unavailable = prior_available()
    found: dict[str, Any] = {"kind": default.kind}
    if prior is not None and default.kind == "prior":
        found.update(
            prior=prior.version,
            trained_on=prior.trained_on,
            n_holdout=prior.n_holdout,
            quality=prior.quality,
            measured_languages=list(prior.measured_languages),
        )
    return found


def _screening(study: Study) -> dict[str, Any] | None:
    """The screening records the study's pages show, as plain values (None without any)."""
    run = screening_run_latest(study=study)
    stages: list[dict[str, Any]] = []
    if run is not None:
        counts = {
            (stage, kept): n
            for stage, kept, n in ScreeningOutcome.objects.filter(run=run)
            .values_list("stage", "kept")
            .annotate(n=Count("pk"))
            .values_list("stage", "kept", "n")
        }
        for stage, label in ScreeningOutcome.Stage.choices:
            kept, dropped = counts.get((stage, True), 0), counts.get((stage, False), 0)
            if kept or dropped:
                stages.append({"stage": stage, "label": label, "kept": kept, "dropped": dropped})
    tiers = screening_tiers_of(study=study)
    found = {
        "run": None
        if run is None
        else {
            "pk": run.pk,
            "status": run.get_status_display(),
            "status_code": run.status,
            "top_k": run.top_k,
            "l1_keep": run.l1_keep,
            "l1_min_score": run.l1_min_score,
            "judge_model": run.judge_model,
            "judge_min": run.judge_min,
            "rerun_of": run.rerun_of_id,
            "created_at": run.created_at.isoformat(timespec="minutes"),
            "started": run.created_at,
            "finished_at": run.finished_at,
        },
        "stages": stages,
        "calibrations": [
            {
                "scope": row.scope,
                "kind": row.kind,
                "is_default": row.is_default,
                "applicable": row.applicable,
                "applied": row.applied,
                "not_applicable_reason": row.not_applicable_reason,
                "n_items": row.n_items,
                "cv_spearman": row.cv_spearman,
                "cv_spearman_low": row.cv_spearman_low,
                "cv_spearman_high": row.cv_spearman_high,
                "r2": row.r2,
                "a": row.a,
                "b": row.b,
                "c": row.c,
                "intercept": row.intercept,
                "intervals": row.intervals,
                # The repeated cross-validation's figures, without the per-item predictions.
                "validation": {
                    key: value for key, value in (row.validation or {}).items() if key != "held_out"
                },
                "data_hash": row.data_hash,
                "created_at": row.created_at,
            }
            for row in calibrations_current(study=study)
        ],
        "comparisons": judge_comparisons(study=study),
        "tiers": (tiers.payload or {}).get("tiers") if tiers is not None else [],
        "tiers_record": None
        if tiers is None
        else {
            "question": (tiers.payload or {}).get("question"),
            "rated_items": (tiers.payload or {}).get("rated_items"),
            "seed": tiers.seed,
            "rounds": tiers.rounds,
            "computed_at": tiers.computed_at,
        },
        "held": Item.objects.filter(study=study, stage=Item.Stage.HELD).count(),
        "audit": sieve_audit_of(study=study),
        "default_scorer": _default_scorer(study),
    }
    if run is None and not (found["calibrations"] or found["comparisons"] or found["tiers"]):
        return None
    return found


def _report_study(study: Study, document: dict[str, Any]) -> writers.ReportStudy:
    questions = [
        writers.ReportQuestion(
            name=q.name,
            kind=q.kind,
            min_value=q.min_value,
            max_value=q.max_value,
            prompt=labels.localized(q.prompt, ""),
            answered_after=tuple(other.name for other in q.answered_after.all()),
            anchors=_anchors(q.anchors),
            choices=tuple(
                labels.localized(choice, str(i)) for i, choice in enumerate(q.choices or [])
            ),
            required=q.required,
            step=step_text(q.step) if q.step is not None else "",
            not_understood=q.allow_not_understood,
        )
        for q in study_questions(study=study)
    ]
    groups = [
        (group.code, labels.localized(group.label, group.code))
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
        primary_question=study.rubric.primary_question,
        reproducibility=_reproducibility(study),
        rater_counts=_rater_counts(study),
        content_evaluation=_content_evaluation(study),
        screening=_screening(study),
    )


def _reproducibility(study: Study) -> sections.Reproducibility:
    """The study's data hashed now, the way aggregation hashed them: the report says whether
    its numbers are of the data as they are."""
    hashes = study_input_hashes(study=study)
    return sections.Reproducibility(
        input_hash_now=hashes.input,
        exclusion_hash_now=hashes.exclusions,
        software_now=software_versions(),
    )


def study_report_html(
    *, study: Study, document: dict[str, Any] | None = None, language: str | None = None
) -> str:
    """The printable report, in `language` (a code of ExportLanguage) or the active one."""
    if language is not None:
        with translation.override(export_language_parse(language)):
            return study_report_html(study=study, document=document)
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


def _enqueue(job_id: int) -> None:
    from apps.reports.tasks import export_job_run_task

    ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
        heartbeat_at=timezone.now()
    )
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
    *,
    study: Study,
    user: AbstractBaseUser | AnonymousUser | None,
    fmt: str,
    language: str | None = None,
) -> ExportJob:
    """Queue an export; it starts after this transaction commits. Refused requests store nothing.

    `language` (en, zh-hans) is the report's and the tables' labels'; by default the
    requester's interface language."""
    export_format = export_format_parse(fmt)
    export_language = export_language_parse(language)
    if export_format != ExportFormat.RAW:
        try:
            study_result_get(study=study)
        except NotFound as exc:
            raise Conflict(exc.message, field="format") from None
    requested_by = user.pk if user is not None and user.is_authenticated else None
    job = ExportJob.objects.create(
        study=study, requested_by_id=requested_by, format=export_format, language=export_language
    )
    transaction.on_commit(lambda: _enqueue(job.pk))
    return job


def _lease_expired_before() -> Any:
    return timezone.now() - timedelta(seconds=settings.EXPORT_LEASE_SECONDS)


def _lost(expired: Any) -> Q:
    """Running jobs whose lease expired (a job from before leases: by its start time)."""
    return Q(status=ExportJob.Status.RUNNING) & (
        Q(heartbeat_at__lt=expired) | Q(heartbeat_at__isnull=True, started_at__lt=expired)
    )


def _claim(job_id: int) -> Any:
    """Take the job for this run: queued, or running with an expired lease (its worker died).

    Returns the run's start time, which the run's later writes are conditioned on (a run that
    lost its lease to another cannot overwrite that one's result), or None if the job is not
    free. A job done or failed is never run again; one past its attempts fails instead."""
    now = timezone.now()
    free = Q(status=ExportJob.Status.QUEUED) | _lost(_lease_expired_before())
    _fail_exhausted(ExportJob.objects.filter(pk=job_id).filter(free))
    taken = (
        ExportJob.objects.filter(pk=job_id, attempts__lt=settings.EXPORT_MAX_ATTEMPTS)
        .filter(free)
        .update(
            status=ExportJob.Status.RUNNING,
            started_at=now,
            heartbeat_at=now,
            attempts=F("attempts") + 1,
            progress=1,
            error="",
        )
    )
    return now if taken else None


def _exhausted_message() -> str:
    return _(
        "the export stopped %(attempts)s times without finishing (its worker was lost); "
        "start it again, and if it fails again ask an administrator to check the workers"
    ) % {"attempts": settings.EXPORT_MAX_ATTEMPTS}


def _fail_exhausted(jobs: Any) -> int:
    """Fail the jobs of `jobs` that have used up their attempts, with a message saying why."""
    return int(
        jobs.filter(attempts__gte=settings.EXPORT_MAX_ATTEMPTS)
        .exclude(status__in=[ExportJob.Status.DONE, ExportJob.Status.FAILED])
        .update(
            status=ExportJob.Status.FAILED, error=_exhausted_message(), finished_at=timezone.now()
        )
    )


class _Lease:
    """Renews the job's lease from a thread while the run works, so a long step (a large PDF)
    is never mistaken for a dead worker, and writes the run's progress; stops with the run.

    Progress goes through this thread's own connection, never the run's: the run streams rows
    on its connection, and on SQLite a connection whose read snapshot is older than another's
    commit is refused any write at once ("database is locked", whatever the busy timeout), so
    under rater load a progress write there failed the whole export. Here each write is a
    short transaction of its own that waits its turn."""

    def __init__(self, job_id: int, started_at: Any) -> None:
        self.job_id = job_id
        self.started_at = started_at
        self._stop = threading.Event()
        # Set by report(): the thread writes a new figure at once, not on its next renewal.
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"export-{job_id}", daemon=True)
        self._percent = 0
        self._written = 0

    def report(self, percent: int) -> None:
        """The run's progress (0-99); written by the thread, or at once without one."""
        percent = max(0, min(99, int(percent)))
        if percent <= self._percent:
            return
        self._percent = percent
        if self._thread.is_alive():
            self._wake.set()
        else:
            self._write_progress()

    def _write_progress(self) -> None:
        percent = self._percent
        if percent > self._written:
            # Only ever raised, by a conditional UPDATE: a late report cannot lower the bar.
            ExportJob.objects.filter(
                pk=self.job_id, started_at=self.started_at, progress__lt=percent
            ).update(progress=percent, heartbeat_at=timezone.now())
            self._written = percent

    def _renew(self) -> None:
        from django.db import connection

        interval = max(0.5, settings.EXPORT_LEASE_SECONDS / 4)
        renewed = time.monotonic()
        try:
            while not self._stop.is_set():
                self._wake.wait(max(0.0, interval - (time.monotonic() - renewed)))
                self._wake.clear()
                if self._stop.is_set():
                    return
                try:
                    self._write_progress()
                    if time.monotonic() - renewed >= interval:
                        ExportJob.objects.filter(
                            pk=self.job_id,
                            status=ExportJob.Status.RUNNING,
                            started_at=self.started_at,
                        ).update(heartbeat_at=timezone.now())
                        renewed = time.monotonic()
                except Exception:  # the run reports failures; a missed write risks a retry only
                    logger.warning(
                        "could not renew the lease of export %s", self.job_id, exc_info=True
                    )
        finally:
            connection.close()

    def __enter__(self) -> _Lease:
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)


def export_job_run(*, job_id: int) -> ExportJob | None:
    """Build the job's file. Idempotent: a job already taken or finished is left alone."""
    started_at = _claim(job_id)
    if started_at is None:
        return ExportJob.objects.filter(pk=job_id).first()
    job = ExportJob.objects.select_related("study").get(pk=job_id)
    name = f"{EXPORTS_DIR}/{job.study.slug}/{job.pk}-{FILE_NAMES[job.format]}"
    mine = ExportJob.objects.filter(
        pk=job_id, status=ExportJob.Status.RUNNING, started_at=started_at
    )
    stored = ""
    try:
        # Built in a scratch folder of this worker, then stored: the file storage (a local
        # folder or an object store) is where every web server finds it.
        with (
            tempfile.TemporaryDirectory(prefix="laughlab-export-") as scratch,
            _Lease(job_id, started_at) as lease,
            translation.override(job.language),
        ):
            built = Path(scratch) / FILE_NAMES[job.format]
            size = export_write(study=job.study, fmt=job.format, path=built, progress=lease.report)
            # A run that lost its lease while building stores nothing over the new run's file.
            if mine.exists():
                stored = files.save_path(name, built)
    except Exception as exc:
        logger.exception("export job %s failed", job_id)
        message = exc.message if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}"
        mine.update(
            status=ExportJob.Status.FAILED, error=message[:2000], finished_at=timezone.now()
        )
    else:
        mine.update(
            status=ExportJob.Status.DONE,
            progress=100,
            file_path=stored,
            size=size,
            finished_at=timezone.now(),
        )
    job.refresh_from_db()
    return job


def export_job_lease_held(*, job_id: int) -> bool:
    """Whether another run holds the job's lease now (the task then tries again later)."""
    return (
        ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.RUNNING)
        .exclude(_lost(_lease_expired_before()))
        .exists()
    )


def export_sweep() -> list[int]:
    """Periodic: jobs whose worker died are queued again (or failed past their attempts), and
    queued jobs whose message was lost are queued again. Returns the ids queued."""
    expired = _lease_expired_before()
    _fail_exhausted(ExportJob.objects.filter(_lost(expired)))
    stale_queued = Q(status=ExportJob.Status.QUEUED) & (
        Q(heartbeat_at__lt=expired) | Q(heartbeat_at__isnull=True, created_at__lt=expired)
    )
    ids = list(ExportJob.objects.filter(_lost(expired) | stale_queued).values_list("pk", flat=True))
    queued = []
    for job_id in ids:
        # Conditional: a run that renewed its lease meanwhile keeps its job.
        if (
            ExportJob.objects.filter(pk=job_id)
            .filter(_lost(expired) | stale_queued)
            .update(status=ExportJob.Status.QUEUED, heartbeat_at=timezone.now(), progress=0)
        ):
            logger.warning(
                "export job %s lost its worker or its message; queueing it again", job_id
            )
            _enqueue(job_id)
            queued.append(job_id)
    return queued


def export_job_file(*, job: ExportJob) -> IO[bytes]:
    """The finished job's file from the file storage, open for reading: 409 while it is being
    built, 404 if it is gone."""
    if job.status != ExportJob.Status.DONE:
        raise Conflict(
            f"export {job.pk} is {job.get_status_display().lower()}, not ready for download",
            field="job",
        )
    if not job.file_path.startswith(f"{EXPORTS_DIR}/"):
        raise NotFound(f"the file of export {job.pk} no longer exists", field="job")
    try:
        return files.open_read(job.file_path)
    except FileNotFoundError:
        raise NotFound(f"the file of export {job.pk} no longer exists", field="job") from None


def export_file_name(*, study: Study, kind: str, extension: str, language: str = "") -> str:
    """A downloaded file's name: the study, the kind of file and, for a file whose words are in
    a language, that language (`demo-report-zh-hans.pdf`, `demo-raw-judgments.csv`), so the
    files of one study, in either language, can sit in one folder."""
    return "-".join(part for part in (study.slug, kind, language) if part) + f".{extension}"


def export_download_name(*, job: ExportJob) -> str:
    kind, extension = FILE_NAMES[job.format].rsplit(".", 1)
    language = job.language if job.format in TRANSLATED_FORMATS else ""
    return export_file_name(study=job.study, kind=kind, extension=extension, language=language)
