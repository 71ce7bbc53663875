"""The results document's item flags: undefeated items, the Bradley-Terry fit's diagnostics,
culture-dependence only with evidence, and both offense readings."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from apps.analysis.stats.inputs import QuestionInfo
from apps.analysis.stats.report import compute_results
from apps.analysis.stats.simulation import simulate_crossed_study


def _inputs(seed: int = 21):  # type: ignore[no-untyped-def]
    inputs, _ = simulate_crossed_study(
        np.random.default_rng(seed), items_per_source=8, discrete=True
    )
    groups = ["g1", "g2", "g3", "g4"]
    return replace(
        inputs,
        rater_group=[groups[r % 4] for r in range(inputs.n_raters)],
        groups=groups,
    )


def test_an_item_that_won_every_comparison_is_at_least_its_bound_and_ranks_first() -> None:
    """No finite score and no two-sided interval, but the one-sided bound the data give and
    the rank that follows from it (it was unranked, and the next item showed rank 1)."""
    inputs = _inputs()
    left_won = np.where(
        inputs.pair_left == 0,
        True,
        np.where(inputs.pair_right == 0, False, inputs.pair_winner_is_left),
    )
    result = compute_results(replace(inputs, pair_winner_is_left=left_won), seed=1, rounds=50)
    board = result["bradley_terry"]
    row = next(r for r in board if r["item"] == "i0")
    assert row["flags"][0] == "undefeated"
    assert row["score"] is None
    assert row["ci_low"] is None
    assert row["ci_high"] is None
    assert row["losses"] == 0
    assert row["wins"] > 0
    assert row["bound_side"] == "lower"
    assert row["bound"] > 0  # above the mean of the other items
    assert row["rank"] == 1
    assert board[0]["item"] == "i0"
    # Items that reach its bound share rank 1; those clearly below it are pushed down.
    for other in board[1:]:
        if other["ci_high"] is not None and other["ci_high"] < row["bound"]:
            assert other["rank"] > 1
    fit = result["bradley_terry_fit"]
    assert fit["undefeated"] >= 1
    assert fit["end_bounds"] >= 1
    assert fit["end_bound"] == {"level": 0.95, "cut": "exact", "simultaneous": True}
    assert "bt_unbounded_items" in {w["code"] for w in result["warnings"]}


def test_an_item_that_lost_every_comparison_is_at_most_its_bound_and_ranks_last() -> None:
    inputs = _inputs()
    left_won = np.where(
        inputs.pair_left == 0,
        False,
        np.where(inputs.pair_right == 0, True, inputs.pair_winner_is_left),
    )
    result = compute_results(replace(inputs, pair_winner_is_left=left_won), seed=1, rounds=50)
    board = result["bradley_terry"]
    row = next(r for r in board if r["item"] == "i0")
    assert row["flags"][0] == "never_won"
    assert row["bound_side"] == "upper"
    assert row["bound"] < 0
    assert row["rank"] == max(r["rank"] for r in board if r["rank"] is not None)
    assert board[-1]["item"] == "i0"


def test_low_agreement_without_a_group_effect_is_controversial_not_culture_dependent() -> None:
    result = compute_results(_inputs(), seed=2, rounds=50)
    below = [
        item
        for item in result["items"]
        if item["cross_group_agreement"] is not None and item["cross_group_agreement"] < 0.3
    ]
    assert below, "the simulated ratings are noisy enough to fall below the line"
    for item in below:
        assert item["culture_test"] is not None
        assert "controversial" in item["flags"]
    assert not [i for i in result["items"] if "culture_dependent" in i["flags"]]


def test_offense_is_given_by_the_any_rater_rule_and_as_the_share_of_raters() -> None:
    inputs = _inputs()
    rng = np.random.default_rng(3)
    cards = np.unique(np.stack([inputs.score_item, inputs.score_rater]), axis=1)
    flag = (rng.random(cards.shape[1]) < 0.05).astype(float)
    with_flag = replace(
        inputs,
        questions=[*inputs.questions, QuestionInfo("offensive", "binary", 0, 1)],
        score_item=np.concatenate([inputs.score_item, cards[0]]),
        score_rater=np.concatenate([inputs.score_rater, cards[1]]),
        score_question=np.concatenate([inputs.score_question, np.ones(cards.shape[1], np.int64)]),
        score_value=np.concatenate([inputs.score_value, flag]),
        score_seconds=np.concatenate([inputs.score_seconds, np.full(cards.shape[1], np.nan)]),
    )
    result = compute_results(with_flag, seed=4, rounds=50)
    source = np.array(with_flag.item_source)
    for name, entry in result["groups"]["source"].items():
        members = np.flatnonzero(source == name)
        flagged = np.zeros(with_flag.n_items, dtype=bool)
        flagged[cards[0][flag > 0]] = True
        any_rater = entry["offense"]["any_rater"]
        assert np.isclose(any_rater["value"], flagged[members].mean())
        assert any_rater["ci_low"] <= any_rater["value"] <= any_rater["ci_high"]
        share = entry["offense"]["share_of_raters"]
        answers = np.isin(cards[0], members)
        assert np.isclose(share["value"], flag[answers].mean())
        # The model comparison holds the same two figures.
        model = result["models"]["by_model"][name]["offense"]
        assert np.isclose(model["any_rater"]["value"], any_rater["value"])
        assert np.isclose(model["share_of_raters"]["value"], share["value"])


def test_the_items_per_model_check_counts_rated_items_only() -> None:
    inputs = _inputs()
    source = np.array(inputs.item_source)
    # model-a's first four items were imported but nobody scored them.
    unrated = np.flatnonzero(source == "model-a")[:4]
    keep = ~np.isin(inputs.score_item, unrated)
    result = compute_results(
        replace(
            inputs,
            score_item=inputs.score_item[keep],
            score_rater=inputs.score_rater[keep],
            score_question=inputs.score_question[keep],
            score_value=inputs.score_value[keep],
            score_seconds=inputs.score_seconds[keep],
        ),
        seed=5,
        rounds=20,
    )
    warning = next(
        w for w in result["warnings"] if w["code"] == "too_few_items" and w["subject"] == "model-a"
    )
    assert warning["value"] == 4


def test_a_choice_questions_agreement_is_nominal_never_ordinal() -> None:
    # Three unordered options (index 0, 1, 2): a rater choosing 0 and one choosing 2 disagree
    # exactly as much as 0 and 1, so no weights, no ordinal or interval alpha.
    inputs = _inputs()
    rng = np.random.default_rng(5)
    cards = np.unique(np.stack([inputs.score_item, inputs.score_rater]), axis=1)
    mood = rng.integers(0, 3, cards.shape[1]).astype(float)
    with_choice = replace(
        inputs,
        questions=[*inputs.questions, QuestionInfo("mood", "choice", 0, 2)],
        score_item=np.concatenate([inputs.score_item, cards[0]]),
        score_rater=np.concatenate([inputs.score_rater, cards[1]]),
        score_question=np.concatenate(
            [inputs.score_question, np.full(cards.shape[1], len(inputs.questions), np.int64)]
        ),
        score_value=np.concatenate([inputs.score_value, mood]),
        score_seconds=np.concatenate([inputs.score_seconds, np.full(cards.shape[1], np.nan)]),
    )
    result = compute_results(with_choice, seed=6, rounds=50)
    entry = result["agreement"]["mood"]
    assert entry["weights"] == "nominal"
    assert set(entry["krippendorff_alpha"]) == {"nominal"}
    assert entry["alpha_level"] == "nominal"
    assert set(entry["cohen_kappa"]) == {"unweighted"}
    # The likert question beside it keeps its ordinal reading.
    likert = next(q.name for q in inputs.questions if q.kind == "likert")
    assert result["agreement"][likert]["alpha_level"] == "ordinal"
    for warning in result["warnings"]:
        if warning.get("subject") == "mood":
            assert warning["params"].get("measure") != "ordinal"


def test_cross_group_agreement_of_a_thinly_rated_item_is_null_with_its_reason() -> None:
    """One rater per group gives one pair's disagreement over the study's expected one:
    numbers such as -7 that say nothing about the item."""
    inputs = _inputs()
    primary = next(q for q, info in enumerate(inputs.questions) if info.name == "funniness")
    thin = inputs.n_items  # a new item, rated by one rater of g1 and one of g2, far apart
    g1 = next(r for r in range(inputs.n_raters) if inputs.rater_group[r] == "g1")
    g2 = next(r for r in range(inputs.n_raters) if inputs.rater_group[r] == "g2")
    rows = [(thin, g1, primary, 1.0), (thin, g2, primary, 7.0)]
    inputs = replace(
        inputs,
        item_ids=[*inputs.item_ids, "thin"],
        item_source=[*inputs.item_source, "human"],
        item_level=[*inputs.item_level, inputs.item_level[0]],
        item_humor_type=[*inputs.item_humor_type, inputs.item_humor_type[0]],
        item_topic=[*inputs.item_topic, ""],
        item_safety_intercepted=np.append(inputs.item_safety_intercepted, False),
        item_has_explanation=np.append(inputs.item_has_explanation, False),
        score_item=np.append(inputs.score_item, [r[0] for r in rows]),
        score_rater=np.append(inputs.score_rater, [r[1] for r in rows]),
        score_question=np.append(inputs.score_question, [r[2] for r in rows]),
        score_value=np.append(inputs.score_value, [r[3] for r in rows]),
        score_seconds=np.append(inputs.score_seconds, [np.nan] * len(rows)),
    )
    result = compute_results(inputs, seed=3, rounds=50)
    item = next(i for i in result["items"] if i["item"] == "thin")
    assert item["cross_group_agreement"] is None
    assert item["cross_group_reason"] == "too_few_raters_per_group"
    assert "culture_dependent" not in item["flags"]
    assert item["culture_test"] is None
    per_item = {row["item"]: row for row in result["agreement"]["funniness"]["per_item"]}
    assert per_item["thin"]["cross_group"] is None
    assert per_item["thin"]["cross_group_reason"] == "too_few_raters_per_group"
    # Items with enough raters in at least two groups keep their number.
    rated = [i for i in result["items"] if i["item"] != "thin" and i["n_raters"] >= 12]
    assert rated
    assert all(i["cross_group_agreement"] is not None for i in rated)
    assert all(i["cross_group_reason"] is None for i in rated)


def _with_undecided(inputs, tie_share: float, neither_share: float, seed: int = 5):  # type: ignore[no-untyped-def]
    """Turn a share of the decisive pairs into ties and another into "neither"."""
    rng = np.random.default_rng(seed)
    pick = rng.random(inputs.pair_left.size)
    tie = pick < tie_share
    neither = (pick >= tie_share) & (pick < tie_share + neither_share)
    moved = tie | neither
    return replace(
        inputs,
        pair_left=inputs.pair_left[~moved],
        pair_right=inputs.pair_right[~moved],
        pair_winner_is_left=inputs.pair_winner_is_left[~moved],
        pair_rater=inputs.pair_rater[~moved],
        undecided_left=inputs.pair_left[moved],
        undecided_right=inputs.pair_right[moved],
        undecided_rater=inputs.pair_rater[moved],
        undecided_kind=np.where(tie[moved], 2, 3).astype(np.int64),
    )


def test_ties_enter_the_board_through_a_tie_model_and_neither_stays_out() -> None:
    base = _inputs()
    inputs = _with_undecided(base, 0.15, 0.10)
    n_ties, n_neither = int(inputs.tie_rows.size), int(inputs.neither_rows.size)
    result = compute_results(inputs, seed=4, rounds=50)
    fit = result["bradley_terry_fit"]
    assert fit["model"] in ("davidson", "rao_kupper")
    assert fit["ties"] == n_ties
    # The tie parameter is estimated, with an interval around it.
    tie = fit["tie_param"]
    assert tie["value"] > 0
    assert tie["ci_low"] <= tie["value"] <= tie["ci_high"]
    assert set(fit["tie_models"]) == {"davidson", "rao_kupper"}
    chosen = max(fit["tie_models"], key=lambda name: fit["tie_models"][name]["log_lik"])
    assert fit["model"] == chosen
    # "Neither" is no evidence about the order: only decisive judgments and ties are fitted.
    assert fit["n_judgments"] == base.pair_left.size - n_neither
    assert sum(row["ties"] for row in result["bradley_terry"]) == 2 * n_ties
    assert result["counts"]["pair_ties"] == n_ties
    assert result["counts"]["pair_neither"] == n_neither
    rates = result["pair_outcomes"]
    assert rates["judgments"] == base.pair_left.size
    assert rates["tie"]["count"] == n_ties
    assert rates["neither"]["count"] == n_neither
    overall = rates["neither"]["overall"]
    assert overall["value"] == pytest.approx(n_neither / base.pair_left.size)
    assert overall["ci_low"] < overall["value"] < overall["ci_high"]
    assert set(rates["neither"]["by_source"]) == set(base.item_source)
    per_item = rates["tie"]["items"]
    assert sum(entry["count"] for entry in per_item) == 2 * n_ties
    # A study without ties keeps the plain board and no outcome rates.
    plain = compute_results(base, seed=4, rounds=50)
    assert plain["bradley_terry_fit"]["model"] == "bradley_terry"
    assert "pair_outcomes" not in plain


@pytest.mark.parametrize("threads", [1, 2])
def test_meanwhile_runs_once_in_the_calling_thread_and_changes_nothing(threads):
    """The caller's own work (apps/analysis/services.py: the exclusion proposals of a study
    that confirms them by hand) fills the wait for the reliability section."""
    import threading

    calls: list[int] = []
    inputs = _inputs()
    plain = compute_results(inputs, seed=5, rounds=30, threads=threads)
    with_work = compute_results(
        inputs,
        seed=5,
        rounds=30,
        threads=threads,
        meanwhile=lambda: calls.append(threading.get_ident()),
    )
    assert calls == [threading.get_ident()]
    assert with_work == plain
