"""Aggregation: recompute a study's results from its raw judgments into StudyResult.

Triggered three ways: new judgments (debounced, after commit), the periodic sweep, and
`manage.py aggregate` (synchronous). A rater's request only ever marks the study as changed and,
at most once per burst, queues a run; it never waits for statistics.
"""

from __future__ import annotations

import functools
import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.selectors import study_inputs_load
from apps.core.collector import cyclic_collector_paused
from apps.core.errors import DomainError
from apps.core.versions import software_versions
from apps.exclusions.selectors import exclusion_set_for_study
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.studies.models import Study

logger = logging.getLogger(__name__)


def _state_touch(study_id: int) -> None:
    now = timezone.now()
    if AggregationState.objects.filter(study_id=study_id).update(requested_at=now):
        return
    try:
        with transaction.atomic():
            AggregationState.objects.create(study_id=study_id, requested_at=now)
    except IntegrityError:
        # Created by a concurrent request between our UPDATE and INSERT.
        AggregationState.objects.filter(study_id=study_id).update(requested_at=now)


def _enqueue(study_id: int, claimed_at: datetime) -> bool:
    """Queue one run, due `AGGREGATE_DEBOUNCE_SECONDS` after its claim; False when the broker
    is down.

    Due from the claim, not from this call: the time the message takes to reach the broker
    (the first in a process also connects) would otherwise be added to the debounce, and so
    to how far the results lag behind the evidence that claimed the run.
    """
    from apps.analysis.tasks import study_aggregate_task

    due = claimed_at + timedelta(seconds=settings.AGGREGATE_DEBOUNCE_SECONDS)
    queued_at = timezone.now()
    # A countdown, not the eta itself: one already due (no debounce, or a claim that took that
    # long) is then sent as a plain task, which the worker runs as soon as it takes it.
    countdown = max(0.0, (due - queued_at).total_seconds())
    # The claim travels with its message: a claim moved earlier sends a second message, and
    # the first then finds its claim served (claim_served).
    claim = {"claimed_at": claimed_at.isoformat(), "queued_at": queued_at.isoformat()}
    try:
        study_aggregate_task.apply_async(args=[study_id], kwargs=claim, countdown=countdown)
    except Exception:  # the broker is down: the judgments are stored; the sweep will catch up
        logger.warning(
            "could not queue aggregation of study %s; the sweep will retry", study_id, exc_info=True
        )
        AggregationState.objects.filter(study_id=study_id).update(scheduled=False)
        return False
    return True


# Clocks of the web processes and the worker may differ by this much (NTP keeps them within
# milliseconds); a queued run is trusted to start no earlier than its due time minus this.
_CLOCK_MARGIN = timedelta(seconds=1)


def _trusted_start(claimed_at: datetime) -> datetime:
    """The earliest moment the run of a claim is trusted to start: evidence committed before
    it is left unmarked by processes that know the claim (`_QueuedRuns`)."""
    return claimed_at + timedelta(seconds=settings.AGGREGATE_DEBOUNCE_SECONDS) - _CLOCK_MARGIN


def claim_served(state: AggregationState, *, claimed_at: datetime, queued_at: datetime) -> bool:
    """Whether a queued run's message has nothing left to compute: a run that finished started
    after the message was queued (so it cleared the claim, and read every judgment committed
    before it) and no earlier than the claim's trusted start (so it read what processes left
    unmarked for it).

    This is the message of a claim later moved earlier (`_mark_and_claim`), whose moved run
    is in. A run that started and never finished (its worker killed) serves nothing, and a
    claim moved further than its trusted start runs again: both compute once more, never less.
    """
    started, finished = state.last_started_at, state.last_finished_at
    return (
        started is not None
        and finished is not None
        and finished >= started
        and started > queued_at
        and started >= _trusted_start(claimed_at)
    )


