"""Screening runs: compute the candidates' features in batches, rank them by FunnyScore within
each model, and promote the top K per model into the human study.

Which items a run screens: the study's candidates (stage "candidate"), and candidates held by the
offense filter, which get an outcome saying so but stay held. Items an earlier run dropped are
not ranked again: a run's decision is final, so running twice over the same pool never promotes
a second top K per model. New material comes in as new candidates.

Batches fan out as one Celery task each (more workers, more speed). There is no result backend,
so no chord: each batch counts itself done with an F() update, and the task that completes the
last batch takes the finishing step by a conditional UPDATE on the run's status, which exactly
one task can win.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.analysis.services import study_results_request
from apps.core.errors import Conflict, DomainError
from apps.screening import calibration as calib
from apps.screening.models import (
    FunnyScoreCalibration,
    ItemFeatures,
    ScreeningOutcome,
    ScreeningRun,
)
from apps.screening.selectors import (
    calibration_default_stored,
    calibration_for_item,
    calibrations_applied,
    coefficients_of,
    features_of,
    screening_pool,
)
from apps.studies.models import Item, Study

logger = logging.getLogger(__name__)

TOP_K_MAX = 1000
ACTIVE = (ScreeningRun.Status.QUEUED, ScreeningRun.Status.RUNNING)
REASON_HELD = "held by the offense filter"
REASON_ATTENTION = "attention check: goes into the study unscreened"


def _parse_top_k(top_k: object) -> int:
    try:
        value = int(str(top_k).strip())
    except (TypeError, ValueError):
        raise DomainError(
            f"top K must be a whole number from 1 to {TOP_K_MAX}, not {top_k!r}", field="top_k"
        ) from None
    if not 1 <= value <= TOP_K_MAX:
        raise DomainError(f"top K must be from 1 to {TOP_K_MAX}, not {value}", field="top_k")
    return value


def _stale_before(run: ScreeningRun, now: datetime) -> bool:
    # The longest a healthy run can take: every batch run one after another by one worker, each
    # up to the task time limit. Past that a batch was lost (its message, or its worker), and
    # the run would otherwise block the study's screening forever.
    limit = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT * max(1, run.batches_total + 1))
    return run.created_at < now - limit


def _enqueue(run_id: int, batches: Sequence[Sequence[int]]) -> None:
    from apps.screening.tasks.runs import screening_batch_task

    try:
        for batch in batches:
            screening_batch_task.delay(run_id, list(batch))
    except Exception:  # the broker is down: say so on the page instead of running forever
        logger.warning("could not queue screening run %s", run_id, exc_info=True)
        ScreeningRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=ScreeningRun.Status.FAILED,
            error="the run could not be queued (the task queue is unavailable); try again",
            finished_at=timezone.now(),
        )


@transaction.atomic
def screening_run_start(
    *, study: Study, user: AbstractBaseUser | AnonymousUser | None, top_k: object = None
) -> ScreeningRun:
    """Queue a screening run of the study's candidates; batches start after commit.

    Refused, storing nothing: a top K outside 1..1000, a run of this study still queued or
    running, a study without candidates."""
    k = _parse_top_k(study.screening_top_k if top_k is None or top_k == "" else top_k)
    # The study row's lock serializes two starts of the same study on PostgreSQL (SQLite
    # serializes all writers anyway), so the active-run check below cannot race.
    locked = Study.objects.select_for_update().get(pk=study.pk)
    now = timezone.now()
    for active in ScreeningRun.objects.filter(study=locked, status__in=ACTIVE):
        if not _stale_before(active, now):
            raise Conflict(
                f"screening run {active.pk} of this study is still {active.status}; "
                "wait for it to finish",
                field="run",
            )
        ScreeningRun.objects.filter(pk=active.pk, status__in=ACTIVE).update(
            status=ScreeningRun.Status.FAILED,
            error="did not finish in time (a batch was lost); superseded by a new run",
            finished_at=now,
        )
    ids = list(screening_pool(study=locked).values_list("pk", flat=True))
    if not screening_pool(study=locked).filter(stage=Item.Stage.CANDIDATE).exists():
        raise DomainError(
            "the study has no candidates to screen; import items as candidates first",
            field="items",
        )
    size = int(settings.SCREENING_BATCH_SIZE)
    batches = [ids[start : start + size] for start in range(0, len(ids), size)]
    run = ScreeningRun.objects.create(
        study=locked,
        top_k=k,
        batch_size=size,
        batches_total=len(batches),
        created_by=user if isinstance(user, User) else None,
    )
    transaction.on_commit(lambda: _enqueue(run.pk, batches))
    return run


def _fail(run_id: int, exc: BaseException) -> None:
    message = exc.message if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}"
    ScreeningRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
        status=ScreeningRun.Status.FAILED, error=message[:2000], finished_at=timezone.now()
    )


def _features_compute(item_ids: Sequence[int]) -> None:
    # Imported here: the features service loads the embedding and language models lazily, and
    # this module must import without them.
    if not item_ids:
        return
    from apps.screening.services.features import item_features_compute

    item_features_compute(item_ids=list(item_ids))


def screening_run_batch(*, run_id: int, item_ids: Sequence[int]) -> ScreeningRun | None:
    """Compute one batch's features; the task completing the last batch finishes the run.

    Safe to retry: features are upserted, and a run already done or failed is left alone. A
    redelivered batch may be counted twice; the finishing step then computes whatever features
    are still missing itself, so no candidate is ranked without them."""
    ScreeningRun.objects.filter(pk=run_id, status=ScreeningRun.Status.QUEUED).update(
        status=ScreeningRun.Status.RUNNING
    )
    if not ScreeningRun.objects.filter(pk=run_id, status=ScreeningRun.Status.RUNNING).exists():
        return ScreeningRun.objects.filter(pk=run_id).first()  # gone, failed or finished
    try:
        _features_compute(item_ids)
    except Exception as exc:
        logger.exception("screening run %s: a batch failed", run_id)
        _fail(run_id, exc)
        return ScreeningRun.objects.filter(pk=run_id).first()
    ScreeningRun.objects.filter(
        pk=run_id, status=ScreeningRun.Status.RUNNING, batches_done__lt=F("batches_total")
    ).update(batches_done=F("batches_done") + 1)
    run = ScreeningRun.objects.select_related("study").filter(pk=run_id).first()
    if run is None or run.status != ScreeningRun.Status.RUNNING:
        return run
    if run.batches_done < run.batches_total:
        return run
    try:
        # Outside the finishing transaction: the models may take a while, and two tasks doing
        # this at once only upsert the same rows.
        _features_compute(_without_features(run))
        with transaction.atomic():
            # Exactly one task wins this UPDATE; the others see status done (or wait on the row
            # lock until the winner commits, then match nothing).
            won = ScreeningRun.objects.filter(
                pk=run_id,
                status=ScreeningRun.Status.RUNNING,
                batches_done__gte=F("batches_total"),
            ).update(status=ScreeningRun.Status.DONE, finished_at=timezone.now())
            if won:
                screening_run_finish(
                    run=ScreeningRun.objects.select_related("study").get(pk=run_id)
                )
    except Exception as exc:
        logger.exception("screening run %s: finishing failed", run_id)
        _fail(run_id, exc)
    return ScreeningRun.objects.filter(pk=run_id).first()


def _missing_reason(features: ItemFeatures | None) -> str:
    if features is None:
        return "no features were computed"  # the features service skipped the item
    parts = [
        f"{name}: {reason or 'missing'}"
        for name, reason in (
            ("surprise", features.surprise_missing),
            ("coherence", features.coherence_missing),
            ("valence", features.valence_missing),
        )
    ]
    return "; ".join(parts)


def _score(features: ItemFeatures | None, calibration: FunnyScoreCalibration) -> float | None:
    if features is None:
        return None
    return calib.funny_score(
        features.surprise,
        features.coherence,
        features.valence_penalty,
        coefficients_of(calibration),
    )


def _without_features(run: ScreeningRun) -> list[int]:
    """The run's items that have no features yet: none, unless a redelivered batch was counted
    twice, or an item was imported between the start's query and the run's creation."""
    items = screening_pool(study=run.study).filter(created_at__lte=run.created_at)
    return list(items.filter(features__isnull=True).values_list("pk", flat=True))


def screening_run_finish(*, run: ScreeningRun) -> list[ScreeningOutcome]:
    """Score, rank and decide every candidate of the run; call inside the finishing transaction.

    Within each model (Item.source) the scored candidates are ranked by FunnyScore, highest
    first, ties broken by external id; the top K go into the study, the rest are dropped. Held
    candidates stay held; candidates with no computable score are dropped, saying why; attention
    checks are not jokes to screen and go into the study."""
    study = run.study
    # Items imported after the run started wait for the next run.
    ids = list(
        screening_pool(study=study)
        .filter(created_at__lte=run.created_at)
        .values_list("pk", flat=True)
    )
    items = list(screening_pool(study=study).filter(pk__in=ids).select_related("features"))
    current = calibrations_applied(study=study)
    if not any(c.scope == "all" for c in current):
        # Stored, so each outcome names the coefficients that scored it.
        default = calibration_default_stored(study=study)
        if default.pk is None:
            default.save()
    else:
        default = next(c for c in current if c.scope == "all")

    outcomes: list[ScreeningOutcome] = []
    ranked: dict[str, list[tuple[float, str, Item, FunnyScoreCalibration]]] = defaultdict(list)
    for item in items:
        features = features_of(item=item)
        used = calibration_for_item(item=item, calibrations=current, default=default)
        score = _score(features, used)
        if item.stage == Item.Stage.HELD:
            outcomes.append(_outcome(run, item, score, None, False, REASON_HELD, used))
        elif item.is_attention_check:
            outcomes.append(_outcome(run, item, score, None, True, REASON_ATTENTION, used))
        elif score is None:
            reason = f"no FunnyScore: every feature is missing ({_missing_reason(features)})"
            outcomes.append(_outcome(run, item, None, None, False, reason, used))
        else:
            ranked[item.source].append((score, item.external_id, item, used))
    for source, entries in sorted(ranked.items()):
        entries.sort(key=lambda entry: (-entry[0], entry[1]))
        total = len(entries)
        for position, (score, _, item, used) in enumerate(entries, start=1):
            kept = position <= run.top_k
            where = "in the top" if kept else "below the top"
            reason = f"rank {position} of {total} for {source}: {where} {run.top_k}"
            outcomes.append(_outcome(run, item, score, position, kept, reason, used))

    kept_ids = [o.item_id for o in outcomes if o.kept]
    dropped_ids = [o.item_id for o in outcomes if not o.kept and o.reason != REASON_HELD]
    # Conditional on the stage: an item the offense filter held meanwhile stays held.
    promoted = Item.objects.filter(pk__in=kept_ids, stage=Item.Stage.CANDIDATE).update(
        stage=Item.Stage.STUDY
    )
    if promoted:
        # The study's items are part of its results (every model's items, rated or not).
        study_results_request(study_id=study.pk)
    Item.objects.filter(pk__in=dropped_ids, stage=Item.Stage.CANDIDATE).update(
        stage=Item.Stage.DROPPED
    )
    ScreeningOutcome.objects.filter(run=run).delete()
    return ScreeningOutcome.objects.bulk_create(outcomes)


def _outcome(
    run: ScreeningRun,
    item: Item,
    score: float | None,
    rank: int | None,
    kept: bool,
    reason: str,
    used: FunnyScoreCalibration,
) -> ScreeningOutcome:
    return ScreeningOutcome(
        run=run,
        item=item,
        funny_score=score,
        rank=rank,
        kept=kept,
        reason=reason[:300],
        # An unsaved default cannot be referenced; every stored set has "all", so this is rare.
        calibration=used if used.pk is not None else None,
    )
