"""The optional LLM judge: start a run, judge a batch of items, compare the judge with the humans.

A run is a chain of batch tasks queued after commit, one batch after the other; each batch asks
the judge about its items with at most `parallelism` calls in flight (no transaction is held
during the HTTP calls) and stores one verdict per item and model. Chained rather than queued side
by side, so that a run never has more calls in flight than the study's parallelism, however many
workers there are.

The judge is the study's own (`StudyJudgeConfig`, set on the judge page or through the API) or,
without one, the deployment's LLM_JUDGE_* settings. No key is stored with a study: see
`apps.screening.llm_judge.settings_api_key`.

When a run is finished, the comparison is fresh: every batch task recomputes it after storing its
verdicts (`judge_batch_run`), rather than counting finished batches to find the last one. With
tens of items per batch the recomputation costs a few milliseconds against seconds of HTTP calls,
there is no counter to keep right when a batch is redelivered, and the page shows a comparison
that grows as the run progresses. The recomputations are serialised on the study row, so the
last one to run reads every verdict committed before it and its result is the one that stays.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.core import outbound
from apps.core.errors import DomainError
from apps.screening.judge_compare import compare_judge_with_humans
from apps.screening.llm_judge import (
    KEYS_SETTINGS,
    JudgeConfig,
    JudgeResult,
    Scale,
    judge_config,
    judge_item,
    rubric_scales,
)
from apps.screening.models import JudgeComparison, JudgeVerdict, StudyJudgeConfig
from apps.screening.selectors import human_means
from apps.screening.services.tiers import screening_tiers_compute
from apps.studies.models import Item, Study
from apps.studies.selectors import study_primary_name, study_questions

logger = logging.getLogger(__name__)

JUDGED_STAGES = (Item.Stage.STUDY, Item.Stage.CANDIDATE)
MAX_BATCH_SIZE = 20


def _config_or_error(study: Study) -> JudgeConfig:
    config = judge_config(study=study)
    if not config.url:
        raise DomainError(
            "The LLM judge is not configured: set it up on the study's LLM judge page, or set "
            "LLM_JUDGE_URL (and LLM_JUDGE_MODEL) in the server's environment.",
            field="LLM_JUDGE_URL",
        )
    if config.url_problem:
        raise DomainError(config.url_problem, field=config.url_field)
    if not config.model:
        raise DomainError(
            "The LLM judge has no model: set LLM_JUDGE_MODEL in the server's environment.",
            field=config.model_field,
        )
    return config


# --- the study's own judge ------------------------------------------------------------------------


def _clean_text(value: object, *, field: str, max_length: int) -> str:
    if not isinstance(value, str):
        raise DomainError(f"{field} must be text", field=field)
    text = value.strip()
    if not text:
        raise DomainError(f"{field} must not be empty", field=field)
    if len(text) > max_length:
        raise DomainError(f"{field} is longer than {max_length} characters", field=field)
    if "\x00" in text:
        raise DomainError(f"{field} contains a NUL character", field=field)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise DomainError(
            f"{field} contains an unpaired surrogate (not valid Unicode)", field=field
        ) from None
    return text


def _number(value: object, *, field: str, low: float, high: float, integer: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DomainError(f"{field} must be a number", field=field)
    if integer and int(value) != value:
        raise DomainError(f"{field} must be a whole number", field=field)
    if not low <= value <= high:
        raise DomainError(f"{field} must be from {low:g} to {high:g}", field=field)
    return value


@transaction.atomic
def judge_config_save(
    *, study: Study, url: object, model: object, timeout_seconds: object, parallelism: object
) -> StudyJudgeConfig:
    """Give the study its own judge (replacing the one it had). Checked whole before anything is
    written; the URL like a generation endpoint's: http(s) only, no credentials in it, and no
    private or loopback address unless OUTBOUND_ALLOWED_NETWORKS allows it. There is no key to
    give: the judge is sent the key the server's settings hold for this URL, if any."""
    clean_url = _clean_text(url, field="url", max_length=500)
    problem = outbound.url_problem(clean_url, keys_setting=KEYS_SETTINGS)
    if problem:
        raise DomainError(problem, field="url")
    clean_model = _clean_text(model, field="model", max_length=200)
    timeout = _number(
        timeout_seconds,
        field="timeout_seconds",
        low=0.1,
        high=StudyJudgeConfig.MAX_TIMEOUT_SECONDS,
        integer=False,
    )
    calls = _number(
        parallelism,
        field="parallelism",
        low=1,
        high=StudyJudgeConfig.MAX_PARALLELISM,
        integer=True,
    )
    stored, _ = StudyJudgeConfig.objects.update_or_create(
        study=study,
        defaults={
            "url": clean_url,
            "model": clean_model,
            "timeout_seconds": float(timeout),
            "parallelism": int(calls),
        },
    )
    return stored


