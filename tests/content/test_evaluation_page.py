"""The content evaluation: the service on a study with human ratings, metrics and judge
verdicts, and its page for every role (the recompute POST computes with eager Celery)."""

from __future__ import annotations

import numpy as np
import pytest
from django.test import Client
from django.utils import timezone

from apps.content.models import ContentEvaluation, ContentMetrics, ContentWeights
from apps.content.services.evaluation import (
    content_evaluation_compute,
    content_evaluation_request,
    content_weights_fit,
)
from apps.core.errors import DomainError
from apps.findings.charts import fmt_ci
from apps.judgments.models import ScoreAnswer
from apps.screening.models import JudgeVerdict
from apps.studies.models import Item, Question, Study
from apps.studies.services import study_create, study_member_add
from tests.factories import RaterFactory, RaterSessionFactory, ScoreResponseFactory

pytestmark = pytest.mark.django_db

DIMENSIONS = ("fluency", "informativeness", "originality")
VERDICT_WEIGHTS = {"news": (0.3, 0.55, 0.15), "creative": (0.2, 0.15, 0.65)}


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("owner", password="pw-owner-123")


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user("outsider", password="pw-outsider-123")


@pytest.fixture
def admin(django_user_model):
    return django_user_model.objects.create_superuser("boss", password="pw-boss-123")


def rate_study(study: Study, *, n_per_type: int = 12, n_raters: int = 6, seed: int = 1) -> None:
    """Articles of two content types, every rater scoring every article from its true quality,
    stored metrics that track the truth loosely (sentence_length_cv nearly duplicates the
    fluency score, distinct_2 is noise) and a judge that tracks it closely."""
    rng = np.random.default_rng(seed)
    questions = {q.name: q for q in Question.objects.filter(rubric=study.rubric)}
    raters = [RaterFactory(study=study) for _ in range(n_raters)]
    sessions = [RaterSessionFactory(rater=rater) for rater in raters]
    k = 0
    for content_type in ("news", "creative"):
        for _ in range(n_per_type):
            k += 1
            item = Item.objects.create(
                study=study,
                external_id=f"a{k:03d}",
                text=f"Article {k}.",
                source="model-a",
                content_type=content_type,
            )
            truth = rng.uniform(1.5, 4.5, size=3)
            values = {
                name: float(np.clip((t - 1) / 4 + 0.15 * rng.normal(), 0, 1))
                for name, t in zip(DIMENSIONS, truth, strict=True)
            }
            values["sentence_length_cv"] = values["fluency"] + 0.02 * rng.normal()
            values["distinct_2"] = float(rng.uniform())
            ContentMetrics.objects.create(item=item, values=values, computed_at=timezone.now())
            JudgeVerdict.objects.create(
                item=item,
                model_name="judge-x",
                status=JudgeVerdict.Status.OK,
                scores={
                    name: int(np.clip(round(t), 1, 5))
                    for name, t in zip(DIMENSIONS, truth, strict=True)
                },
                latency_ms=500.0,
            )
            for session in sessions:
                card = ScoreResponseFactory(session=session, item=item, active_seconds=30.0)
                for name, t in zip(DIMENSIONS, truth, strict=True):
                    value = int(np.clip(round(t + 0.7 * rng.normal()), 1, 5))
                    ScoreAnswer.objects.create(response=card, question=questions[name], value=value)
                # The overall verdict, weighted as a reader of this content type would.
                verdict = float(np.dot(VERDICT_WEIGHTS[content_type], truth)) + 0.5 * rng.normal()
                ScoreAnswer.objects.create(
                    response=card,
                    question=questions["overall"],
                    value=int(np.clip(round(verdict), 1, 5)),
                )


@pytest.fixture
def study(owner):
    study = study_create(slug="articles", rubric_slug="content", name="Articles", owner=owner)
    rate_study(study)
    return study


@pytest.fixture
def humor_study(owner):
    return study_create(slug="jokes", rubric_slug="humor", name="Jokes", owner=owner)


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def url(study: Study, action: str = "") -> str:
    return f"/studies/{study.slug}/content/{action}"