class _QueuedRuns:
    """Per process: the claim of the run queued for each study, and the earliest moment that
    run can start.

    A run is due `AGGREGATE_DEBOUNCE_SECONDS` after its `scheduled_at` (its Celery eta:
    the worker does not start it before then), and reads every judgment committed before it
    starts. Evidence committed before that moment is therefore in that run whether it is marked
    or not, so a request does not mark it: one mark a debounce interval per process instead of
    a statement (and a commit) on every answer. Nothing is lost when a run comes late or never
    (its message lost, a duplicate run started early): the study was already marked stale by
    the mark that queued the run, and the sweep finds unmarked evidence by its insertion time
    (`_mark_unmarked_evidence`). Evidence stored before the run's claim is always marked: the
    run is due too late for it, and its mark moves the claim earlier (`_mark_and_claim`); the
    moved run still starts no earlier than the trusted start, or the first message computes
    again (`claim_served`).

    A run queued by another process is learnt by reading its `scheduled_at`, at most once a
    `_RECHECK` per study: while a run is overdue (the worker busy or down) the answers are
    marked one by one as before, without a read beside each mark.

    Only when runs are queued with their eta: eager tasks (tests, one-off commands) run
    at once, and a debounce within the clock margin leaves nothing to skip.
    """

    _RECHECK = timedelta(seconds=1)

    def __init__(self) -> None:
        # Per study: the queued run's claim, and its trusted start (by the debounce it was
        # queued with).
        self._claims: dict[int, tuple[datetime, datetime]] = {}
        self._checked: dict[int, datetime] = {}

    def cover(self, study_id: int, now: datetime, since: datetime) -> bool:
        """Whether the queued run will read evidence committed `now` and stored at `since`
        soon enough: it starts after `now`, and its claim is not later than that evidence
        (a later claim is due too late for it, and the mark moves it)."""
        known = self._claims.get(study_id)
        if known is None:
            return False
        claim, start = known
        return claim <= since and now < start and not _tasks_run_eagerly()

    def may_check(self, study_id: int, now: datetime) -> bool:
        checked = self._checked.get(study_id)
        return checked is None or not checked <= now < checked + self._RECHECK

    def learn(self, study_id: int, scheduled_at: datetime | None, now: datetime) -> None:
        self._checked[study_id] = now
        if scheduled_at is None or _tasks_run_eagerly():
            self._claims.pop(study_id, None)
            return
        self._claims[study_id] = (scheduled_at, _trusted_start(scheduled_at))

    def forget(self) -> None:
        self._claims.clear()
        self._checked.clear()


queued_runs = _QueuedRuns()


def _tasks_run_eagerly() -> bool:
    # The Celery app's own flag, not the Django setting it was configured from: that flag is
    # what decides whether apply_async runs the task right here.
    from config.celery import app

    return bool(app.conf.task_always_eager)


class _EvidenceChanged:
    """The after-commit callback of study_results_request, tagged with its study and with when
    its evidence changed (`since`: a run it claims is due a debounce after that)."""

    def __init__(
        self, study_id: int, *, inline: bool = True, since: datetime | None = None
    ) -> None:
        self.study_id = study_id
        self.inline = inline
        self.since = since or timezone.now()

    def __call__(self) -> None:
        if not self.inline and _tasks_run_eagerly():
            # An eager "queue" would compute the results right here, inside an import; mark
            # them stale instead, for `manage.py aggregate` or the periodic sweep.
            _state_touch(self.study_id)
            return
        now = timezone.now()
        since = min(self.since, now)
        if queued_runs.cover(self.study_id, now, since):
            return
        # Marked at the real time (the sweep and the cover compare it with runs' starts); a
        # claimed run is due from the evidence's own time, so the request's time between its
        # evidence and its commit is not added to the lag.
        claimed_at = _mark_and_claim(self.study_id, now, due_from=since)
        if claimed_at is not None:
            queued = _enqueue(self.study_id, claimed_at)
            queued_runs.learn(self.study_id, claimed_at if queued else None, now)
        elif queued_runs.may_check(self.study_id, now):
            # Queued by another process (or request): when, so this process's next answers
            # need not mark what that run will read anyway.
            queued_runs.learn(
                self.study_id,
                AggregationState.objects.filter(study_id=self.study_id, scheduled=True)
                .values_list("scheduled_at", flat=True)
                .first(),
                now,
            )


# The mark most answers make (a run is already queued, claimed no later than the evidence),
# written in SQL: the ORM's UPDATE compiler cost more CPU than the statement.
_MARK_QUEUED = (
    f"UPDATE {AggregationState._meta.db_table} SET requested_at = %s "
    "WHERE study_id = %s AND scheduled AND scheduled_at <= %s"
)


