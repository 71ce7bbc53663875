"""Generating the jokes under test: prompt sets, the models asked, runs, and every output.

A run asks each chosen model for `samples_per_prompt` answers to every prompt of the chosen sets.
Each (run, model, prompt, sample) is one `GenerationOutput` row, created when the run starts and
filled when its call finishes: that unique key is what makes a cancelled or interrupted run
resumable without asking a model twice for the same sample.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from apps.studies.models import Item, Study


class PromptSet(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="prompt_sets")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    # The humor-type label given to every output of the set unless a prompt or the run sets one.
    humor_type = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="prompt_set_name_unique"),
            models.CheckConstraint(condition=~Q(name=""), name="prompt_set_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


class Prompt(models.Model):
    """One task for a model, at one of the three test levels."""

    prompt_set = models.ForeignKey(PromptSet, on_delete=models.CASCADE, related_name="prompts")
    external_id = models.CharField(max_length=64)
    level = models.CharField(max_length=16, choices=Item.Level.choices)
    language = models.CharField(max_length=16)
    topic = models.CharField(max_length=128, blank=True)
    # The instruction: a topic word or an opening line for a single joke; optional for the
    # other levels, where the dialogue or the scenario carries the task.
    text = models.TextField(blank=True)
    # multi_turn: the dialogue before the reply, [{"role": "user"|"assistant", "text": ...}],
    # ending with the user's turn the model answers.
    context = models.JSONField(default=list, blank=True)
    # scenario: the situation, and the constraints the response must keep.
    scenario = models.TextField(blank=True)
    constraints = models.JSONField(default=list, blank=True)
    humor_type = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["prompt_set", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["prompt_set", "external_id"], name="prompt_id_unique_in_set"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prompt_set.name}/{self.external_id}"


class ModelEndpoint(models.Model):
    """A model a study's runs can ask: an OpenAI-compatible chat-completions endpoint, or the
    local causal language model run in the worker. No API key is stored here: it comes from the
    server's settings (GENERATION_API_KEYS, per URL) or with a run."""

    class Kind(models.TextChoices):
        CHAT = "chat", _("Chat-completions endpoint")
        LOCAL = "local", _("Local model in the worker")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="model_endpoints")
    # The item's `source`: how the model is named in every result.
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.CHAT)
    url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    # Calls in flight to this endpoint at once, over every run and worker.
    max_concurrency = models.PositiveSmallIntegerField(default=2)
    timeout_seconds = models.FloatField(default=60.0)
    # Further attempts after a 429, a 5xx or a timeout, with exponential backoff.
    max_retries = models.PositiveSmallIntegerField(default=3)
    # Send the run's seed (not every service accepts one).
    send_seed = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="model_endpoint_name_unique"),
            models.CheckConstraint(
                condition=Q(max_concurrency__gte=1) & Q(max_concurrency__lte=64),
                name="model_endpoint_concurrency_range",
            ),
            models.CheckConstraint(
                condition=Q(timeout_seconds__gt=0) & Q(timeout_seconds__lte=600),
                name="model_endpoint_timeout_range",
            ),
            models.CheckConstraint(
                condition=Q(max_retries__lte=10), name="model_endpoint_retries_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class RefusalPattern(models.Model):
    """Text that marks an output as a guardrail's deflection rather than the model's joke."""

    language = models.CharField(max_length=16)
    pattern = models.CharField(max_length=200)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["language", "pattern"]
        constraints = [
            models.UniqueConstraint(fields=["language", "pattern"], name="refusal_pattern_unique"),
            models.CheckConstraint(condition=~Q(pattern=""), name="refusal_pattern_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.language}: {self.pattern}"


class GenerationRun(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        CANCELLED = "cancelled", _("Cancelled")

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="generation_runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    prompt_sets = models.ManyToManyField(PromptSet, related_name="runs")
    endpoints = models.ManyToManyField(ModelEndpoint, related_name="runs")
    samples_per_prompt = models.PositiveSmallIntegerField(default=1)
    temperature = models.FloatField(default=1.1)
    top_p = models.FloatField(default=0.9)
    max_tokens = models.PositiveIntegerField(default=256)
    seed = models.BigIntegerField(null=True, blank=True)
    explain = models.BooleanField(default=True)
    # The follow-up turn asking why the joke is funny, per language: {"en": "...", "zh": "..."}.
    explanation_prompts = models.JSONField(default=dict, blank=True)
    # The researcher's humor-type label for every output ("" = the prompt's or the set's).
    humor_type = models.CharField(max_length=64, blank=True)
    # Given with the run for endpoints without a key in the settings. Never shown; wiped when
    # the run is done or cancelled (resuming asks for it again).
    api_key = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(samples_per_prompt__gte=1) & Q(samples_per_prompt__lte=50),
                name="generation_run_samples_range",
            ),
            models.CheckConstraint(
                condition=Q(temperature__gte=0) & Q(temperature__lte=2),
                name="generation_run_temperature_range",
            ),
            models.CheckConstraint(
                condition=Q(top_p__gt=0) & Q(top_p__lte=1), name="generation_run_top_p_range"
            ),
            models.CheckConstraint(
                condition=Q(max_tokens__gte=1) & Q(max_tokens__lte=4096),
                name="generation_run_max_tokens_range",
            ),
        ]

    def __str__(self) -> str:
        return f"generation run {self.pk} of {self.study_id}"


class GenerationOutput(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting")
        RUNNING = "running", _("In progress")
        DONE = "done", _("Generated")
        INTERCEPTED = "intercepted", _("Intercepted by a guardrail")
        FAILED = "failed", _("Failed")

    class Intercept(models.TextChoices):
        NONE = "", "—"
        REFUSAL = "refusal", _("The API reported a refusal")
        CONTENT_FILTER = "content_filter", _("Stopped by a content filter")
        EMPTY = "empty", _("Empty output")
        PATTERN = "pattern", _("Matched a refusal pattern")

    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="outputs")
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.CASCADE, related_name="outputs")
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="outputs")
    sample_index = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # While running: until when this call is held; after that another worker may take it over.
    lease_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    text = models.TextField(blank=True)
    explanation = models.TextField(blank=True)
    explanation_error = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=32, blank=True)
    refusal = models.TextField(blank=True)
    intercept_reason = models.CharField(
        max_length=16, choices=Intercept.choices, blank=True, default=Intercept.NONE
    )
    # The matched pattern, the refusal text or the finish reason behind the interception.
    intercept_detail = models.CharField(max_length=300, blank=True)
    # What was sent: the messages and the sampling parameters (seed included when sent).
    request = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    latency_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    item = models.OneToOneField(
        Item, null=True, blank=True, on_delete=models.SET_NULL, related_name="generation_output"
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "endpoint", "prompt", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "endpoint", "prompt", "sample_index"],
                name="generation_output_unique",
            ),
        ]
        indexes = [models.Index(fields=["endpoint", "status"])]

    def __str__(self) -> str:
        return f"output {self.pk} of run {self.run_id}"
