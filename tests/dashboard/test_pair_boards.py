"""The pair boards on the results pages, in English and in Chinese: which model fitted the item
board and what its ends say, the style-controlled boards, the reliability of the board, the
"about the same" and "neither" rates, and their CSV files.

Two studies are built from real judgments and aggregated once for the module:

- "boards": 24 items of three sources, 20 raters in four background groups, pair judgments with
  "about the same" and "neither" answers, funniness scorecards. Which item wins a pair follows
  its length only (model-a writes long jokes, model-b short ones), so the plain board separates
  the sources and the style-controlled board, with length as a covariate, does not.
- "sparse": one rater who judged every pair of five items (one won them all, one lost them
  all), without ties: plain Bradley-Terry with end bounds, style control without intervals,
  and every reliability figure undefined.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from django.db import transaction
from django.test import Client
from django.utils import translation

from apps.analysis import labels
from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.dashboard.results import CSV_NAMES, boards
from apps.findings.charts import fmt, fmt_ci
from apps.raters.models import BackgroundGroup
from apps.studies.models import Question, Study
from apps.studies.services import study_member_add
from tests.factories import (
    ItemFactory,
    PairJudgmentFactory,
    RaterFactory,
    RaterSessionFactory,
    ScoreAnswerFactory,
    ScoreResponseFactory,
    StudyFactory,
)
from tests.pages import untranslated as untranslated_module
from tests.pages.untranslated import untranslated

pytestmark = pytest.mark.django_db

NEW_CSVS = ["style-sources", "style-covariates", "style-items", "reliability", "pair-outcomes"]
WORDS = ["why", "did", "the", "compiler", "cross", "road", "to", "get", "a", "long", "joke"]
ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@dataclass(frozen=True)
class Site:
    study: Study
    sparse: Study


def _boards_study() -> Study:
    rng = np.random.default_rng(5)
    study = StudyFactory(
        slug="boards",
        pair_offers_tie=True,
        pair_offers_neither=True,
        exclude_items_not_evidence=False,
    )
    items, lengths = [], []
    for source, shortest, longest in (("model-a", 20, 30), ("model-b", 3, 8), ("human", 9, 16)):
        for _k in range(8):
            n = int(rng.integers(shortest, longest + 1))
            text = " ".join(rng.choice(WORDS, n))
            items.append(ItemFactory(study=study, source=source, topic="t", text=text))
            lengths.append(np.log1p(n))
    strength = np.array(lengths)
    strength = 1.5 * (strength - strength.mean()) / strength.std()
    groups = list(BackgroundGroup.objects.filter(study=study).order_by("position"))
    funny = Question.objects.get(rubric=study.rubric, name="funniness")
    pairs = [(i, j) for i in range(len(items)) for j in range(i + 1, len(items))]
    for r in range(20):
        rater = RaterFactory(study=study, background=groups[r % len(groups)])
        session = RaterSessionFactory(rater=rater)
        for index in rng.choice(len(pairs), 30, replace=False):
            i, j = pairs[index]
            left, right = items[i], items[j]
            u = rng.random()
            if u < 0.15:
                PairJudgmentFactory(
                    session=session, left=left, right=right, winner=None, outcome="tie"
                )
            elif u < 0.25:
                PairJudgmentFactory(
                    session=session, left=left, right=right, winner=None, outcome="neither"
                )
            else:
                left_wins = rng.random() < 1.0 / (1.0 + np.exp(strength[j] - strength[i]))
                PairJudgmentFactory(
                    session=session, left=left, right=right, winner=left if left_wins else right
                )
        for i in rng.choice(len(items), 12, replace=False):
            value = int(np.clip(np.round(4 + strength[i] + rng.normal()), 1, 7))
            response = ScoreResponseFactory(session=session, item=items[i])
            ScoreAnswerFactory(response=response, question=funny, value=value)
    return study


def _sparse_study() -> Study:
    study = StudyFactory(slug="sparse", exclude_items_not_evidence=False)
    sources = ["model-a", "model-a", "model-b", "model-b", "human"]
    items = [ItemFactory(study=study, source=source, topic="t") for source in sources]
    session = RaterSessionFactory(rater=RaterFactory(study=study))
    # Item 0 wins every comparison, item 4 loses every one; 1, 2 and 3 beat each other in a
    # circle, so they have finite scores.
    order = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 4), (2, 4), (3, 4), (1, 2), (2, 3), (3, 1)]
    for winner, loser in order:
        PairJudgmentFactory(
            session=session, left=items[loser], right=items[winner], winner=items[winner]
        )
    funny = Question.objects.get(rubric=study.rubric, name="funniness")
    for k, item in enumerate(items):
        response = ScoreResponseFactory(session=session, item=item)
        ScoreAnswerFactory(response=response, question=funny, value=k + 1)
    return study


@pytest.fixture(scope="module")
def site(django_db_setup, django_db_blocker) -> Iterator[Site]:  # type: ignore[no-untyped-def]
    with django_db_blocker.unblock(), transaction.atomic():
        study, sparse = _boards_study(), _sparse_study()
        for each in (study, sparse):
            study_aggregate(study=each, rounds=20)
        yield Site(study=study, sparse=sparse)
        transaction.set_rollback(True)


@pytest.fixture
def member(site: Site, django_user_model: Any) -> Client:
    user = django_user_model.objects.create_user("boards-researcher", password="pw-boards-1")
    for study in (site.study, site.sparse):
        study_member_add(study=study, user=user)
    client = Client()
    client.force_login(user)
    return client


def payload(study: Study) -> Mapping[str, Any]:
    return StudyResult.objects.get(study=study).payload


def page(client: Client, study: Study, section: str = "", **headers: str) -> str:
    response = client.get(f"/studies/{study.slug}/results/{section}", **(headers or EN))
    assert response.status_code == 200
    return response.content.decode()


def text_of(fragment: str) -> str:
    """What a reader sees of a piece of HTML, whitespace collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def block(text: str, marker: str, tag: str = "table") -> str:
    """The first <tag> element whose opening tag holds `marker` (a class or an attribute)."""
    match = re.search(rf"<{tag}[^>]*{re.escape(marker)}[^>]*>.*?</{tag}>", text, re.S)
    assert match, f"no {tag} with {marker}"
    return match.group(0)


