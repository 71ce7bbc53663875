"""The generation part of the researcher API (/api/v1/studies/<slug>/...): prompt sets, models
and runs. Thin, like the rest of the API: input serializer, one service or selector, output."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.serializers import ImportErrorOut
from apps.api.views import _READ, _SLUG, _WRITE, ResearcherApi, _checked, _errors, _json_records
from apps.generation import selectors
from apps.generation import serializers as s
from apps.generation.services import (
    endpoint_save,
    generation_run_cancel,
    generation_run_resume,
    generation_run_start,
    prompt_set_import_records,
)

_ID = OpenApiParameter(
    "set_id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH, description="Set id."
)
_RUN = OpenApiParameter(
    "run_id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH, description="Run id."
)


class PromptSetsApi(ResearcherApi):
    @extend_schema(
        operation_id="generation_prompt_sets_list",
        summary="The study's prompt sets",
        parameters=[_SLUG],
        responses={200: s.PromptSetOut(many=True), **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        sets = selectors.prompt_sets_list(study=self.study(request, slug))
        return Response(s.PromptSetOut(sets, many=True).data)

    @extend_schema(
        operation_id="generation_prompt_sets_import",
        summary="Import prompts into a set (created if new): all or nothing",
        description="Any bad prompt rejects the whole import: 400 with `errors: [{line, field, "
        "message}]`, line = position in `prompts`.",
        parameters=[_SLUG],
        request=s.PromptSetIn,
        responses={
            201: s.PromptImportOut,
            200: s.PromptImportOut,
            400: OpenApiResponse(ImportErrorOut, description="Nothing was imported."),
            **_errors(401, 403, 404, 409, 415),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = s.PromptSetIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        summary = prompt_set_import_records(
            study=study,
            name=values["name"],
            humor_type=values.get("humor_type", ""),
            description=values.get("description", ""),
            records=_checked(_json_records(values["prompts"])),
        )
        body = s.PromptImportOut(
            {
                "prompt_set": summary.prompt_set,
                "created": summary.created,
                "unchanged": summary.unchanged,
            }
        ).data
        return Response(body, status=status.HTTP_201_CREATED if summary.created else 200)


class PromptSetApi(ResearcherApi):
    @extend_schema(
        operation_id="generation_prompt_sets_retrieve",
        summary="A prompt set with its prompts",
        parameters=[_SLUG, _ID],
        responses={200: s.PromptSetDetailOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str, set_id: int) -> Response:
        found = selectors.prompt_set_get(study=self.study(request, slug), prompt_set_id=set_id)
        return Response(s.PromptSetDetailOut(found).data)


class EndpointsApi(ResearcherApi):
    @extend_schema(
        operation_id="generation_models_list",
        summary="The models the study's runs can ask",
        parameters=[_SLUG],
        responses={200: s.EndpointOut(many=True), **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        endpoints = selectors.endpoints_list(study=self.study(request, slug))
        return Response(s.EndpointOut(endpoints, many=True).data)

    @extend_schema(
        operation_id="generation_models_create",
        summary="Add a model: a chat-completions endpoint, or the worker's local model",
        parameters=[_SLUG],
        request=s.EndpointIn,
        responses={201: s.EndpointOut, **_errors(*_WRITE), 409: _errors(409)[409]},
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = s.EndpointIn(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = endpoint_save(study=study, values=dict(data.validated_data))
        return Response(s.EndpointOut(endpoint).data, status=status.HTTP_201_CREATED)


class RunsApi(ResearcherApi):
    @extend_schema(
        operation_id="generation_runs_list",
        summary="The study's generation runs, newest first, with progress per model",
        parameters=[_SLUG],
        responses={200: s.RunOut(many=True), **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        runs = selectors.runs_list(study=self.study(request, slug))[:100]
        return Response(s.RunOut(runs, many=True).data)

    @extend_schema(
        operation_id="generation_runs_start",
        summary="Start a run: every model, every prompt of the sets, N samples each",
        parameters=[_SLUG],
        request=s.RunIn,
        responses={201: s.RunOut, **_errors(*_WRITE)},
    )
    def post(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = s.RunIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        run = generation_run_start(
            study=study,
            prompt_set_ids=values.pop("prompt_sets"),
            endpoint_ids=values.pop("models"),
            user=request.user,
            **values,
        )
        return Response(s.RunOut(run).data, status=status.HTTP_201_CREATED)


class RunApi(ResearcherApi):
    @extend_schema(
        operation_id="generation_runs_retrieve",
        summary="A run with its progress and errors per model",
        parameters=[_SLUG, _RUN],
        responses={200: s.RunOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str, run_id: int) -> Response:
        run = selectors.run_get(study=self.study(request, slug), run_id=run_id)
        return Response(s.RunOut(run).data)


class RunCancelApi(ResearcherApi):
    @extend_schema(
        operation_id="generation_runs_cancel",
        summary="Cancel a running run; what it generated is kept",
        parameters=[_SLUG, _RUN],
        request=None,
        responses={200: s.RunOut, **_errors(401, 403, 404), 409: _errors(409)[409]},
    )
    def post(self, request: Request, slug: str, run_id: int) -> Response:
        run = selectors.run_get(study=self.study(request, slug), run_id=run_id)
        return Response(s.RunOut(generation_run_cancel(run=run)).data)


class RunResumeApi(ResearcherApi):
    @extend_schema(
        operation_id="generation_runs_resume",
        summary="Resume a run: waiting and failed outputs only, never a generated one again",
        parameters=[_SLUG, _RUN],
        request=s.ResumeIn,
        responses={200: s.RunOut, **_errors(*_WRITE), 409: _errors(409)[409]},
    )
    def post(self, request: Request, slug: str, run_id: int) -> Response:
        run = selectors.run_get(study=self.study(request, slug), run_id=run_id)
        data = s.ResumeIn(data=request.data)
        data.is_valid(raise_exception=True)
        resumed = generation_run_resume(run=run, api_key=data.validated_data["api_key"])
        return Response(s.RunOut(resumed).data)
