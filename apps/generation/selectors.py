"""Reads of the generation app, scoped to a study (its pages check who asks)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Count, QuerySet

from apps.core.errors import NotFound
from apps.generation.models import (
    GenerationOutput,
    GenerationRun,
    ModelEndpoint,
    Prompt,
    PromptSet,
)
from apps.studies.models import Item, Study

Status = GenerationOutput.Status
# Failed outputs listed per model on the run page.
ERRORS_LISTED = 50


def prompt_sets_list(*, study: Study) -> QuerySet[PromptSet]:
    return (
        PromptSet.objects.filter(study=study).annotate(n_prompts=Count("prompts")).order_by("name")
    )


def prompt_set_get(*, study: Study, prompt_set_id: int) -> PromptSet:
    found = PromptSet.objects.filter(study=study, pk=prompt_set_id).first()
    if found is None:
        raise NotFound("no such prompt set")
    return found


def prompt_get(*, prompt_set: PromptSet, prompt_id: int) -> Prompt:
    found = Prompt.objects.filter(prompt_set=prompt_set, pk=prompt_id).first()
    if found is None:
        raise NotFound("no such prompt")
    return found


def endpoints_list(*, study: Study) -> QuerySet[ModelEndpoint]:
    return ModelEndpoint.objects.filter(study=study).order_by("name")


def endpoint_get(*, study: Study, endpoint_id: int) -> ModelEndpoint:
    found = ModelEndpoint.objects.filter(study=study, pk=endpoint_id).first()
    if found is None:
        raise NotFound("no such model")
    return found


def runs_list(*, study: Study) -> QuerySet[GenerationRun]:
    return GenerationRun.objects.filter(study=study).order_by("-created_at")


def run_get(*, study: Study, run_id: int) -> GenerationRun:
    found = GenerationRun.objects.filter(study=study, pk=run_id).first()
    if found is None:
        raise NotFound("no such generation run")
    return found


@dataclass(frozen=True)
class OutputError:
    prompt_id: str
    sample: int
    attempts: int
    error: str


@dataclass
class ModelProgress:
    name: str
    total: int = 0
    done: int = 0
    intercepted: int = 0
    failed: int = 0
    waiting: int = 0
    running: int = 0
    errors: list[OutputError] = field(default_factory=list)
    intercept_reasons: dict[str, int] = field(default_factory=dict)

    @property
    def finished(self) -> int:
        return self.done + self.intercepted + self.failed

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 0


@dataclass
class RunProgress:
    models: list[ModelProgress]

    @property
    def total(self) -> int:
        return sum(m.total for m in self.models)

    @property
    def finished(self) -> int:
        return sum(m.finished for m in self.models)

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 0

    @property
    def failed(self) -> int:
        return sum(m.failed for m in self.models)

    @property
    def open(self) -> int:
        """Outputs still to generate: waiting, in progress, or failed (resuming retries them)."""
        return sum(m.waiting + m.running + m.failed for m in self.models)


def run_progress(*, run: GenerationRun) -> RunProgress:
    """Counts per model and status, the errors per model, and interceptions by reason."""
    rows = (
        GenerationOutput.objects.filter(run=run)
        .values("endpoint__name", "status", "intercept_reason")
        .annotate(n=Count("pk"))
    )
    by_model: dict[str, ModelProgress] = {
        e.name: ModelProgress(e.name) for e in run.endpoints.order_by("name")
    }
    for row in rows:
        progress = by_model.setdefault(row["endpoint__name"], ModelProgress(row["endpoint__name"]))
        n = row["n"]
        progress.total += n
        status = row["status"]
        if status == Status.DONE:
            progress.done += n
        elif status == Status.INTERCEPTED:
            progress.intercepted += n
            reasons = Counter(progress.intercept_reasons)
            reasons[row["intercept_reason"]] += n
            progress.intercept_reasons = dict(reasons)
        elif status == Status.FAILED:
            progress.failed += n
        elif status == Status.RUNNING:
            progress.running += n
        else:
            progress.waiting += n
    for name, progress in by_model.items():
        if progress.failed:
            failed = (
                GenerationOutput.objects.filter(run=run, endpoint__name=name, status=Status.FAILED)
                .select_related("prompt")
                .order_by("pk")[:ERRORS_LISTED]
            )
            progress.errors = [
                OutputError(o.prompt.external_id, o.sample_index, o.attempts, o.error)
                for o in failed
            ]
    return RunProgress(list(by_model.values()))


def run_outputs(*, run: GenerationRun, limit: int = 200) -> QuerySet[GenerationOutput]:
    return (
        GenerationOutput.objects.filter(run=run)
        .exclude(status__in=[Status.PENDING, Status.RUNNING])
        .select_related("endpoint", "prompt", "item")
        .order_by("endpoint__name", "prompt__external_id", "sample_index")[:limit]
    )


@dataclass(frozen=True)
class TopicCoverage:
    topic: str
    machine: int
    human: int


def topic_coverage(*, study: Study) -> list[TopicCoverage]:
    """Candidates and study items per topic, machine-written against human-written: the human
    jokes for the same topics are imported beside the generated ones."""
    rows = (
        Item.objects.filter(study=study, is_attention_check=False)
        .exclude(topic="")
        .values("topic", "source")
        .annotate(n=Count("pk"))
    )
    machine: Counter[str] = Counter()
    human: Counter[str] = Counter()
    for row in rows:
        (human if row["source"] == Item.HUMAN_SOURCE else machine)[row["topic"]] += row["n"]
    topics = sorted(set(machine) | set(human))
    return [TopicCoverage(t, machine[t], human[t]) for t in topics]