def row(table: str, attr: str, value: str) -> str:
    match = re.search(rf'<tr data-{attr}="{re.escape(value)}">(.*?)</tr>', table, re.S)
    assert match, f"no row {attr}={value}"
    return match.group(1)


def cells(row_html: str) -> list[str]:
    return [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row_html, re.S)]


def csv_rows(client: Client, study: Study, name: str) -> list[dict[str, str]]:
    response = client.get(f"/studies/{study.slug}/results/data/{name}.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def number(cell: str) -> float | None:
    return None if cell == "" else float(cell)


# ---------------------------------------------------------------------------------------------
# The model that fitted the board


def test_the_leaderboard_names_the_tie_model_its_parameter_and_both_likelihoods(site, member):
    fit = payload(site.study)["bradley_terry_fit"]
    assert fit["model"] in ("davidson", "rao_kupper")
    other = "rao_kupper" if fit["model"] == "davidson" else "davidson"
    symbol = {"davidson": "ν", "rao_kupper": "θ"}[fit["model"]]
    likelihoods = (
        fmt(fit["tie_models"][fit["model"]]["log_lik"]),
        fmt(fit["tie_models"][other]["log_lik"]),
    )
    names = {"davidson": "Davidson's tie model", "rao_kupper": "Rao-Kupper's tie model"}
    line = text_of(block(page(member, site.study, "leaderboard/"), 'class="board-fit"', "p"))
    assert line == (
        f"Fitted by {names[fit['model']]}: {fit['ties']} of {fit['n_judgments']} judgments were "
        f"“about the same”; tie parameter {symbol} = {fmt_ci(fit['tie_param'])}. It has the "
        f"higher likelihood: log-likelihood {likelihoods[0]}, against {likelihoods[1]} for "
        f"{names[other]}."
    )
    zh_names = {"davidson": "Davidson 平局模型", "rao_kupper": "Rao-Kupper 平局模型"}
    line = text_of(block(page(member, site.study, "leaderboard/", **ZH), 'class="board-fit"', "p"))
    assert line == (
        f"拟合模型：{zh_names[fit['model']]}。{fit['n_judgments']} 次判断中有 {fit['ties']} 次为"
        f"“差不多”；平局参数 {symbol} = {fmt_ci(fit['tie_param'])}。它的似然更高：对数似然 "
        f"{likelihoods[0]}；{zh_names[other]}：{likelihoods[1]}。"
    )
    ends = text_of(block(page(member, site.study, "leaderboard/"), 'class="board-ends"', "p"))
    assert (fit["undefeated"], fit["never_won"]) == (0, 0)
    assert ends == "No item won or lost every comparison."


def test_a_board_without_ties_says_plain_bradley_terry_and_counts_its_bounded_ends(site, member):
    fit = payload(site.sparse)["bradley_terry_fit"]
    assert (fit["model"], fit["undefeated"], fit["never_won"], fit["end_bounds"]) == (
        "bradley_terry",
        1,
        1,
        2,
    )
    text = page(member, site.sparse, "leaderboard/")
    assert text_of(block(text, 'class="board-fit"', "p")) == (
        "Fitted by plain Bradley-Terry: 10 judgments, none “about the same”."
    )
    assert text_of(block(text, 'class="board-ends"', "p")) == (
        "Won every comparison: 1; lost every comparison: 1. 2 of these 2 have a one-sided "
        "bound, all bounds of the board holding together at 95%."
    )
    text = page(member, site.sparse, "leaderboard/", **ZH)
    assert text_of(block(text, 'class="board-fit"', "p")) == (
        "由普通 Bradley-Terry 模型拟合：10 次判断，没有“差不多”。"
    )
    assert text_of(block(text, 'class="board-ends"', "p")) == (
        "全胜：1 个；全负：1 个。这 2 个中有 2 个有单侧界限，本榜所有界限同时以 95% 成立。"
    )


# ---------------------------------------------------------------------------------------------
# Style-controlled boards


def test_the_style_controlled_sources_stand_beside_the_plain_ones(site, member):
    style = payload(site.study)["style_control"]
    assert style["reason"] is None
    for language in (EN, ZH):
        table = block(page(member, site.study, "leaderboard/", **language), "style-sources")
        for entry in style["sources"]:
            assert cells(row(table, "source", entry["source"])) == [
                fmt_ci(entry["plain"]),
                fmt_ci(entry["controlled"]),
            ]
    # The human baseline is named in the reader's language; models by their own name.
    assert "人类" in block(page(member, site.study, "leaderboard/", **ZH), "style-sources")


def test_the_order_changes_are_said_in_words_in_both_languages(site, member):
    style = payload(site.study)["style_control"]
    # The plain board separates the long-joke model from the short-joke one; length explains
    # the difference, so controlling for it takes the separation away.
    assert {"change": "separation_lost", "a": "model-a", "b": "model-b"} in style["order_changes"]
    english = text_of(block(page(member, site.study, "leaderboard/"), "order-changes", "ul"))
    assert "Controlling for style, model-a and model-b are no longer separated." in english
    assert english.count("Controlling for style") == len(style["order_changes"])
    chinese = text_of(block(page(member, site.study, "leaderboard/", **ZH), "order-changes", "ul"))
    assert "控制风格后，model-a 与 model-b 不再能区分先后。" in chinese
    n = style["item_order_changes"]
    assert n > 1
    counted = text_of(block(page(member, site.study, "leaderboard/"), "item-order-changes", "p"))
    assert counted == (
        f"Among the items, {n} pairs change their separated order when style is controlled "
        "(in the CSV of the items, by rank)."
    )


def test_a_board_without_order_changes_says_so(site, member):
    assert payload(site.sparse)["style_control"]["order_changes"] == []
    text = page(member, site.sparse, "leaderboard/")
    assert text_of(block(text, "order-changes", "ul")) == (
        "Controlling for style changes no separated order."
    )
    assert text_of(block(text, "item-order-changes", "p")) == (
        "Among the items, no pair changes its separated order when style is controlled."
    )
    chinese = page(member, site.sparse, "leaderboard/", **ZH)
    assert (
        text_of(block(chinese, "order-changes", "ul"))
        == "控制风格后，没有任何已区分的先后顺序发生变化。"
    )


def test_the_covariates_show_their_effect_unit_and_the_dropped_ones_why(site, member):
    style = payload(site.study)["style_control"]
    (length,) = style["covariates"]
    assert (length["name"], length["standardised"]) == ("log_length", True)
    assert style["dropped"] == {"offensive": "constant"}
    text = page(member, site.study, "leaderboard/")
    table = block(text, "style-covariates")
    assert text_of(row(table, "covariate", "log_length")) == (
        f"Length (log, own units) {fmt_ci({'value': length['beta'], **length})} per SD"
    )
    assert text_of(block(text, 'class="dropped"', "ul")) == (
        "Flagged offensive: the same for every compared item"
    )
    chinese = page(member, site.study, "leaderboard/", **ZH)
    assert text_of(row(block(chinese, "style-covariates"), "covariate", "log_length")) == (
        f"长度（对数，按自身单位） {fmt_ci({'value': length['beta'], **length})} 每个标准差"
    )
    assert text_of(block(chinese, 'class="dropped"', "ul")) == (
        "被标记为冒犯：所有参与比较的条目取值相同"
    )


def test_the_style_controlled_items_show_both_scores_and_ranks(site, member, monkeypatch):
    style = payload(site.study)["style_control"]
    table = block(page(member, site.study, "leaderboard/"), "style-items")
    for entry in style["items"]:
        assert cells(row(table, "item", entry["item"])) == [
            fmt_ci(entry["plain"]),
            str(entry["plain"]["rank"]),
            fmt_ci(entry["controlled"]),
            str(entry["controlled"]["rank"]),
        ]
    # A long board shows its first rows (by the controlled board) and points to the CSV.
    monkeypatch.setattr(boards, "STYLE_ITEMS_SHOWN", 10)
    text = page(member, site.study, "leaderboard/")
    shown = re.findall(r'<tr data-item="([^"]+)">', block(text, "style-items"))
    assert shown == [r["item"] for r in csv_rows(member, site.study, "style-items")][:10]
    assert "The first 10 of 24 items on the controlled board; the CSV has all of them." in text_of(
        text
    )


def test_a_board_without_intervals_says_why_and_shows_no_bracket(site, member):
    style = payload(site.sparse)["style_control"]
    assert style["reason"] == "too_few_raters"
    text = page(member, site.sparse, "leaderboard/")
    assert text_of(block(text, "style-reason", "p")) == (
        "No intervals: there are fewer than 2 raters, and a rater-clustered interval needs two."
    )
    sources = block(text, "style-sources")
    for entry in style["sources"]:
        shown = cells(row(sources, "source", entry["source"]))
        assert "[" not in " ".join(shown)
        if entry["flag"] == "never_won":
            assert shown == ["—", "— never beat another source: no finite strength"]
        else:
            assert shown == [fmt(entry["plain"]["value"]), fmt(entry["controlled"]["value"])]
    # Every covariate was constant over the compared items.
    assert "No covariate varies across the compared items." in text_of(
        block(text, "style-covariates")
    )
    chinese = page(member, site.sparse, "leaderboard/", **ZH)
    assert text_of(block(chinese, "style-reason", "p")) == (
        "没有区间：评分者少于 2 位，而按评分者聚类的区间至少需要两位。"
    )


# ---------------------------------------------------------------------------------------------
# Reliability of the board


def test_the_split_half_correlations_show_the_spread_over_splits_and_the_full_data_value(
    site, member
):
    reliability = payload(site.study)["reliability"]
    groups = {"all": reliability["study"], **reliability["by_source"]}
    for language, words in (
        (EN, ("{} to {} over splits", "full data: {}")),
        (ZH, ("各分半间 {} 至 {}", "全部数据：{}")),
    ):
        text = page(member, site.study, "leaderboard/", **language)
        table = block(text, "reliability-split")
        for name, entry in groups.items():
            shown = cells(row(table, "group", name))
            expected = [
                " ".join(
                    [
                        fmt(part["mean"]),
                        words[0].format(fmt(part["q025"]), fmt(part["q975"])),
                        words[1].format(fmt(part["spearman_brown"])),
                    ]
                )
                for part in (entry["pairs"], entry["scores"])
            ]
            assert shown == expected, name
    assert "the spread over splits, not a confidence interval" in text_of(
        page(member, site.study, "leaderboard/")
    )


def test_the_k_rater_reliability_shows_icc_the_mean_raters_and_each_k(site, member):
    reliability = payload(site.study)["reliability"]
    groups = {"all": reliability["study"], **reliability["by_source"]}
    text = page(member, site.study, "leaderboard/")
    k_table, by_k_table = block(text, "reliability-k"), block(text, "reliability-by-k")
    assert re.findall(
        r'<th scope="col" class="num"><span class="bracket">k = (\d+)</span></th>', by_k_table
    ) == [
        "1",
        "3",
        "5",
        "10",
        "15",
        "20",
    ]
    for name, entry in groups.items():
        k_rater = entry["k_rater"]
        icc = {
            "value": k_rater["icc"],
            "ci_low": k_rater["icc_ci_low"],
            "ci_high": k_rater["icc_ci_high"],
        }
        assert cells(row(k_table, "group", name)) == [
            fmt_ci(icc),
            f"{fmt_ci(k_rater['at_mean'])} k = {fmt(k_rater['k_mean'], 1)}",
        ]
        assert cells(row(by_k_table, "group", name)) == [fmt(k["value"]) for k in k_rater["by_k"]]


def test_undefined_reliability_says_why_and_shows_no_number(site, member):
    reliability = payload(site.sparse)["reliability"]
    assert reliability["study"]["pairs"]["reason"] == "too_few_raters"
    assert reliability["study"]["k_rater"]["reason"] == "too_few_raters"
    for language, reason in (
        (EN, "too few raters (at least 4 are needed)"),
        (ZH, "评分者太少（至少需要 4 位）"),
    ):
        text = page(member, site.sparse, "leaderboard/", **language)
        for marker in ("reliability-split", "reliability-k", "reliability-by-k"):
            for name in ("all", "model-a", "model-b", "human"):
                assert set(cells(row(block(text, marker), "group", name))) == {reason}, marker


# ---------------------------------------------------------------------------------------------
# "About the same" and "neither"


def test_the_summary_shows_the_tie_and_neither_rates_overall_per_model_and_background(site, member):
    outcomes = payload(site.study)["pair_outcomes"]
    assert outcomes["tie"]["count"]
    assert outcomes["neither"]["count"]
    text = page(member, site.study)
    overall = text_of(block(text, "pair-outcome-overall", "ul"))
    for kind, label in (("tie", "About the same"), ("neither", "Neither")):
        stats = outcomes[kind]["overall"]
        assert (
            f"{label}: {stats['count']} of {outcomes['judgments']} pair judgments, "
            f"{fmt_ci(stats, 1, pct=True)}"
        ) in overall
    table = block(text, "pair-outcome-rates")
    for attr, key in (("source", "by_source"), ("background", "by_background")):
        for name in outcomes["tie"][key]:
            expected = [
                f"{fmt_ci(outcomes[kind][key][name], 1, pct=True)} "
                f"{outcomes[kind][key][name]['count']} / {outcomes[kind][key][name]['n']}"
                for kind in ("tie", "neither")
            ]
            assert cells(row(table, attr, name)) == expected
    assert f'href="/studies/{site.study.slug}/results/data/pair-outcomes.csv"' in text
    chinese = page(member, site.study, **ZH)
    overall = text_of(block(chinese, "pair-outcome-overall", "ul"))
    stats = outcomes["tie"]["overall"]
    assert (
        f"差不多：{outcomes['judgments']} 次配对判断中有 {stats['count']} 次，"
        f"{fmt_ci(stats, 1, pct=True)}"
    ) in overall
    assert "技术" in text_of(block(chinese, "pair-outcome-rates"))


def test_a_study_without_ties_or_neither_has_no_rate_block(site, member):
    assert "pair_outcomes" not in payload(site.sparse)
    text = page(member, site.sparse)
    assert 'id="pair-outcomes"' not in text


# ---------------------------------------------------------------------------------------------
# CSV files


def test_the_new_downloads_are_listed(site):
    assert set(NEW_CSVS) <= set(CSV_NAMES)


def test_the_style_csvs_hold_the_stored_numbers_unrounded(site, member):
    style = payload(site.study)["style_control"]
    # The downloads are the export's tables: a row per source, then the order changes.
    rows = [r for r in csv_rows(member, site.study, "style-sources") if r["row"] == "source"]
    assert {
        r["source"]: [number(r[c]) for c in ("plain", "plain_ci_low", "controlled_ci_high")]
        for r in rows
    } == {
        s["source"]: [s["plain"]["value"], s["plain"]["ci_low"], s["controlled"]["ci_high"]]
        for s in style["sources"]
    }
    rows = csv_rows(member, site.study, "style-covariates")
    assert [(r["covariate"], number(r["beta"]), r["standardised"], r["dropped"]) for r in rows] == [
        ("log_length", style["covariates"][0]["beta"], "True", ""),
        ("offensive", None, "", "constant"),
    ]
    rows = csv_rows(member, site.study, "style-items")
    assert len(rows) == len(style["items"])
    stored = {entry["item"]: entry for entry in style["items"]}
    for r in rows:
        entry = stored[r["item"]]
        assert number(r["plain_score"]) == entry["plain"]["value"]
        assert number(r["controlled_ci_low"]) == entry["controlled"]["ci_low"]
        assert int(r["controlled_rank"]) == entry["controlled"]["rank"]
        assert number(r["adjustment"]) == entry["adjustment"]
    assert {r["source"] for r in rows} == {"model-a", "model-b", "human"}


def test_the_reliability_csv_has_a_row_per_group_and_statistic(site, member):
    reliability = payload(site.study)["reliability"]
    rows = csv_rows(member, site.study, "reliability")
    groups = {"": reliability["study"], **reliability["by_source"]}
    assert {r["group"] for r in rows} == set(groups)
    assert {r["scope"] for r in rows if r["group"] == ""} == {"study"}
    for name, entry in groups.items():
        mine = [r for r in rows if r["group"] == name]
        assert [r["measure"] for r in mine] == [
            "split_half_pairs",
            "split_half_scores",
            "icc",
            "k_rater_at_mean",
            *["k_rater"] * 6,
        ]
        pairs = mine[0]
        assert number(pairs["value"]) == entry["pairs"]["mean"]
        assert number(pairs["split_q025"]) == entry["pairs"]["q025"]
        assert number(pairs["spearman_brown"]) == entry["pairs"]["spearman_brown"]
        # A spread over splits is not an interval: those columns stay empty.
        assert (pairs["ci_low"], pairs["ci_high"]) == ("", "")
        assert mine[1]["question"] == "funniness"
        assert number(mine[2]["ci_low"]) == entry["k_rater"]["icc_ci_low"]
        assert [(number(r["k"]), number(r["value"])) for r in mine[4:]] == [
            (k["k"], k["value"]) for k in entry["k_rater"]["by_k"]
        ]
    sparse = csv_rows(member, site.sparse, "reliability")
    assert {r["reason"] for r in sparse} == {"too_few_raters"}
    assert all(r["value"] == "" for r in sparse)


def test_the_pair_outcomes_csv_has_overall_source_background_and_item_rows(site, member):
    outcomes = payload(site.study)["pair_outcomes"]
    rows = csv_rows(member, site.study, "pair-outcomes")
    for kind in ("tie", "neither"):
        entry = outcomes[kind]
        mine = [r for r in rows if r["outcome"] == kind]
        expected = [("overall", "", entry["overall"]["count"], entry["overall"]["value"])]
        expected += [
            ("source", name, s["count"], s["value"])
            for name, s in sorted(entry["by_source"].items())
        ]
        expected += [
            ("background", name, s["count"], s["value"])
            for name, s in sorted(entry["by_background"].items())
        ]
        expected += [("item", i["item"], i["count"], i["rate"]["value"]) for i in entry["items"]]
        assert [
            (r["level"], r["group"], int(r["count"]), number(r["rate"])) for r in mine
        ] == expected
        items = [r for r in mine if r["level"] == "item"]
        assert [number(r["ci_high"]) for r in items] == [
            i["rate"]["ci_high"] for i in entry["items"]
        ]
    assert csv_rows(member, site.sparse, "pair-outcomes") == []


# ---------------------------------------------------------------------------------------------
# Both languages, and older results


def test_the_chinese_pages_show_no_english_interface_string(site, member, monkeypatch):
    # Proper names of the tie models stay in Latin letters, as Bradley-Terry does.
    monkeypatch.setattr(
        untranslated_module, "NAMES", untranslated_module.NAMES | {"davidson", "rao", "kupper"}
    )
    pages = {
        f"{study.slug}/{section}": page(member, study, section, **ZH)
        for study in (site.study, site.sparse)
        for section in ("", "leaderboard/", "leaderboard/?level=single")
    }
    assert untranslated(pages) == {}


def test_a_level_view_says_the_boards_are_the_whole_study(site, member):
    text = text_of(page(member, site.study, "leaderboard/?level=single"))
    assert (
        "These boards and the reliability below are the whole study's, all levels together." in text
    )


def test_results_stored_before_these_sections_still_render(site, member):
    result = StudyResult.objects.get(study=site.study)
    old = {
        key: value
        for key, value in result.payload.items()
        if key not in ("style_control", "reliability", "pair_outcomes")
    }
    old["bradley_terry_fit"] = {
        k: v for k, v in old["bradley_terry_fit"].items() if k not in ("model", "tie_models")
    }
    StudyResult.objects.filter(pk=result.pk).update(payload=old)
    leaderboard = page(member, site.study, "leaderboard/")
    for marker in ('class="board-fit"', 'id="style-control"', 'id="reliability"'):
        assert marker not in leaderboard
    assert 'id="pair-outcomes"' not in page(member, site.study)
    for name in NEW_CSVS:
        assert csv_rows(member, site.study, name) == []


# ---------------------------------------------------------------------------------------------
# Labels


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        (
            "en",
            [
                "Controlling for style, model-a now ranks above human.",
                "Controlling for style, human and model-a are no longer separated.",
                "Controlling for style, model-a and human are now separated: model-a above human.",
            ],
        ),
        (
            "zh-hans",
            [
                "控制风格后，model-a 现在排在 人类 之上。",
                "控制风格后，人类 与 model-a 不再能区分先后。",
                "控制风格后，model-a 与 人类 现在可以区分先后：model-a 在 人类 之上。",
            ],
        ),
    ],
)
def test_an_order_change_is_a_sentence_in_the_readers_language(language, expected):
    with translation.override(language):
        assert [
            labels.order_change_sentence("flipped", "human", "model-a"),
            labels.order_change_sentence("separation_lost", "human", "model-a"),
            labels.order_change_sentence("separation_gained", "model-a", "human"),
        ] == expected


