"""Screening runs: the sieve of the method, stage by stage, over a study's candidates.

1. the offense filter: a held candidate stays held (it is never ranked);
2. L1: features in batches, FunnyScore, a rank within each model and level; at most `l1_keep`
   per model and level (0 = all) with a FunnyScore of at least `l1_min_score` (if set) pass;
3. L2, when an LLM judge is configured at the start: the judge rates the L1 survivors that have
   no verdict of that judge yet (in batches), and a survivor it rates below `judge_min`
   funniness is dropped; one it could not rate (timeout, error) is not sieved by it;
4. the survivors are ranked by FunnyScore within model and level, and the top K go into the
   human study; the rest are screened out.

Every candidate's outcome keeps each stage's number (FunnyScore and L1 rank, the judge's score
or status, the final rank), the stage that decided and why. A rerun (`screening_run_rerun`)
decides the same candidates again with another K and other thresholds from the stored features
and verdicts: nothing is recomputed, only candidates the judge never saw are judged.

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
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_noop

from apps.analysis.services import study_results_request
from apps.core.errors import Conflict, DomainError
from apps.core.sentences import Sentence, label
from apps.screening import scoring
from apps.screening.llm_judge import judge_config
from apps.screening.models import (
    FunnyScoreCalibration,
    ItemFeatures,
    JudgeVerdict,
    ScreeningOutcome,
    ScreeningRun,
)
from apps.screening.selectors import (
    calibration_default_stored,
    calibration_for_item,
    calibrations_applied,
    features_of,
    screening_pool,
)
from apps.screening.services.tiers import screening_tiers_compute
from apps.studies.models import Item, Study
from apps.studies.selectors import study_primary_name, study_primary_question

logger = logging.getLogger(__name__)

TOP_K_MAX = 1000
L1_KEEP_MAX = 100_000
# Without other instructions, L1 passes twice K per model and level to the judge, and the judge
# drops what it rates below 3 of 7 funniness (below "a knowing smile", with room for its known
# harshness on absurd and self-deprecating humor).
L1_KEEP_PER_K = 2
JUDGE_MIN_DEFAULT = 3.0
ACTIVE = (ScreeningRun.Status.QUEUED, ScreeningRun.Status.RUNNING)
# The reasons are stored in English and as sentences (id and parameters) rendered in the
# reader's language where they are shown (apps/core/sentences.py).
REASON_HELD = gettext_noop("held by the offense filter")
REASON_ATTENTION = gettext_noop("attention check: goes into the study unscreened")
REASON_INTERCEPTED = gettext_noop("intercepted by a guardrail at generation")


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


def _parse_count(value: object, *, field: str, maximum: int) -> int:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise DomainError(
            f"{field} must be a whole number from 0 to {maximum}, not {value!r}", field=field
        ) from None
    if not 0 <= number <= maximum:
        raise DomainError(f"{field} must be from 0 to {maximum}, not {number}", field=field)
    return number


def _parse_threshold(value: object, *, field: str, low: float, high: float) -> float | None:
    if value is None or str(value).strip() == "":
        return None
    try:
        number = float(str(value).strip())
    except ValueError:
        raise DomainError(
            f"{field} must be a number or empty, not {value!r}", field=field
        ) from None
    if not math.isfinite(number) or not low <= number <= high:
        raise DomainError(f"{field} must be from {low:g} to {high:g}, not {value!r}", field=field)
    return number


@dataclass(frozen=True)
class JudgedScale:
    """The question the judge stage sieves on (the rubric's primary question) and its scale."""

    name: str
    low: float
    high: float

    @property
    def default_minimum(self) -> float:
        # A third of the way up: 3 of the humor scorecard's 1-7 funniness ("a knowing smile"
        # is 4), the same place on any other scale.
        return self.low + (self.high - self.low) * (JUDGE_MIN_DEFAULT - 1) / 6


def judged_scale(*, study: Study) -> JudgedScale | None:
    question = study_primary_question(study=study)
    if question is None:
        return None
    return JudgedScale(
        name=question.name, low=float(question.min_value), high=float(question.max_value)
    )


def judge_stage_model(*, study: Study | None = None) -> str:
    """The judge a run of `study` started now would use as its L2 stage ("" when none is
    configured): the study's own judge, else the deployment's."""
    config = judge_config(study=study)
    return config.model if config.url and not config.url_problem and config.model else ""


@dataclass(frozen=True)
class SieveSettings:
    top_k: int
    l1_keep: int
    l1_min_score: float | None
    judge_min: float | None


def sieve_settings_parse(
    *,
    study: Study,
    judge_model: str,
    top_k: object = None,
    l1_keep: object = None,
    l1_min_score: object = None,
    judge_min: object = None,
) -> SieveSettings:
    """The run's K and thresholds. None takes the documented default (L1 passes 2K per model
    and level to a judge, all without one; a judge minimum of 3 with a judge); an empty string
    for a minimum means no minimum."""
    k = _parse_top_k(study.screening_top_k if top_k is None or top_k == "" else top_k)
    if l1_keep is None or str(l1_keep).strip() == "":
        keep = L1_KEEP_PER_K * k if judge_model else 0
    else:
        keep = _parse_count(l1_keep, field="l1_keep", maximum=L1_KEEP_MAX)
    minimum = _parse_threshold(l1_min_score, field="l1_min_score", low=-1e6, high=1e6)
    scale = judged_scale(study=study)
    if scale is None:
        judged = None
    elif judge_min is None:
        judged = scale.default_minimum if judge_model else None
    else:
        judged = _parse_threshold(judge_min, field="judge_min", low=scale.low, high=scale.high)
    return SieveSettings(top_k=k, l1_keep=keep, l1_min_score=minimum, judge_min=judged)


def _lock_for_new_run(study: Study) -> Study:
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
    return locked


@transaction.atomic
def screening_run_start(
    *,
    study: Study,
    user: AbstractBaseUser | AnonymousUser | None,
    top_k: object = None,
    l1_keep: object = None,
    l1_min_score: object = None,
    judge_min: object = None,
) -> ScreeningRun:
    """Queue a screening run of the study's candidates; batches start after commit.

    Refused, storing nothing: a top K outside 1..1000 or a malformed threshold, a run of this
    study still queued or running, a study without candidates."""
    judge_model = judge_stage_model(study=study)
    sieve = sieve_settings_parse(
        study=study,
        judge_model=judge_model,
        top_k=top_k,
        l1_keep=l1_keep,
        l1_min_score=l1_min_score,
        judge_min=judge_min,
    )
    locked = _lock_for_new_run(study)
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
        top_k=sieve.top_k,
        l1_keep=sieve.l1_keep,
        l1_min_score=sieve.l1_min_score,
        judge_model=judge_model,
        judge_min=sieve.judge_min,
        batch_size=size,
        batches_total=len(batches),
        created_by=user if isinstance(user, User) else None,
    )
    ScreeningRun.objects.filter(pk=run.pk).update(pool_cutoff=run.created_at)
    run.pool_cutoff = run.created_at
    transaction.on_commit(lambda: _enqueue(run.pk, batches))
    return run