def test_the_evaluation_stores_weights_independence_and_tiers(study):
    evaluation = content_evaluation_compute(study=study, rounds=200)
    assert evaluation.seed == study.random_seed
    assert evaluation.rounds == 200
    assert len(evaluation.input_hash) == 64
    payload = evaluation.payload
    by_type = {row["content_type"]: row for row in payload["weights"]}
    assert set(by_type) == {"news", "analysis", "creative"}
    # No analysis articles: the documented defaults, with the reason.
    assert by_type["analysis"]["is_default"]
    assert by_type["analysis"]["weights"] == {
        "fluency": 0.25,
        "informativeness": 0.5,
        "originality": 0.25,
    }
    assert "0 rated items" in by_type["analysis"]["quality"]["reason"]
    for content_type in ("news", "creative"):
        assert by_type[content_type]["n_items"] == 12
        assert sum(by_type[content_type]["weights"].values()) == pytest.approx(1.0)
    human = payload["independence"]["human"]
    assert human["names"] == list(DIMENSIONS)
    assert len(human["pairs"]) == 3
    assert payload["independence"]["automatic"]["names"] == list(DIMENSIONS)
    every = payload["independence"]["metrics"]
    # In the order of the metrics module (METRIC_NAMES).
    assert every["names"] == [
        "sentence_length_cv",
        "fluency",
        "informativeness",
        "distinct_2",
        "originality",
    ]
    assert ["sentence_length_cv", "fluency"] in every["flagged"]
    assert [row["name"] for row in payload["metric_vs_human"]][-1] == "composite"
    fluency = next(row for row in payload["metric_vs_human"] if row["name"] == "fluency")
    assert fluency["matching"] == "fluency"
    assert fluency["against"]["fluency"]["spearman"]["value"] > 0.5
    tiers = {row["tier"]: row for row in payload["tiers"]}
    assert tiers["L2"]["label"] == "LLM judge (judge-x)"
    assert tiers["L2"]["items_per_second"] == pytest.approx(2.0)
    assert tiers["L2"]["agreement"]["value"] > 0.5
    assert tiers["L3"]["human_minutes"] == pytest.approx(24 * 6 * 30 / 60)
    assert tiers["L3"]["agreement"]["value"] > 0.5
    # Every item had stored metrics, so nothing was computed and nothing timed.
    assert tiers["L1"]["items_per_second"] is None
    assert payload["counts"]["scorecards"] == 144


def test_recomputing_with_the_same_inputs_gives_the_same_numbers(study):
    first = content_evaluation_compute(study=study, rounds=100)
    payload, digest = first.payload, first.input_hash
    again = content_evaluation_compute(study=study, rounds=100)
    assert again.input_hash == digest
    assert again.payload["tiers"] == payload["tiers"]
    assert again.payload["independence"] == payload["independence"]
    assert ContentEvaluation.objects.filter(study=study).count() == 1


def test_weights_are_stored_per_content_type_with_seed_and_data_hash(study):
    rows = content_weights_fit(study=study)
    assert {row.content_type for row in rows} == {"news", "analysis", "creative"}
    for row in rows:
        assert row.seed == study.random_seed
        assert len(row.data_hash) == 64
        assert row.fluency + row.informativeness + row.originality == pytest.approx(1.0)
    assert ContentWeights.objects.filter(study=study).count() == 3


def test_a_study_without_the_content_rubric_is_refused_and_nothing_is_stored(humor_study):
    with pytest.raises(DomainError) as caught:
        content_evaluation_compute(study=humor_study)
    assert caught.value.field == "rubric"
    with pytest.raises(DomainError):
        content_evaluation_request(study=humor_study)
    with pytest.raises(DomainError):
        content_weights_fit(study=humor_study)
    assert not ContentEvaluation.objects.exists()
    assert not ContentWeights.objects.exists()


def test_bad_rounds_are_refused(study):
    with pytest.raises(DomainError) as caught:
        content_evaluation_compute(study=study, rounds=0)
    assert caught.value.field == "rounds"
    assert not ContentEvaluation.objects.exists()


def test_anonymous_visitors_are_sent_to_login(study):
    for response in (Client().get(url(study)), Client().post(url(study, "recompute/"))):
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert not ContentEvaluation.objects.exists()