def test_covariates_outcomes_and_reasons_are_named_in_both_languages():
    with translation.override("en"):
        assert [
            labels.covariate_label(name)
            for name in (
                "log_length",
                "language_zh",
                "level_multi_turn",
                "judged_human",
                "meta:wit",
            )
        ] == [
            "Length (log, own units)",
            "Chinese item",
            "Multi-turn reply",
            "Judged human (share of Turing guesses)",
            "Metadata: wit",
        ]
        assert [labels.pair_outcome_label(k) for k in ("tie", "neither")] == [
            "About the same",
            "Neither",
        ]
        assert labels.cross_group_reason_label("too_few_raters_per_group") == (
            "fewer than two background groups with 3 raters of the item each"
        )
        assert labels.reliability_reason_label(None) == ""
    with translation.override("zh-hans"):
        assert labels.covariate_label("log_length") == "长度（对数，按自身单位）"
        assert labels.covariate_label("meta:wit") == "元数据：wit"
        assert [labels.pair_outcome_label(k) for k in ("tie", "neither")] == ["差不多", "都不"]
        assert labels.reliability_reason_label("no_variation") == "没有变化：榜单各项取值相同"
        assert labels.cross_group_reason_label("no_variation") == "此问题的所有回答都相同"
        assert labels.covariate_scale_label(False) == "具有该属性时"