@transaction.atomic
def screening_run_rerun(
    *,
    run: ScreeningRun,
    user: AbstractBaseUser | AnonymousUser | None,
    top_k: object = None,
    l1_keep: object = None,
    l1_min_score: object = None,
    judge_min: object = None,
) -> ScreeningRun:
    """Decide the latest finished run's candidates again with another K and other thresholds.

    The features and judge verdicts stored are reused (candidates the judge never saw are
    judged). What the earlier run decided is undone first: its promoted candidates that no one
    has rated yet and its dropped ones become candidates again; promoted ones that people
    already rated stay in the study (their outcome says so). Refused when the run is not the
    study's latest, not done, or a run is active."""
    run = ScreeningRun.objects.select_related("study").get(pk=run.pk)
    study = run.study
    latest = ScreeningRun.objects.filter(study=study).order_by("-created_at", "-pk").first()
    if latest is None or latest.pk != run.pk:
        raise Conflict("only the latest screening run can be rerun", field="run")
    if run.status != ScreeningRun.Status.DONE:
        raise Conflict(f"screening run {run.pk} is {run.status}, not done", field="run")
    judge_model = run.judge_model if run.judge_model else judge_stage_model(study=run.study)
    sieve = sieve_settings_parse(
        study=study,
        judge_model=judge_model,
        top_k=top_k,
        l1_keep=l1_keep,
        l1_min_score=l1_min_score,
        judge_min=judge_min,
    )
    locked = _lock_for_new_run(study)
    outcomes = list(ScreeningOutcome.objects.filter(run=run).select_related("item"))
    ids = [o.item_id for o in outcomes]
    rated = set(_rated_item_ids(ids))
    Item.objects.filter(
        pk__in=[o.item_id for o in outcomes if o.kept and o.item_id not in rated],
        stage=Item.Stage.STUDY,
    ).update(stage=Item.Stage.CANDIDATE)
    Item.objects.filter(pk__in=ids, stage=Item.Stage.DROPPED).update(stage=Item.Stage.CANDIDATE)
    study_results_request(study_id=study.pk)
    rerun = ScreeningRun.objects.create(
        study=locked,
        status=ScreeningRun.Status.RUNNING,
        top_k=sieve.top_k,
        l1_keep=sieve.l1_keep,
        l1_min_score=sieve.l1_min_score,
        judge_model=judge_model,
        judge_min=sieve.judge_min,
        batch_size=run.batch_size,
        batches_total=0,
        rerun_of=run,
        pool_cutoff=run.pool_cutoff or run.created_at,
        created_by=user if isinstance(user, User) else None,
    )
    rerun_id = rerun.pk
    transaction.on_commit(lambda: _advance(rerun_id))
    return rerun


