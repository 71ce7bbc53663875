"""The sieve as the method runs it: offense filter -> L1 FunnyScore -> the LLM judge on L1's
survivors (a real local HTTP server speaking chat-completions) -> the top K per model and level;
and reruns with another K and other thresholds from the stored features and verdicts."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from apps.core.errors import Conflict, DomainError
from apps.judgments.models import ScoreResponse
from apps.screening.models import ItemFeatures, JudgeVerdict, ScreeningOutcome, ScreeningRun
from apps.screening.services import runs
from apps.screening.services.runs import screening_run_rerun, screening_run_start
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.screening import test_judge
from tests.screening.test_judge import GOOD, MODEL, FakeJudge, Reply
from tests.screening.test_runs import client_for, features_for, page

pytestmark = pytest.mark.django_db

# The judge's stand-in HTTP server and the settings pointing at it, as the judge's tests use them.
fake_judge = test_judge.fake_judge
configured = test_judge.configured


def add(study: Study, external_id: str, source: str, text: str, level: str = "single") -> Item:
    return Item.objects.create(
        study=study,
        external_id=external_id,
        text=text,
        source=source,
        level=level,
        language="en",
        stage=Item.Stage.CANDIDATE,
    )


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def pool(owner) -> Study:
    """Two models, four candidates each, with known features: FunnyScore (defaults) = surprise +
    coherence, so the L1 order within each model is 0, 1, 2, 3."""
    study = study_create(slug="sieve", rubric_slug="humor", name="Sieve", owner=owner)
    for source in ("gpt-x", "quipster"):
        for i in range(4):
            # The judge finds the second-best of each model bland.
            text = f"{source} joke {i}" + (" bland" if i == 1 else "")
            item = add(study, f"{source}-{i}", source, text)
            features_for(item, 3.0 - i, 0.5, 0.0)
    return study


def judged_by_text(judge: FakeJudge) -> None:
    def respond(text: str) -> Reply:
        if "timeout" in text:
            return Reply(content=json.dumps(GOOD), delay=1.5)
        funniness = 2 if "bland" in text else 5
        return Reply(content=json.dumps({**GOOD, "funniness": funniness}))

    judge.respond = respond


def run_past_features(study: Study, **sieve) -> ScreeningRun:
    """A run whose feature batches are done (the features are the fixture's), about to sieve."""
    judge_model = runs.judge_stage_model()
    settings_ = runs.sieve_settings_parse(study=study, judge_model=judge_model, **sieve)
    run = ScreeningRun.objects.create(
        study=study,
        status=ScreeningRun.Status.RUNNING,
        top_k=settings_.top_k,
        l1_keep=settings_.l1_keep,
        l1_min_score=settings_.l1_min_score,
        judge_model=judge_model,
        judge_min=settings_.judge_min,
        batch_size=250,
        batches_total=1,
        batches_done=1,
    )
    ScreeningRun.objects.filter(pk=run.pk).update(pool_cutoff=timezone.now())
    return run


def outcomes(run: ScreeningRun) -> dict[str, ScreeningOutcome]:
    return {
        o.item.external_id: o
        for o in ScreeningOutcome.objects.filter(run=run).select_related("item")
    }


def test_the_judge_sieves_l1_survivors_and_the_top_k_survivors_are_promoted(
    pool, configured, django_capture_on_commit_callbacks
):
    judged_by_text(configured)
    run = run_past_features(pool, top_k=1, l1_keep=3, judge_min=3)
    with django_capture_on_commit_callbacks(execute=True):
        runs._advance(run.pk)
    run.refresh_from_db()
    assert run.status == ScreeningRun.Status.DONE, run.error
    assert (run.judge_model, run.judge_batches_done, run.judge_batches_total) == (MODEL, 1, 1)
    # Only L1's survivors (three per model) went to the judge, each once.
    asked = sorted(
        request["messages"][-1]["content"].split('"""\n')[1].split("\n")[0]
        for request in configured.requests
    )
    assert asked == sorted(
        f"{s} joke {i}" + (" bland" if i == 1 else "")
        for s in ("gpt-x", "quipster")
        for i in range(3)
    )
    got = outcomes(run)
    for source in ("gpt-x", "quipster"):
        best, bland, third, last = (got[f"{source}-{i}"] for i in range(4))
        assert (best.kept, best.stage, best.l1_rank, best.judge_score, best.rank) == (
            True,
            "top_k",
            1,
            5.0,
            1,
        )
        assert best.reason == f"rank 1 of 2 for {source}: in the top 1"
        assert (bland.kept, bland.stage, bland.judge_score, bland.rank) == (
            False,
            "judge",
            2.0,
            None,
        )
        assert bland.reason == f"LLM judge {MODEL}: funniness 2 below 3"
        assert (third.kept, third.stage, third.rank) == (False, "top_k", 2)
        assert (last.kept, last.stage, last.l1_rank, last.judge_status) == (False, "l1", 4, "")
        assert last.reason == f"L1: rank 4 of 4 for {source}: below the L1 pass of 3"
    stages = dict(Item.objects.filter(study=pool).values_list("external_id", "stage"))
    assert sorted(k for k, v in stages.items() if v == Item.Stage.STUDY) == [
        "gpt-x-0",
        "quipster-0",
    ]


def test_an_item_the_judge_could_not_rate_is_not_sieved_by_it(
    pool, configured, settings, django_capture_on_commit_callbacks
):
    judged_by_text(configured)
    Item.objects.filter(external_id="gpt-x-0").update(text="gpt-x joke 0 timeout")
    run = run_past_features(pool, top_k=1, l1_keep=2, judge_min=3)
    with django_capture_on_commit_callbacks(execute=True):
        runs._advance(run.pk)
    first = outcomes(run)["gpt-x-0"]
    assert (first.kept, first.judge_score, first.judge_status) == (True, None, "timeout")
    assert "the judge gave no score (timeout), so it did not sieve" in first.reason
    assert JudgeVerdict.objects.get(item=first.item).status == "timeout"


def test_without_a_judge_l1_goes_straight_to_the_top_k(pool, settings):
    settings.LLM_JUDGE_URL = ""
    run = run_past_features(pool, top_k=2)
    assert (run.judge_model, run.l1_keep, run.judge_min) == ("", 0, None)
    runs._advance(run.pk)
    got = outcomes(run)
    assert [got[f"gpt-x-{i}"].kept for i in range(4)] == [True, True, False, False]
    assert {o.stage for o in got.values()} == {"top_k"}
    assert {o.judge_status for o in got.values()} == {""}


def test_an_l1_minimum_drops_low_scores_before_the_judge(pool, settings):
    settings.LLM_JUDGE_URL = ""
    run = run_past_features(pool, top_k=5, l1_min_score=2.0)
    runs._advance(run.pk)
    got = outcomes(run)
    assert [got[f"gpt-x-{i}"].kept for i in range(4)] == [True, True, False, False]
    assert got["gpt-x-2"].reason == "L1: FunnyScore 1.500 below the minimum 2"


def test_candidates_are_ranked_per_model_and_level_where_levels_exist(pool, settings):
    settings.LLM_JUDGE_URL = ""
    scenario = add(pool, "gpt-x-s", "gpt-x", "A reply.", level="scenario")
    Item.objects.filter(pk=scenario.pk).update(scenario="Cheer up a colleague.")
    features_for(scenario, -5.0, 0.0, 0.0)
    run = run_past_features(pool, top_k=1)
    runs._advance(run.pk)
    got = outcomes(run)
    # The worst FunnyScore of gpt-x, but the best (the only one) of its level.
    assert got["gpt-x-s"].kept
    assert got["gpt-x-s"].reason == "rank 1 of 1 for gpt-x, scenario: in the top 1"
    assert got["gpt-x-0"].reason == "rank 1 of 4 for gpt-x, single: in the top 1"


def test_a_rerun_decides_again_from_stored_features_and_verdicts(
    pool, owner, configured, django_capture_on_commit_callbacks
):
    judged_by_text(configured)
    run = run_past_features(pool, top_k=1, l1_keep=2, judge_min=3)
    with django_capture_on_commit_callbacks(execute=True):
        runs._advance(run.pk)
    computed = dict(ItemFeatures.objects.values_list("item_id", "computed_at"))
    asked = len(configured.requests)
    assert asked == 4  # two L1 survivors per model

    with django_capture_on_commit_callbacks(execute=True):
        rerun = screening_run_rerun(run=run, user=owner, top_k=2, l1_keep=3, judge_min="")
    rerun.refresh_from_db()
    assert rerun.status == ScreeningRun.Status.DONE, rerun.error
    assert rerun.rerun_of_id == run.pk
    # Nothing recomputed: the features are the same rows; only the newly passing third
    # candidate of each model went to the judge.
    assert dict(ItemFeatures.objects.values_list("item_id", "computed_at")) == computed
    assert len(configured.requests) == asked + 2
    got = outcomes(rerun)
    assert [got[f"gpt-x-{i}"].kept for i in range(4)] == [True, True, False, False]
    assert got["gpt-x-1"].judge_score == 2.0  # rated bland, but no judge minimum now
    stages = dict(Item.objects.filter(study=pool).values_list("external_id", "stage"))
    assert stages["gpt-x-1"] == Item.Stage.STUDY
    assert stages["gpt-x-3"] == Item.Stage.DROPPED

    # Only the latest, finished run can be rerun; bad thresholds are refused, nothing changes.
    with pytest.raises(Conflict):
        screening_run_rerun(run=run, user=owner)
    with pytest.raises(DomainError, match="judge_min"):
        screening_run_rerun(run=rerun, user=owner, judge_min="9")
    assert ScreeningRun.objects.count() == 2


def test_a_rerun_keeps_candidates_people_already_rated_in_the_study(pool, owner, settings):
    settings.LLM_JUDGE_URL = ""
    run = run_past_features(pool, top_k=2)
    runs._advance(run.pk)
    rated = Item.objects.get(external_id="gpt-x-1")
    assert rated.stage == Item.Stage.STUDY
    from tests.factories import ScoreResponseFactory

    ScoreResponseFactory(item=rated, session__rater__study=pool)
    assert ScoreResponse.objects.filter(item=rated).exists()
    rerun = screening_run_rerun(run=run, user=owner, top_k=1)
    runs._advance(rerun.pk)
    rated.refresh_from_db()
    assert rated.stage == Item.Stage.STUDY
    # It is not decided again: people's ratings of it are evidence already in the study.
    assert "gpt-x-1" not in outcomes(rerun)
    assert outcomes(rerun)["gpt-x-0"].kept


def test_a_run_records_the_judge_and_the_default_thresholds(pool, owner, configured):
    run = screening_run_start(study=pool, user=owner, top_k=3)
    assert (run.judge_model, run.l1_keep, run.judge_min) == (MODEL, 6, 3.0)
    assert run.pool_cutoff == run.created_at


@pytest.mark.parametrize(
    ("field", "value"),
    [("l1_keep", "-1"), ("l1_keep", "many"), ("l1_min_score", "nan"), ("judge_min", "0")],
)
def test_bad_sieve_settings_are_refused_and_nothing_is_stored(
    pool, owner, configured, field, value
):
    with pytest.raises(DomainError) as caught:
        screening_run_start(study=pool, user=owner, top_k=2, **{field: value})
    assert caught.value.field == field
    assert not ScreeningRun.objects.exists()


def test_the_page_shows_each_stage_and_offers_a_rerun(
    pool, owner, configured, django_capture_on_commit_callbacks
):
    judged_by_text(configured)
    run = run_past_features(pool, top_k=1, l1_keep=3, judge_min=3)
    with django_capture_on_commit_callbacks(execute=True):
        runs._advance(run.pk)
    client = client_for(owner)
    html = client.get(page(pool)).content.decode()
    assert "LLM judge jester-judge-1: funniness 2 below 3" in html
    assert "L1: rank 4 of 4 for gpt-x: below the L1 pass of 3" in html
    assert "Rerun the latest run with these settings" in html
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            page(pool) + "run/",
            {"top_k": 3, "l1_keep": 0, "l1_min_score": "", "judge_min": "", "rerun": "1"},
        )
    assert response.status_code == 302
    latest = ScreeningRun.objects.order_by("-pk").first()
    assert (latest.rerun_of_id, latest.top_k, latest.l1_keep, latest.status) == (
        run.pk,
        3,
        0,
        "done",
    )
    bad = client.post(page(pool) + "run/", {"top_k": 3, "judge_min": 12, "rerun": "1"})
    assert bad.status_code == 400
    assert ScreeningRun.objects.count() == 2
