"""Aggregation: stored results, idempotence, debounced triggering, and failure handling."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.analysis import services
from apps.analysis.models import AggregationState, StudyResult
from apps.analysis.services import aggregate_sweep, study_aggregate, study_results_request
from apps.core.compiled import readable
from apps.core.errors import DomainError
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment

pytestmark = pytest.mark.django_db


def _raw_fingerprint() -> str:
    rows = [
        list(ScoreResponse.objects.order_by("pk").values_list()),
        list(ScoreAnswer.objects.order_by("pk").values_list()),
        list(PairJudgment.objects.order_by("pk").values_list()),
        list(TuringJudgment.objects.order_by("pk").values_list()),
    ]
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()


def test_aggregate_stores_results_with_seed_rounds_and_input_hash(demo_study):
    result = study_aggregate(study=demo_study, rounds=50)
    assert result.seed == 20261129
    assert result.rounds == 50
    assert len(result.input_hash) == 64
    payload = result.payload
    assert payload["counts"]["items"] == 70
    # 240 pairs: 211 decided, 19 "about the same" and 10 "neither".
    assert payload["counts"]["pair_judgments"] == 211
    assert (payload["counts"]["pair_ties"], payload["counts"]["pair_neither"]) == (19, 10)
    assert {row["item"] for row in payload["bradley_terry"]} <= {
        item["item"] for item in payload["items"]
    }
    fit = payload["bradley_terry_fit"]
    # The demo's ties put the board under a tie model; its end items still get their bounds.
    assert fit["model"] in ("davidson", "rao_kupper")
    assert fit["end_bound"] == {"level": 0.95, "cut": "exact", "simultaneous": True}
    ends = 0
    for row in payload["bradley_terry"]:
        if {"undefeated", "never_won"} & set(row["flags"]):
            # Won or lost every comparison: no finite score or interval, but a one-sided bound
            # (at least this strong / at most) and the rank that follows from it.
            assert row["score"] is None
            assert row["ci_low"] is None
            if "scale_not_identified" not in row["flags"] and row["bound"] is not None:
                ends += 1
                side = "lower" if "undefeated" in row["flags"] else "upper"
                assert row["bound_side"] == side
                assert row["rank"] is not None or "barely_compared" in row["flags"]
            continue
        if row["ci_low"] is None:
            # Compared only with end items (j029 here): the one finite item of its component
            # is that component's centre, 0 by definition, with nothing to resample.
            finite = [
                r
                for r in payload["bradley_terry"]
                if r["component"] == row["component"] and r["score"] is not None
            ]
            assert finite == [row]
            assert row["score"] == 0.0
            continue
        assert row["ci_low"] <= row["score"] <= row["ci_high"]
    assert ends == fit["end_bounds"] > 0
    assert fit["rounds"] == 50
    assert isinstance(fit["converged"], bool)
    assert fit["disconnected_rounds"] >= 0
    assert set(payload["agreement"]) == {"surprise", "coherence", "funniness", "offensive"}
    assert set(payload["agreement"]["funniness"]["krippendorff_alpha"]) == {
        "nominal",
        "ordinal",
        "interval",
    }
    assert set(payload["groups"]) >= {"source", "level", "humor_type", "background"}


def test_demo_results_show_the_planted_structure(demo_study):
    payload = study_aggregate(study=demo_study, rounds=100).payload
    by_source = payload["groups"]["source"]
    funny = {source: by_source[source]["questions"]["funniness"]["value"] for source in by_source}
    # The demo simulation makes people funnier than laughter-7b, and laughter-7b than quipster-v2.
    assert funny["human"] > funny["laughter-7b"] > funny["quipster-v2"]
    flagged = {item["item"] for item in payload["items"] if "culture_dependent" in item["flags"]}
    assert {"j001", "j003", "j012"} <= flagged
    offensive = {item["item"] for item in payload["items"] if item["offensive"]}
    assert {"j013", "j050"} <= offensive
    assert payload["turing"]["by_source"]["quipster-v2"]["accuracy"]["value"] > 0.65


def test_rerunning_gives_identical_results_and_changes_no_judgment(demo_study):
    before = _raw_fingerprint()
    first = study_aggregate(study=demo_study, rounds=50)
    first_payload, first_hash = first.payload, first.input_hash
    second = study_aggregate(study=demo_study, rounds=50)
    assert StudyResult.objects.filter(study=demo_study).count() == 1
    assert second.input_hash == first_hash
    assert second.payload == first_payload
    assert _raw_fingerprint() == before


def test_a_new_run_replaces_the_stored_document_without_reading_it(demo_study):
    first = study_aggregate(study=demo_study, rounds=50)
    with CaptureQueriesContext(connection) as queries:
        second = study_aggregate(study=demo_study, rounds=60)
    sent = [readable(q["sql"]) for q in queries.captured_queries]
    reads = [
        sql
        for sql in sent
        if sql.lstrip().upper().startswith("SELECT") and "analysis_studyresult" in sql
    ]
    assert reads, "the run looks its result row up"
    assert not any('"payload"' in sql for sql in reads)
    assert second.pk == first.pk
    stored = StudyResult.objects.get(pk=first.pk)
    assert stored.rounds == 60
    assert stored.payload == second.payload


def test_a_run_is_finished_when_its_results_are_stored(demo_study):
    # The run's whole time (last_started_at to last_finished_at) bounds how far the results
    # lag behind the judgments; finishing it at `computed_at`, before the document was
    # written, left the storing out.
    stored_at: list[Any] = []

    def remember(sender: type, instance: StudyResult, **kwargs: Any) -> None:
        stored_at.append(timezone.now())

    post_save.connect(remember, sender=StudyResult)
    try:
        result = study_aggregate(study=demo_study, rounds=20)
    finally:
        post_save.disconnect(remember, sender=StudyResult)
    state = AggregationState.objects.get(study=demo_study)
    assert state.last_started_at is not None
    assert state.last_finished_at is not None
    assert state.last_started_at < result.computed_at < stored_at[0] <= state.last_finished_at
    assert (
        state.last_finished_at - state.last_started_at
    ).total_seconds() >= result.duration_seconds


def test_another_seed_changes_intervals_not_estimates(demo_study):
    a = study_aggregate(study=demo_study, rounds=50, seed=1).payload
    b = study_aggregate(study=demo_study, rounds=50, seed=2).payload
    # By item: rows are ordered by rank, and ranks follow the intervals.
    scores_a = {r["item"]: r["score"] for r in a["bradley_terry"]}
    scores_b = {r["item"]: r["score"] for r in b["bradley_terry"]}
    assert scores_a == scores_b
    low_a = {r["item"]: r["ci_low"] for r in a["bradley_terry"]}
    assert low_a != {r["item"]: r["ci_low"] for r in b["bradley_terry"]}


def test_failed_run_leaves_previous_results_in_place(demo_study, monkeypatch):
    previous = study_aggregate(study=demo_study, rounds=50)

    def crash(*args, **kwargs):
        raise MemoryError("worker ran out of memory")

    # The service imports the statistics when it runs (apps/analysis/services.py).
    monkeypatch.setattr("apps.analysis.stats.report.compute_study_document", crash)
    with pytest.raises(MemoryError):
        study_aggregate(study=demo_study, rounds=50)
    stored = StudyResult.objects.get(study=demo_study)
    assert stored.computed_at == previous.computed_at
    assert stored.payload == previous.payload
    assert "MemoryError" in AggregationState.objects.get(study=demo_study).last_error


def test_a_claimed_run_is_due_a_debounce_after_its_claim(demo_study, monkeypatch, settings):
    # Due from the claim, not from the moment the message leaves: a slow first connection to
    # the broker would otherwise lengthen the debounce, and the lag, by its own time.
    from apps.analysis.tasks import study_aggregate_task

    settings.AGGREGATE_DEBOUNCE_SECONDS = 10
    sent: list[tuple[dict[str, Any], Any]] = []
    monkeypatch.setattr(
        study_aggregate_task, "apply_async", lambda **kw: sent.append((kw, timezone.now()))
    )
    monkeypatch.setattr(services, "_tasks_run_eagerly", lambda: False)
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    services.queued_runs.forget()
    services._EvidenceChanged(demo_study.pk)()
    state = AggregationState.objects.get(study=demo_study)
    assert state.scheduled
    [(options, sent_at)] = sent
    assert options["args"] == [demo_study.pk]
    # Celery counts the countdown from when it is sent: due exactly 10 s after the claim.
    due = sent_at + timedelta(seconds=options["countdown"])
    assert abs((due - (state.scheduled_at + timedelta(seconds=10))).total_seconds()) < 0.01
    assert sent_at > state.scheduled_at

    # A message that leaves 3 s after its claim (a slow first connection to the broker) is
    # still due 10 s after the claim; one that leaves a debounce late runs at once.
    services._enqueue(demo_study.pk, timezone.now() - timedelta(seconds=3))
    assert 6.9 < sent[-1][0]["countdown"] <= 7.0
    services._enqueue(demo_study.pk, timezone.now() - timedelta(seconds=15))
    assert sent[-1][0]["countdown"] == 0.0
    services.queued_runs.forget()


def test_a_run_is_due_from_the_earliest_evidence_of_its_transaction(
    demo_study, queued_with_countdown
):
    AggregationState.objects.update_or_create(
        study=demo_study, defaults={"requested_at": timezone.now(), "scheduled": False}
    )
    # Earlier than anything the fixtures registered (the demo import's own mark is pending).
    first = timezone.now() - timedelta(seconds=60)
    study_results_request(study_id=demo_study.pk, since=first + timedelta(seconds=1))
    study_results_request(study_id=demo_study.pk, since=first)
    study_results_request(study_id=demo_study.pk)
    [mark] = [
        callback
        for _, callback, _ in connection.run_on_commit
        if getattr(callback, "study_id", None) == demo_study.pk
    ]
    mark()  # as after the commit
    state = AggregationState.objects.get(study=demo_study)
    assert queued_with_countdown == [demo_study.pk]
    assert state.scheduled_at == first
    assert state.requested_at > first


def test_evidence_dated_after_its_mark_claims_the_run_at_the_mark(
    demo_study, queued_with_countdown
):
    # A time later than the mark's (a caller's clock, a test's) never pushes the run back.
    AggregationState.objects.update_or_create(
        study=demo_study, defaults={"requested_at": timezone.now(), "scheduled": False}
    )
    services._EvidenceChanged(demo_study.pk, since=timezone.now() + timedelta(hours=1))()
    state = AggregationState.objects.get(study=demo_study)
    assert state.scheduled_at == state.requested_at


def test_too_few_rounds_is_refused(demo_study):
    with pytest.raises(DomainError, match="at least 10 bootstrap rounds"):
        study_aggregate(study=demo_study, rounds=3)
    assert not StudyResult.objects.exists()


def test_a_mark_claims_the_run_only_when_none_is_queued(demo_study, monkeypatch):
    queued: list[int] = []
    monkeypatch.setattr(services, "_enqueue", lambda study_id, claimed_at: queued.append(study_id))

    # A study without a state row yet gets one, marked and claimed.
    AggregationState.objects.filter(study=demo_study).delete()
    services._EvidenceChanged(demo_study.pk)()
    created = AggregationState.objects.get(study=demo_study)
    assert created.scheduled
    assert created.requested_at is not None
    assert queued == [demo_study.pk]

    # No run queued: the mark claims it (once), and moves the evidence time.
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    services._EvidenceChanged(demo_study.pk)()
    state = AggregationState.objects.get(study=demo_study)
    assert (state.scheduled, queued) == (True, [demo_study.pk, demo_study.pk])
    assert state.requested_at > created.requested_at

    # A run already queued: the evidence time still moves, nothing more is queued.
    services._EvidenceChanged(demo_study.pk)()
    later = AggregationState.objects.get(study=demo_study)
    assert later.requested_at > state.requested_at
    assert later.scheduled_at == state.scheduled_at
    assert queued == [demo_study.pk, demo_study.pk]


@pytest.fixture
def queued_with_countdown(monkeypatch, settings):  # type: ignore[no-untyped-def]
    """Runs queued as a deployment queues them (not eagerly, 10 s debounce); the queue itself
    is recorded here (tests/analysis/test_celery_worker.py drives a real one)."""
    settings.AGGREGATE_DEBOUNCE_SECONDS = 10
    queued: list[int] = []

    def enqueue(study_id: int, claimed_at: Any) -> bool:
        queued.append(study_id)
        return True

    monkeypatch.setattr(services, "_enqueue", enqueue)
    monkeypatch.setattr(services, "_tasks_run_eagerly", lambda: False)
    services.queued_runs.forget()
    yield queued
    services.queued_runs.forget()


def _statements(callback: Any) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        callback()
    return [readable(q["sql"]) for q in queries.captured_queries]


def test_evidence_within_a_queued_runs_debounce_is_not_marked_again(
    demo_study, queued_with_countdown
):
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    mark = services._EvidenceChanged(demo_study.pk)
    mark()  # claims the run, due 10 s from now
    assert queued_with_countdown == [demo_study.pk]
    marked = AggregationState.objects.get(study=demo_study).requested_at
    # The queued run will read everything committed before it starts: nothing to write.
    assert _statements(mark) == []
    assert _statements(mark) == []
    assert AggregationState.objects.get(study=demo_study).requested_at == marked
    assert queued_with_countdown == [demo_study.pk]


def test_a_run_queued_by_another_process_is_learnt_once_and_then_covers(
    demo_study, queued_with_countdown
):
    AggregationState.objects.update_or_create(
        study=demo_study,
        defaults={
            "requested_at": timezone.now(),
            "scheduled": True,
            "scheduled_at": timezone.now(),
        },
    )
    mark = services._EvidenceChanged(demo_study.pk)
    first = _statements(mark)
    assert len(first) == 2  # the mark, and when that run is due
    assert _statements(mark) == []
    assert queued_with_countdown == []


def test_evidence_after_the_queued_run_is_due_is_marked_and_queues_the_next(
    demo_study, queued_with_countdown
):
    mark = services._EvidenceChanged(demo_study.pk)
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    mark()
    # That run is due now (within the clock margin): it may already have read its inputs.
    services.queued_runs.learn(
        demo_study.pk, timezone.now() - timedelta(seconds=9), timezone.now() - timedelta(seconds=9)
    )
    before = AggregationState.objects.get(study=demo_study).requested_at
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)  # it started
    mark()
    state = AggregationState.objects.get(study=demo_study)
    assert state.requested_at > before
    assert state.scheduled
    assert queued_with_countdown == [demo_study.pk, demo_study.pk]


def test_an_overdue_run_is_read_about_once_a_second_and_each_answer_marked(
    demo_study, queued_with_countdown
):
    """The worker is behind: the run queued 30 s ago has not started, so every answer is marked
    (it may come after that run reads), and its due time is not read again beside each mark."""
    overdue = timezone.now() - timedelta(seconds=30)
    AggregationState.objects.update_or_create(
        study=demo_study,
        defaults={"requested_at": overdue, "scheduled": True, "scheduled_at": overdue},
    )
    mark = services._EvidenceChanged(demo_study.pk)
    assert len(_statements(mark)) == 2
    assert len(_statements(mark)) == 1
    assert len(_statements(mark)) == 1
    assert AggregationState.objects.get(study=demo_study).requested_at > overdue
    # A second on, a new run may have been queued meanwhile: read again.
    services.queued_runs._checked[demo_study.pk] -= timedelta(seconds=1)
    assert len(_statements(mark)) == 2


def test_a_run_that_could_not_be_queued_covers_nothing(
    demo_study, queued_with_countdown, monkeypatch
):
    monkeypatch.setattr(services, "_enqueue", lambda study_id, claimed_at: False)  # broker down
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    mark = services._EvidenceChanged(demo_study.pk)
    mark()
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)  # as _enqueue does
    assert len(_statements(mark)) >= 2  # marks and claims again
    assert AggregationState.objects.get(study=demo_study).scheduled


def test_eager_runs_are_never_trusted_to_come_later(demo_study, queued_with_countdown, monkeypatch):
    mark = services._EvidenceChanged(demo_study.pk)
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    mark()
    monkeypatch.setattr(services, "_tasks_run_eagerly", lambda: True)
    AggregationState.objects.filter(study=demo_study).update(scheduled=True)
    assert len(_statements(mark)) >= 1


def test_evidence_stored_before_the_queued_runs_claim_moves_that_run_earlier(
    demo_study, queued_with_countdown, monkeypatch
):
    """Another request claimed the run between this judgment and its mark, dating the claim
    with its own, later judgment: the run is moved to this judgment's time and queued again
    from it, so this judgment too waits at most one debounce."""
    claims: list[Any] = []
    monkeypatch.setattr(
        services, "_enqueue", lambda study_id, claimed_at: claims.append(claimed_at) or True
    )
    claimed = timezone.now()
    AggregationState.objects.update_or_create(
        study=demo_study,
        defaults={"requested_at": claimed, "scheduled": True, "scheduled_at": claimed},
    )
    stored = claimed - timedelta(milliseconds=5)
    services._EvidenceChanged(demo_study.pk, since=stored)()
    state = AggregationState.objects.get(study=demo_study)
    assert state.scheduled
    assert state.scheduled_at == stored
    assert state.requested_at > claimed
    assert claims == [stored]

    # Evidence stored after the run's (moved) claim only marks; so does evidence the process
    # knows the queued run will read.
    services.queued_runs.forget()
    services._EvidenceChanged(demo_study.pk, since=claimed)()
    services._EvidenceChanged(demo_study.pk, since=stored)()
    assert AggregationState.objects.get(study=demo_study).scheduled_at == stored
    assert claims == [stored]


def test_a_process_that_knows_the_queued_run_still_moves_it_for_earlier_evidence(
    demo_study, queued_with_countdown, monkeypatch
):
    # A threaded server: this process's cover was learnt from a claim dated after this
    # judgment; that run is due too late for it, so the cover does not apply.
    claims: list[Any] = []
    monkeypatch.setattr(
        services, "_enqueue", lambda study_id, claimed_at: claims.append(claimed_at) or True
    )
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    claimed = timezone.now()
    services._EvidenceChanged(demo_study.pk, since=claimed)()
    assert claims == [claimed]
    stored = claimed - timedelta(milliseconds=3)
    services._EvidenceChanged(demo_study.pk, since=stored)()
    assert claims == [claimed, stored]
    assert AggregationState.objects.get(study=demo_study).scheduled_at == stored


def _served(state: AggregationState, claimed_at: Any, queued_at: Any) -> bool:
    return services.claim_served(state, claimed_at=claimed_at, queued_at=queued_at)


def test_a_queued_run_is_served_only_by_a_finished_run_that_read_what_it_was_promised(
    settings,
):
    """The message of a moved claim still arrives at its own due time; it computes nothing when
    a run that finished had started after the message was queued and no earlier than any
    process trusted the claim's run to start (apps/analysis/services.py, _QueuedRuns)."""
    settings.AGGREGATE_DEBOUNCE_SECONDS = 10
    started = timezone.now()
    finished = started + timedelta(seconds=4)
    state = AggregationState(last_started_at=started, last_finished_at=finished)
    debounce = timedelta(seconds=10)
    # Moved 0.2 s earlier: its run started 0.2 s before this message was due.
    claimed = started - debounce + timedelta(seconds=0.2)
    queued = claimed + timedelta(milliseconds=4)
    assert _served(state, claimed, queued)
    # Moved further than processes trusted (evidence committed in between may be unmarked).
    assert not _served(state, started - debounce + timedelta(seconds=1.5), queued)
    # Queued after that run had started: it is for evidence the run may not have read.
    assert not _served(state, claimed, started + timedelta(milliseconds=1))
    # That run was killed (started, never finished), or no run has finished since.
    assert not _served(
        AggregationState(last_started_at=started, last_finished_at=started - debounce),
        claimed,
        queued,
    )
    assert not _served(AggregationState(), claimed, queued)


