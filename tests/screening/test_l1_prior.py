"""The L1 prior and the learned L1 inside the platform: the shipped prior on real headlines it
never saw, its build command, runs scored by it, a study's own fit replacing it only when it
validates, guardrail interceptions kept out of the sieve, and the sieve audit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from apps.screening import learned
from apps.screening.models import FunnyScoreCalibration, ScreeningOutcome, ScreeningTiers
from apps.screening.prior import holdout_mask, packaged_prior, read_humicroedit
from apps.screening.scoring import embedding_of, prior_available
from apps.screening.selectors import (
    calibration_default,
    calibrations_applied,
    human_means,
)
from apps.screening.services.calibration import funnyscore_calibrate
from apps.screening.services.runs import screening_run_batch, screening_run_finish
from apps.screening.services.tiers import screening_tiers_compute
from apps.studies.models import Item
from apps.studies.services import study_create, study_items_import
from apps.textmodels.registry import embedder
from tests.screening.test_runs import candidate_lines, features_for, running_run

pytestmark = pytest.mark.django_db

HUMICROEDIT = (
    Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "humicroedit"
) / "task-1_train.csv"


@pytest.fixture
def study():
    created = study_create(slug="prior", rubric_slug="humor", name="Prior")
    study_items_import(
        study=created, data=candidate_lines(5), filename="items.jsonl", as_candidates=True
    )
    return created


def test_the_shipped_prior_says_what_it_was_trained_on_and_how_well_it_did():
    prior = packaged_prior()
    assert prior is not None
    assert prior.version == "humicroedit-en-v1"
    assert "Humicroedit" in prior.trained_on
    assert prior.measured_languages == ("en",)
    assert prior.embedding_model == embedder().info.short_name
    rho = prior.quality["rho"]
    assert rho["ci_low"] > 0.15
    assert rho["ci_low"] < rho["value"] < rho["ci_high"]
    kept = prior.quality["top_quartile_kept"]
    assert kept["ci_low"] > 0.5
    # It ranks, it does not predict a grade: the originals at 0 pull its level down, so its RMSE
    # is no better than the mean's. What it adds: a headline scores above its own original.
    assert prior.quality["above_original"] > 0.75
    assert "originals at grade 0" in prior.trained_on
    assert len(prior.model.embedding_weights) == 512


@pytest.fixture(autouse=True)
def _reference_data(request):  # type: ignore[no-untyped-def]
    """The shared reference data sits beside the checkout (CI copies it there); without it the
    tests that read the headlines say so (and fail where services are required)."""
    from tests.conftest import skip_or_fail

    reads_it = request.node.name.startswith(("test_the_prior_ranks", "test_the_build_command"))
    if reads_it and not HUMICROEDIT.is_file():
        skip_or_fail(f"the Humicroedit reference file is not at {HUMICROEDIT}")


def test_the_prior_ranks_real_headlines_it_never_saw():
    prior = packaged_prior()
    assert prior is not None
    rows = read_humicroedit(HUMICROEDIT)
    held = [
        row for row, out in zip(rows, holdout_mask(len(rows), seed=prior.seed), strict=True) if out
    ]
    sample = held  # the 1,930 headlines of the seeded held-out fifth
    predicted = prior.predict(embedder().encode([row.text for row in sample]))
    human = np.array([row.mean_grade for row in sample])
    rho, kept = learned.bootstrap_figures(predicted, human, seed=1, rounds=300)
    assert rho.value is not None
    assert rho.value > 0.2
    assert rho.ci_low is not None
    assert rho.ci_low > 0.15
    # The figure the file states is the one measured here (to well below its printed three
    # decimals: the embeddings' float rounding differs by CPU and thread count, moving rho by
    # about 1e-6).
    assert rho.value == pytest.approx(prior.quality["rho"]["value"], abs=1e-4)
    assert kept.value is not None
    assert kept.value > 0.6


def test_ordinary_text_scores_below_jokes_in_both_languages():
    prior = packaged_prior()
    assert prior is not None
    jokes = [
        "My cat knocked my coffee off the desk, then looked at me like I was the one who needed to explain.",
        "Why did the spreadsheet go to therapy? It had too many unresolved references.",
        "我的猫把杯子推下桌，然后看着我，好像该道歉的是我。",
        "菜谱上写着“盐少许”。我至今不知道“少许”是多少克。",
    ]
    ordinary = [
        "Today will be mostly sunny with a high of 22 degrees and light winds from the west.",
        "The city council approved the new budget for road repairs on Tuesday.",
        "今天多云转晴，最高气温22度，西风三到四级。",
        "市议会周二批准了新的道路维修预算。",
    ]
    scores = prior.predict(embedder().encode(jokes + ordinary))
    assert scores[:4].min() > scores[4:].max()


def test_the_build_command_writes_a_measured_prior(tmp_path):
    lines = HUMICROEDIT.read_text(encoding="utf-8").splitlines()[:301]
    source = tmp_path / "small.csv"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "prior.json"
    call_command("build_l1_prior", str(source), "--out", str(out), "--seed", "3")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["n_train"] == 240
    assert data["n_holdout"] == 60
    assert set(data["quality"]) >= {"rho", "top_quartile_kept", "rmse", "rmse_mean_baseline"}
    assert len(data["model"]["embedding_weights"]) == 512
    # Coefficients and figures only, never a headline.
    text = json.dumps(data, ensure_ascii=False)
    assert not any(row.split(",")[1].strip('"')[:30] in text for row in lines[1:50])


def test_the_build_command_names_the_line_and_field_of_a_bad_csv(tmp_path):
    lines = HUMICROEDIT.read_text(encoding="utf-8").splitlines()[:200]
    lines[2] = '99,"A headline without a span",word,3210,1.2'
    source = tmp_path / "bad.csv"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "prior.json"
    with pytest.raises(CommandError, match="line 3, field original"):
        call_command("build_l1_prior", str(source), "--out", str(out))
    assert not out.exists()
    with pytest.raises(CommandError, match="no file"):
        call_command("build_l1_prior", str(tmp_path / "missing.csv"), "--out", str(out))


def test_the_default_scorer_is_the_prior_unless_it_is_turned_off(study, settings):
    settings.L1_PRIOR_PATH = ""
    default = calibration_default(study=study)
    assert default.kind == FunnyScoreCalibration.Kind.PRIOR
    assert default.model == {"prior": "humicroedit-en-v1"}
    settings.L1_PRIOR_PATH = "off"
    assert calibration_default(study=study).kind == FunnyScoreCalibration.Kind.DEFAULTS
    settings.L1_PRIOR_PATH = "/nowhere/prior.json"
    prior, why = prior_available()
    assert prior is None
    assert "/nowhere/prior.json" in why


def test_without_ratings_a_run_scores_with_the_prior(study):
    prior = packaged_prior()
    assert prior is not None
    run = running_run(study, top_k=2)
    ids = list(Item.objects.filter(study=study).values_list("pk", flat=True))
    screening_run_batch(run_id=run.pk, item_ids=ids)
    outcomes = list(ScreeningOutcome.objects.filter(run=run).select_related("item__features"))
    assert len(outcomes) == len(ids)
    assert {o.calibration.kind for o in outcomes} == {FunnyScoreCalibration.Kind.PRIOR}
    for outcome in outcomes:
        vector = embedding_of(outcome.item.features)
        assert vector is not None
        assert vector.shape == (512,)
        assert outcome.funny_score == pytest.approx(float(prior.predict(vector[None])[0]))
    assert sum(o.kept for o in outcomes) == 4  # the top 2 of each model


def test_an_intercepted_candidate_is_shown_and_never_kept_whatever_it_scores(study):
    items = list(Item.objects.filter(study=study).order_by("external_id"))
    for index, item in enumerate(items):
        features_for(item, None, 0.1 * index, 0.0)
    refusal = items[-1]  # the highest FunnyScore of its model
    Item.objects.filter(pk=refusal.pk).update(safety_intercepted=True)
    run = running_run(study, top_k=2)
    screening_run_finish(run=run)
    outcome = ScreeningOutcome.objects.get(run=run, item=refusal)
    assert outcome.stage == ScreeningOutcome.Stage.INTERCEPTED
    assert not outcome.kept
    assert outcome.rank is None
    assert "intercepted by a guardrail" in outcome.reason
    refusal.refresh_from_db()
    assert refusal.stage == Item.Stage.DROPPED
    same_model = ScreeningOutcome.objects.filter(run=run, item__source=refusal.source, kept=True)
    assert same_model.count() == 2  # the next two of its model took the places


def _signal_embeddings(rated, *, seed: int) -> None:
    """Embeddings that carry the human means along one direction; features that carry nothing."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=512)
    direction /= np.linalg.norm(direction)
    for item_id, (mean, _) in human_means(study=rated).items():
        vector = rng.normal(size=512) * 0.02 + direction * (mean - 4.0) * 0.2
        features_for(
            Item.objects.get(pk=item_id),
            float(rng.normal()),
            float(rng.uniform()),
            0.0,
            embedding=vector / np.linalg.norm(vector),
        )


