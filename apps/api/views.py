"""The researcher API, version 1 (token or session auth). Thin: an input serializer, the service
or selector that does the work, an output serializer.

Every study is looked up through `ResearcherApi.study` (`study_get_for_request`), so another
study's objects are 404 (never 403) and slugs leak nothing, and a token limited to some studies
finds no other. Errors are the project's one shape (apps/core/api.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.http import FileResponse, HttpRequest, HttpResponseBase, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from apps.accounts.models import ApiToken
from apps.accounts.selectors import studies_for_request, study_get_for_request
from apps.analysis.services import study_results_recompute
from apps.api import serializers as s
from apps.core.api import exception_handler as core_exception_handler
from apps.core.errors import DomainError, LineError, NotFound
from apps.core.lines import Record, read_records
from apps.core.parsers import SafeJSONParser
from apps.core.serializers import ErrorOut
from apps.dashboard.selectors import study_progress
from apps.exclusions.selectors import exclusions_list
from apps.exclusions.services import exclusion_create, exclusion_undo
from apps.imports.models import ImportJob, ImportKind
from apps.imports.selectors import import_job_get
from apps.imports.services import PayloadTooLarge, import_job_create, import_upload_check
from apps.judgments.importing import JUDGMENT_JSON_COLUMNS
from apps.judgments.services import study_judgments_import_records
from apps.raters.prolific import prolific_bonuses, prolific_returns_mark
from apps.reports import services as reports
from apps.reports.models import ExportFormat
from apps.reports.selectors import export_job_get
from apps.studies.importing import ITEM_JSON_COLUMNS
from apps.studies.item_zip import is_zip
from apps.studies.models import Rubric, Study
from apps.studies.rubrics import rubric_spec
from apps.studies.selectors import study_items
from apps.studies.services import (
    study_create,
    study_items_import,
    study_items_import_records,
    study_settings_update,
    study_status_set,
)

# --- schema helpers ------------------------------------------------------------------------------

_ERROR_TEXT = {
    400: "Invalid input: `field` names the first bad field, `errors` lists them all.",
    401: "No credentials, or a bad token.",
    403: "CSRF check failed (session authentication only).",
    404: "No such study, or not one of yours (the two look the same).",
    409: "The request conflicts with the study's state.",
    413: "The upload is larger than the server accepts.",
    415: "Unsupported content type.",
}


def _errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: OpenApiResponse(ErrorOut, description=_ERROR_TEXT[code]) for code in codes}


_READ = (401, 404)
_WRITE = (400, 401, 403, 404, 415)
_SLUG = OpenApiParameter(
    "slug",
    {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"},
    OpenApiParameter.PATH,
    description="The study's short name.",
)
_EXCLUSION_ID = OpenApiParameter(
    "exclusion_id",
    {"type": "integer", "minimum": 0},
    OpenApiParameter.PATH,
    description="Exclusion id.",
)
_JOB_ID = OpenApiParameter(
    "job_id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH, description="Export id."
)
# Content types of the finished export files, by format.
DOWNLOAD_TYPES = {
    ExportFormat.RAW: "text/csv",
    ExportFormat.JSON: "application/json",
    ExportFormat.TABLES: "application/zip",
    ExportFormat.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ExportFormat.REPORT_HTML: "text/html",
    ExportFormat.REPORT_PDF: "application/pdf",
}


class Pagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 1000


class ResearcherApi(APIView):
    # Token or session authentication and IsAuthenticated come from REST_FRAMEWORK settings.
    # (A comment, not a docstring: the schema would show a docstring as every operation's text.)
    parser_classes = [SafeJSONParser]

    def study(self, request: Request, slug: str) -> Study:
        return study_get_for_request(user=request.user, auth=request.auth, slug=slug)

    def get_exception_handler(self) -> Callable[[Exception, dict[str, Any]], Response | None]:
        return _exception_handler


def _exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """The project's handler, with every message naming its field the way validation errors do
    (`session_minutes: ...`), so a script can show the message alone."""
    response = core_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict):
        field, message = response.data.get("field"), response.data.get("message")
        if field and isinstance(message, str) and not message.startswith(f"{field}: "):
            response.data["message"] = f"{field}: {message}"
    return response


def _page(view: APIView, request: Request, rows: Any, out: type[Serializer]) -> Any:
    paginator = Pagination()
    page: list[Any] | None = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(out(page, many=True, context={"request": request}).data)


@csrf_exempt  # it changes nothing, and must answer JSON whatever the method
def no_endpoint(request: HttpRequest) -> JsonResponse:
    """Paths under api/v1/ that name no endpoint (a malformed slug or id, a typo)."""
    message = f"no API endpoint at {request.path}"
    try:
        slashed = resolve(request.path_info + "/")
    except Resolver404:
        slashed = None
    if slashed is not None and slashed.func is not no_endpoint:
        message += f"; did you mean {request.path}/ ?"
    return JsonResponse({"code": "not_found", "message": message}, status=404)


# --- studies -------------------------------------------------------------------------------------


class StudiesApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_list",
        summary="The studies you own or are a member of (every study for an admin)",
        parameters=[
            OpenApiParameter("limit", OpenApiTypes.INT, description="Page size (max 1000)."),
            OpenApiParameter("offset", OpenApiTypes.INT),
        ],
        responses={200: s.StudyPageOut, **_errors(401)},
    )
    def get(self, request: Request) -> Response:
        studies = (
            studies_for_request(user=request.user, auth=request.auth)
            .select_related("rubric")
            .order_by("-created_at", "slug")
        )
        return _page(self, request, studies, s.StudySummaryOut)

    @extend_schema(
        operation_id="studies_create",
        summary="Create a draft study; you become its owner",
        request=s.StudyCreateIn,
        responses={201: s.StudyOut, **_errors(400, 401, 403, 415), 409: _errors(409)[409]},
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.auth, ApiToken) and request.auth.limited:
            raise PermissionDenied("this token is limited to some studies; it cannot create one")
        data = s.StudyCreateIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        rubric, spec = values.pop("rubric", None), values.pop("rubric_spec", None)
        if (rubric is None) == (spec is None):
            raise DomainError("give either rubric (a stored rubric) or rubric_spec", field="rubric")
        backgrounds = values.pop("backgrounds", None)
        study = study_create(
            slug=values.pop("slug"),
            rubric_slug=rubric.slug if rubric is not None else "",
            rubric_spec=spec,
            backgrounds=None
            if backgrounds is None
            else [(group["code"], group.get("labels") or {}) for group in backgrounds],
            owner=request.user if isinstance(request.user, User) else None,
            **values,
        )
        location = reverse("api:study", args=[study.slug], request=request)
        return Response(
            s.StudyOut(study).data, status=status.HTTP_201_CREATED, headers={"Location": location}
        )


class RubricApi(ResearcherApi):
    @extend_schema(
        operation_id="rubrics_retrieve",
        summary="A rubric as a spec: questions, scales, prompts, anchors and order; copy it, "
        "edit it and send it as rubric_spec under a new slug",
        responses={200: s.RubricOut, **_errors(401, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        rubric = Rubric.objects.filter(slug=slug).first()
        if rubric is None:
            raise NotFound(f"no rubric {slug!r}", field="rubric")
        return Response(rubric_spec(rubric))


class StudyApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_retrieve",
        summary="A study's settings, task mix and quotas",
        parameters=[_SLUG],
        responses={200: s.StudyOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(s.StudyOut(self.study(request, slug)).data)

    @extend_schema(
        operation_id="studies_configure",
        summary="Change settings, the task mix and quotas (all checked, then saved together)",
        parameters=[_SLUG],
        request=s.StudyConfigureIn,
        responses={200: s.StudyOut, **_errors(*_WRITE)},
    )
    def patch(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = s.StudyConfigureIn(data=request.data)
        data.is_valid(raise_exception=True)
        changes = dict(data.validated_data)
        quotas = changes.pop("quotas", None)
        try:
            study = study_settings_update(study=study, quotas=quotas, **changes)
        except DomainError as exc:
            _rename_quota_field(exc)
            raise
        return Response(s.StudyOut(study).data)


def _rename_quota_field(exc: DomainError) -> None:
    # The service names the settings page's form field (quota_<code>); say it the API's way.
    if exc.field and exc.field.startswith("quota_"):
        exc.field = f"quotas.{exc.field.removeprefix('quota_')}"


class _StatusApi(ResearcherApi):
    target: str

    def post(self, request: Request, slug: str) -> Response:
        study = study_status_set(study=self.study(request, slug), status=self.target)
        return Response(s.StudyOut(study).data)


@extend_schema_view(
    post=extend_schema(
        operation_id="studies_open",
        summary="Open the study to raters (it needs items)",
        parameters=[_SLUG],
        request=None,
        responses={200: s.StudyOut, **_errors(400, 401, 403, 404)},
    )
)
class StudyOpenApi(_StatusApi):
    target = Study.Status.OPEN


@extend_schema_view(
    post=extend_schema(
        operation_id="studies_close",
        summary="Close the study (it can be reopened)",
        parameters=[_SLUG],
        request=None,
        responses={200: s.StudyOut, **_errors(401, 403, 404)},
    )
)
class StudyCloseApi(_StatusApi):
    target = Study.Status.CLOSED


# --- items ---------------------------------------------------------------------------------------


def _storable(value: Any) -> str | None:
    """Why a JSON value cannot be stored as text (PostgreSQL refuses NUL and lone surrogates)."""
    if isinstance(value, str):
        if "\x00" in value:
            return "contains a NUL character"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "contains an unpaired surrogate (not valid Unicode)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _storable(key) or _storable(item)
            if problem:
                return problem
    if isinstance(value, list):
        for item in value:
            problem = _storable(item)
            if problem:
                return problem
    return None


def _checked(records: Iterable[Record | LineError]) -> Iterator[Record | LineError]:
    for record in records:
        if isinstance(record, Record):
            for name, value in record.fields.items():
                problem = _storable(name) or _storable(value)
                if problem:
                    record = LineError(record.line, str(name)[:64], problem)
                    break
        yield record


def _json_records(items: list[Any], what: str = "(item)") -> Iterator[Record | LineError]:
    for line, value in enumerate(items, start=1):
        if isinstance(value, dict):
            yield Record(line, value)
        else:
            yield LineError(line, what, "must be a JSON object")


def _check_size(request: Request, field: str) -> None:
    # A file may be large (it becomes a background import); a JSON body is parsed in memory.
    multipart = request.content_type.startswith("multipart/")
    limit = settings.IMPORT_UPLOAD_MAX_BYTES if multipart else settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    # A multipart body carries its boundaries and headers around the file: allow for them here,
    # and hold the file itself to the limit below.
    if length > limit + 64 * 1024:
        raise PayloadTooLarge(f"the upload is larger than {limit} bytes", field=field)


_JOB_ACCEPTED = (
    "The file is larger than IMPORT_INLINE_MAX_BYTES: it is imported in the background. Poll "
    "`status_url` until `status` is `done` (summary, warnings) or `failed` (error, errors; "
    "nothing stored)."
)
_IMPORT_JOB_ID = OpenApiParameter(
    "job_id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH, description="Import id."
)


def _import_records(
    request: Request,
    study: Study,
    *,
    kind: str,
    file_in: type[serializers.Serializer],
    json_in: type[serializers.Serializer],
    field: str,
    json_columns: frozenset[str] = frozenset(),
) -> Response | Iterator[Record | LineError]:
    """The checked records of an import request (an uploaded .jsonl/.csv file or a JSON body
    `{field: [...]}`), or the 202 of the background job a file too large for the request
    became."""
    if not request.content_type.startswith("multipart/"):
        _check_size(request, field)
        data = json_in(data=request.data)
        data.is_valid(raise_exception=True)
        return _checked(_json_records(data.validated_data[field], f"({field[:-1]})"))
    file = _import_upload(request, study, kind=kind, file_in=file_in)
    if isinstance(file, Response):
        return file
    return _checked(read_records(file.read(), filename=file.name or "", json_columns=json_columns))


def _import_upload(
    request: Request, study: Study, *, kind: str, file_in: type[serializers.Serializer]
) -> Response | Any:
    """The checked file of a multipart import request, or the 202 of the background job it
    became when it is too large to import within the request."""
    _check_size(request, "file")
    upload = file_in(data=request.data)
    upload.is_valid(raise_exception=True)
    file = upload.validated_data["file"]
    import_upload_check(upload=file)
    if file.size > settings.IMPORT_INLINE_MAX_BYTES:
        return _job_accepted(request, study, kind=kind, upload=file)
    return file


def _job_accepted(request: Request, study: Study, *, kind: str, upload: Any) -> Response:
    job = import_job_create(study=study, user=request.user, kind=kind, upload=upload)
    job.refresh_from_db()  # run already when the task queue is eager
    location = reverse("api:import", args=[study.slug, job.pk], request=request)
    return Response(
        s.ImportJobOut(job, context={"request": request}).data,
        status=status.HTTP_202_ACCEPTED,
        headers={"Location": location},
    )


class StudyItemsApi(ResearcherApi):
    parser_classes = [SafeJSONParser, MultiPartParser]

    @extend_schema(
        operation_id="studies_items_list",
        summary="The study's items, by id",
        parameters=[
            _SLUG,
            OpenApiParameter("limit", OpenApiTypes.INT, description="Page size (max 1000)."),
            OpenApiParameter("offset", OpenApiTypes.INT),
        ],
        responses={200: s.ItemPageOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        return _page(self, request, study_items(study=self.study(request, slug)), s.ItemOut)

    @extend_schema(
        operation_id="studies_items_import",
        summary="Import items: all or nothing",
        description=(
            "A `multipart/form-data` upload of a .jsonl or .csv file (field `file`), or of a .zip "
            "of items.jsonl (or items.csv) and the pictures its `image_file` column names, or a JSON "
            'body `{"items": [...]}` of objects in the `import_items` format. Items already in '
            "the study with the same content count as unchanged. Any bad line rejects the "
            "whole import: 400 with `errors: [{line, field, message}]` (line = position in "
            "the list for a JSON body)."
        ),
        parameters=[_SLUG],
        request={"application/json": s.ItemsJsonIn, "multipart/form-data": s.ItemsFileIn},
        responses={
            201: OpenApiResponse(s.ImportSummaryOut, description="Some items were added."),
            202: OpenApiResponse(s.ImportJobOut, description=_JOB_ACCEPTED),
            200: OpenApiResponse(s.ImportSummaryOut, description="Every item was already there."),
            400: OpenApiResponse(s.ImportErrorOut, description="Nothing was imported."),
            **_errors(401, 403, 404, 409, 413, 415),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        if request.content_type.startswith("multipart/") and is_zip(
            getattr(request.FILES.get("file"), "name", "") or ""
        ):
            # Items with pictures: the zip holds the items file and the pictures it names, so it
            # is imported whole rather than read as records.
            file = _import_upload(request, study, kind=ImportKind.ITEMS, file_in=s.ItemsFileIn)
            if isinstance(file, Response):
                return file
            summary = study_items_import(study=study, data=file.read(), filename=file.name)
            return Response(
                s.ImportSummaryOut(summary).data,
                status=status.HTTP_201_CREATED if summary.created else status.HTTP_200_OK,
            )
        records = _import_records(
            request,
            study,
            kind=ImportKind.ITEMS,
            file_in=s.ItemsFileIn,
            json_in=s.ItemsJsonIn,
            field="items",
            json_columns=ITEM_JSON_COLUMNS,
        )
        if isinstance(records, Response):
            return records
        summary = study_items_import_records(study=study, records=records)
        return Response(
            s.ImportSummaryOut(summary).data,
            status=status.HTTP_201_CREATED if summary.created else status.HTTP_200_OK,
        )


# --- judgments and background imports ------------------------------------------------------------


class StudyJudgmentsApi(ResearcherApi):
    parser_classes = [SafeJSONParser, MultiPartParser]

    @extend_schema(
        operation_id="studies_judgments_import",
        summary="Import judgments collected elsewhere: all or nothing",
        description=(
            "A `multipart/form-data` upload of a .jsonl or .csv file (field `file`), or a JSON "
            'body `{"judgments": [...]}` of objects in the `import_judgments` format. '
            "Judgments already stored with the same content count as unchanged. Any bad line "
            "rejects the whole import: 400 with `errors: [{line, field, message}]`. The "
            "response carries the import's warnings (e.g. `positional_rater_ids`). Results are "
            "marked for recomputation, never computed by the import."
        ),
        parameters=[_SLUG],
        request={"application/json": s.JudgmentsJsonIn, "multipart/form-data": s.JudgmentsFileIn},
        responses={
            201: OpenApiResponse(s.JudgmentImportSummaryOut, description="Judgments added."),
            200: OpenApiResponse(
                s.JudgmentImportSummaryOut, description="Every judgment was already there."
            ),
            202: OpenApiResponse(s.ImportJobOut, description=_JOB_ACCEPTED),
            400: OpenApiResponse(s.ImportErrorOut, description="Nothing was imported."),
            **_errors(401, 403, 404, 409, 413, 415),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        records = _import_records(
            request,
            study,
            kind=ImportKind.JUDGMENTS,
            file_in=s.JudgmentsFileIn,
            json_in=s.JudgmentsJsonIn,
            field="judgments",
            json_columns=JUDGMENT_JSON_COLUMNS,
        )
        if isinstance(records, Response):
            return records
        summary = study_judgments_import_records(study=study, records=records)
        body = {
            "created": {kind: summary.created.get(kind, 0) for kind in ("score", "pair", "turing")},
            "unchanged": summary.unchanged,
            "raters_created": summary.raters_created,
            "warnings": [warning.as_dict() for warning in summary.warnings],
        }
        return Response(
            s.JudgmentImportSummaryOut(body).data,
            status=status.HTTP_201_CREATED if summary.total_created else status.HTTP_200_OK,
        )


class StudyImportApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_imports_retrieve",
        summary="A background import's state: lines read, percent, summary or errors",
        parameters=[_SLUG, _IMPORT_JOB_ID],
        responses={200: s.ImportJobOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str, job_id: int) -> Response:
        job: ImportJob = import_job_get(study=self.study(request, slug), job_id=job_id)
        return Response(s.ImportJobOut(job, context={"request": request}).data)


# --- progress and results ------------------------------------------------------------------------


class StudyProgressApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_progress",
        summary="Live progress: quotas, sessions, coverage targets and an estimate",
        parameters=[_SLUG],
        responses={200: s.ProgressOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        progress = study_progress(study=self.study(request, slug))
        coverage = progress["coverage"]
        # The per-item heat map is for the page; here only what it was measured against.
        progress["coverage"] = {
            "groups": coverage.groups,
            "per_group_target": coverage.per_group_target,
        }
        return Response(s.ProgressOut(progress).data)


class StudyResultsApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_results",
        summary="The stored results document (Bradley-Terry, agreement, items, groups, warnings)",
        parameters=[_SLUG],
        responses={
            200: s.ResultDocumentOut,
            **_errors(401),
            404: OpenApiResponse(
                ErrorOut, description="No such study, or its results are not computed yet."
            ),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        try:
            document = reports.study_result_document(study=study)
        except NotFound:
            raise NotFound(
                f"study {study.slug!r} has no computed results yet; POST "
                f"/api/v1/studies/{study.slug}/results/recompute/ and try again when it is done",
                field="results",
            ) from None
        # Passed through whole: the document is an interchange format of its own (DESIGN.md).
        return Response(document)


class StudyResultsRecomputeApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_results_recompute",
        summary="Queue a recomputation of the results from the raw judgments",
        parameters=[_SLUG],
        request=None,
        responses={202: s.RecomputeOut, **_errors(401, 403, 404)},
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        with transaction.atomic():
            study_results_recompute(study_id=study.pk)
        body = {
            "status": "queued",
            "message": "aggregation is queued; the results document's computed_at changes when done",
        }
        return Response(s.RecomputeOut(body).data, status=status.HTTP_202_ACCEPTED)


# --- exports -------------------------------------------------------------------------------------


class StudyExportsApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_exports_create",
        summary="Queue an export file; poll its status, then download it",
        description="Every format but `raw` is built from the stored results: 409 before they "
        "are computed.",
        parameters=[_SLUG],
        request=s.ExportCreateIn,
        responses={201: s.ExportJobOut, **_errors(*_WRITE), 409: _errors(409)[409]},
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = s.ExportCreateIn(data=request.data)
        data.is_valid(raise_exception=True)
        job = reports.export_job_create(
            study=study,
            user=request.user,
            fmt=data.validated_data["format"],
            language=data.validated_data.get("language"),
        )
        location = reverse("api:export", args=[study.slug, job.pk], request=request)
        return Response(
            s.ExportJobOut(job, context={"request": request}).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": location},
        )


class StudyExportApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_exports_retrieve",
        summary="An export's status and progress",
        parameters=[_SLUG, _JOB_ID],
        responses={200: s.ExportJobOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str, job_id: int) -> Response:
        job = export_job_get(study=self.study(request, slug), job_id=job_id)
        return Response(s.ExportJobOut(job, context={"request": request}).data)


class StudyExportDownloadApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_exports_download",
        summary="The finished export's file",
        parameters=[_SLUG, _JOB_ID],
        responses={
            **{
                (200, media): OpenApiResponse(OpenApiTypes.BINARY, description="The file.")
                for media in dict.fromkeys(DOWNLOAD_TYPES.values())
            },
            **_errors(*_READ),
            409: OpenApiResponse(ErrorOut, description="The export is queued, running or failed."),
        },
    )
    def get(self, request: Request, slug: str, job_id: int) -> HttpResponseBase:
        job = export_job_get(study=self.study(request, slug), job_id=job_id)
        stored = reports.export_job_file(job=job)
        content_type = DOWNLOAD_TYPES[ExportFormat(job.format)]
        if content_type.startswith("text/"):
            content_type += "; charset=utf-8"
        return FileResponse(
            stored,
            as_attachment=True,
            filename=reports.export_download_name(job=job),
            content_type=content_type,
        )

    def perform_content_negotiation(
        self, request: Request, force: bool = False
    ) -> tuple[BaseRenderer, str]:
        # Whatever the client accepts, a file is a file; errors are rendered as JSON.
        return super().perform_content_negotiation(request, force=True)


class StudyExclusionsApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_exclusions_list",
        summary="Every exclusion of the study, active and undone, newest first",
        parameters=[_SLUG],
        responses={200: s.ExclusionOut(many=True), **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        rows = exclusions_list(study=self.study(request, slug))
        return Response(s.ExclusionOut(rows, many=True).data)

    @extend_schema(
        operation_id="studies_exclusions_create",
        summary="Leave a rater, a judgment or an item out of the analysis (reason required)",
        description="Nothing is deleted: the results are recomputed without the data, and the "
        "raw export marks it. 409 when it is already excluded.",
        parameters=[_SLUG],
        request=s.ExclusionIn,
        responses={201: s.ExclusionOut, **_errors(*_WRITE), 409: _errors(409)[409]},
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = s.ExclusionIn(data=request.data)
        data.is_valid(raise_exception=True)
        exclusion = exclusion_create(study=study, user=request.user, **data.validated_data)
        return Response(s.ExclusionOut(exclusion).data, status=status.HTTP_201_CREATED)


# --- Prolific ------------------------------------------------------------------------------------


class StudyProlificReturnsApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_prolific_returns",
        summary="Mark Prolific submissions returned: their sessions end, their places go back",
        description="All or nothing: an id that is not a Prolific participant of the study, or "
        "one who completed it, refuses the list (400, every bad entry listed by its position "
        "from 1) and changes nothing. Ids already ended are counted in `already`.",
        parameters=[_SLUG],
        request=s.ProlificReturnsIn,
        responses={200: s.ProlificReturnsOut, **_errors(*_WRITE)},
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = s.ProlificReturnsIn(data=request.data)
        data.is_valid(raise_exception=True)
        ids = data.validated_data["participant_ids"]
        # Each id by its position in the list, as the errors name it.
        marked = prolific_returns_mark(study=study, ids=list(enumerate(ids, start=1)))
        return Response(s.ProlificReturnsOut(marked).data)


class StudyProlificBonusesApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_prolific_bonuses",
        summary="Each Prolific participant's bonus under the study's rules",
        description="The rows of the bulk-bonus file (the Prolific page downloads it as "
        "`participant id,amount` lines); participants whose bonus is zero are left out.",
        parameters=[_SLUG],
        responses={200: s.ProlificBonusOut(many=True), **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        bonuses = prolific_bonuses(study=self.study(request, slug))
        return Response(s.ProlificBonusOut(bonuses, many=True).data)


class StudyExclusionUndoApi(ResearcherApi):
    @extend_schema(
        operation_id="studies_exclusions_undo",
        summary="Undo an exclusion; it stays in the history, marked undone",
        parameters=[_SLUG, _EXCLUSION_ID],
        request=s.ExclusionUndoIn,
        responses={200: s.ExclusionOut, **_errors(*_WRITE), 409: _errors(409)[409]},
    )
    def post(self, request: Request, slug: str, exclusion_id: int) -> Response:
        study = self.study(request, slug)
        data = s.ExclusionUndoIn(data=request.data)
        data.is_valid(raise_exception=True)
        exclusion = exclusion_undo(
            study=study,
            user=request.user,
            exclusion_id=exclusion_id,
            reason=data.validated_data["reason"],
        )
        return Response(s.ExclusionOut(exclusion).data)
