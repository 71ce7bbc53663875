"""The LLM judge's set-up in the researcher API (/api/v1/studies/<slug>/judge/): the judge in
force for the study, the study's own judge saved, or the study put back on the server's judge.
Thin, like the rest of the API. No field carries an API key, in or out: keys are only ever in the
server's settings (apps.screening.llm_judge.settings_api_key)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.api.serializers import StrictSerializer
from apps.api.views import _READ, _SLUG, _WRITE, ResearcherApi, _errors
from apps.screening.llm_judge import ConfigSource, JudgeConfig, judge_config
from apps.screening.models import StudyJudgeConfig
from apps.screening.services.judge import judge_config_reset, judge_config_save


class JudgeConfigIn(StrictSerializer):
    url = serializers.CharField(
        max_length=500,
        help_text="An OpenAI-compatible chat-completions endpoint (/chat/completions is added to "
        "a base URL); http(s) only, and no private address unless the server allows it.",
    )
    model = serializers.CharField(max_length=200)
    timeout_seconds = serializers.FloatField(
        min_value=0.1, max_value=StudyJudgeConfig.MAX_TIMEOUT_SECONDS, default=30.0
    )
    parallelism = serializers.IntegerField(
        min_value=1,
        max_value=StudyJudgeConfig.MAX_PARALLELISM,
        default=1,
        help_text="Calls to the judge in flight at once for a run.",
    )


class JudgeConfigOut(serializers.Serializer):
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=[ConfigSource.STUDY, ConfigSource.ENVIRONMENT],
        help_text="`study`: the study's own judge; `environment`: the server's default.",
    )
    configured = serializers.BooleanField(source="is_configured")
    url = serializers.SerializerMethodField(
        help_text="The study's own judge's URL; null for the server's (only its host is shown)."
    )
    host = serializers.CharField()
    model = serializers.CharField()
    timeout_seconds = serializers.FloatField()
    parallelism = serializers.IntegerField()
    has_api_key = serializers.SerializerMethodField(
        help_text="Whether the server's settings hold a key for this URL (the key never leaves "
        "the server)."
    )

    def get_url(self, config: JudgeConfig) -> str | None:
        return config.url if config.source == ConfigSource.STUDY else None

    def get_has_api_key(self, config: JudgeConfig) -> bool:
        return bool(config.api_key)


class JudgeConfigApi(ResearcherApi):
    @extend_schema(
        operation_id="judge_config_retrieve",
        summary="The LLM judge in force for the study: its own, or the server's default",
        parameters=[_SLUG],
        responses={200: JudgeConfigOut, **_errors(*_READ)},
    )
    def get(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        return Response(JudgeConfigOut(judge_config(study=study)).data)

    @extend_schema(
        operation_id="judge_config_update",
        summary="Give the study its own LLM judge (URL, model, timeout, parallelism; never a key)",
        parameters=[_SLUG],
        request=JudgeConfigIn,
        responses={200: JudgeConfigOut, **_errors(*_WRITE)},
    )
    def put(self, request: Request, slug: str) -> Response:
        study = self.study(request, slug)
        data = JudgeConfigIn(data=request.data)
        data.is_valid(raise_exception=True)
        judge_config_save(study=study, **data.validated_data)
        return Response(JudgeConfigOut(judge_config(study=study)).data)

    @extend_schema(
        operation_id="judge_config_reset",
        summary="Put the study back on the server's LLM judge",
        parameters=[_SLUG],
        request=None,
        responses={
            204: OpenApiResponse(description="The study uses the server's judge."),
            **_errors(401, 403, 404),
        },
    )
    def delete(self, request: Request, slug: str) -> Response:
        judge_config_reset(study=self.study(request, slug))
        return Response(status=status.HTTP_204_NO_CONTENT)
