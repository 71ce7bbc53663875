"""The pair board's new figures as export tables: which model fitted each board, the tie and
"neither" rates, the style-controlled boards and the reliability of the board, each a table of
the workbook and the zip with the stored numbers unrounded (board_document.json holds a results
document's new sections, with real values)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apps.reports.tables import (
    RESULT_TABLE_NAMES,
    SELECTABLE_TABLES,
    bradley_terry_fit_table,
    bradley_terry_table,
    pair_outcomes_table,
    reliability_table,
    result_table,
    result_tables,
    style_covariates_table,
    style_items_table,
    style_sources_table,
)

DOCUMENT = Path(__file__).with_name("board_document.json")


@pytest.fixture
def document() -> dict[str, Any]:
    return json.loads(DOCUMENT.read_text(encoding="utf-8"))


def _rows(table: Any, **where: Any) -> list[dict[str, Any]]:
    return [
        row for row in table.as_dicts() if all(row[key] == value for key, value in where.items())
    ]


def _one(table: Any, **where: Any) -> dict[str, Any]:
    found = _rows(table, **where)
    assert len(found) == 1, (where, found)
    return found[0]


def test_every_sheet_name_fits_excel_and_no_two_tables_share_one():
    # Excel refuses a sheet name longer than 31 characters; the writer cuts it there, so two
    # tables must not share their first 31.
    assert all(len(name) <= 31 for name in SELECTABLE_TABLES)
    assert len({name[:31] for name in SELECTABLE_TABLES}) == len(SELECTABLE_TABLES)
    for name in (
        "bradley_terry_fit",
        "pair_outcomes",
        "style_sources",
        "style_covariates",
        "style_items",
        "reliability",
    ):
        assert name in RESULT_TABLE_NAMES


def test_each_new_table_is_one_of_the_results_tables_and_can_be_asked_for_alone(document):
    tables = {table.name: table for table in result_tables(document)}
    assert list(tables) == list(RESULT_TABLE_NAMES)
    for name in ("bradley_terry_fit", "pair_outcomes", "style_items", "reliability"):
        assert result_table(document, name) == tables[name]
        assert tables[name].rows


def test_the_item_board_carries_each_items_ties_and_its_one_sided_bound(document):
    table = bradley_terry_table(document)
    top = _one(table, item="i17")
    assert (top["wins"], top["losses"], top["ties"]) == (59, 15, 18)
    assert top["bound"] is None
    assert top["bound_side"] == ""
    undefeated = _one(table, item="i20")
    assert undefeated["score"] is None
    assert (undefeated["bound"], undefeated["bound_side"]) == (0.7312, "lower")
    assert undefeated["flags"] == "undefeated"
    never = _one(table, item="i21")
    assert (never["bound"], never["bound_side"], never["rank"]) == (-1.2043, "upper", 24)


def test_the_fit_table_names_the_tie_model_its_parameter_and_both_likelihoods(document):
    table = bradley_terry_fit_table(document)
    fit = document["bradley_terry_fit"]
    row = _one(table, scope_level="all")
    assert row["model"] == "davidson"
    assert (row["tie_param"], row["tie_param_ci_low"], row["tie_param_ci_high"]) == (
        fit["tie_param"]["value"],
        fit["tie_param"]["ci_low"],
        fit["tie_param"]["ci_high"],
    )
    assert row["davidson_log_lik"] == fit["tie_models"]["davidson"]["log_lik"]
    assert row["rao_kupper_log_lik"] == fit["tie_models"]["rao_kupper"]["log_lik"]
    assert row["rao_kupper_aic"] == fit["tie_models"]["rao_kupper"]["aic"]
    # The chosen model is the one with the higher likelihood.
    assert row["davidson_log_lik"] > row["rao_kupper_log_lik"]
    assert (row["ties"], row["n_judgments"]) == (197, 1072)
    # A plain board per level: no tie parameter, and its ends' bounds with their cut.
    level = _one(table, scope_level="single")
    assert level["model"] == "bradley_terry"
    assert level["tie_param"] is None
    assert level["davidson_log_lik"] is None
    assert (level["end_bounds"], level["end_bound_cut"], level["end_bound_simultaneous"]) == (
        2,
        9.87,
        True,
    )


def test_the_pair_outcomes_table_has_a_row_per_level_for_ties_and_neither(document):
    table = pair_outcomes_table(document)
    section = document["pair_outcomes"]
    for outcome in ("tie", "neither"):
        entry = section[outcome]
        overall = _one(table, outcome=outcome, level="overall")
        assert [overall[k] for k in ("rate", "ci_low", "ci_high", "n", "count")] == [
            entry["overall"][k] for k in ("value", "ci_low", "ci_high", "n", "count")
        ]
        assert overall["n"] == section["judgments"]
        for level in ("source", "background"):
            groups = entry[f"by_{level}"]
            assert {row["group"] for row in _rows(table, outcome=outcome, level=level)} == set(
                groups
            )
            for group, stats in groups.items():
                row = _one(table, outcome=outcome, level=level, group=group)
                assert (row["rate"], row["ci_low"], row["count"]) == (
                    stats["value"],
                    stats["ci_low"],
                    stats["count"],
                )
        for item in entry["items"]:
            row = _one(table, outcome=outcome, level="item", group=item["item"])
            assert (row["rate"], row["ci_high"], row["n"], row["count"]) == (
                item["rate"]["value"],
                item["rate"]["ci_high"],
                item["rate"]["n"],
                item["count"],
            )
    # A study that offered neither answer has no rows (and the table is still there).
    assert pair_outcomes_table({}).rows == []


def test_style_sources_hold_both_boards_and_the_order_changes(document):
    table = style_sources_table(document)
    style = document["style_control"]
    for entry in style["sources"]:
        row = _one(table, row="source", source=entry["source"])
        assert (row["plain"], row["plain_ci_low"], row["plain_ci_high"]) == tuple(
            entry["plain"][k] for k in ("value", "ci_low", "ci_high")
        )
        assert (row["controlled"], row["controlled_ci_low"], row["controlled_ci_high"]) == tuple(
            entry["controlled"][k] for k in ("value", "ci_low", "ci_high")
        )
        assert row["interval"] == "cluster_robust_wald_t"
        assert row["estimand"] == "raters_random_items_fixed"
        assert (row["n_pairs"], row["n_raters"]) == (875, 40)
    flipped = _one(table, row="order_change", change="flipped")
    assert (flipped["source"], flipped["other"], flipped["plain"]) == ("model-b", "human", None)
    assert len(_rows(table, row="order_change")) == 2


def test_every_offered_covariate_has_its_beta_or_the_reason_it_was_dropped(document):
    table = style_covariates_table(document)
    assert [row["covariate"] for row in table.as_dicts()] == [
        "log_length",
        "offensive",
        "judged_human",
        "level_scenario",
    ]
    length = _one(table, covariate="log_length")
    fitted = document["style_control"]["covariates"][0]
    assert (length["beta"], length["ci_low"], length["ci_high"], length["standardised"]) == (
        fitted["beta"],
        fitted["ci_low"],
        fitted["ci_high"],
        True,
    )
    assert length["dropped"] == ""
    offensive = _one(table, covariate="offensive")
    assert (offensive["beta"], offensive["dropped"]) == (None, "constant")
    assert _one(table, covariate="level_scenario")["dropped"] == "collinear"


def test_style_items_hold_each_items_two_scores_ranks_and_adjustment(document):
    table = style_items_table(document)
    sources = {item["item"]: item["source"] for item in document["items"]}
    assert len(table.rows) == len(document["style_control"]["items"])
    for entry in document["style_control"]["items"]:
        row = _one(table, item=entry["item"])
        assert row["source"] == sources[entry["item"]]
        assert (row["plain_score"], row["plain_rank"], row["controlled_rank"]) == (
            entry["plain"]["value"],
            entry["plain"]["rank"],
            entry["controlled"]["rank"],
        )
        assert (row["controlled_ci_low"], row["adjustment"]) == (
            entry["controlled"]["ci_low"],
            entry["adjustment"],
        )
    assert style_items_table({"style_control": None}).rows == []


def test_reliability_rows_give_split_halves_with_their_spread_and_k_rater_intervals(document):
    table = reliability_table(document)
    section = document["reliability"]
    study = section["study"]
    pairs = _one(table, scope="study", measure="split_half_pairs")
    assert (pairs["value"], pairs["median"], pairs["split_q025"], pairs["split_q975"]) == (
        study["pairs"]["mean"],
        study["pairs"]["median"],
        study["pairs"]["q025"],
        study["pairs"]["q975"],
    )
    # The spread over splits is not a confidence interval: the interval columns stay empty.
    assert pairs["ci_low"] is None
    assert pairs["ci_high"] is None
    assert pairs["spearman_brown"] == study["pairs"]["spearman_brown"]
    scores = _one(table, scope="study", measure="split_half_scores")
    assert (scores["question"], scores["value"]) == ("funniness", study["scores"]["mean"])
    k_rater = study["k_rater"]
    icc = _one(table, scope="study", measure="icc")
    assert (icc["value"], icc["ci_low"], icc["ci_high"]) == (
        k_rater["icc"],
        k_rater["icc_ci_low"],
        k_rater["icc_ci_high"],
    )
    at_mean = _one(table, scope="study", measure="k_rater_at_mean")
    assert (at_mean["k"], at_mean["value"], at_mean["ci_high"]) == (
        k_rater["k_mean"],
        k_rater["at_mean"]["value"],
        k_rater["at_mean"]["ci_high"],
    )
    ten = _one(table, scope="study", measure="k_rater", k=10.0)
    assert (ten["value"], ten["empirical"], ten["empirical_items"]) == (
        0.872385198337542,
        0.8827246339390611,
        23,
    )
    assert len(_rows(table, scope="study", measure="k_rater")) == len(k_rater["by_k"])
    # Per model, and a split-half that is undefined says why, with no number.
    for source in section["by_source"]:
        assert _rows(table, scope="source", group=source)
    undefined = _one(table, scope="source", group="model-b", measure="split_half_pairs")
    assert (undefined["value"], undefined["reason"]) == (None, "too_few_items")


def test_a_source_that_never_lost_has_its_bound_on_a_row_of_the_models_table():
    from apps.reports.tables import models_table

    document = {
        "models": {
            "by_model": {
                "model-a": {
                    "n_items": 8,
                    "n_raters": 12,
                    "bt": {
                        "value": None,
                        "flag": "undefeated",
                        "bound": 0.4125,
                        "bound_side": "lower",
                    },
                },
                "human": {"n_items": 8, "n_raters": 12, "bt": {"value": 0.1, "ci_low": -0.2}},
            }
        }
    }
    table = models_table(document)
    bound = _one(table, source="model-a", measure="bt_bound")
    assert (bound["value"], bound["flag"], bound["n_items"]) == (0.4125, "lower", 8)
    assert _one(table, source="model-a", measure="bt")["flag"] == "undefeated"
    # A source with a finite strength has no bound row.
    assert not _rows(table, source="human", measure="bt_bound")