def judge_config_reset(*, study: Study) -> None:
    """Back to the deployment's judge (its LLM_JUDGE_* settings)."""
    StudyJudgeConfig.objects.filter(study=study).delete()


def _scales_or_error(study: Study) -> list[Scale]:
    scales = rubric_scales(study_questions(study=study))
    if not scales:
        raise DomainError(
            f"The rubric {study.rubric.name!r} has no rating-scale questions for the judge to answer.",
            field="rubric",
        )
    return scales


def judge_batch_size(*, timeout_seconds: float, parallelism: int = 1) -> int:
    """Items per task, so that a batch of items that all time out still ends well inside the
    task's soft time limit (an item can take up to twice the timeout: connecting, then reading;
    `parallelism` items are asked at once)."""
    budget = settings.CELERY_TASK_SOFT_TIME_LIMIT / 2
    rounds = max(1, min(MAX_BATCH_SIZE, math.floor(budget / (2 * timeout_seconds))))
    return rounds * max(1, parallelism)


def _enqueue(study_id: int, batches: list[list[int]]) -> None:
    from celery import chain

    from apps.screening.tasks.judge import judge_batch_task

    try:
        chain(*(judge_batch_task.si(study_id, batch) for batch in batches)).delay()
    except Exception:  # the broker is down: the items keep their old verdicts (or none)
        logger.warning(
            "could not queue the judge's %s batches for study %s",
            len(batches),
            study_id,
            exc_info=True,
        )