def test_a_message_whose_claim_was_served_computes_nothing(demo_study, settings):
    from apps.analysis.tasks import study_aggregate_task

    settings.AGGREGATE_DEBOUNCE_SECONDS = 10
    first = study_aggregate(study=demo_study, rounds=20)
    state = AggregationState.objects.get(study=demo_study)
    claimed = state.last_started_at - timedelta(seconds=9.9)
    queued = claimed + timedelta(milliseconds=4)
    kept = study_aggregate_task(
        demo_study.pk, claimed_at=claimed.isoformat(), queued_at=queued.isoformat()
    )
    assert kept is None
    assert StudyResult.objects.get(study=demo_study).computed_at == first.computed_at
    # One queued after that run started computes; so does a message without its claim (one
    # queued before claims travelled with their messages).
    again = study_aggregate_task(
        demo_study.pk,
        claimed_at=claimed.isoformat(),
        queued_at=(state.last_started_at + timedelta(milliseconds=1)).isoformat(),
    )
    assert again == first.input_hash
    second = StudyResult.objects.get(study=demo_study).computed_at
    assert second > first.computed_at
    assert study_aggregate_task(demo_study.pk) == first.input_hash
    assert StudyResult.objects.get(study=demo_study).computed_at > second


def test_a_burst_of_submissions_queues_one_run(demo_study):
    AggregationState.objects.filter(study=demo_study).update(scheduled=False)
    for _ in range(5):
        study_results_request(study_id=demo_study.pk)
    # One mark per transaction, written after commit: nothing is locked while it is open.
    marks = [
        callback
        for _, callback, _ in connection.run_on_commit
        if getattr(callback, "study_id", None) == demo_study.pk
    ]
    assert len(marks) == 1
    assert not AggregationState.objects.filter(study=demo_study, scheduled=True).exists()
    marks[0]()  # the queued run executes at once in tests (eager Celery)
    state = AggregationState.objects.get(study=demo_study)
    assert StudyResult.objects.get(study=demo_study).evidence_as_of == state.requested_at


def test_evidence_whose_mark_was_lost_is_found_by_the_sweep(demo_study):
    study_aggregate(study=demo_study, rounds=20)
    assert aggregate_sweep() == []
    # A judgment committed by a process that died before marking its study.
    response = ScoreResponse.objects.filter(study=demo_study).first()
    ScoreResponse.objects.filter(pk=response.pk).update(created_at=timezone.now())
    assert aggregate_sweep() == [demo_study.pk]
    assert StudyResult.objects.get(study=demo_study).evidence_as_of > response.submitted_at
    assert aggregate_sweep() == []


def test_sweep_queues_studies_whose_results_are_older_than_their_evidence(demo_study):
    study_aggregate(study=demo_study, rounds=20)
    assert aggregate_sweep() == []
    # New evidence whose queueing was lost (for example, the broker was down).
    AggregationState.objects.filter(study=demo_study).update(
        requested_at=StudyResult.objects.get(study=demo_study).computed_at, scheduled=False
    )
    assert aggregate_sweep() == [demo_study.pk]
    state = AggregationState.objects.get(study=demo_study)
    assert StudyResult.objects.get(study=demo_study).evidence_as_of == state.requested_at
    assert aggregate_sweep() == []
