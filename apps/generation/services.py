"""Writes of the generation app: prompt sets, model endpoints, runs and their outputs.

A run's work is one `GenerationOutput` per (model, prompt, sample), created at the start. Workers
take them one at a time (`output_claim`): the endpoint's row is locked while its calls in flight
are counted, so no endpoint ever has more than `max_concurrency` calls out, over every run and
worker. A taken output carries a lease; a worker that dies leaves it to expire and be taken
again. No transaction is held during a call. Storing the answer and landing it as a study
candidate is one transaction that first checks the output is still being worked on, so a
redelivered or duplicated task never stores a second answer or a second item.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from apps.core.errors import Conflict, DomainError, ImportRejected, LineError, NotFound
from apps.core.lines import Record, read_records
from apps.core.sentences import Sentence
from apps.generation import messages as texts
from apps.generation.chat import (
    ChatEndpoint,
    Generator,
    Sampling,
    complete_with_retries,
    url_problem,
)
from apps.generation.guardrails import detect_interception, language_patterns
from apps.generation.local import LocalModel
from apps.generation.models import (
    GenerationOutput,
    GenerationRun,
    ModelEndpoint,
    Prompt,
    PromptSet,
    RefusalPattern,
)
from apps.generation.prompts import PROMPT_JSON_COLUMNS, PromptRow, parse_prompt, parse_prompts
from apps.screening.llm_judge import chat_completions_url
from apps.studies.models import Item, Study
from apps.studies.services import study_items_import_records
from apps.textmodels.registry import ModelUnavailable, causal_lm, causal_lm_info

logger = logging.getLogger(__name__)

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
# (set name, humor type, file) of the built-in example sets.
EXAMPLE_SETS = (
    ("Example (English)", "", "example_en.jsonl"),
    ("示例（中文）", "", "example_zh.jsonl"),
)
# The text of a candidate whose model returned nothing (an item's text cannot be empty); the
# item is flagged safety_intercepted with the reason "empty".
EMPTY_OUTPUT_TEXT = "[empty output]"
MAX_OUTPUTS_PER_RUN = 50_000
Status = GenerationOutput.Status


# --- prompt sets ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptImportSummary:
    prompt_set: PromptSet
    created: int
    unchanged: int


def _clean_label(value: str, *, field: str, max_length: int, required: bool = False) -> str:
    value = (value or "").strip()
    if required and not value:
        raise DomainError(f"{field} must not be empty", field=field)
    if len(value) > max_length:
        raise DomainError(f"{field} is longer than {max_length} characters", field=field)
    if "\x00" in value:
        raise DomainError(f"{field} contains a NUL character", field=field)
    return value


def prompt_set_import(
    *,
    study: Study,
    name: str,
    data: bytes,
    filename: str,
    humor_type: str = "",
    description: str = "",
) -> PromptImportSummary:
    """Import prompt lines (JSONL or CSV) into the named set, created if new. All lines are
    checked before anything is written; importing the same file twice changes nothing."""
    records = read_records(data, filename=filename, json_columns=PROMPT_JSON_COLUMNS)
    return prompt_set_import_records(
        study=study, name=name, records=records, humor_type=humor_type, description=description
    )


@transaction.atomic
def prompt_set_import_records(
    *,
    study: Study,
    name: str,
    records: Any,
    humor_type: str = "",
    description: str = "",
) -> PromptImportSummary:
    name = _clean_label(name, field="name", max_length=120, required=True)
    humor_type = _clean_label(humor_type, field="humor_type", max_length=64)
    rows, errors = parse_prompts(records)
    if not rows and not errors:
        raise ImportRejected(
            [LineError.said(0, "(file)", Sentence(gettext_noop("contains no prompts")))]
        )
    prompt_set = PromptSet.objects.filter(study=study, name=name).first()
    existing: dict[str, Prompt] = {}
    if prompt_set is not None:
        existing = {
            p.external_id: p
            for p in prompt_set.prompts.filter(external_id__in=[r.external_id for r in rows])
        }
    new_rows: list[PromptRow] = []
    for row in rows:
        stored = existing.get(row.external_id)
        if stored is None:
            new_rows.append(row)
            continue
        changed = [k for k, v in row.model_fields().items() if getattr(stored, k) != v]
        if changed:
            errors.append(
                LineError.said(
                    row.line,
                    {"language": "lang", "text": "prompt"}.get(changed[0], changed[0]),
                    Sentence(
                        gettext_noop(
                            "prompt %(prompt)s is already in the set with different content"
                        ),
                        {"prompt": repr(row.external_id)},
                    ),
                )
            )
    if errors:
        raise ImportRejected(sorted(errors, key=lambda e: e.line))
    if prompt_set is None:
        prompt_set = PromptSet.objects.create(
            study=study,
            name=name,
            humor_type=humor_type,
            description=_clean_label(description, field="description", max_length=5000),
        )
    try:
        with transaction.atomic():
            Prompt.objects.bulk_create(
                [Prompt(prompt_set=prompt_set, **row.model_fields()) for row in new_rows]
            )
    except IntegrityError as exc:
        raise Conflict("another import added some of these prompts at the same time") from exc
    return PromptImportSummary(prompt_set, len(new_rows), len(rows) - len(new_rows))


@transaction.atomic
def prompt_set_examples_install(*, study: Study) -> list[PromptSet]:
    """The built-in example sets (English and Chinese, every level); installing twice adds
    nothing."""
    sets = []
    for name, humor_type, filename in EXAMPLE_SETS:
        data = (BUILTIN_DIR / filename).read_bytes()
        summary = prompt_set_import(
            study=study, name=name, data=data, filename=filename, humor_type=humor_type
        )
        sets.append(summary.prompt_set)
    return sets


@transaction.atomic
def prompt_set_update(
    *, prompt_set: PromptSet, name: str, humor_type: str = "", description: str = ""
) -> PromptSet:
    name = _clean_label(name, field="name", max_length=120, required=True)
    if PromptSet.objects.filter(study=prompt_set.study, name=name).exclude(pk=prompt_set.pk):
        raise Conflict(f"the study already has a prompt set named {name!r}", field="name")
    prompt_set.name = name
    prompt_set.humor_type = _clean_label(humor_type, field="humor_type", max_length=64)
    prompt_set.description = _clean_label(description, field="description", max_length=5000)
    prompt_set.save()
    return prompt_set


def _row_or_error(fields: dict[str, Any]) -> PromptRow:
    errors: list[LineError] = []
    row = parse_prompt(Record(1, {k: v for k, v in fields.items() if v not in (None, "")}), errors)
    if row is None:
        first = errors[0]
        raise DomainError(first.message, field=first.field)
    return row


@transaction.atomic
def prompt_save(
    *, prompt_set: PromptSet, fields: dict[str, Any], prompt: Prompt | None = None
) -> Prompt:
    """Add a prompt, or change one, from fields named as in the JSONL format; checked the same
    way as an imported line."""
    row = _row_or_error(fields)
    clash = Prompt.objects.filter(prompt_set=prompt_set, external_id=row.external_id)
    if prompt is not None:
        clash = clash.exclude(pk=prompt.pk)
    if clash.exists():
        raise Conflict(f"the set already has a prompt {row.external_id!r}", field="id")
    target = prompt or Prompt(prompt_set=prompt_set)
    for key, value in row.model_fields().items():
        setattr(target, key, value)
    target.save()
    return target


@transaction.atomic
def prompt_delete(*, prompt: Prompt) -> None:
    if prompt.outputs.exists():
        raise Conflict(
            "this prompt has outputs; it stays as their provenance (edit it instead)", field="id"
        )
    prompt.delete()


# --- model endpoints ------------------------------------------------------------------------------


ENDPOINT_FIELDS = (
    "name",
    "kind",
    "url",
    "model",
    "max_concurrency",
    "timeout_seconds",
    "max_retries",
    "send_seed",
)


def _number(value: Any, *, field: str, low: float, high: float, integer: bool) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DomainError(f"{field} must be a number", field=field)
    if integer and int(value) != value:
        raise DomainError(f"{field} must be a whole number", field=field)
    if not low <= value <= high:
        raise DomainError(f"{field} must be from {low:g} to {high:g}", field=field)
    return int(value) if integer else float(value)


OFF = frozenset({"off", "none"})


@dataclass(frozen=True)
class LocalSource:
    """Which local model a 'local' endpoint runs: GENERATION_LOCAL_MODEL_PATH when it names a
    folder, else the text models' causal language model (apps.textmodels: the packaged
    Gemma 3 270M by default), shared with screening in each worker process."""

    name: str
    path: str
    unavailable: str


def local_source() -> LocalSource:
    configured = str(settings.GENERATION_LOCAL_MODEL_PATH or "").strip()
    if configured.lower() in OFF:
        return LocalSource("none", "", "no local model (GENERATION_LOCAL_MODEL_PATH=off)")
    if configured:
        missing = "" if Path(configured).is_dir() else f"no model folder at {configured}"
        return LocalSource(configured, configured, missing)
    info = causal_lm_info()
    return LocalSource(info.label, "", info.unavailable)


def _shared_causal_lm() -> tuple[Any, Any]:
    try:
        lm = causal_lm()
    except ModelUnavailable as exc:
        raise OSError(str(exc)) from None
    return lm.tokenizer, lm.model


@transaction.atomic
def endpoint_save(
    *, study: Study, values: dict[str, Any], endpoint: ModelEndpoint | None = None
) -> ModelEndpoint:
    unknown = set(values) - set(ENDPOINT_FIELDS)
    if unknown:
        raise DomainError(f"unknown field {sorted(unknown)[0]!r}", field=sorted(unknown)[0])
    target = endpoint or ModelEndpoint(study=study)
    merged = {name: getattr(target, name) for name in ENDPOINT_FIELDS}
    merged.update({k: v for k, v in values.items() if v is not None})
    name = _clean_label(str(merged["name"] or ""), field="name", max_length=100, required=True)
    if name == Item.HUMAN_SOURCE:
        raise DomainError("'human' names the human-written jokes; pick another name", field="name")
    if merged["kind"] not in ModelEndpoint.Kind.values:
        raise DomainError(
            f"kind must be one of {', '.join(ModelEndpoint.Kind.values)}", field="kind"
        )
    url = _clean_label(str(merged["url"] or ""), field="url", max_length=500)
    model = _clean_label(str(merged["model"] or ""), field="model", max_length=200)
    if merged["kind"] == ModelEndpoint.Kind.CHAT:
        if not url:
            raise DomainError("a chat-completions endpoint needs its URL", field="url")
        problem = url_problem(url)
        if problem:
            raise DomainError(problem, field="url")
        if not model:
            raise DomainError("a chat-completions endpoint needs a model name", field="model")
    else:
        url = ""
    target.name = name
    target.kind = merged["kind"]
    target.url = url
    target.model = model
    target.max_concurrency = _number(
        merged["max_concurrency"], field="max_concurrency", low=1, high=64, integer=True
    )
    target.timeout_seconds = _number(
        merged["timeout_seconds"], field="timeout_seconds", low=0.1, high=600, integer=False
    )
    target.max_retries = _number(
        merged["max_retries"], field="max_retries", low=0, high=10, integer=True
    )
    if not isinstance(merged["send_seed"], bool):
        raise DomainError("send_seed must be true or false", field="send_seed")
    target.send_seed = merged["send_seed"]
    clash = ModelEndpoint.objects.filter(study=study, name=name)
    if target.pk:
        clash = clash.exclude(pk=target.pk)
    if clash.exists():
        raise Conflict(f"the study already has a model named {name!r}", field="name")
    target.save()
    return target


def settings_api_key(url: str) -> str:
    """The key GENERATION_API_KEYS holds for this endpoint URL, or "": a key goes only to the
    URL it was configured for, so whoever can edit an endpoint cannot send it elsewhere."""
    wanted = chat_completions_url(url)
    for configured, key in settings.GENERATION_API_KEYS.items():
        if chat_completions_url(configured) == wanted:
            return str(key)
    return ""


# --- runs -----------------------------------------------------------------------------------------


# Seconds a lane keeps taking new outputs before it hands over to a fresh task; its time limit
# adds the longest one output can take (its lease), so no limit cuts a call short.
LANE_BUDGET_SECONDS = 300.0


def lane_queue(*, run_id: int, endpoint_id: int, countdown: float = 0) -> None:
    """Queue one lane of a run for an endpoint, with time limits that fit its longest output."""
    from apps.generation.tasks import generation_lane_task

    endpoint = ModelEndpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        return
    soft = LANE_BUDGET_SECONDS + _lease_seconds(endpoint) + 30
    generation_lane_task.apply_async(
        (run_id, endpoint_id), countdown=countdown, soft_time_limit=soft, time_limit=soft + 60
    )


def _enqueue_lanes(run_id: int, lanes: list[tuple[int, int]]) -> None:
    for endpoint_id, count in lanes:
        for _ in range(count):
            try:
                lane_queue(run_id=run_id, endpoint_id=endpoint_id)
            except Exception:  # the broker is down: the run stays resumable
                logger.warning("could not queue generation work of run %s", run_id, exc_info=True)
                return


def run_waits_on_leases(*, run_id: int) -> bool:
    """A running run whose last outputs are held by workers: a lane that found nothing to take
    looks again later, so an output whose worker died is taken over when its lease ends."""
    return GenerationOutput.objects.filter(
        run_id=run_id, run__status=GenerationRun.Status.RUNNING, status=Status.RUNNING
    ).exists()


def _lanes(run: GenerationRun) -> list[tuple[int, int]]:
    return [(e.pk, e.max_concurrency) for e in run.endpoints.order_by("pk")]


@transaction.atomic
def generation_run_start(
    *,
    study: Study,
    prompt_set_ids: list[int],
    endpoint_ids: list[int],
    samples_per_prompt: int = 1,
    temperature: float = 1.1,
    top_p: float = 0.9,
    max_tokens: int = 256,
    seed: int | None = None,
    explain: bool = True,
    explanation_prompts: dict[str, str] | None = None,
    humor_type: str = "",
    api_key: str = "",
    user: User | AnonymousUser | None = None,
) -> GenerationRun:
    """Check everything, create the run and one output per (model, prompt, sample), and queue
    the work after commit (per endpoint, as many workers as its concurrency limit)."""
    prompt_sets = list(PromptSet.objects.filter(study=study, pk__in=set(prompt_set_ids)))
    if not prompt_set_ids:
        raise DomainError("pick at least one prompt set", field="prompt_sets")
    if len(prompt_sets) != len(set(prompt_set_ids)):
        raise NotFound("no such prompt set in this study", field="prompt_sets")
    endpoints = list(ModelEndpoint.objects.filter(study=study, pk__in=set(endpoint_ids)))
    if not endpoint_ids:
        raise DomainError("pick at least one model", field="models")
    if len(endpoints) != len(set(endpoint_ids)):
        raise NotFound("no such model in this study", field="models")
    samples = _number(samples_per_prompt, field="samples_per_prompt", low=1, high=50, integer=True)
    temperature = _number(temperature, field="temperature", low=0, high=2, integer=False)
    top_p = _number(top_p, field="top_p", low=0.01, high=1, integer=False)
    max_tokens = _number(max_tokens, field="max_tokens", low=1, high=4096, integer=True)
    if seed is not None:
        seed = _number(seed, field="seed", low=0, high=2**31 - 1, integer=True)
    if not isinstance(explain, bool):
        raise DomainError("explain must be true or false", field="explain")
    prompts_by_language = {}
    for language, text in (explanation_prompts or {}).items():
        if not isinstance(language, str) or not isinstance(text, str):
            raise DomainError("explanation prompts are text per language", field="explanation")
        prompts_by_language[language] = _clean_label(
            text, field=f"explanation_prompts.{language}", max_length=2000
        )
    humor_type = _clean_label(humor_type, field="humor_type", max_length=64)
    api_key = (api_key or "").strip()
    if len(api_key) > 500 or any(ord(c) < 32 for c in api_key):
        raise DomainError("the API key is not a valid key", field="api_key")
    for endpoint in endpoints:
        source = local_source()
        if endpoint.kind == ModelEndpoint.Kind.LOCAL and source.unavailable:
            raise DomainError(
                f"{endpoint.name}: the local model cannot run: {source.unavailable} "
                "(see GENERATION_LOCAL_MODEL_PATH)",
                field="models",
            )
    prompts = list(
        Prompt.objects.filter(prompt_set__in=prompt_sets).order_by("prompt_set_id", "pk")
    )
    if not prompts:
        raise DomainError("the chosen prompt sets hold no prompts", field="prompt_sets")
    total = len(prompts) * len(endpoints) * samples
    if total > MAX_OUTPUTS_PER_RUN:
        raise DomainError(
            f"the run would ask for {total} outputs; at most {MAX_OUTPUTS_PER_RUN} per run",
            field="samples_per_prompt",
        )
    run = GenerationRun.objects.create(
        study=study,
        samples_per_prompt=samples,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        explain=explain,
        explanation_prompts=prompts_by_language,
        humor_type=humor_type,
        api_key=api_key,
        created_by=user if isinstance(user, User) else None,
    )
    run.prompt_sets.set(prompt_sets)
    run.endpoints.set(endpoints)
    GenerationOutput.objects.bulk_create(
        [
            GenerationOutput(run=run, endpoint=endpoint, prompt=prompt, sample_index=index)
            for endpoint in endpoints
            for prompt in prompts
            for index in range(samples)
        ],
        batch_size=2000,
    )
    lanes = _lanes(run)
    transaction.on_commit(lambda: _enqueue_lanes(run.pk, lanes))
    return run


@transaction.atomic
def generation_run_cancel(*, run: GenerationRun) -> GenerationRun:
    """Stop handing out work; calls in flight finish and are stored. The key given with the run
    is wiped."""
    locked = GenerationRun.objects.select_for_update().get(pk=run.pk)
    if locked.status != GenerationRun.Status.RUNNING:
        raise Conflict("only a running run can be cancelled", field="status")
    locked.status = GenerationRun.Status.CANCELLED
    locked.api_key = ""
    locked.finished_at = timezone.now()
    locked.save(update_fields=["status", "api_key", "finished_at"])
    return locked


@transaction.atomic
def generation_run_resume(*, run: GenerationRun, api_key: str = "") -> GenerationRun:
    """Go on with what is not generated yet: waiting and failed outputs. Generated ones are
    never asked for again (one output per model, prompt and sample)."""
    locked = GenerationRun.objects.select_for_update().get(pk=run.pk)
    open_work = locked.outputs.filter(status__in=[Status.PENDING, Status.RUNNING, Status.FAILED])
    # A running run may be resumed too: its work is queued again (a worker may have died),
    # and the claims keep every endpoint within its limit however many lanes there are.
    if not open_work.exists():
        raise Conflict("every output of this run is already generated", field="status")
    api_key = (api_key or "").strip()
    if len(api_key) > 500 or any(ord(c) < 32 for c in api_key):
        raise DomainError("the API key is not a valid key", field="api_key")
    locked.outputs.filter(status=Status.FAILED).update(status=Status.PENDING, error="")
    locked.status = GenerationRun.Status.RUNNING
    locked.finished_at = None
    if api_key:
        locked.api_key = api_key
    locked.save(update_fields=["status", "finished_at", "api_key"])
    lanes = _lanes(locked)
    transaction.on_commit(lambda: _enqueue_lanes(locked.pk, lanes))
    return locked


def _lease_seconds(endpoint: ModelEndpoint) -> float:
    # Every attempt of the answer and of the explanation, each up to twice the timeout
    # (connecting, then reading), plus every backoff.
    attempts = endpoint.max_retries + 1
    per_call = 2 * endpoint.timeout_seconds + settings.GENERATION_MAX_BACKOFF_SECONDS
    return max(60.0, 2 * attempts * per_call + 30.0)


@dataclass(frozen=True)
class Claim:
    output_id: int | None
    # True when the endpoint's concurrency limit is what stopped the claim.
    busy: bool = False


@transaction.atomic
def output_claim(*, run_id: int, endpoint_id: int) -> Claim:
    """Take the run's next output for this endpoint, if the endpoint has a free slot."""
    endpoint = ModelEndpoint.objects.select_for_update().filter(pk=endpoint_id).first()
    if endpoint is None:
        return Claim(None)
    # The run's row is locked, not just read: a cancel (which locks it too) then either commits
    # before this reads the status, or waits until this claim is written and visible. A plain
    # read let a claim that saw "running" write its output after the cancel had returned.
    run_status = (
        GenerationRun.objects.select_for_update()
        .filter(pk=run_id)
        .values_list("status", flat=True)
        .first()
    )
    if run_status != GenerationRun.Status.RUNNING:
        return Claim(None)
    now = timezone.now()
    candidate = (
        GenerationOutput.objects.filter(run_id=run_id, endpoint=endpoint)
        .filter(Q(status=Status.PENDING) | Q(status=Status.RUNNING, lease_until__lte=now))
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )
    if candidate is None:
        return Claim(None)
    in_flight = GenerationOutput.objects.filter(
        endpoint=endpoint, status=Status.RUNNING, lease_until__gt=now
    ).count()
    if in_flight >= endpoint.max_concurrency:
        return Claim(None, busy=True)
    GenerationOutput.objects.filter(pk=candidate).update(
        status=Status.RUNNING, lease_until=now + timedelta(seconds=_lease_seconds(endpoint))
    )
    return Claim(candidate)