@transaction.atomic
def judge_run_start(*, study: Study) -> int:
    """Queue the judge on the study's items (in the study and candidates; not attention checks),
    in batches that start after commit. Returns the number of items queued; stores nothing."""
    config = _config_or_error(study)
    _scales_or_error(study)
    item_ids = list(
        Item.objects.filter(study=study, is_attention_check=False, stage__in=JUDGED_STAGES)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    if not item_ids:
        raise DomainError("The study has no items for the judge to rate.", field="items")
    size = judge_batch_size(timeout_seconds=config.timeout_seconds, parallelism=config.parallelism)
    batches = [item_ids[i : i + size] for i in range(0, len(item_ids), size)]
    transaction.on_commit(lambda: _enqueue(study.pk, batches))
    return len(item_ids)


def _results(
    items: list[Item], scales: list[Scale], config: JudgeConfig
) -> Iterator[tuple[Item, JudgeResult]]:
    """Each item with the judge's answer, as the answers arrive: at most `parallelism` calls in
    flight. Only the HTTP calls run in the threads; verdicts are stored by the caller's thread,
    on its own database connection."""
    if config.parallelism <= 1 or len(items) <= 1:
        for item in items:
            yield item, judge_item(item=item, scales=scales, config=config)
        return
    with ThreadPoolExecutor(max_workers=config.parallelism) as pool:
        futures = [
            (item, pool.submit(judge_item, item=item, scales=scales, config=config))
            for item in items
        ]
        for item, future in futures:
            yield item, future.result()


def judge_items(*, study: Study, item_ids: list[int]) -> dict[str, int]:
    """Ask the judge about each item and store its verdict (one per item and model, replaced on a
    re-run). A failed call is stored as a verdict with its status and message, never raised.
    Items no longer in the study are skipped. Returns the number of verdicts per status."""
    config = _config_or_error(study)
    scales = _scales_or_error(study)
    counts: Counter[str] = Counter(dict.fromkeys(JudgeVerdict.Status.values, 0))
    items = list(Item.objects.filter(study=study, pk__in=item_ids).order_by("pk"))
    for item, result in _results(items, scales, config):
        # Autocommit per item: a batch cut short keeps the verdicts it already has.
        JudgeVerdict.objects.update_or_create(
            item=item,
            model_name=config.model,
            defaults={
                "status": result.status,
                "scores": result.scores,
                "error": result.error,
                "raw_reply": result.raw_reply,
                "latency_ms": result.latency_ms,
            },
        )
        counts[result.status] += 1
    return dict(counts)


@transaction.atomic
def judge_comparison_compute(
    *, study: Study, model_name: str, seed: int, rounds: int = 1000
) -> JudgeComparison:
    """Compare the judge's answer to the rubric's primary question with the humans' mean answer,
    per humor type, from the stored verdicts (status ok) of items the humans rated; store it
    (one per study and model)."""
    if rounds < 10:
        raise DomainError("at least 10 bootstrap rounds are needed for an interval", field="rounds")
    # Serialises concurrent recomputations of one study (see the module docstring).
    Study.objects.select_for_update().filter(pk=study.pk).first()
    question = study_primary_name(study=study)
    human = human_means(study=study, question=question)
    verdicts = (
        JudgeVerdict.objects.filter(
            item__study=study,
            item__is_attention_check=False,
            model_name=model_name,
            status=JudgeVerdict.Status.OK,
        )
        .order_by("item_id")
        .values_list("item_id", "item__humor_type", "scores")
    )
    judge_scores: list[float] = []
    human_values: list[float] = []
    humor_types: list[str] = []
    for item_id, humor_type, scores in verdicts:
        value = scores.get(question) if isinstance(scores, dict) else None
        if item_id not in human or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        judge_scores.append(float(value))
        human_values.append(human[item_id][0])
        humor_types.append(humor_type or "")
    comparison = compare_judge_with_humans(
        judge=judge_scores, human=human_values, humor_types=humor_types, seed=seed, rounds=rounds
    )
    payload = comparison.as_payload()
    payload["question"] = question
    stored, _ = JudgeComparison.objects.update_or_create(
        study=study,
        model_name=model_name,
        defaults={
            "payload": payload,
            "seed": seed,
            "rounds": rounds,
            "computed_at": timezone.now(),
        },
    )
    screening_tiers_compute(study=study, rounds=rounds)
    return stored


def judge_batch_run(*, study: Study, item_ids: list[int]) -> dict[str, int]:
    """One batch of a run: judge the items, then refresh the comparison with the humans."""
    counts = judge_items(study=study, item_ids=item_ids)
    judge_comparison_compute(
        study=study,
        model_name=judge_config(study=study).model,
        seed=study.random_seed,
        rounds=settings.BOOTSTRAP_ROUNDS,
    )
    return counts


@transaction.atomic
def judge_verdicts_load(*, study: Study, data: bytes, seed: int, rounds: int) -> int:
    """Store verdicts recorded elsewhere (one JSON object per line: `item` (external id),
    `model`, `scores`, optional `latency_ms`), replacing that model's verdict on each item, then
    refresh the comparison with the humans. Checked whole before anything is written: a bad line
    is an error naming it. Returns the number of verdicts stored. The demo uses it for its
    simulated judge."""
    from apps.core import jsonsafe

    items = dict(Item.objects.filter(study=study).values_list("external_id", "pk"))
    rows: list[tuple[int, str, dict[str, int], float | None]] = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = jsonsafe.loads(line)
        except jsonsafe.JsonRejected as exc:
            raise DomainError(f"line {number}: {exc}", field=exc.path or "data") from None
        except ValueError:
            raise DomainError(f"line {number}: not a JSON object", field="data") from None
        if not isinstance(row, dict):
            raise DomainError(f"line {number}: not a JSON object", field="data")
        item = items.get(str(row.get("item", "")))
        model = str(row.get("model", "")).strip()
        scores = row.get("scores")
        latency = row.get("latency_ms")
        if item is None:
            raise DomainError(
                f"line {number}: no item {row.get('item')!r} in the study", field="item"
            )
        if not model:
            raise DomainError(f"line {number}: model is missing", field="model")
        if not isinstance(scores, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in scores.values()
        ):
            raise DomainError(
                f"line {number}: scores must map questions to integers", field="scores"
            )
        if latency is not None and not isinstance(latency, int | float):
            raise DomainError(f"line {number}: latency_ms must be a number", field="latency_ms")
        rows.append((item, model, scores, None if latency is None else float(latency)))
    for item_id, model, scores, latency in rows:
        JudgeVerdict.objects.update_or_create(
            item_id=item_id,
            model_name=model,
            defaults={
                "status": JudgeVerdict.Status.OK,
                "scores": scores,
                "error": "",
                "raw_reply": "",
                "latency_ms": latency,
            },
        )
    for model in sorted({model for _, model, _, _ in rows}):
        judge_comparison_compute(study=study, model_name=model, seed=seed, rounds=rounds)
    return len(rows)