def test_a_study_fit_that_ranks_better_than_the_prior_replaces_it(demo_study):
    _signal_embeddings(demo_study, seed=4)
    stored = funnyscore_calibrate(study=demo_study, compute_missing=False)
    by_kind = {row.kind: row for row in stored if row.scope == "all"}
    fitted = by_kind[FunnyScoreCalibration.Kind.LEARNED]
    assert fitted.validation["current_rho"] is not None  # compared with the prior
    assert fitted.validation["repeats"] == 20
    assert fitted.validation["folds"] == 5
    assert fitted.cv_spearman_low > 0.5
    assert fitted.validation["beats_current"]
    assert fitted.applied
    assert fitted.applicable
    assert fitted.model["prior"] == "humicroedit-en-v1"
    assert "prior" in fitted.model["columns"]
    assert not by_kind[FunnyScoreCalibration.Kind.FEATURES].applied
    assert calibrations_applied(study=demo_study) == [fitted]
    # Every rated item has its held-out prediction for the audit.
    assert len(fitted.validation["held_out"]) == fitted.n_items
    audit = ScreeningTiers.objects.get(study=demo_study).payload["audit"]
    assert audit["scorer_kind"] == "learned"
    assert audit["better_than_chance"] is True


def test_the_tiers_carry_the_sieve_audit_and_warn_of_a_coin(demo_study):
    rng = np.random.default_rng(9)
    for item_id in human_means(study=demo_study):
        features_for(Item.objects.get(pk=item_id), None, float(rng.uniform()), 0.0)
    tiers = screening_tiers_compute(study=demo_study, rounds=300)
    assert tiers is not None
    audit = tiers.payload["audit"]
    assert audit["scorer_kind"] == "defaults"
    assert audit["n"] == len(human_means(study=demo_study))
    kept = audit["top_quartile_kept"]
    assert kept["ci_low"] <= 0.5 <= kept["ci_high"]
    assert audit["better_than_chance"] is False
    assert audit["suggested_keep_share"] is None