def generator_for(endpoint: ModelEndpoint, run: GenerationRun) -> Generator:
    if endpoint.kind == ModelEndpoint.Kind.LOCAL:
        source = local_source()
        return LocalModel(
            model_path=source.path,
            name=source.name,
            loader=None if source.path else _shared_causal_lm,
        )
    return ChatEndpoint(
        url=endpoint.url,
        model=endpoint.model,
        api_key=run.api_key or settings_api_key(endpoint.url),
        timeout_seconds=endpoint.timeout_seconds,
    )


def refusal_patterns(language: str) -> list[str]:
    rows = RefusalPattern.objects.filter(is_active=True).values_list("language", "pattern")
    return language_patterns(list(rows), language)


def _humor_type(run: GenerationRun, prompt: Prompt) -> str:
    return run.humor_type or prompt.humor_type or prompt.prompt_set.humor_type


def _external_id(output: GenerationOutput) -> str:
    return f"gen-{output.run_id}-{output.pk}"


def output_generate(*, output_id: int, sleep: Any = time.sleep) -> str | None:
    """Ask the model for one claimed output (and its self-explanation), then store it and land
    it as a study candidate. Returns the stored status, or None if the output was not this
    worker's to fill any more."""
    output = (
        GenerationOutput.objects.select_related(
            "run", "run__study", "endpoint", "prompt", "prompt__prompt_set"
        )
        .filter(pk=output_id, status=Status.RUNNING)
        .first()
    )
    if output is None:
        return None
    run, endpoint, prompt = output.run, output.endpoint, output.prompt
    sent_seed = None
    if run.seed is not None and endpoint.send_seed:
        # One seed per sample, so samples of one prompt differ and each can be reproduced.
        sent_seed = (run.seed + output.sample_index) % 2**31
    sampling = Sampling(run.temperature, run.top_p, run.max_tokens, sent_seed)
    messages = texts.build_messages(prompt)
    generator = generator_for(endpoint, run)
    retry = {
        "max_retries": endpoint.max_retries,
        "backoff_seconds": settings.GENERATION_BACKOFF_SECONDS,
        "max_backoff_seconds": settings.GENERATION_MAX_BACKOFF_SECONDS,
        "sleep": sleep,
    }
    attempted = complete_with_retries(generator, messages, sampling, **retry)
    request = {"messages": messages, **sampling.as_dict()}
    if attempted.reply is None:
        updated = GenerationOutput.objects.filter(pk=output.pk, status=Status.RUNNING).update(
            status=Status.FAILED,
            error=attempted.error,
            attempts=output.attempts + attempted.attempts,
            request=request,
            seed=sent_seed,
            lease_until=None,
            finished_at=timezone.now(),
        )
        return Status.FAILED if updated else None
    reply = attempted.reply
    interception = detect_interception(
        text=reply.text,
        finish_reason=reply.finish_reason,
        refusal=reply.refusal,
        patterns=refusal_patterns(prompt.language),
    )
    explanation, explanation_error = "", ""
    if run.explain and interception is None:
        follow_up = texts.explanation_prompt(run.explanation_prompts, prompt.language)
        explained = complete_with_retries(
            generator,
            texts.explanation_messages(messages, reply.text, follow_up),
            sampling,
            **retry,
        )
        if explained.reply is None:
            explanation_error = explained.error
        elif explained.reply.refusal or not explained.reply.text.strip():
            explanation_error = "the model gave no explanation"
        else:
            explanation = explained.reply.text.strip()
        request["explanation_prompt"] = follow_up
    values = {
        "status": Status.INTERCEPTED if interception else Status.DONE,
        "text": reply.text,
        "finish_reason": reply.finish_reason[:32],
        "refusal": reply.refusal,
        "intercept_reason": interception.reason if interception else "",
        "intercept_detail": interception.detail if interception else "",
        "explanation": explanation,
        "explanation_error": explanation_error,
        "request": request,
        "seed": sent_seed,
        "latency_ms": reply.latency_ms,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "attempts": output.attempts + attempted.attempts,
        "error": "",
    }
    try:
        return _output_store(output_id=output.pk, values=values)
    except DomainError as exc:
        # The item import refused it (e.g. longer than an item may be): a failed output with
        # the reason, not a lane that crashes on it again and again.
        detail = "; ".join(str(e) for e in getattr(exc, "errors", [])[:3]) or exc.message
        updated = GenerationOutput.objects.filter(pk=output.pk, status=Status.RUNNING).update(
            status=Status.FAILED,
            error=f"the output could not become a candidate: {detail}",
            text=reply.text[:100_000],
            attempts=output.attempts + attempted.attempts,
            request=request,
            seed=sent_seed,
            lease_until=None,
            finished_at=timezone.now(),
        )
        return Status.FAILED if updated else None


