"""Serializers of the generation API: shapes and types only; the services check the rules.
No output serializer has a field for an API key."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.api.serializers import StrictSerializer
from apps.generation.models import GenerationRun, ModelEndpoint, Prompt, PromptSet
from apps.generation.selectors import ModelProgress


class PromptOut(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")
    lang = serializers.CharField(source="language")
    prompt = serializers.CharField(source="text")
    context = serializers.ListField(  # type: ignore[assignment]
        child=serializers.DictField(child=serializers.CharField())
    )
    constraints = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = Prompt
        fields = [
            "id",
            "level",
            "lang",
            "topic",
            "prompt",
            "context",
            "scenario",
            "constraints",
            "humor_type",
        ]


class PromptSetOut(serializers.ModelSerializer):
    id = serializers.IntegerField(source="pk")
    n_prompts = serializers.SerializerMethodField()

    class Meta:
        model = PromptSet
        fields = ["id", "name", "description", "humor_type", "n_prompts", "created_at"]

    def get_n_prompts(self, obj: PromptSet) -> int:
        return int(getattr(obj, "n_prompts", None) or obj.prompts.count())


class PromptSetDetailOut(PromptSetOut):
    prompts = PromptOut(many=True)

    class Meta(PromptSetOut.Meta):
        fields = [*PromptSetOut.Meta.fields, "prompts"]


class PromptSetIn(StrictSerializer):
    name = serializers.CharField(max_length=120)
    humor_type = serializers.CharField(max_length=64, required=False, allow_blank=True)
    description = serializers.CharField(max_length=5000, required=False, allow_blank=True)
    prompts = serializers.ListField(
        child=serializers.JSONField(),
        min_length=1,
        max_length=10_000,
        help_text="Objects in the prompt-set JSONL format (id, level, lang, topic, prompt, "
        "context, scenario, constraints, humor_type).",
    )


class PromptImportOut(serializers.Serializer):
    prompt_set = PromptSetOut()
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class EndpointOut(serializers.ModelSerializer):
    id = serializers.IntegerField(source="pk")

    class Meta:
        model = ModelEndpoint
        fields = [
            "id",
            "name",
            "kind",
            "url",
            "model",
            "max_concurrency",
            "timeout_seconds",
            "max_retries",
            "send_seed",
        ]


class EndpointIn(StrictSerializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=ModelEndpoint.Kind.choices, default="chat")
    url = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    model = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    max_concurrency = serializers.IntegerField(min_value=1, max_value=64, default=2)
    timeout_seconds = serializers.FloatField(min_value=0.1, max_value=600, default=60.0)
    max_retries = serializers.IntegerField(min_value=0, max_value=10, default=3)
    send_seed = serializers.BooleanField(default=True)


class RunIn(StrictSerializer):
    prompt_sets = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**62), min_length=1, max_length=100
    )
    models = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**62), min_length=1, max_length=100
    )
    samples_per_prompt = serializers.IntegerField(min_value=1, max_value=50, default=1)
    temperature = serializers.FloatField(min_value=0, max_value=2, default=1.1)
    top_p = serializers.FloatField(min_value=0.01, max_value=1, default=0.9)
    max_tokens = serializers.IntegerField(min_value=1, max_value=4096, default=256)
    seed = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, required=False, allow_null=True
    )
    explain = serializers.BooleanField(default=True)
    explanation_prompts = serializers.DictField(
        child=serializers.CharField(max_length=2000, allow_blank=True), required=False
    )
    humor_type = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    api_key = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        write_only=True,
        help_text="Sent as the bearer key to endpoints without a key in the server's settings; "
        "never returned, wiped when the run ends.",
    )


class ResumeIn(StrictSerializer):
    api_key = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default="", write_only=True
    )


class _ErrorOut(serializers.Serializer):
    prompt = serializers.CharField(source="prompt_id")
    sample = serializers.IntegerField()
    attempts = serializers.IntegerField()
    error = serializers.CharField()


class ModelProgressOut(serializers.Serializer):
    name = serializers.CharField()
    total = serializers.IntegerField()
    generated = serializers.IntegerField(source="done")
    intercepted = serializers.IntegerField()
    failed = serializers.IntegerField()
    waiting = serializers.IntegerField()
    running = serializers.IntegerField()
    intercept_reasons = serializers.DictField(child=serializers.IntegerField())
    errors = _ErrorOut(many=True)  # type: ignore[assignment]


class RunOut(serializers.ModelSerializer):
    id = serializers.IntegerField(source="pk")
    prompt_sets = serializers.SerializerMethodField()
    models = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = GenerationRun
        fields = [
            "id",
            "status",
            "prompt_sets",
            "models",
            "samples_per_prompt",
            "temperature",
            "top_p",
            "max_tokens",
            "seed",
            "explain",
            "explanation_prompts",
            "humor_type",
            "created_at",
            "finished_at",
            "progress",
        ]

    def get_prompt_sets(self, obj: GenerationRun) -> list[str]:
        return list(obj.prompt_sets.order_by("name").values_list("name", flat=True))

    def get_models(self, obj: GenerationRun) -> list[str]:
        return list(obj.endpoints.order_by("name").values_list("name", flat=True))

    def get_progress(self, obj: GenerationRun) -> list[dict[str, Any]]:
        from apps.generation.selectors import run_progress

        models: list[ModelProgress] = run_progress(run=obj).models
        return list(ModelProgressOut(models, many=True).data)
