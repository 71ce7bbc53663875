"""Screening runs end to end, FunnyScore calibration against stored ratings, the candidates page,
and importing items as candidates."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core.errors import Conflict, DomainError
from apps.screening.calibration import DEFAULT_COEFFICIENTS, MIN_ITEMS_PER_SCOPE, MIN_ITEMS_TO_FIT
from apps.screening.models import (
    FunnyScoreCalibration,
    ItemFeatures,
    ScreeningOutcome,
    ScreeningRun,
)
from apps.screening.selectors import (
    calibration_default,
    calibration_for_item,
    calibrations_applied,
    calibrations_current,
    human_means,
)
from apps.screening.services.calibration import funnyscore_calibrate
from apps.screening.services.runs import (
    REASON_HELD,
    screening_run_batch,
    screening_run_finish,
    screening_run_start,
)
from apps.studies.models import Item, Study
from apps.studies.services import study_create, study_items_import, study_member_add

pytestmark = pytest.mark.django_db

MODELS = ("gpt-x", "quipster-v2")


def candidate_lines(per_model: int, prefix: str = "c") -> bytes:
    lines = []
    for model in MODELS:
        for i in range(per_model):
            lines.append(
                {
                    "id": f"{prefix}-{model}-{i:02d}",
                    "text": f"Joke {i} by {model}: I told my plant a secret. Now it is rooting for me {i}.",
                    "source": model,
                    "level": "single",
                    "humor_type": "pun" if i % 2 else "observational",
                    "lang": "en",
                }
            )
    return "\n".join(json.dumps(line) for line in lines).encode()


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user("outsider", password="pw-outsider-123")


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser("boss", password="pw-boss-123")


@pytest.fixture
def study(owner) -> Study:
    study = study_create(slug="screen", rubric_slug="humor", name="Screen", owner=owner)
    study_items_import(
        study=study, data=candidate_lines(5), filename="items.jsonl", as_candidates=True
    )
    return study


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def features_for(
    item: Item, surprise, coherence, penalty, missing: str = "", embedding=None
) -> ItemFeatures:
    """Features set by hand; without an embedding, one marked missing (so nothing recomputes)."""
    return ItemFeatures.objects.create(
        embedding=None if embedding is None else np.asarray(embedding, dtype="<f4").tobytes(),
        embedding_missing="" if embedding is not None else "set by the test",
        item=item,
        surprise=surprise,
        surprise_missing="" if surprise is not None else (missing or "no language model"),
        coherence=coherence,
        coherence_missing="" if coherence is not None else (missing or "no embedding model"),
        valence=None if penalty is None else 0.0,
        valence_penalty=penalty,
        valence_missing="" if penalty is not None else (missing or "no sentiment model"),
        computed_at=timezone.now(),
    )


def stages(study: Study) -> dict[str, str]:
    return dict(Item.objects.filter(study=study).values_list("external_id", "stage"))


def running_run(study: Study, top_k: int) -> ScreeningRun:
    return ScreeningRun.objects.create(
        study=study, top_k=top_k, batch_size=250, batches_total=1, status="running"
    )


# --- ranking, with known features ---------------------------------------------------------------


def test_the_top_k_per_model_go_into_the_study_and_the_rest_are_dropped(study):
    items = {item.external_id: item for item in Item.objects.filter(study=study)}
    # Coherence decides the order (defaults: b = 1); gpt-x items get 0.1 .. 0.5 by index.
    for external_id, item in items.items():
        index = int(external_id[-2:])
        features_for(item, None, 0.1 * (index + 1), 0.0)
    run = running_run(study, top_k=2)
    screening_run_finish(run=run)
    after = stages(study)
    for model in MODELS:
        assert after[f"c-{model}-04"] == after[f"c-{model}-03"] == Item.Stage.STUDY
        for i in range(3):
            assert after[f"c-{model}-{i:02d}"] == Item.Stage.DROPPED
    outcome = ScreeningOutcome.objects.get(run=run, item__external_id="c-gpt-x-03")
    assert outcome.rank == 2
    assert outcome.kept
    assert outcome.reason == "rank 2 of 5 for gpt-x: in the top 2"
    assert outcome.funny_score == pytest.approx(0.4)
    assert outcome.calibration is not None
    assert outcome.calibration.is_default
    low = ScreeningOutcome.objects.get(run=run, item__external_id="c-quipster-v2-00")
    assert (low.rank, low.kept) == (5, False)
    assert low.reason == "rank 5 of 5 for quipster-v2: below the top 2"


def test_ties_are_broken_by_external_id(study):
    for item in Item.objects.filter(study=study):
        features_for(item, 0.5, 0.5, 0.0)
    run = running_run(study, top_k=1)
    screening_run_finish(run=run)
    kept = ScreeningOutcome.objects.filter(run=run, kept=True).values_list(
        "item__external_id", flat=True
    )
    assert sorted(kept) == ["c-gpt-x-00", "c-quipster-v2-00"]


def test_the_valence_penalty_pushes_a_mean_item_down(study):
    for item in Item.objects.filter(study=study):
        features_for(item, 1.0, 0.5, 0.9 if item.external_id.endswith("-00") else 0.0)
    run = running_run(study, top_k=4)
    screening_run_finish(run=run)
    mean = ScreeningOutcome.objects.get(run=run, item__external_id="c-gpt-x-00")
    assert mean.rank == 5
    assert mean.funny_score == pytest.approx(1.0 + 0.5 - DEFAULT_COEFFICIENTS.c * 0.9)
    assert stages(study)["c-gpt-x-00"] == Item.Stage.DROPPED


def test_held_items_stay_held_and_unscorable_items_are_dropped_with_the_reason(study):
    items = {item.external_id: item for item in Item.objects.filter(study=study)}
    for external_id, item in items.items():
        if external_id == "c-gpt-x-01":
            features_for(item, None, None, None, missing="text too short")
        else:
            features_for(item, 0.2, 0.5, 0.0)
    Item.objects.filter(pk=items["c-gpt-x-02"].pk).update(
        stage=Item.Stage.HELD, held_from_stage=Item.Stage.CANDIDATE
    )
    run = running_run(study, top_k=20)
    screening_run_finish(run=run)
    after = stages(study)
    held = ScreeningOutcome.objects.get(run=run, item__external_id="c-gpt-x-02")
    assert (held.kept, held.rank, held.reason) == (False, None, REASON_HELD)
    assert after["c-gpt-x-02"] == Item.Stage.HELD
    unscored = ScreeningOutcome.objects.get(run=run, item__external_id="c-gpt-x-01")
    assert (unscored.kept, unscored.rank, unscored.funny_score) == (False, None, None)
    assert "no L1 score" in unscored.reason
    assert "text too short" in unscored.reason
    assert after["c-gpt-x-01"] == Item.Stage.DROPPED
    # The three others of gpt-x are ranked among themselves.
    assert (
        ScreeningOutcome.objects.get(run=run, item__external_id="c-gpt-x-04").reason
        == "rank 3 of 3 for gpt-x: in the top 20"
    )
    assert ScreeningOutcome.objects.filter(run=run).count() == 10


def test_items_already_in_the_study_or_dropped_before_are_not_screened_again(study):
    Item.objects.create(study=study, external_id="in-study", text="x", source="gpt-x")
    Item.objects.create(
        study=study, external_id="old", text="y", source="gpt-x", stage=Item.Stage.DROPPED
    )
    for item in Item.objects.filter(study=study):
        features_for(item, 0.0, 0.9, 0.0)
    run = running_run(study, top_k=1)
    screening_run_finish(run=run)
    screened = set(
        ScreeningOutcome.objects.filter(run=run).values_list("item__external_id", flat=True)
    )
    assert "in-study" not in screened
    assert "old" not in screened
    assert stages(study)["old"] == Item.Stage.DROPPED


# --- starting a run -----------------------------------------------------------------------------


@pytest.mark.parametrize("top_k", [0, -3, 1001, "many", 2.5])
def test_a_bad_top_k_is_refused_and_nothing_changes(study, owner, top_k):
    before = stages(study)
    with pytest.raises(DomainError) as caught:
        screening_run_start(study=study, user=owner, top_k=top_k)
    assert caught.value.field == "top_k"
    assert caught.value.status_code == 400
    assert not ScreeningRun.objects.exists()
    assert stages(study) == before


def test_a_second_start_while_a_run_is_queued_is_refused(study, owner):
    first = screening_run_start(study=study, user=owner, top_k=3)
    assert first.status == ScreeningRun.Status.QUEUED
    with pytest.raises(Conflict):
        screening_run_start(study=study, user=owner, top_k=3)
    assert ScreeningRun.objects.count() == 1


def test_a_run_stuck_past_every_time_limit_is_superseded(study, owner, settings):
    stuck = screening_run_start(study=study, user=owner)
    ScreeningRun.objects.filter(pk=stuck.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT * 3)
    )
    screening_run_start(study=study, user=owner)
    stuck.refresh_from_db()
    assert stuck.status == ScreeningRun.Status.FAILED
    assert "superseded" in stuck.error


def test_a_study_without_candidates_cannot_be_screened(owner):
    empty = study_create(slug="empty", rubric_slug="humor", owner=owner)
    Item.objects.create(study=empty, external_id="a", text="A joke", source="human")
    with pytest.raises(DomainError, match="no candidates"):
        screening_run_start(study=empty, user=owner)
    assert not ScreeningRun.objects.exists()


def test_candidates_are_split_into_batches_of_the_configured_size(study, owner, settings):
    settings.SCREENING_BATCH_SIZE = 3
    run = screening_run_start(study=study, user=owner)
    assert (run.batch_size, run.batches_total, run.top_k) == (3, 4, study.screening_top_k)


def test_a_failing_batch_marks_the_run_failed_with_the_error(study, owner, monkeypatch):
    from apps.screening.services import runs

    def broken(item_ids):
        raise RuntimeError("the embedding model file is corrupt")

    run = screening_run_start(study=study, user=owner)
    monkeypatch.setattr(runs, "_features_compute", broken)
    ids = list(Item.objects.filter(study=study).values_list("pk", flat=True))
    screening_run_batch(run_id=run.pk, item_ids=ids)
    run.refresh_from_db()
    assert run.status == ScreeningRun.Status.FAILED
    assert "embedding model file is corrupt" in run.error
    assert set(stages(study).values()) == {Item.Stage.CANDIDATE}


def test_a_batch_of_a_finished_run_changes_nothing(study, owner):
    run = screening_run_start(study=study, user=owner)
    ScreeningRun.objects.filter(pk=run.pk).update(status=ScreeningRun.Status.DONE)
    ids = list(Item.objects.filter(study=study).values_list("pk", flat=True))
    screening_run_batch(run_id=run.pk, item_ids=ids)
    assert not ItemFeatures.objects.exists()
    assert ScreeningRun.objects.get(pk=run.pk).batches_done == 0


# --- end to end, with the real features and eager Celery ---------------------------------------


def test_a_run_computes_features_in_batches_and_promotes_the_top_k_per_model(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.SCREENING_BATCH_SIZE = 4
    Item.objects.filter(study=study, external_id="c-gpt-x-02").update(
        stage=Item.Stage.HELD, held_from_stage=Item.Stage.CANDIDATE
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = screening_run_start(study=study, user=owner, top_k=2)
    run.refresh_from_db()
    assert run.status == ScreeningRun.Status.DONE, run.error
    assert (run.batches_done, run.batches_total) == (3, 3)
    assert run.finished_at is not None
    assert ItemFeatures.objects.filter(item__study=study).count() == 10
    outcomes = list(ScreeningOutcome.objects.filter(run=run).select_related("item"))
    assert len(outcomes) == 10
    after = stages(study)
    assert after["c-gpt-x-02"] == Item.Stage.HELD
    for model in MODELS:
        ranked = sorted(
            (o for o in outcomes if o.item.source == model and o.rank is not None),
            key=lambda o: o.rank,
        )
        kept = [o for o in outcomes if o.item.source == model and o.kept]
        assert len(kept) == 2
        assert {o.rank for o in kept} == {1, 2}
        scores = [o.funny_score for o in ranked]
        assert scores == sorted(scores, reverse=True)
        for o in ranked:
            expected = Item.Stage.STUDY if o.kept else Item.Stage.DROPPED
            assert after[o.item.external_id] == expected
            where = "in the top 2" if o.kept else "below the top 2"
            assert o.reason == f"rank {o.rank} of {len(ranked)} for {model}: {where}"
    # A second run finds nothing left to screen but the held item.
    with pytest.raises(DomainError, match="no candidates"):
        screening_run_start(study=study, user=owner)


def test_a_redelivered_batch_counted_twice_still_ranks_every_candidate_once(study, owner, settings):
    settings.SCREENING_BATCH_SIZE = 5
    run = screening_run_start(study=study, user=owner, top_k=1)
    ids = list(
        Item.objects.filter(study=study).order_by("external_id").values_list("pk", flat=True)
    )
    first, second = ids[:5], ids[5:]
    screening_run_batch(run_id=run.pk, item_ids=first)
    screening_run_batch(run_id=run.pk, item_ids=first)  # the broker redelivered it
    run.refresh_from_db()
    assert run.status == ScreeningRun.Status.DONE, run.error
    # The finishing step computed the second batch's features itself.
    assert ItemFeatures.objects.filter(item_id__in=second).count() == 5
    assert ScreeningOutcome.objects.filter(run=run, funny_score__isnull=False).count() == 10
    screening_run_batch(run_id=run.pk, item_ids=second)  # the late original changes nothing
    assert ScreeningOutcome.objects.filter(run=run).count() == 10
    assert ScreeningOutcome.objects.filter(run=run, kept=True).count() == 2


# --- calibration against the study's ratings ---------------------------------------------------


def synthetic_features(study: Study, *, seed: int = 1) -> None:
    """Features that explain the stored human means through known coefficients, plus noise."""
    rng = np.random.default_rng(seed)
    for item_id, (mean, _) in human_means(study=study).items():
        surprise = float(rng.normal(0.5, 0.4))
        penalty = float(rng.uniform(0, 0.3))
        coherence = (mean - 1.0 - 0.5 * surprise + 2.0 * penalty) / 1.5 + rng.normal(0, 0.02)
        features_for(Item.objects.get(pk=item_id), surprise, float(coherence), penalty)


def test_calibration_fits_the_study_ratings_and_stores_the_data_hash(demo_study):
    synthetic_features(demo_study)
    stored = funnyscore_calibrate(study=demo_study, compute_missing=False)
    # No level or humor type has 30 items: the formula and the learned L1 over all of them.
    assert [(row.scope, row.kind) for row in stored] == [("all", "features"), ("all", "learned")]
    fitted = stored[0]
    assert fitted.n_items == len(human_means(study=demo_study))
    assert fitted.a == pytest.approx(0.5, abs=0.1)
    assert fitted.b == pytest.approx(1.5, abs=0.15)
    assert fitted.c == pytest.approx(2.0, abs=0.2)
    assert fitted.intercept == pytest.approx(1.0, abs=0.15)
    assert fitted.r2 > 0.9
    assert fitted.cv_spearman > 0.9
    assert len(fitted.data_hash) == 64
    assert not fitted.is_default
    again = funnyscore_calibrate(study=demo_study, compute_missing=False)
    assert again[0].data_hash == fitted.data_hash
    assert again[0].cv_spearman == fitted.cv_spearman
    assert [row.pk for row in calibrations_current(study=demo_study)] == [r.pk for r in again]


def test_calibration_with_too_few_rated_items_to_fit_is_refused_and_stores_nothing(demo_study):
    rated = list(human_means(study=demo_study))[: MIN_ITEMS_TO_FIT - 1]
    for item in Item.objects.filter(pk__in=rated):
        features_for(item, 0.1, 0.2, 0.0)
    with pytest.raises(DomainError, match="a calibration needs at least") as caught:
        funnyscore_calibrate(study=demo_study, compute_missing=False)
    assert caught.value.field == "calibration"
    assert not FunnyScoreCalibration.objects.exists()


def test_a_fit_on_fewer_items_than_the_minimum_is_stored_but_not_applied(demo_study, study):
    rated = list(human_means(study=demo_study))[: MIN_ITEMS_PER_SCOPE - 1]
    rng = np.random.default_rng(3)
    for item in Item.objects.filter(pk__in=rated):
        features_for(item, float(rng.normal()), float(rng.uniform()), 0.0)
    both = funnyscore_calibrate(study=demo_study, compute_missing=False)
    assert [row.kind for row in both] == ["features", "learned"]
    for fitted in both:
        assert fitted.n_items == MIN_ITEMS_PER_SCOPE - 1
        assert not fitted.applicable
        assert not fitted.applied
        assert fitted.not_applicable_reason.startswith(
            f"only {MIN_ITEMS_PER_SCOPE - 1} items; at least {MIN_ITEMS_PER_SCOPE} are needed"
        )
    assert calibrations_applied(study=demo_study) == []


def noise_features(study: Study, *, seed: int) -> None:
    """Features unrelated to the human means: a fit on them predicts nothing."""
    rng = np.random.default_rng(seed)
    for item_id in human_means(study=study):
        features_for(
            Item.objects.get(pk=item_id),
            float(rng.normal()),
            float(rng.uniform()),
            float(rng.uniform(0, 0.3)),
        )


def test_a_fit_that_predicts_nothing_is_shown_as_such_and_the_defaults_keep_scoring(
    demo_study, owner, django_capture_on_commit_callbacks
):
    noise_features(demo_study, seed=5)
    fitted, learned_fit = funnyscore_calibrate(study=demo_study, compute_missing=False)
    assert not learned_fit.applied
    assert fitted.n_items >= MIN_ITEMS_PER_SCOPE
    assert fitted.cv_spearman_low is not None
    assert fitted.cv_spearman_low <= 0 <= fitted.cv_spearman_high
    assert set(fitted.intervals) == {"a", "b", "c", "intercept"}
    assert not fitted.applied
    assert "includes 0" in fitted.not_applicable_reason
    study_member_add(study=demo_study, user=owner)
    html = client_for(owner).get(page(demo_study)).content.decode()
    assert "not applied" in html
    assert "includes 0" in html
    assert "Apply this fit anyway" in html
    # Candidates are scored with the documented defaults.
    Item.objects.filter(study=demo_study).update(stage=Item.Stage.CANDIDATE)
    run = running_run(demo_study, top_k=1)
    screening_run_finish(run=run)
    used = {o.calibration.is_default for o in ScreeningOutcome.objects.filter(run=run)}
    assert used == {True}

    # The researcher applies it explicitly: who and when are kept, and it scores the next run.
    # One scorer at a time: applying takes the learned fit, and the formula's stays unapplied.
    response = client_for(owner).post(page(demo_study) + "calibrate/choose/", {"choice": "apply"})
    assert response.status_code == 302
    fitted.refresh_from_db()
    assert not fitted.applied
    fitted = learned_fit
    fitted.refresh_from_db()
    assert (fitted.applied, fitted.applied_by, fitted.applied_at is not None) == (
        True,
        owner,
        True,
    )
    assert "applied by the researcher" in client_for(owner).get(page(demo_study)).content.decode()
    assert calibrations_applied(study=demo_study) == [fitted]
    bad = client_for(owner).post(page(demo_study) + "calibrate/choose/", {"choice": "maybe"})
    assert bad.status_code == 400
    fitted.refresh_from_db()
    assert fitted.applied


def test_the_most_specific_calibration_scores_an_item(study):
    stamp = timezone.now()
    rows = {
        scope: FunnyScoreCalibration.objects.create(study=study, scope=scope, a=1, b=1, c=1)
        for scope in ("all", "humor_type:pun", "level:multi_turn")
    }
    FunnyScoreCalibration.objects.filter(study=study).update(created_at=stamp)
    current = calibrations_current(study=study)
    default = calibration_default(study=study)
    pun = Item(study=study, humor_type="pun", level="multi_turn")
    dialogue = Item(study=study, humor_type="irony", level="multi_turn")
    plain = Item(study=study, humor_type="irony", level="single")
    assert (
        calibration_for_item(item=pun, calibrations=current, default=default)
        == rows["humor_type:pun"]
    )
    assert (
        calibration_for_item(item=dialogue, calibrations=current, default=default)
        == rows["level:multi_turn"]
    )
    assert calibration_for_item(item=plain, calibrations=current, default=default) == rows["all"]
    assert calibration_for_item(item=plain, calibrations=[], default=default).is_default


def test_a_run_uses_the_fitted_calibration_once_there_is_one(study):
    stamp = timezone.now()
    FunnyScoreCalibration.objects.create(study=study, scope="all", a=0, b=0, c=1, intercept=2)
    FunnyScoreCalibration.objects.filter(study=study).update(created_at=stamp)
    for item in Item.objects.filter(study=study):
        features_for(item, 5.0, 0.9, 0.5 if item.external_id.endswith("-00") else 0.0)
    run = running_run(study, top_k=1)
    screening_run_finish(run=run)
    outcome = ScreeningOutcome.objects.get(run=run, item__external_id="c-gpt-x-00")
    assert outcome.funny_score == pytest.approx(1.5)
    assert outcome.calibration is not None
    assert not outcome.calibration.is_default


# --- the candidates page ------------------------------------------------------------------------


def page(study: Study) -> str:
    return f"/studies/{study.slug}/screening/"


def snapshot(study: Study) -> tuple:
    return (
        tuple(sorted(stages(study).items())),
        ScreeningRun.objects.count(),
        FunnyScoreCalibration.objects.count(),
    )


@pytest.mark.parametrize("suffix", ["", "run/", "calibrate/"])
def test_anonymous_visitors_are_sent_to_login(study, suffix):
    before = snapshot(study)
    client = Client()
    response = (client.get if not suffix else client.post)(page(study) + suffix, {"top_k": 2})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert snapshot(study) == before


@pytest.mark.parametrize("suffix", ["", "run/", "calibrate/"])
def test_researchers_of_other_studies_get_not_found(study, outsider, suffix):
    study_create(slug="theirs", rubric_slug="humor", owner=outsider)
    before = snapshot(study)
    client = client_for(outsider)
    response = (client.get if not suffix else client.post)(page(study) + suffix, {"top_k": 2})
    assert response.status_code == 404
    assert snapshot(study) == before


@pytest.mark.parametrize("who", ["owner", "member", "admin"])
def test_owners_members_and_admins_see_the_page_and_can_start_a_run(
    study, owner, admin, django_user_model, who, django_capture_on_commit_callbacks
):
    user = {"owner": owner, "admin": admin}.get(who)
    if who == "member":
        user = django_user_model.objects.create_user("member", password="pw-member-123")
        study_member_add(study=study, user=user)
    client = client_for(user)
    response = client.get(page(study))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'value="20"' in html  # top K prefilled from the study
    assert "c-gpt-x-00" in html
    assert "awaiting a screening run" in html
    with django_capture_on_commit_callbacks() as callbacks:
        response = client.post(page(study) + "run/", {"top_k": 3})
    assert response.status_code == 302
    assert response["Location"] == page(study)
    run = ScreeningRun.objects.get()
    assert (run.top_k, run.created_by, len(callbacks)) == (3, user, 1)


def test_the_page_shows_outcomes_features_missing_reasons_and_calibrations(study, owner):
    for item in Item.objects.filter(study=study):
        features_for(item, None, 0.1 * (int(item.external_id[-2:]) + 1), 0.0)
    Item.objects.filter(external_id="c-quipster-v2-04").update(
        stage=Item.Stage.HELD, held_from_stage=Item.Stage.CANDIDATE
    )
    run = running_run(study, top_k=2)
    screening_run_finish(run=run)
    html = client_for(owner).get(page(study)).content.decode()
    held_row = html.split('data-item="c-quipster-v2-04"')[1].split("</tr>")[0]
    assert ">held<" in held_row
    assert REASON_HELD in held_row
    assert "rank 1 of 5 for gpt-x: in the top 2" in html
    assert "rank 5 of 5 for gpt-x: below the top 2" in html
    assert "no language model" in html  # surprise's missing reason
    # Before any fit, the default scorer's own row (here the documented coefficients).
    default_row = html.split('data-scope="defaults"')[1].split("</tr>")[0]
    assert 'data-kind="defaults"' in html
    assert "FunnyScore, documented defaults" in default_row
    # Each candidate's own text is on the page, with its model, level and language.
    row = html.split('data-item="c-gpt-x-01"')[1].split("</tr>")[0]
    assert "I told my plant a secret" in row
    assert "gpt-x" in row
    assert "Single joke" in row
    assert "English" in row
    assert "1.000" in html
    assert "2.000" in html


def test_the_page_query_count_does_not_grow_with_the_candidates(study, owner):
    def count() -> int:
        client = client_for(owner)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(page(study)).status_code == 200
        return len(queries)

    for item in Item.objects.filter(study=study):
        features_for(item, 0.1, 0.2, 0.0)
    screening_run_finish(run=running_run(study, top_k=2))
    few = count()
    study_items_import(
        study=study,
        data=candidate_lines(20, prefix="more"),
        filename="more.jsonl",
        as_candidates=True,
    )
    for item in Item.objects.filter(study=study, features__isnull=True)[:20]:
        features_for(item, 0.1, 0.2, 0.0)
    assert count() == few


@pytest.mark.parametrize("top_k", ["0", "1001", "lots", ""])
def test_a_bad_top_k_on_the_page_is_a_400_and_nothing_changes(study, owner, top_k):
    before = snapshot(study)
    response = client_for(owner).post(page(study) + "run/", {"top_k": top_k})
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode()
    assert snapshot(study) == before


def test_starting_while_a_run_is_active_is_a_409_on_the_page(study, owner):
    screening_run_start(study=study, user=owner)
    before = snapshot(study)
    response = client_for(owner).post(page(study) + "run/", {"top_k": 2})
    assert response.status_code == 409
    assert "still queued" in response.content.decode()
    assert snapshot(study) == before


def test_calibrating_from_the_page_queues_the_fit(
    demo_study, django_user_model, django_capture_on_commit_callbacks
):
    user = django_user_model.objects.create_user("member", password="pw-member-123")
    study_member_add(study=demo_study, user=user)
    synthetic_features(demo_study)
    client = client_for(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(page(demo_study) + "calibrate/")
    assert response.status_code == 302
    fitted = FunnyScoreCalibration.objects.get(kind="features")
    html = client.get(page(demo_study)).content.decode()
    assert fitted.data_hash[:12] in html
    assert "applied" in html


def test_calibrating_a_study_without_enough_ratings_is_a_400_and_stores_nothing(
    study, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_for(owner).post(page(study) + "calibrate/")
    assert response.status_code == 400
    assert "a calibration needs at least" in response.content.decode()
    assert callbacks == []
    assert not FunnyScoreCalibration.objects.exists()


def test_calibration_computes_the_features_of_rated_items_first(demo_study):
    stored = funnyscore_calibrate(study=demo_study)
    rated = human_means(study=demo_study)
    assert set(ItemFeatures.objects.values_list("item_id", flat=True)) == set(rated)
    fitted = stored[0]
    assert fitted.scope == "all"
    # The default models cover the demo's Chinese and English items: surprise is used.
    assert "a" in fitted.intervals
    assert fitted.a != 0.0
    assert fitted.n_items == len(rated)
    models = ItemFeatures.objects.values_list("models_used", flat=True)
    assert {m["surprise"].split(" (")[0] for m in models} == {"gemma-3-270m"}
    # Whatever it fitted, it is applied only when it meets the rules, and says why not.
    assert fitted.applied == fitted.applicable
    assert fitted.applicable == (
        fitted.n_items >= MIN_ITEMS_PER_SCOPE
        and fitted.cv_spearman_low > 0
        and fitted.validation["beats_current"]
    )


def test_a_get_on_the_post_routes_is_refused(study, owner):
    assert client_for(owner).get(page(study) + "run/").status_code == 405
    assert client_for(owner).get(page(study) + "calibrate/").status_code == 405


# --- importing candidates -----------------------------------------------------------------------


def test_import_items_with_candidates_flag_imports_candidates(study, tmp_path: Path):
    path = tmp_path / "new.jsonl"
    path.write_bytes(candidate_lines(2, prefix="cli"))
    call_command("import_items", study.slug, str(path), "--candidates")
    assert set(
        Item.objects.filter(external_id__startswith="cli-").values_list("stage", flat=True)
    ) == {Item.Stage.CANDIDATE}
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(candidate_lines(1, prefix="direct"))
    call_command("import_items", study.slug, str(plain))
    assert set(
        Item.objects.filter(external_id__startswith="direct-").values_list("stage", flat=True)
    ) == {Item.Stage.STUDY}


@pytest.mark.parametrize(("checked", "stage"), [(True, "candidate"), (False, "study")])
def test_the_upload_checkbox_imports_candidates(study, owner, checked, stage):
    client = client_for(owner)
    assert (
        "Import as candidates for screening"
        in client.get(f"/studies/{study.slug}/settings/").content.decode()
    )
    data = {"file": SimpleUploadedFile("up.jsonl", candidate_lines(1, prefix="up"))}
    if checked:
        data["as_candidates"] = "on"
    response = client.post(f"/studies/{study.slug}/items/", data)
    assert response.status_code == 302
    assert set(
        Item.objects.filter(external_id__startswith="up-").values_list("stage", flat=True)
    ) == {stage}
