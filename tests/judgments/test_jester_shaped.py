"""A slider dataset of Jester's shape as the judge of the continuous path: ~900 raters with
their own ids, 140 jokes, ratings continuous on −10..10 in steps of 1/32 (nearly all of them
fractions), most cells missing. It imports unchanged and every figure equals an independent
computation: the stored values, each joke's mean, the overall mean, and interval alpha
(Krippendorff's own package)."""

from __future__ import annotations

import io

import krippendorff
import numpy as np
import pytest

from apps.analysis.services import study_aggregate
from apps.judgments.models import ScoreAnswer
from apps.judgments.services import study_judgments_import
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.judgments.test_slider import SLIDER

pytestmark = pytest.mark.django_db

RATERS, JOKES = 906, 140


def jester_like(seed: int = 2001) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rater, joke, rating) rows: each rater rates 15-60 jokes; a rating is the joke's pull
    plus the rater's leniency plus noise, on the 1/32 grid, within −10..10."""
    rng = np.random.default_rng(seed)
    pull = rng.normal(0.5, 2.5, JOKES)
    leniency = rng.normal(0.0, 2.0, RATERS)
    raters, jokes = [], []
    for r in range(RATERS):
        chosen = rng.choice(JOKES, size=int(rng.integers(15, 61)), replace=False)
        raters.extend([r] * chosen.size)
        jokes.extend(chosen.tolist())
    rater = np.array(raters)
    joke = np.array(jokes)
    raw = pull[joke] + leniency[rater] + rng.normal(0.0, 3.0, rater.size)
    rating = np.clip(np.round(raw * 32) / 32, -10, 10)
    return rater, joke, rating


@pytest.fixture
def jester() -> Study:
    study = study_create(slug="jester-real", rubric_spec=SLIDER, name="Jester", backgrounds=[])
    Item.objects.bulk_create(
        Item(study=study, external_id=f"joke-{j:03d}", text=f"joke {j}", source="human")
        for j in range(JOKES)
    )
    return study


def test_a_jester_shaped_slider_dataset_imports_unchanged_and_every_figure_checks(
    jester: Study,
) -> None:
    rater, joke, rating = jester_like()
    # Nearly all values are fractions, as in Jester (97% non-integer there).
    assert np.mean(rating != np.round(rating)) > 0.9
    csv = io.StringIO()
    csv.write("kind,rater,background,item,rating\n")
    for r, j, value in zip(rater, joke, rating, strict=True):
        csv.write(f"score,u{r:04d},unknown,joke-{j:03d},{float(value)!r}\n")
    summary = study_judgments_import(
        study=jester, data=csv.getvalue().encode(), filename="jester.csv"
    )
    assert summary.created["score"] == rating.size

    # Stored without loss: every (rater, joke) value exactly as in the file.
    stored = {
        (r, j): v
        for r, j, v in ScoreAnswer.objects.filter(response__study=jester).values_list(
            "response__rater__external_id", "response__item__external_id", "value"
        )
    }
    expected = {
        (f"u{r:04d}", f"joke-{j:03d}"): float(v)
        for r, j, v in zip(rater, joke, rating, strict=True)
    }
    assert stored == expected

    document = study_aggregate(study=jester, rounds=20).payload
    means = {row["item"]: row["questions"]["rating"]["value"] for row in document["items"]}
    for j in range(JOKES):
        assert means[f"joke-{j:03d}"] == pytest.approx(rating[joke == j].mean(), abs=1e-9)
    # The group table's estimand is the mean rating (every rating counts once).
    human = document["groups"]["source"]["human"]["questions"]["rating"]
    assert human["value"] == pytest.approx(rating.mean(), abs=1e-9)
    assert human["n"] == rating.size

    # Interval alpha against Krippendorff's own implementation, on the raters x jokes matrix.
    matrix = np.full((RATERS, JOKES), np.nan)
    matrix[rater, joke] = rating
    reference = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    agreement = document["agreement"]["rating"]
    assert agreement["alpha_level"] == "interval"
    assert agreement["krippendorff_alpha"]["interval"]["value"] == pytest.approx(
        reference, abs=1e-9
    )
    assert agreement["fleiss_kappa"] is None