def _mark_and_claim(
    study_id: int, now: datetime | None = None, *, due_from: datetime | None = None
) -> datetime | None:
    """Mark the study's evidence as changed; the claim's time (its `scheduled_at`, the run due
    a debounce after it) if this call claimed the one queued run or moved it earlier (either
    way a message is to be sent), else None.

    `due_from`: when the claiming evidence changed, if earlier than the mark (default: the
    mark's time).

    While answers arrive a run is nearly always queued already (the debounce), and then one
    statement marks the evidence; each statement here is its own commit, so this saves one
    commit per answer.
    """
    now = now or timezone.now()
    since = due_from or now
    state = AggregationState.objects.filter(study_id=study_id)
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.execute(_MARK_QUEUED, [adapt(now), study_id, adapt(since)])
        if cursor.rowcount:
            return None
    # A run is queued, but claimed by evidence stored after this one: another request claimed
    # it between this judgment and its mark. Due a debounce after that claim, it would leave
    # this judgment waiting longer than one debounce, so the claim moves to this judgment's
    # time and a message due then is sent. The first message, still due at its own time,
    # finds its claim served by the moved run (claim_served) and computes nothing.
    queued = state.filter(scheduled=True).values_list("scheduled_at", flat=True).first()
    if (
        queued is not None
        and queued > since
        and state.filter(scheduled=True, scheduled_at=queued).update(
            requested_at=now, scheduled_at=since
        )
    ):
        return since
    claimed_at = since
    if state.filter(scheduled=False).update(
        requested_at=now, scheduled=True, scheduled_at=claimed_at
    ):
        return claimed_at
    # No state row yet, or the flag changed between the statements: mark, then try to claim.
    _state_touch(study_id)
    claimed_at = due_from or timezone.now()
    if state.filter(scheduled=False).update(scheduled=True, scheduled_at=claimed_at):
        return claimed_at
    return None


def study_results_request(
    *, study_id: int, inline: bool = True, since: datetime | None = None
) -> None:
    """Evidence of this study changed: mark it, and queue one debounced run if none is queued.

    `inline=False` (imports): never compute in this process, even when tasks run eagerly; the
    results are marked stale and a worker or `manage.py aggregate` computes them once.

    `since`: when the evidence changed, the server's time the judgment carries (default: now).
    A run this claims is due a debounce after it, so results are at most one debounce plus
    one run behind the judgment, however long its request took to commit.

    Call inside the transaction that stored the evidence. The mark is written after commit, in
    its own one-statement transactions: a study has one AggregationState row, and updating it
    inside every submission's transaction made all concurrent submissions queue on its lock.
    Should the process die between the commit and the mark, the sweep still finds the evidence
    by its submission time (see aggregate_sweep). Evidence committed before the queued run is
    due is not marked again (`_QueuedRuns`): that run reads it.
    """
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        _EvidenceChanged(study_id, inline=inline, since=since)()
        return
    pending = [
        f
        for _, f, _ in connection.run_on_commit
        if isinstance(f, _EvidenceChanged) and f.study_id == study_id
    ]
    if pending:
        # One mark per transaction is enough; a request that may queue a run wins over an
        # import's mark-only one, and the earliest evidence decides when the run is due.
        pending[0].inline = pending[0].inline or inline
        pending[0].since = min(pending[0].since, since or timezone.now())
        return
    transaction.on_commit(_EvidenceChanged(study_id, inline=inline, since=since))


def study_results_recompute(*, study_id: int) -> None:
    """A researcher asked for fresh results: mark now, queue one run after commit."""
    claimed_at = _mark_and_claim(study_id)
    if claimed_at is not None:
        transaction.on_commit(functools.partial(_enqueue, study_id, claimed_at))


def study_aggregate_queued(
    *, study: Study, claim: tuple[datetime, datetime] | None
) -> StudyResult | None:
    """A queued run: compute, unless its claim (claimed at, queued at) was already served by a
    run that read everything it was queued for (claim_served); then None."""
    if claim is not None:
        state = AggregationState.objects.filter(study=study).first()
        claimed_at, queued_at = claim
        if state is not None and claim_served(state, claimed_at=claimed_at, queued_at=queued_at):
            logger.info(
                "run of study %s claimed at %s: served by the run started at %s",
                study.pk,
                claimed_at.isoformat(),
                state.last_started_at,
            )
            return None
    return study_aggregate(study=study)