def test_the_page_shows_the_audit_its_warning_and_an_interception(demo_study, django_user_model):
    from apps.studies.services import study_member_add
    from tests.screening.test_runs import client_for, page

    owner = django_user_model.objects.create_user("audit-owner", password="pw-audit-123")
    study_member_add(study=demo_study, user=owner)
    rng = np.random.default_rng(9)
    for item_id in human_means(study=demo_study):
        features_for(Item.objects.get(pk=item_id), None, float(rng.uniform()), 0.0)
    screening_tiers_compute(study=demo_study, rounds=300)
    html = client_for(owner).get(page(demo_study)).content.decode()
    audit = html.split('class="stats sieve-audit"')[1].split("</dl>")[0]
    assert 'data-better="no"' in html
    assert "FunnyScore, documented defaults" in audit
    warning = html.split('class="warning sieve-warning" role="alert"')[1].split("</p>")[0]
    assert "no better than chance" in warning
    assert "every candidate (L1 passes 0)" in audit


def test_an_interception_is_marked_on_the_page(study, django_user_model):
    from apps.studies.services import study_member_add
    from tests.screening.test_runs import client_for, page

    owner = django_user_model.objects.create_user("int-owner", password="pw-int-123")
    study_member_add(study=study, user=owner)
    items = list(Item.objects.filter(study=study).order_by("external_id"))
    for index, item in enumerate(items):
        features_for(item, None, 0.1 * index, 0.0)
    Item.objects.filter(pk=items[0].pk).update(safety_intercepted=True)
    screening_run_finish(run=running_run(study, top_k=2))
    html = client_for(owner).get(page(study)).content.decode()
    row = html.split(f'data-item="{items[0].external_id}"')[1].split("</tr>")[0]
    assert ">intercepted<" in row
    assert "Intercepted by a guardrail" in row