@transaction.atomic
def _output_store(*, output_id: int, values: dict[str, Any]) -> str | None:
    # Only the output's row is locked: a plain FOR UPDATE over the join would lock the run and
    # the endpoint too, in the opposite order to a claim (endpoint, then run), and deadlock.
    output = (
        GenerationOutput.objects.select_for_update(of=("self",))
        .select_related("run", "run__study", "endpoint", "prompt", "prompt__prompt_set")
        .filter(pk=output_id, status=Status.RUNNING)
        .first()
    )
    if output is None:
        return None
    for key, value in values.items():
        setattr(output, key, value)
    output.lease_until = None
    output.finished_at = timezone.now()
    output.item = _land_candidate(output)
    output.save()
    return output.status


def _land_candidate(output: GenerationOutput) -> Item:
    """The output as a candidate of the study (through the item import: the same checks, and
    the offense filter), with its provenance in `generation`."""
    run, endpoint, prompt = output.run, output.endpoint, output.prompt
    intercepted = output.status == Status.INTERCEPTED
    fields: dict[str, Any] = {
        "id": _external_id(output),
        "text": output.text.strip() or EMPTY_OUTPUT_TEXT,
        "source": endpoint.name,
        "level": prompt.level,
        "humor_type": _humor_type(run, prompt),
        "topic": prompt.topic,
        "lang": prompt.language,
        "context": prompt.context,
        "scenario": prompt.scenario,
        "explanation": output.explanation,
        "safety_intercepted": intercepted,
        "generation": {
            "run": run.pk,
            "prompt_set": prompt.prompt_set.name,
            "prompt": prompt.external_id,
            "prompt_text": prompt.text,
            "constraints": prompt.constraints,
            "level": prompt.level,
            "topic": prompt.topic,
            "endpoint": endpoint.name,
            "kind": endpoint.kind,
            "model": endpoint.model
            if endpoint.kind == ModelEndpoint.Kind.CHAT
            else local_source().name,
            "sample": output.sample_index,
            "temperature": run.temperature,
            "top_p": run.top_p,
            "max_tokens": run.max_tokens,
            "seed": output.seed,
            "finish_reason": output.finish_reason,
            "latency_ms": output.latency_ms,
            "prompt_tokens": output.prompt_tokens,
            "completion_tokens": output.completion_tokens,
            "intercept_reason": output.intercept_reason,
            "intercept_detail": output.intercept_detail,
        },
    }
    fields = {k: v for k, v in fields.items() if v not in ("", [], None)}
    study_items_import_records(study=run.study, records=[Record(1, fields)], as_candidates=True)
    return Item.objects.get(study=run.study, external_id=fields["id"])


@transaction.atomic
def generation_run_finish_if_complete(*, run_id: int) -> bool:
    """Mark a running run done once nothing of it waits or is in progress."""
    run = GenerationRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.status != GenerationRun.Status.RUNNING:
        return False
    if run.outputs.filter(status__in=[Status.PENDING, Status.RUNNING]).exists():
        return False
    run.status = GenerationRun.Status.DONE
    run.api_key = ""
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "api_key", "finished_at"])
    return True


def generation_lane_work(*, run_id: int, endpoint_id: int, budget_seconds: float) -> str:
    """One worker's share of a run for one endpoint: take outputs and fill them until none is
    left ("finished"), the endpoint is at its limit ("busy"), the run is no longer running or
    the time budget is used ("budget": the caller queues the lane again)."""
    started = time.monotonic()
    while time.monotonic() - started < budget_seconds:
        claim = output_claim(run_id=run_id, endpoint_id=endpoint_id)
        if claim.output_id is None:
            if claim.busy:
                return "busy"
            generation_run_finish_if_complete(run_id=run_id)
            return "finished"
        output_generate(output_id=claim.output_id)
    return "budget"