def _rated_item_ids(item_ids: Sequence[int]) -> list[int]:
    from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment

    rated = set(
        ScoreResponse.objects.filter(item_id__in=item_ids).values_list("item_id", flat=True)
    )
    rated |= set(
        TuringJudgment.objects.filter(item_id__in=item_ids).values_list("item_id", flat=True)
    )
    for side in ("left_id", "right_id"):
        rated |= set(
            PairJudgment.objects.filter(**{f"{side}__in": item_ids}).values_list(side, flat=True)
        )
    return sorted(rated)


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
    except Exception as exc:
        logger.exception("screening run %s: finishing failed", run_id)
        _fail(run_id, exc)
        return ScreeningRun.objects.filter(pk=run_id).first()
    _advance(run_id)
    return ScreeningRun.objects.filter(pk=run_id).first()


def _advance(run_id: int) -> None:
    """Past the features: queue the judge on L1's survivors that it has not rated, or, when
    there are none (or no judge), decide. Every step is conditional on the run's state, so two
    tasks reaching it at once queue the judge once and decide once."""
    try:
        run = ScreeningRun.objects.select_related("study").get(pk=run_id)
        if run.status != ScreeningRun.Status.RUNNING:
            return
        if run.judge_model and run.judge_batches_total == 0:
            unjudged = _unjudged_survivors(run)
            if unjudged:
                _queue_judge(run, unjudged)
                return
        with transaction.atomic():
            # Exactly one task wins this UPDATE; the others see status done (or wait on the row
            # lock until the winner commits, then match nothing).
            won = ScreeningRun.objects.filter(
                pk=run_id,
                status=ScreeningRun.Status.RUNNING,
                batches_done__gte=F("batches_total"),
                judge_batches_done__gte=F("judge_batches_total"),
            ).update(status=ScreeningRun.Status.DONE, finished_at=timezone.now())
            if won:
                screening_run_finish(
                    run=ScreeningRun.objects.select_related("study").get(pk=run_id)
                )
    except Exception as exc:
        logger.exception("screening run %s: finishing failed", run_id)
        _fail(run_id, exc)


def _queue_judge(run: ScreeningRun, item_ids: list[int]) -> None:
    from apps.screening.services.judge import judge_batch_size

    config = judge_config(study=run.study)
    size = judge_batch_size(timeout_seconds=config.timeout_seconds, parallelism=config.parallelism)
    batches = [item_ids[start : start + size] for start in range(0, len(item_ids), size)]
    with transaction.atomic():
        won = ScreeningRun.objects.filter(
            pk=run.pk, status=ScreeningRun.Status.RUNNING, judge_batches_total=0
        ).update(judge_batches_total=len(batches))
        if won:
            run_id = run.pk
            transaction.on_commit(lambda: _enqueue_judge(run_id, batches))


def _enqueue_judge(run_id: int, batches: Sequence[Sequence[int]]) -> None:
    from celery import chain

    from apps.screening.tasks.runs import screening_judge_batch_task

    try:
        # One batch after the other, as for the judge's own runs: no more calls in flight than
        # the judge's parallelism (apps.screening.services.judge).
        chain(*(screening_judge_batch_task.si(run_id, list(batch)) for batch in batches)).delay()
    except Exception:  # the broker is down: say so on the page instead of running forever
        logger.warning("could not queue the judge of screening run %s", run_id, exc_info=True)
        ScreeningRun.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=ScreeningRun.Status.FAILED,
            error="the judge could not be queued (the task queue is unavailable); try again",
            finished_at=timezone.now(),
        )