def study_aggregate(
    *,
    study: Study,
    rounds: int | None = None,
    seed: int | None = None,
    threads: int | None = None,
) -> StudyResult:
    """Recompute and store the study's results. Idempotent; raw judgments are only read.
    `threads` (default AGGREGATE_THREADS) changes how long it takes, never the results."""
    rounds = rounds or settings.BOOTSTRAP_ROUNDS
    threads = threads or settings.AGGREGATE_THREADS
    seed = study.random_seed if seed is None else seed
    if rounds < 10:
        raise DomainError("at least 10 bootstrap rounds are needed for an interval", field="rounds")
    _state_touch_if_missing(study.pk)
    # Clear the flag before reading, so evidence arriving during the run queues the next one.
    state = AggregationState.objects.get(study=study)
    AggregationState.objects.filter(pk=state.pk).update(
        scheduled=False, last_started_at=timezone.now()
    )
    evidence_as_of = state.requested_at
    started = time.perf_counter()
    # Imported here: exclusions' services mark results stale through this module; and the
    # statistics bring scipy, which a process that only marks results stale (a web request, an
    # import command) should not load.
    from apps.analysis.stats.report import compute_study_document
    from apps.exclusions.services import exclusion_proposals_refresh

    try:
        # The document of a large study is millions of small objects (apps/core/collector.py).
        with cyclic_collector_paused():

            def refresh() -> None:
                exclusion_proposals_refresh(study=study, request_results=False)

            # With automatic exclusions the rules come first: what they exclude is left out.
            # Otherwise their proposals wait for a researcher and change nothing here, so they
            # are refreshed while the reliability section finishes (compute_results).
            automatic = study.exclusion_rules_automatic
            if automatic:
                refresh()
            excluded = exclusion_set_for_study(study=study)
            inputs = study_inputs_load(study=study, exclusions=excluded)
            payload = compute_study_document(
                inputs,
                seed=seed,
                rounds=rounds,
                before_exclusions=study_inputs_load(study=study) if excluded else None,
                threads=threads,
                meanwhile=None if automatic else refresh,
            )
            payload["exclusions"] = {"hash": excluded.digest, "entries": excluded.entries}
    except Exception as exc:
        AggregationState.objects.filter(pk=state.pk).update(
            last_error=f"{type(exc).__name__}: {exc}"[:2000]
        )
        raise
    duration = time.perf_counter() - started
    payload["study"] = study.slug
    # What computed it: the same input, seed and rounds give the same numbers on these versions.
    payload["software"] = software_versions()
    computed_at = timezone.now()
    with transaction.atomic():
        # The stored document is replaced whole: reading (and decoding) it first is waste, tens
        # of megabytes on a large study.
        result, _ = StudyResult.objects.defer("payload").update_or_create(
            study=study,
            defaults={
                "payload": payload,
                "input_hash": inputs.digest(),
                "seed": seed,
                "rounds": rounds,
                "computed_at": computed_at,
                "duration_seconds": duration,
                "evidence_as_of": evidence_as_of,
                "exclusion_hash": excluded.digest,
            },
        )
        # Finished once its results are stored: the run's whole time, from last_started_at,
        # is what the results lag is bounded by (benchmarks/load/run_load.py --worker).
        AggregationState.objects.filter(pk=state.pk).update(
            last_finished_at=timezone.now(), last_error=""
        )
    return result


def _state_touch_if_missing(study_id: int) -> None:
    if not AggregationState.objects.filter(study_id=study_id).exists():
        try:
            with transaction.atomic():
                # Never marked: the run about to start sees all the evidence there is now.
                AggregationState.objects.create(study_id=study_id, requested_at=timezone.now())
        except IntegrityError:
            pass


def aggregate_sweep() -> list[int]:
    """Queue a run for every study whose results are missing or older than its evidence.

    Catches what a failed enqueue (broker down) or a killed worker left behind. A run queued long
    ago that never started (its message was lost) is queued again.
    """
    _mark_unmarked_evidence()
    stale_schedule = timezone.now() - timedelta(seconds=max(settings.AGGREGATE_SWEEP_SECONDS, 60))
    candidates = AggregationState.objects.filter(requested_at__isnull=False).filter(
        Q(study__result__isnull=True)
        | Q(requested_at__gt=F("study__result__evidence_as_of"))
        | Q(study__result__evidence_as_of__isnull=True)
    )
    queued = []
    for state in candidates.filter(Q(scheduled=False) | Q(scheduled_at__lt=stale_schedule)):
        claimed_at = timezone.now()
        claimed = AggregationState.objects.filter(pk=state.pk, scheduled=state.scheduled).update(
            scheduled=True, scheduled_at=claimed_at
        )
        if claimed:
            _enqueue(state.study_id, claimed_at)
            queued.append(state.study_id)
    return queued


def _mark_unmarked_evidence() -> None:
    """Mark studies holding judgments stored after their last mark and their last run's start.

    A submission marks its study after commit (study_results_request); a process that died in
    between left judgments newer than the mark, found here by their insertion time. Judgments
    a queued run was due to read were not marked (`_QueuedRuns`): those older than the last
    run's start are in it.
    """
    marks = {
        study_id: max((t for t in times if t is not None), default=None)
        for study_id, *times in AggregationState.objects.values_list(
            "study_id", "requested_at", "last_started_at"
        )
    }
    for study_id in Study.objects.values_list("pk", flat=True):
        since = marks.get(study_id)
        for model in (ScoreResponse, PairJudgment, TuringJudgment):
            newer = model.objects.filter(study_id=study_id)
            if since is not None:
                newer = newer.filter(created_at__gt=since)
            if newer.exists():
                _state_touch(study_id)
                break