def test_without_any_embedding_the_documented_funnyscore_scores_instead_of_the_prior(study):
    # No candidate has an embedding (the encoder covers none of their languages, say): the
    # prior cannot read them, so the formula ranks them rather than dropping every one.
    items = list(Item.objects.filter(study=study))
    for index, item in enumerate(items):
        features_for(item, None, 0.1 * index, 0.0)
    run = running_run(study, top_k=1)
    screening_run_finish(run=run)
    kinds = {o.calibration.kind for o in ScreeningOutcome.objects.filter(run=run)}
    assert kinds == {FunnyScoreCalibration.Kind.DEFAULTS}
    assert ScreeningOutcome.objects.filter(run=run, kept=True).count() == 2


def test_the_learned_l1_reads_what_a_reply_answers(demo_study):
    # The humans' means follow the dialogue each item answers, not the reply's own text: only a
    # fit that reads the context embedding can rank them.
    rng = np.random.default_rng(11)
    direction = rng.normal(size=512)
    direction /= np.linalg.norm(direction)
    for item_id, (mean, _) in human_means(study=demo_study).items():
        text = rng.normal(size=512)
        context = rng.normal(size=512) * 0.02 + direction * (mean - 4.0) * 0.2
        f = features_for(
            Item.objects.get(pk=item_id), None, None, None, embedding=text / np.linalg.norm(text)
        )
        f.context_embedding = (context / np.linalg.norm(context)).astype("<f4").tobytes()
        f.save(update_fields=["context_embedding"])
    stored = funnyscore_calibrate(study=demo_study, compute_missing=False)
    fitted = next(row for row in stored if row.kind == FunnyScoreCalibration.Kind.LEARNED)
    assert fitted.model["blocks"] == ["text", "context"]
    assert len(fitted.model["embedding_weights"]) == 1024
    assert fitted.cv_spearman_low > 0.5
    assert fitted.applied
    # Two replies with the same text score apart when they answer different dialogues.
    from apps.screening.models import ItemFeatures
    from apps.screening.scoring import scores

    same = np.ones(512) / np.sqrt(512)
    funny, dull = (
        ItemFeatures(
            embedding=same.astype("<f4").tobytes(),
            context_embedding=(sign * direction).astype("<f4").tobytes(),
        )
        for sign in (1.0, -1.0)
    )
    high, low = scores([funny, dull], fitted)
    assert high is not None
    assert low is not None
    assert high > low


def test_the_l1_tier_of_a_fitted_scorer_is_its_held_out_agreement(demo_study):
    _signal_embeddings(demo_study, seed=4)
    stored = funnyscore_calibrate(study=demo_study, compute_missing=False)
    fitted = next(row for row in stored if row.kind == FunnyScoreCalibration.Kind.LEARNED)
    assert fitted.applied
    tiers = ScreeningTiers.objects.get(study=demo_study).payload
    l1 = next(row for row in tiers["tiers"] if row["tier"] == "L1")
    means = human_means(study=demo_study)
    ids = sorted(means)
    held_out = np.array([fitted.validation["held_out"][str(pk)] for pk in ids])
    human = np.array([means[pk][0] for pk in ids])
    assert l1["agreement"]["value"] == pytest.approx(learned.spearman(held_out, human), abs=1e-9)
