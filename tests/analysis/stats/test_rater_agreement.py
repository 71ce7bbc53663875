"""Agreement with raters as the sample: weighted coefficients, the rater jackknife and Cohen's
kappa over pairs of raters, each against independent code (krippendorff, statsmodels, sklearn,
brute-force loops)."""

from __future__ import annotations

import itertools

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from apps.analysis.stats.agreement import fleiss_counts, fleiss_kappa
from apps.analysis.stats.rater_agreement import (
    RaterUnits,
    jackknife_groups,
    jackknife_t_interval,
    jackknife_weights,
    mean_pair_kappa_intervals,
    pairwise_cohen_kappa,
    rater_agreement_intervals,
)

LEVELS = ("nominal", "ordinal", "interval")


def _ratings(
    seed: int, n_raters: int = 14, n_items: int = 30, scale: int = 5
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    item_effect = rng.normal(0, 1, n_items)
    leniency = rng.normal(0, 0.5, n_raters)
    items, raters, values = [], [], []
    for r in range(n_raters):
        chosen = rng.choice(n_items, size=int(rng.integers(6, n_items)), replace=False)
        for i in chosen:
            latent = (scale + 1) / 2 + item_effect[i] + leniency[r] + rng.normal(0, 0.8)
            items.append(i)
            raters.append(r)
            values.append(float(np.clip(np.rint(latent), 1, scale)))
    return np.array(items), np.array(raters), np.array(values)


def _reliability(item: np.ndarray, rater: np.ndarray, value: np.ndarray) -> np.ndarray:
    data = np.full((rater.max() + 1, item.max() + 1), np.nan)
    data[rater, item] = value
    return data


def test_unit_weights_give_the_plain_coefficients() -> None:
    item, rater, value = _ratings(1)
    units = RaterUnits.build(item, rater, value)
    got = units.coefficients(np.ones((1, units.n_raters)), LEVELS)
    data = _reliability(item, rater, value)
    for level in LEVELS:
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert got[level][0] == pytest.approx(expected, abs=1e-10)
    counts = fleiss_counts(item, value, item.max() + 1, np.arange(1.0, 6.0))
    assert got["fleiss"][0] == pytest.approx(fleiss_kappa(counts), abs=1e-12)


def test_fleiss_with_every_rater_on_every_item_matches_statsmodels() -> None:
    rng = np.random.default_rng(2)
    table = np.clip(rng.integers(1, 5, (8, 20)) + rng.integers(-1, 2, 20), 1, 4).astype(float)
    rater, item = np.nonzero(np.ones_like(table))
    value = table[rater, item]
    units = RaterUnits.build(item, rater, value)
    counts = fleiss_counts(item, value, 20, np.arange(1.0, 5.0))
    got = units.coefficients(np.ones((1, 8)), ())["fleiss"][0]
    assert got == pytest.approx(sm_fleiss_kappa(counts, method="fleiss"), abs=1e-12)


def test_zero_weights_give_the_coefficients_of_the_raters_kept() -> None:
    item, rater, value = _ratings(3)
    units = RaterUnits.build(item, rater, value)
    keep = np.ones(units.n_raters)
    keep[[0, 3, 7]] = 0.0
    got = units.coefficients(keep[None, :], LEVELS)
    mask = ~np.isin(rater, [0, 3, 7])
    data = _reliability(item[mask], rater[mask], value[mask])
    for level in LEVELS:
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert got[level][0] == pytest.approx(expected, abs=1e-10)


def _brute_alpha_with_copies(
    item: np.ndarray, rater: np.ndarray, value: np.ndarray, copies: np.ndarray, level: str
) -> float:
    """Alpha over ``copies[r]`` copies of each rater, a pair of copies of one rater not being a
    pair of raters: each unit contributes m_u times its mean disagreement over the pairs."""
    by_unit: dict[int, list[tuple[int, float]]] = {}
    for i, r, v in zip(item, rater, value, strict=True):
        by_unit.setdefault(int(i), []).extend([(int(r), float(v))] * int(copies[r]))
    observed, pooled = 0.0, []
    for answers in by_unit.values():
        pairs = [
            (a[1], b[1])
            for x, a in enumerate(answers)
            for y, b in enumerate(answers)
            if x != y and a[0] != b[0]
        ]
        if not pairs:
            continue
        delta = [float(a != b) if level == "nominal" else (a - b) ** 2 for a, b in pairs]
        observed += len(answers) * float(np.mean(delta))
        pooled += [v for _, v in answers]
    values = np.array(pooled)
    if level == "nominal":
        expected = float((values[:, None] != values[None, :]).sum())
    else:
        expected = float(((values[:, None] - values[None, :]) ** 2).sum())
    return 1.0 - (len(values) - 1) * observed / expected


def test_bootstrap_counts_never_pair_a_rater_with_their_own_copy() -> None:
    item, rater, value = _ratings(4, n_raters=9, n_items=12)
    units = RaterUnits.build(item, rater, value)
    copies = np.array([2, 0, 1, 3, 1, 0, 2, 1, 1], dtype=float)
    got = units.coefficients(copies[None, :], ("nominal", "interval"))
    for level in ("nominal", "interval"):
        expected = _brute_alpha_with_copies(item, rater, value, copies, level)
        assert got[level][0] == pytest.approx(expected, abs=1e-10)


def test_jackknife_replicates_are_recomputations_without_each_group() -> None:
    item, rater, value = _ratings(5, n_raters=20)
    result = rater_agreement_intervals(item, rater, value, levels=("ordinal",), seed=9, groups=6)
    label, g = jackknife_groups(20, groups=6, seed=9)
    assert g == 6
    replicates = []
    for k in range(g):
        mask = label[rater] != k
        data = _reliability(item[mask], rater[mask], value[mask])
        replicates.append(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
    reps = np.array(replicates)
    full = krippendorff.alpha(
        reliability_data=_reliability(item, rater, value), level_of_measurement="ordinal"
    )
    se = np.sqrt((g - 1) / g * ((reps - reps.mean()) ** 2).sum())
    from scipy.stats import t

    half = t.ppf(0.975, g - 1) * se
    interval = result["ordinal"]
    assert interval.estimate == pytest.approx(full, abs=1e-10)
    assert (interval.ci_low, interval.ci_high) == pytest.approx(
        (full - half, min(full + half, 1.0)), abs=1e-10
    )
    assert interval.raters == 20
    assert interval.as_dict()["interval"] == "rater_jackknife"


def test_jackknife_groups_are_balanced_and_fixed_by_the_seed() -> None:
    label, g = jackknife_groups(103, groups=10, seed=1)
    assert g == 10
    assert np.bincount(label).min() == 10
    assert np.bincount(label).max() == 11
    assert np.array_equal(label, jackknife_groups(103, groups=10, seed=1)[0])
    assert not np.array_equal(label, jackknife_groups(103, groups=10, seed=2)[0])
    # Fewer raters than groups: one rater per group, each replicate leaves one rater out.
    assert jackknife_weights(4, groups=50, seed=0).sum(axis=1).tolist() == [3.0] * 4
    assert jackknife_weights(1, groups=50, seed=0).shape == (0, 1)
    assert np.isnan(jackknife_t_interval(0.5, np.array([0.4]))[0])


def _brute_pairs(
    item: np.ndarray, rater: np.ndarray, value: np.ndarray, labels: list[float], min_shared: int
) -> list[tuple[int, int, int, dict[str, float]]]:
    answers: dict[int, dict[int, float]] = {}
    for i, r, v in zip(item, rater, value, strict=True):
        answers.setdefault(int(r), {})[int(i)] = float(v)
    out = []
    for a, b in itertools.combinations(sorted(answers), 2):
        shared = sorted(set(answers[a]) & set(answers[b]))
        if len(shared) < min_shared:
            continue
        x = [answers[a][i] for i in shared]
        y = [answers[b][i] for i in shared]
        with np.errstate(invalid="ignore", divide="ignore"):
            kappas = {
                "unweighted": cohen_kappa_score(x, y, labels=labels),
                "linear": cohen_kappa_score(x, y, labels=labels, weights="linear"),
                "quadratic": cohen_kappa_score(x, y, labels=labels, weights="quadratic"),
            }
        out.append((a, b, len(shared), kappas))
    return out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_pair_kappas_match_sklearn_pair_by_pair() -> None:
    item, rater, value = _ratings(6, n_raters=16, n_items=25)
    labels = [1.0, 2.0, 3.0, 4.0, 5.0]
    got = pairwise_cohen_kappa(
        item,
        rater,
        value,
        np.array(labels),
        weightings=("unweighted", "linear", "quadratic"),
        min_shared=8,
    )
    expected = _brute_pairs(item, rater, value, labels, min_shared=8)
    assert len(expected) > 20
    assert got.candidate_pairs == len(expected)
    assert list(zip(got.left, got.right, got.shared, strict=True)) == [e[:3] for e in expected]
    for weighting in ("unweighted", "linear", "quadratic"):
        theirs = np.array([e[3][weighting] for e in expected])
        assert np.allclose(got.kappa[weighting], theirs, equal_nan=True, atol=1e-12)
    means = mean_pair_kappa_intervals(got, seed=1)
    for weighting in ("unweighted", "quadratic"):
        theirs = np.array([e[3][weighting] for e in expected])
        assert means[weighting].estimate == pytest.approx(np.nanmean(theirs), abs=1e-12)
        assert means[weighting].pairs == int(np.isfinite(theirs).sum())
        assert means[weighting].ci_low < means[weighting].estimate < means[weighting].ci_high


def test_one_pair_matches_statsmodels_cohens_kappa() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 4, 60)
    b = np.where(rng.random(60) < 0.6, a, rng.integers(0, 4, 60))
    item = np.concatenate([np.arange(60), np.arange(60)])
    rater = np.repeat([0, 1], 60)
    value = np.concatenate([a, b]).astype(float)
    got = pairwise_cohen_kappa(
        item, rater, value, np.arange(4.0), weightings=("unweighted", "linear", "quadratic")
    )
    table = np.bincount(a * 4 + b, minlength=16).reshape(4, 4)
    assert got.kappa["unweighted"][0] == pytest.approx(sm_cohens_kappa(table).kappa, abs=1e-12)
    assert got.kappa["linear"][0] == pytest.approx(
        sm_cohens_kappa(table, wt="linear").kappa, abs=1e-12
    )
    assert got.kappa["quadratic"][0] == pytest.approx(
        sm_cohens_kappa(table, wt="quadratic").kappa, abs=1e-12
    )


def test_pair_jackknife_replicates_drop_every_pair_of_the_group_left_out() -> None:
    item, rater, value = _ratings(8, n_raters=18, n_items=20)
    pairs = pairwise_cohen_kappa(item, rater, value, np.arange(1.0, 6.0), min_shared=5)
    got = mean_pair_kappa_intervals(pairs, seed=3, groups=5)["quadratic"]
    kappa = pairs.kappa["quadratic"]
    defined = np.isfinite(kappa)
    raters = np.unique(np.concatenate([pairs.left[defined], pairs.right[defined]]))
    label, g = jackknife_groups(len(raters), groups=5, seed=3)
    group_of = dict(zip(raters.tolist(), label.tolist(), strict=True))
    reps = []
    for k in range(g):
        kept = [
            x
            for x, left, right in zip(kappa, pairs.left, pairs.right, strict=True)
            if np.isfinite(x) and group_of[int(left)] != k and group_of[int(right)] != k
        ]
        reps.append(np.mean(kept))
    low, high = jackknife_t_interval(float(np.nanmean(kappa)), np.array(reps))
    assert (got.ci_low, got.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_a_crowd_of_one_rating_raters_has_no_pair_and_says_so() -> None:
    rng = np.random.default_rng(9)
    n = 75_000
    item = rng.integers(0, 15_000, n)
    rater = np.arange(n)
    value = rng.integers(0, 4, n).astype(float)
    pairs = pairwise_cohen_kappa(item, rater, value, np.arange(4.0), min_shared=10)
    assert pairs.candidate_pairs == 0
    result = mean_pair_kappa_intervals(pairs, seed=1)["unweighted"].as_dict()
    assert result["value"] is None
    assert result["n_pairs"] == 0
    assert result["min_shared_items"] == 10


def test_pairs_below_the_minimum_do_not_count() -> None:
    # Raters 0 and 1 share 12 items; rater 2 shares 4 with each.
    item = np.concatenate([np.arange(12), np.arange(12), np.arange(4)])
    rater = np.repeat([0, 1, 2], [12, 12, 4])
    value = np.concatenate([np.arange(12) % 3, (np.arange(12) + 1) % 3, np.zeros(4)]).astype(float)
    pairs = pairwise_cohen_kappa(item, rater, value, np.arange(3.0), min_shared=10)
    assert (pairs.left.tolist(), pairs.right.tolist()) == ([0], [1])
    with pytest.raises(ValueError, match="categories"):
        pairwise_cohen_kappa(item, rater, value + 7, np.arange(3.0))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_the_results_document_carries_cohens_kappa_per_question() -> None:
    from dataclasses import replace

    from apps.analysis.stats.report import compute_results
    from apps.analysis.stats.simulation import simulate_crossed_study
    from tests.analysis.stats.golden_inputs import golden_inputs

    inputs, _ = simulate_crossed_study(np.random.default_rng(3), items_per_source=8, discrete=True)
    inputs = replace(inputs, rater_group=["g1"] * inputs.n_raters, groups=["g1"])
    result = compute_results(inputs, seed=1, rounds=20)
    for q, question in enumerate(inputs.questions):
        entry = result["agreement"][question.name]
        assert entry["interval"]["method"] == "rater_jackknife"
        rows = inputs.score_question == q
        item, rater, value = (
            inputs.score_item[rows],
            inputs.score_rater[rows],
            inputs.score_value[rows],
        )
        labels = [float(v) for v in range(question.min_value, question.max_value + 1)]
        expected = _brute_pairs(item, rater, value, labels, min_shared=10)
        binary = question.max_value - question.min_value == 1
        assert set(entry["cohen_kappa"]) == (
            {"unweighted"} if binary else {"unweighted", "quadratic"}
        )
        for weighting, stats in entry["cohen_kappa"].items():
            theirs = np.array([e[3][weighting] for e in expected])
            assert stats["n_pairs"] == int(np.isfinite(theirs).sum()) > 0
            assert stats["value"] == pytest.approx(np.nanmean(theirs), abs=1e-12)
            assert stats["min_shared_items"] == 10
            assert stats["weights"] == weighting
    # 40 raters with 12 of 60 items each: no pair shares 10 items, and the document says so.
    sparse_result = compute_results(golden_inputs(), seed=1, rounds=20)
    plain = sparse_result["agreement"]["funniness"]["cohen_kappa"]["unweighted"]
    assert plain["value"] is None
    assert plain["n_pairs"] == 0