def screening_run_judge_batch(*, run_id: int, item_ids: Sequence[int]) -> ScreeningRun | None:
    """The L2 stage for one batch: the judge rates these L1 survivors (each failure is stored as
    that item's verdict); the task completing the last batch decides the run."""
    from apps.screening.services.judge import judge_batch_run

    run = ScreeningRun.objects.select_related("study__rubric").filter(pk=run_id).first()
    if run is None or run.status != ScreeningRun.Status.RUNNING:
        return run
    try:
        judge_batch_run(study=run.study, item_ids=[int(pk) for pk in item_ids])
    except DomainError as exc:  # the judge's settings changed under the run
        _fail(run_id, exc)
        return ScreeningRun.objects.filter(pk=run_id).first()
    ScreeningRun.objects.filter(
        pk=run_id,
        status=ScreeningRun.Status.RUNNING,
        judge_batches_done__lt=F("judge_batches_total"),
    ).update(judge_batches_done=F("judge_batches_done") + 1)
    run = ScreeningRun.objects.filter(pk=run_id).first()
    if run is not None and run.judge_batches_done >= run.judge_batches_total:
        _advance(run_id)
    return ScreeningRun.objects.filter(pk=run_id).first()


def _missing_reason(features: ItemFeatures | None) -> Sentence:
    if features is None:
        # The features service skipped the item.
        return Sentence(
            gettext_noop("no L1 score: what it reads is missing (no features were computed)")
        )
    # Each feature's own explanation is the feature service's diagnostic, kept as it is.
    return Sentence(
        gettext_noop(
            "no L1 score: what it reads is missing (surprise: %(surprise)s; coherence: "
            "%(coherence)s; valence: %(valence)s; embedding: %(embedding)s)"
        ),
        {
            "surprise": features.surprise_missing or Sentence(gettext_noop("missing")),
            "coherence": features.coherence_missing or Sentence(gettext_noop("missing")),
            "valence": features.valence_missing or Sentence(gettext_noop("missing")),
            "embedding": features.embedding_missing or Sentence(gettext_noop("missing")),
        },
    )


def _cutoff(run: ScreeningRun) -> datetime:
    return run.pool_cutoff or run.created_at


def _without_features(run: ScreeningRun) -> list[int]:
    """The run's items that have no features yet: none, unless a redelivered batch was counted
    twice, or an item was imported between the start's query and the run's creation."""
    items = screening_pool(study=run.study).filter(created_at__lte=_cutoff(run))
    return list(items.filter(features__isnull=True).values_list("pk", flat=True))


@dataclass
class _Entry:
    item: Item
    score: float
    used: FunnyScoreCalibration
    l1_rank: int = 0
    judge_score: float | None = None
    judge_status: str = ""


@dataclass
class _Pool:
    """The run's candidates scored at L1: the decided ones (held, attention checks, unscorable)
    and, per (model, level), the scored ones ranked by FunnyScore."""

    decided: list[ScreeningOutcome]
    groups: dict[tuple[str, str], list[_Entry]]
    levels: int


def _pool(run: ScreeningRun) -> _Pool:
    study = run.study
    # Items imported after the run started wait for the next run.
    ids = list(
        screening_pool(study=study)
        .filter(created_at__lte=_cutoff(run))
        .values_list("pk", flat=True)
    )
    items = list(
        screening_pool(study=study)
        .filter(pk__in=ids)
        .select_related("features", "generation_output")
    )
    current = calibrations_applied(study=study)
    if not any(c.scope == "all" for c in current):
        # Stored, so each outcome names the coefficients that scored it.
        default = calibration_default_stored(
            study=study, features=[features_of(item=item) for item in items]
        )
        if default.pk is None:
            default.save()
    else:
        default = next(c for c in current if c.scope == "all")

    decided: list[ScreeningOutcome] = []
    groups: dict[tuple[str, str], list[_Entry]] = defaultdict(list)
    Stage = ScreeningOutcome.Stage
    features_all = [features_of(item=item) for item in items]
    used_all = [
        calibration_for_item(item=item, calibrations=current, default=default) for item in items
    ]
    scores = scoring.scores_each(features_all, used_all)
    for item, features, used, score in zip(items, features_all, used_all, scores, strict=True):
        if item.stage == Item.Stage.HELD:
            held = Sentence(REASON_HELD)
            decided.append(_outcome(run, item, score, False, held, used, Stage.OFFENSE))
        elif item.safety_intercepted:
            # A refusal or a filtered output is a finding about the product, never a joke to
            # rank: it is shown and counted, and never passes the sieve, whatever it scores.
            reason = _interception_reason(item)
            decided.append(_outcome(run, item, score, False, reason, used, Stage.INTERCEPTED))
        elif item.is_attention_check:
            attention = Sentence(REASON_ATTENTION)
            decided.append(_outcome(run, item, score, True, attention, used, Stage.L1))
        elif score is None:
            reason = _missing_reason(features)
            decided.append(_outcome(run, item, None, False, reason, used, Stage.L1))
        else:
            groups[(item.source, item.level)].append(_Entry(item, score, used))
    for entries in groups.values():
        entries.sort(key=lambda entry: (-entry.score, entry.item.external_id))
        for position, entry in enumerate(entries, start=1):
            entry.l1_rank = position
    levels = len({level for _, level in groups})
    return _Pool(decided=decided, groups=dict(groups), levels=levels)