def test_researchers_of_other_studies_get_not_found_and_change_nothing(
    study, outsider, django_capture_on_commit_callbacks
):
    study_create(slug="theirs", rubric_slug="content", owner=outsider)
    client = client_for(outsider)
    assert client.get(url(study)).status_code == 404
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert client.post(url(study, "recompute/")).status_code == 404
    assert callbacks == []
    assert not ContentEvaluation.objects.exists()
    assert not ContentWeights.objects.exists()


@pytest.mark.parametrize("who", ["owner", "member", "admin"])
def test_owners_members_and_admins_see_the_page_not_computed_yet(
    study, owner, admin, django_user_model, who
):
    user = {"owner": owner, "admin": admin}.get(who)
    if who == "member":
        user = django_user_model.objects.create_user("member", password="pw-member-123")
        study_member_add(study=study, user=user)
    response = client_for(user).get(url(study))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Not computed yet." in page
    assert "Recompute the evaluation" in page


def test_the_recompute_post_computes_with_eager_celery_and_the_page_shows_the_numbers(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    client = client_for(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url(study, "recompute/"))
    assert response.status_code == 302
    assert response["Location"] == url(study)
    evaluation = ContentEvaluation.objects.get(study=study)
    page = client.get(url(study)).content.decode()
    assert "The content evaluation was queued" in page
    assert "Not computed yet." not in page
    tiers = {row["tier"]: row for row in evaluation.payload["tiers"]}
    assert fmt_ci(tiers["L2"]["agreement"], 2) in page
    assert fmt_ci(tiers["L3"]["agreement"], 2) in page
    pair = evaluation.payload["independence"]["human"]["pairs"][0]
    assert f'data-pair="{pair["a"]}|{pair["b"]}"' in page
    assert fmt_ci(pair["pearson"], 2) in page
    news = next(row for row in evaluation.payload["weights"] if row["content_type"] == "news")
    assert f"{news['weights']['fluency']:.2f}" in page
    assert "judge-x" in page


def test_flagged_pairs_are_highlighted_on_the_page(study, owner):
    evaluation = content_evaluation_compute(study=study, rounds=100)
    matrices = evaluation.payload["independence"]
    flagged = matrices["metrics"]["flagged"]
    assert flagged
    page = client_for(owner).get(url(study)).content.decode()
    for a, b in flagged:
        assert f'data-pair="{a}|{b}" class="flagged"' in page
    assert page.count('class="flagged"') == sum(
        len(matrices[name]["flagged"]) for name in ("human", "automatic", "metrics")
    )


def test_recompute_on_a_non_content_study_is_a_clear_400_and_queues_nothing(
    humor_study, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client_for(owner).post(url(humor_study, "recompute/"))
    assert response.status_code == 400
    assert "fluency, informativeness and originality" in response.content.decode()
    assert callbacks == []
    assert not ContentEvaluation.objects.exists()


def test_the_page_only_accepts_get_and_recompute_only_post(study, owner):
    client = client_for(owner)
    assert client.post(url(study)).status_code == 405
    assert client.get(url(study, "recompute/")).status_code == 405


ARTICLE = (
    "The city council approved a new budget on Monday. It adds 12 buses to the northern routes.\n\n"
    "Officials said the plan costs 4 million dollars. Riders welcomed the change, though some "
    "asked for later evening service.\n\n"
    "The first buses start in March. The council will review the routes after six months."
)


def test_the_evaluation_computes_missing_metrics_and_measures_their_speed(owner):
    study = study_create(slug="fresh", rubric_slug="content", owner=owner)
    for k in range(5):
        Item.objects.create(
            study=study,
            external_id=f"n{k}",
            text=ARTICLE.replace("12", str(10 + k)),
            source="model-a",
            content_type="news",
        )
    evaluation = content_evaluation_compute(study=study, rounds=50)
    assert ContentMetrics.objects.filter(item__study=study).count() == 5
    timing = evaluation.payload["l1_timing"]
    assert timing["items"] == 5
    assert timing["seconds"] > 0
    l1 = next(row for row in evaluation.payload["tiers"] if row["tier"] == "L1")
    assert l1["items_per_second"] == pytest.approx(5 / timing["seconds"])
    # Nothing left to compute: the next evaluation keeps the measured speed.
    again = content_evaluation_compute(study=study, rounds=50)
    assert again.payload["l1_timing"] == timing
