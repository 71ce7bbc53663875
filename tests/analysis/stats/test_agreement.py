from __future__ import annotations

import csv
import json
from fractions import Fraction
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from apps.analysis.stats.agreement import (
    _alpha_units,
    _fleiss_from_weights,
    _fleiss_unit_parts,
    cohen_kappa,
    cohen_kappa_table,
    cross_group_agreement,
    fleiss_counts,
    fleiss_kappa,
    fleiss_kappa_ci,
    fleiss_kappa_details,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    per_item_agreement,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "stats"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())


def _long(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(raters x units) reliability matrix with nan for missing -> long-form item, rater, value."""
    rater, item = np.nonzero(~np.isnan(matrix))
    return item, rater, matrix[rater, item]


def _random_reliability(
    rng: np.random.Generator, n_raters: int, n_units: int, n_values: int, missing: float
) -> np.ndarray:
    data = rng.integers(1, n_values + 1, size=(n_raters, n_units)).astype(float)
    # Give units a shared tendency so alpha is not just noise around 0.
    shift = rng.integers(-1, 2, size=n_units)
    data = np.clip(data + shift, 1, n_values)
    data[rng.random(data.shape) < missing] = np.nan
    return data


# ---------------------------------------------------------------------------- Cohen's kappa


def _cohen_fixture() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = list(csv.DictReader((FIXTURES / "cohen_wikipedia_2x2.csv").open()))
    a = np.array([r["rater_A"] for r in rows for _ in range(int(r["count"]))])
    b = np.array([r["rater_B"] for r in rows for _ in range(int(r["count"]))])
    table = np.array([[20, 5], [10, 15]])
    return a, b, table


def test_cohen_kappa_reproduces_the_published_two_reader_example():
    expected = EXPECTED["cohen_wikipedia_2x2"]
    a, b, table = _cohen_fixture()
    result = cohen_kappa_table(table)
    assert result.kappa == pytest.approx(expected["kappa"], abs=expected["tol"])
    assert result.p_o == pytest.approx(expected["p_o"], abs=expected["tol"])
    assert result.p_e == pytest.approx(expected["p_e"], abs=expected["tol"])
    assert result.n == 50
    kappa = cohen_kappa(a, b, categories=np.array(["yes", "no"]))
    assert kappa == pytest.approx(expected["kappa"], abs=expected["tol"])


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_sklearn_on_random_ratings(weights):
    rng = np.random.default_rng(11)
    for _ in range(5):
        a = rng.integers(1, 6, size=200)
        b = np.clip(a + rng.integers(-2, 3, size=200), 1, 5)
        ours = cohen_kappa(a, b, weights=weights)
        theirs = cohen_kappa_score(a, b, weights=weights)
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_cohen_kappa_weights_follow_the_given_categories_including_unused_ones():
    rng = np.random.default_rng(12)
    a = rng.choice([1, 2, 4], size=100)
    b = np.where(rng.random(100) < 0.6, a, rng.choice([1, 2, 4], size=100))
    # 3 is never used, yet it sits between 2 and 4: positions become 1, 2, 4 of a 4-point scale
    # instead of 1, 2, 3 of a 3-point one, so the linear weights change.
    labels = np.arange(1, 5)
    ours = cohen_kappa(a, b, weights="linear", categories=labels)
    assert ours == pytest.approx(cohen_kappa_score(a, b, weights="linear", labels=labels))
    assert ours != pytest.approx(cohen_kappa(a, b, weights="linear"))


def test_cohen_kappa_drops_units_where_either_rating_is_missing():
    a = np.array([1.0, 2.0, np.nan, 3.0, 1.0, 2.0])
    b = np.array([1.0, 2.0, 3.0, np.nan, 2.0, 2.0])
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score([1, 2, 1, 2], [1, 2, 2, 2]))


def test_cohen_kappa_is_nan_when_both_raters_always_give_the_same_single_answer():
    assert np.isnan(cohen_kappa(np.ones(10), np.ones(10)))


def test_cohen_kappa_rejects_a_rating_outside_the_categories():
    with pytest.raises(ValueError, match="outside"):
        cohen_kappa(np.array([1, 2, 9]), np.array([1, 2, 2]), categories=np.array([1, 2, 3]))


# ---------------------------------------------------------------------------- Fleiss' kappa


def _fleiss_fixture() -> np.ndarray:
    rows = list(csv.reader((FIXTURES / "fleiss_wikipedia_10x14x5.csv").open()))
    return np.array([[int(x) for x in row[1:]] for row in rows[1:]])


def test_fleiss_kappa_reproduces_the_published_worked_example():
    expected = EXPECTED["fleiss_wikipedia_10x14x5"]
    tol = expected["tol"]
    result = fleiss_kappa_details(_fleiss_fixture())
    assert result.kappa == pytest.approx(expected["kappa"], abs=tol)
    assert result.p_bar == pytest.approx(expected["P_bar"], abs=tol)
    assert result.p_e_bar == pytest.approx(expected["P_e_bar"], abs=tol)
    np.testing.assert_allclose(result.p_i, expected["P_i"], atol=tol)
    assert fleiss_kappa(_fleiss_fixture()) == result.kappa


def test_fleiss_kappa_matches_statsmodels_when_every_subject_has_the_same_number_of_raters():
    rng = np.random.default_rng(21)
    for n_raters, n_cat in [(3, 2), (7, 5), (15, 7)]:
        probs = rng.dirichlet(np.ones(n_cat), size=40)
        counts = np.array([rng.multinomial(n_raters, p) for p in probs])
        assert fleiss_kappa(counts) == pytest.approx(sm_fleiss_kappa(counts), abs=1e-12)


def _gwet_generalized_fleiss(counts: np.ndarray) -> float:
    """Loop transcription of Gwet (2014) / irrCAC fleiss.kappa.raw, for unequal raters."""
    rated = [row for row in counts if row.sum() > 0]
    agreements = [
        sum(c * (c - 1) for c in row) / (row.sum() * (row.sum() - 1))
        for row in rated
        if row.sum() >= 2
    ]
    pa = sum(agreements) / len(agreements)
    k = counts.shape[1]
    pi = [sum(row[j] / row.sum() for row in rated) / len(rated) for j in range(k)]
    pe = sum(p * p for p in pi)
    return (pa - pe) / (1 - pe)


def test_fleiss_kappa_with_unequal_raters_follows_gwets_generalization():
    rng = np.random.default_rng(22)
    counts = np.array(
        [rng.multinomial(rng.integers(0, 9), rng.dirichlet(np.ones(4))) for _ in range(60)]
    )
    assert (counts.sum(axis=1) == 1).any()
    assert (counts.sum(axis=1) == 0).any()
    assert fleiss_kappa(counts) == pytest.approx(_gwet_generalized_fleiss(counts), abs=1e-12)


def test_fleiss_kappa_with_unequal_raters_on_a_hand_computed_table():
    # Subject 1: 3 raters, (2, 1): P_1 = (2*1 + 0) / (3*2) = 1/3
    # Subject 2: 2 raters, (0, 2): P_2 = (0 + 2*1) / (2*1) = 1
    # Subject 3: 1 rater,  (1, 0): no P_3 (one rating), proportions (1, 0)
    # P_bar = (1/3 + 1) / 2 = 2/3
    # p_1 = (2/3 + 0 + 1) / 3 = 5/9, p_2 = (1/3 + 1 + 0) / 3 = 4/9, P_e = 25/81 + 16/81 = 41/81
    # kappa = (2/3 - 41/81) / (1 - 41/81) = (13/81) / (40/81) = 13/40
    counts = np.array([[2, 1], [0, 2], [1, 0]])
    result = fleiss_kappa_details(counts)
    assert result.p_bar == pytest.approx(2 / 3)
    assert result.p_e_bar == pytest.approx(41 / 81)
    assert result.kappa == pytest.approx(13 / 40)
    assert np.isnan(result.p_i[2])
    assert result.n_subjects == 2


def test_fleiss_counts_tabulates_long_ratings_per_item_and_category():
    item = np.array([0, 0, 1, 2, 2, 2])
    value = np.array([1.0, 3.0, 3.0, 2.0, 2.0, np.nan])
    counts = fleiss_counts(item, value, 4, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(counts, [[1, 0, 1], [0, 0, 1], [0, 2, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="outside"):
        fleiss_counts(item, np.array([1.0, 3.0, 3.0, 2.0, 2.0, 4.0]), 4, np.array([1.0, 2.0, 3.0]))


def test_fleiss_weighted_items_equal_the_kappa_of_the_resampled_table():
    rng = np.random.default_rng(23)
    counts = np.array(
        [rng.multinomial(rng.integers(1, 8), rng.dirichlet(np.ones(3))) for _ in range(30)]
    )
    p_i, twice, props = _fleiss_unit_parts(counts)
    idx = rng.integers(0, len(counts), size=len(counts))
    w = np.bincount(idx, minlength=len(counts)).astype(float)
    assert _fleiss_from_weights(p_i, twice, props, w)[0] == pytest.approx(
        fleiss_kappa(counts[idx]), abs=1e-12
    )


def test_fleiss_kappa_ci_holds_the_estimate_and_repeats_with_the_same_seed():
    rng = np.random.default_rng(24)
    n_items = 80
    item = np.repeat(np.arange(n_items), 6)
    truth = rng.integers(1, 4, size=n_items)
    value = np.where(
        rng.random(item.size) < 0.7, truth[item], rng.integers(1, 4, size=item.size)
    ).astype(float)
    cats = np.array([1.0, 2.0, 3.0])
    first = fleiss_kappa_ci(item, value, n_items, cats, rounds=300, seed=5)
    assert first.estimate == pytest.approx(fleiss_kappa(fleiss_counts(item, value, n_items, cats)))
    assert first.ci_low < first.estimate < first.ci_high
    assert first.n == n_items
    assert fleiss_kappa_ci(item, value, n_items, cats, rounds=300, seed=5) == first
    assert fleiss_kappa_ci(item, value, n_items, cats, rounds=300, seed=6) != first


# ---------------------------------------------------------------------------- Krippendorff's alpha

# Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
# Communication, University of Pennsylvania, Departmental Papers 43, section C ("nominal data,
# any number of observers, missing data"): 4 observers x 12 units; published alpha 0.743
# (nominal), 0.815 (ordinal), 0.849 (interval).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ]
)


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_krippendorff_alpha_reproduces_krippendorffs_published_example(level, published):
    item, rater, value = _long(KRIPPENDORFF_2011)
    assert krippendorff_alpha(item, rater, value, level=level) == pytest.approx(published, abs=5e-4)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_matches_the_krippendorff_package_with_missing_ratings(level):
    rng = np.random.default_rng(31)
    for n_raters, n_units, n_values, missing in [
        (3, 30, 3, 0.2),
        (8, 120, 7, 0.5),
        (20, 60, 5, 0.8),
    ]:
        data = _random_reliability(rng, n_raters, n_units, n_values, missing)
        item, rater, value = _long(data)
        theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha(item, rater, value, level=level) == pytest.approx(
            theirs, abs=1e-9
        )


def test_krippendorff_alpha_handles_non_integer_interval_values_and_sparse_item_ids():
    rng = np.random.default_rng(32)
    data = np.round(rng.normal(50, 10, size=(5, 40)), 1)
    data += rng.normal(0, 8, size=40)
    data[rng.random(data.shape) < 0.3] = np.nan
    item, rater, value = _long(data)
    theirs = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    ours = krippendorff_alpha(item * 1000 + 7, rater, value, level="interval")
    assert ours == pytest.approx(theirs, abs=1e-9)


def test_krippendorff_alpha_ignores_items_with_a_single_rating():
    item, rater, value = _long(KRIPPENDORFF_2011)
    extra_item = np.concatenate([item, [100, 101]])
    extra_rater = np.concatenate([rater, [0, 1]])
    extra_value = np.concatenate([value, [5.0, 1.0]])
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(
            extra_item, extra_rater, extra_value, level=level
        ) == pytest.approx(krippendorff_alpha(item, rater, value, level=level), abs=1e-12)


def test_krippendorff_alpha_treats_nan_values_as_missing():
    item, rater, value = _long(KRIPPENDORFF_2011)
    with_nan = krippendorff_alpha(
        np.append(item, 3), np.append(rater, 7), np.append(value, np.nan), level="ordinal"
    )
    assert with_nan == krippendorff_alpha(item, rater, value, level="ordinal")


def test_krippendorff_alpha_is_nan_without_variation_or_without_pairable_items():
    assert np.isnan(
        krippendorff_alpha(
            np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.full(4, 3.0), level="interval"
        )
    )
    assert np.isnan(
        krippendorff_alpha(
            np.array([0, 1]), np.array([0, 1]), np.array([1.0, 2.0]), level="nominal"
        )
    )


def test_krippendorff_alpha_rejects_a_rater_rating_an_item_twice():
    with pytest.raises(ValueError, match="more than once"):
        krippendorff_alpha(
            np.array([0, 0, 1]), np.array([4, 4, 4]), np.array([1.0, 2.0, 1.0]), level="nominal"
        )


def test_krippendorff_alpha_rejects_an_unknown_level():
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(np.array([0, 0]), np.array([0, 1]), np.array([1.0, 2.0]), level="ratio")


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_of_weighted_items_equals_the_package_alpha_of_the_resampled_items(level):
    # The bootstrap never rebuilds the data: it weights per-item parts. Check that weighting
    # equals resampling items for real (including the ordinal metric, which depends on the
    # resampled value frequencies).
    rng = np.random.default_rng(33)
    data = _random_reliability(rng, 6, 50, 5, 0.4)
    item, rater, value = _long(data)
    units = _alpha_units(item, rater, value, level)
    pairable = np.flatnonzero((~np.isnan(data)).sum(axis=0) >= 2)
    idx = rng.integers(0, len(pairable), size=len(pairable))
    resampled = data[:, pairable[idx]]
    theirs = krippendorff.alpha(reliability_data=resampled, level_of_measurement=level)
    ours = units.alpha(np.bincount(idx, minlength=len(pairable)).astype(float))
    assert ours == pytest.approx(theirs, abs=1e-9)


def test_krippendorff_alpha_ci_holds_the_estimate_and_repeats_with_the_same_seed():
    rng = np.random.default_rng(34)
    data = _random_reliability(rng, 10, 100, 7, 0.3)
    item, rater, value = _long(data)
    first = krippendorff_alpha_ci(item, rater, value, level="ordinal", rounds=300, seed=1)
    assert first.estimate == pytest.approx(krippendorff_alpha(item, rater, value, level="ordinal"))
    assert first.ci_low < first.estimate < first.ci_high
    assert first.n == 100
    assert krippendorff_alpha_ci(item, rater, value, level="ordinal", rounds=300, seed=1) == first
    assert krippendorff_alpha_ci(item, rater, value, level="ordinal", rounds=300, seed=2) != first
    wide = krippendorff_alpha_ci(
        item, rater, value, level="ordinal", rounds=300, seed=1, level_ci=0.99
    )
    assert wide.ci_low <= first.ci_low
    assert wide.ci_high >= first.ci_high


def test_agreement_intervals_hold_at_study_scale():
    # 2,000 items x 600 raters x 100,000 ratings, 1,000 bootstrap rounds each; their speed is
    # measured by benchmarks/bench_aggregate.py, not timed here.
    rng = np.random.default_rng(35)
    n_items, n_raters, per_item = 2000, 600, 50
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.concatenate(
        [rng.choice(n_raters, size=per_item, replace=False) for _ in range(n_items)]
    )
    truth = rng.integers(1, 8, size=n_items)
    value = np.clip(truth[item] + rng.integers(-2, 3, size=item.size), 1, 7).astype(float)
    alpha = krippendorff_alpha_ci(item, rater, value, level="ordinal", rounds=1000, seed=3)
    kappa = fleiss_kappa_ci(item, value, n_items, np.arange(1.0, 8.0), rounds=1000, seed=3)
    assert alpha.ci_low < alpha.estimate < alpha.ci_high
    assert kappa.ci_low < kappa.estimate < kappa.ci_high


# ---------------------------------------------------------------------------- per-item agreement

# A tiny study on a 1..5 scale; groups: raters 0, 1 -> group 0; raters 2, 3 -> group 1.
#   item 0: r0=1, r1=2, r2=4
#   item 1: r0=3, r1=3             (group 0 only)
#   item 2: r1=5, r2=5, r3=4
#   item 3: r3=2                   (one rating)
# Study distribution of the 9 answers: 1:1, 2:2, 3:2, 4:2, 5:2 -> mean 29/9,
# E[x^2] = (1 + 8 + 18 + 32 + 50)/9 = 109/9, var = 109/9 - 841/81 = 140/81.
# Quadratic weights ((a-b)/4)^2: D_exp = sum p_a p_b (a-b)^2/16 = 2 var / 16 = 35/162.
TINY_ITEM = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3])
TINY_RATER = np.array([0, 1, 2, 0, 1, 1, 2, 3, 3])
TINY_VALUE = np.array([1, 2, 4, 3, 3, 5, 5, 4, 2], dtype=float)
TINY_GROUP = np.array([0, 0, 1, 1])
D_EXP = Fraction(35, 162)


def _agreement(mean_disagreement: Fraction) -> float:
    return float(1 - mean_disagreement / D_EXP)


def test_per_item_agreement_matches_the_hand_computation():
    # item 0 pairs: (1,2) 1/16, (1,4) 9/16, (2,4) 4/16 -> mean 14/48
    # item 1 pair: (3,3) 0 -> agreement 1
    # item 2 pairs: (5,5) 0, (5,4) 1/16, (5,4) 1/16 -> mean 2/48
    got = per_item_agreement(TINY_ITEM, TINY_RATER, TINY_VALUE, 5, scale_min=1, scale_max=5)
    expected = [_agreement(Fraction(14, 48)), 1.0, _agreement(Fraction(2, 48)), np.nan, np.nan]
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_per_item_agreement_with_nominal_weights_counts_disagreeing_pairs():
    # Nominal: D_exp = 1 - sum p^2 = 1 - (1 + 4 + 4 + 4 + 4)/81 = 64/81
    # item 0: all 3 pairs disagree -> 1; item 2: 2 of 3 pairs disagree -> 2/3
    got = per_item_agreement(
        TINY_ITEM, TINY_RATER, TINY_VALUE, 4, scale_min=1, scale_max=5, weights="nominal"
    )
    d_exp = Fraction(64, 81)
    np.testing.assert_allclose(
        got[[0, 1, 2]], [float(1 - 1 / d_exp), 1.0, float(1 - Fraction(2, 3) / d_exp)]
    )


def test_cross_group_agreement_matches_the_hand_computation():
    # item 0 cross pairs (group 0 vs group 1): (1,4) 9/16, (2,4) 4/16 -> mean 13/32
    # item 1: only group 0 rated it -> nan
    # item 2 cross pairs: r1=5 vs r2=5 -> 0, r1=5 vs r3=4 -> 1/16 -> mean 1/32 (r2, r3 same group)
    # item 3: one rating -> nan
    got = cross_group_agreement(
        TINY_ITEM, TINY_RATER, TINY_VALUE, TINY_GROUP, 4, scale_min=1, scale_max=5
    )
    expected = [_agreement(Fraction(13, 32)), np.nan, _agreement(Fraction(1, 32)), np.nan]
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_cross_group_agreement_with_linear_weights_matches_the_hand_computation():
    # Linear weights |a-b|/4: D_exp = sum_ab p_a p_b |a-b| / 4 over the 9 answers
    # = (sum over the 81 ordered answer pairs of |a-b|) / (81 * 4). Sorted answers
    # 1,2,2,3,3,4,4,5,5: sum_{i<j} (x_j - x_i) = sum_j x_j (2j - 10)
    # = -8 - 12 - 8 - 6 + 0 + 8 + 16 + 30 + 40 = 60, so 120 ordered -> D_exp = 120 / 324
    # item 0 cross pairs: 3/4, 2/4 -> mean 5/8; item 2: 0, 1/4 -> mean 1/8
    got = cross_group_agreement(
        TINY_ITEM, TINY_RATER, TINY_VALUE, TINY_GROUP, 4, scale_min=1, scale_max=5, weights="linear"
    )
    answers = TINY_VALUE
    assert np.abs(answers[:, None] - answers[None, :]).sum() == 120
    d_exp = Fraction(120, 324)
    np.testing.assert_allclose(
        got[[0, 2]], [float(1 - Fraction(5, 8) / d_exp), float(1 - Fraction(1, 8) / d_exp)]
    )


def test_cross_group_agreement_equals_one_when_every_rater_agrees_on_each_item():
    rng = np.random.default_rng(41)
    item = np.repeat(np.arange(20), 8)
    rater = np.tile(np.arange(8), 20)
    value = rng.integers(1, 8, size=20)[item].astype(float)
    groups = np.arange(8) % 4
    got = cross_group_agreement(item, rater, value, groups, 20, scale_min=1, scale_max=7)
    np.testing.assert_allclose(got, 1.0)
    np.testing.assert_allclose(
        per_item_agreement(item, rater, value, 20, scale_min=1, scale_max=7), 1.0
    )


def test_agreement_is_near_zero_when_answers_are_random():
    rng = np.random.default_rng(42)
    n_items, per_item = 400, 20
    item = np.repeat(np.arange(n_items), per_item)
    rater = np.tile(np.arange(per_item), n_items)
    value = rng.integers(1, 8, size=item.size).astype(float)
    groups = np.arange(per_item) % 4
    cross = cross_group_agreement(item, rater, value, groups, n_items, scale_min=1, scale_max=7)
    within = per_item_agreement(item, rater, value, n_items, scale_min=1, scale_max=7)
    assert abs(np.mean(cross)) < 0.03
    assert abs(np.mean(within)) < 0.03


def test_cross_group_agreement_matches_a_loop_over_rater_pairs():
    rng = np.random.default_rng(43)
    n_items, n_raters = 30, 12
    mask = rng.random((n_items, n_raters)) < 0.5
    item, rater = np.nonzero(mask)
    value = rng.integers(1, 6, size=item.size).astype(float)
    groups = rng.integers(-1, 3, size=n_raters)  # -1: background unknown, never paired
    got = cross_group_agreement(item, rater, value, groups, n_items, scale_min=1, scale_max=5)
    d_exp = np.mean(((value[:, None] - value[None, :]) / 4) ** 2)
    expected = np.full(n_items, np.nan)
    for u in range(n_items):
        rows = np.flatnonzero(item == u)
        pairs = [
            ((value[i] - value[j]) / 4) ** 2
            for i in rows
            for j in rows
            if groups[rater[i]] >= 0
            and groups[rater[j]] >= 0
            and groups[rater[i]] != groups[rater[j]]
        ]
        if pairs:
            expected[u] = 1 - np.mean(pairs) / d_exp
    np.testing.assert_allclose(got, expected, atol=1e-12)


def test_per_item_agreement_rejects_values_off_the_scale():
    with pytest.raises(ValueError, match="lie in"):
        per_item_agreement(
            np.array([0, 0]), np.array([0, 1]), np.array([1.0, 9.0]), 1, scale_min=1, scale_max=7
        )


def test_agreement_of_no_ratings_is_nan_rather_than_an_error():
    none_i, none_v = np.array([], dtype=np.int64), np.array([])
    assert np.isnan(krippendorff_alpha(none_i, none_i, none_v, level="ordinal"))
    assert krippendorff_alpha_ci(none_i, none_i, none_v, level="ordinal", seed=1).n == 0
    assert np.isnan(fleiss_kappa_ci(none_i, none_v, 3, np.array([1.0, 2.0]), seed=1).estimate)
    assert np.isnan(per_item_agreement(none_i, none_i, none_v, 3, scale_min=1, scale_max=5)).all()
    groups = np.array([0, 1])
    cross = cross_group_agreement(none_i, none_i, none_v, groups, 3, scale_min=1, scale_max=5)
    assert np.isnan(cross).all()