def _interception_reason(item: Item) -> Sentence:
    output = getattr(item, "generation_output", None)
    if output is None or not output.intercept_reason:
        return Sentence(REASON_INTERCEPTED)
    why = label("intercept_reason", output.intercept_reason)
    if not output.intercept_detail:
        return Sentence(
            gettext_noop("intercepted by a guardrail at generation: %(why)s"), {"why": why}
        )
    # The detail is what the model or its filter said: data, shown as it is.
    return Sentence(
        gettext_noop("intercepted by a guardrail at generation: %(why)s (%(detail)s)"),
        {"why": why, "detail": output.intercept_detail},
    )


def _passes_l1(run: ScreeningRun, entry: _Entry) -> bool:
    if run.l1_keep and entry.l1_rank > run.l1_keep:
        return False
    return run.l1_min_score is None or entry.score >= run.l1_min_score


def _unjudged_survivors(run: ScreeningRun) -> list[int]:
    pool = _pool(run)
    survivors = [
        e.item.pk for entries in pool.groups.values() for e in entries if _passes_l1(run, e)
    ]
    judged = set(
        JudgeVerdict.objects.filter(item_id__in=survivors, model_name=run.judge_model).values_list(
            "item_id", flat=True
        )
    )
    return sorted(pk for pk in survivors if pk not in judged)


def _verdicts(run: ScreeningRun, item_ids: Sequence[int]) -> dict[int, JudgeVerdict]:
    if not run.judge_model:
        return {}
    return {
        v.item_id: v
        for v in JudgeVerdict.objects.filter(item_id__in=item_ids, model_name=run.judge_model)
    }


def screening_run_finish(*, run: ScreeningRun) -> list[ScreeningOutcome]:
    """Decide every candidate of the run, stage by stage; call inside the finishing transaction.

    Held candidates stay held; attention checks go into the study; candidates with no
    computable score are dropped, saying why. Within each model and level the scored ones are
    ranked by FunnyScore (highest first, ties by external id); those past the L1 pass or below
    its minimum are dropped at L1; with a judge, those it rated below `judge_min` are dropped at
    L2; the survivors are ranked again and the top K go into the study, the rest are dropped."""
    study = run.study
    pool = _pool(run)
    Stage = ScreeningOutcome.Stage
    outcomes = list(pool.decided)
    verdicts = _verdicts(run, [e.item.pk for entries in pool.groups.values() for e in entries])
    # The judge sieves on the rubric's primary question.
    judged = study_primary_name(study=study)
    for (source, level), entries in sorted(pool.groups.items()):
        group = _group(source, level, levels=pool.levels)
        total = len(entries)
        survivors: list[_Entry] = []
        for entry in entries:
            if not _passes_l1(run, entry):
                if run.l1_keep and entry.l1_rank > run.l1_keep:
                    reason = Sentence(
                        gettext_noop(
                            "L1: rank %(rank)s of %(total)s for %(group)s: "
                            "below the L1 pass of %(keep)s"
                        ),
                        {
                            "rank": entry.l1_rank,
                            "total": total,
                            "group": group,
                            "keep": run.l1_keep,
                        },
                    )
                else:
                    reason = Sentence(
                        gettext_noop("L1: FunnyScore %(score)s below the minimum %(minimum)s"),
                        {"score": f"{entry.score:.3f}", "minimum": f"{run.l1_min_score:g}"},
                    )
                outcomes.append(_decided(run, entry, None, False, reason, Stage.L1))
                continue
            if run.judge_model:
                verdict = verdicts.get(entry.item.pk)
                entry.judge_status = verdict.status if verdict is not None else "none"
                value = verdict.scores.get(judged) if verdict is not None else None
                if (
                    verdict is not None
                    and verdict.status == JudgeVerdict.Status.OK
                    and isinstance(value, int | float)
                ):
                    entry.judge_score = float(value)
                    if run.judge_min is not None and entry.judge_score < run.judge_min:
                        reason = Sentence(
                            gettext_noop(
                                "LLM judge %(model)s: %(question)s %(score)s below %(minimum)s"
                            ),
                            {
                                "model": run.judge_model,
                                "question": label("question", judged),
                                "score": f"{entry.judge_score:g}",
                                "minimum": f"{run.judge_min:g}",
                            },
                        )
                        outcomes.append(_decided(run, entry, None, False, reason, Stage.JUDGE))
                        continue
            survivors.append(entry)
        for position, entry in enumerate(survivors, start=1):
            kept = position <= run.top_k
            ranked = {"rank": position, "total": len(survivors), "group": group, "k": run.top_k}
            if kept:
                msgid = gettext_noop("rank %(rank)s of %(total)s for %(group)s: in the top %(k)s")
            else:
                msgid = gettext_noop(
                    "rank %(rank)s of %(total)s for %(group)s: below the top %(k)s"
                )
            reason = Sentence(msgid, ranked)
            if run.judge_model and entry.judge_score is None:
                reason = reason.then(
                    gettext_noop(
                        "%(reason)s; the judge gave no score (%(status)s), so it did not sieve"
                    ),
                    status=label("judge_status", entry.judge_status),
                )
            outcomes.append(_decided(run, entry, position, kept, reason, Stage.TOP_K))

    kept_ids = [o.item_id for o in outcomes if o.kept]
    dropped_ids = [o.item_id for o in outcomes if not o.kept and o.stage != Stage.OFFENSE]
    # Conditional on the stage: an item the offense filter held meanwhile stays held.
    promoted = Item.objects.filter(pk__in=kept_ids, stage=Item.Stage.CANDIDATE).update(
        stage=Item.Stage.STUDY
    )
    if promoted:
        # The study's items are part of its results (every model's items, rated or not).
        study_results_request(study_id=study.pk)
    # A candidate people already rated (kept by an earlier run, then rerun) stays in the study.
    rated = set(_rated_item_ids(dropped_ids))
    for outcome in outcomes:
        if outcome.item_id in rated and not outcome.kept:
            _reason_set(
                outcome,
                Sentence.from_dict(outcome.reason_message).then(
                    gettext_noop("%(reason)s; already rated by people, so it stays in the study")
                ),
            )
    Item.objects.filter(pk__in=dropped_ids, stage=Item.Stage.CANDIDATE).update(
        stage=Item.Stage.DROPPED
    )
    ScreeningOutcome.objects.filter(run=run).delete()
    stored = ScreeningOutcome.objects.bulk_create(outcomes)
    screening_tiers_compute(study=study)
    return stored


def _decided(
    run: ScreeningRun,
    entry: _Entry,
    rank: int | None,
    kept: bool,
    reason: Sentence,
    stage: str,
) -> ScreeningOutcome:
    outcome = _outcome(run, entry.item, entry.score, kept, reason, entry.used, stage)
    outcome.l1_rank = entry.l1_rank
    outcome.rank = rank
    outcome.judge_score = entry.judge_score
    outcome.judge_status = entry.judge_status
    return outcome


def _outcome(
    run: ScreeningRun,
    item: Item,
    score: float | None,
    kept: bool,
    reason: Sentence,
    used: FunnyScoreCalibration,
    stage: str,
) -> ScreeningOutcome:
    outcome = ScreeningOutcome(
        run=run,
        item=item,
        funny_score=score,
        kept=kept,
        stage=stage,
        # An unsaved default cannot be referenced; every stored set has "all", so this is rare.
        calibration=used if used.pk is not None else None,
    )
    _reason_set(outcome, reason)
    return outcome


def _reason_set(outcome: ScreeningOutcome, reason: Sentence) -> None:
    # English for the exports and the API; the sentence for the pages, in the reader's language.
    outcome.reason = reason.english()[:300]
    outcome.reason_message = reason.as_dict()


def _group(source: str, level: str, *, levels: int) -> Sentence:
    """The model (and, when the study has several, the level) a rank is counted within."""
    if levels <= 1:
        return Sentence("%(source)s", {"source": label("source", source)})
    return Sentence(
        gettext_noop("%(source)s, %(level)s"),
        {"source": label("source", source), "level": label("level", level)},
    )
