"""The printable report's pair board, in both languages and in its PDF: which model fitted each
board (the tie parameter with its interval, both tie models' log-likelihoods), the ends and
their one-sided bounds, the "about the same" and "neither" rates, the style-controlled boards
and the reliability of the board, each figure as the stored document says (board_document.json
holds these sections with real values); then a study whose raters answered "about the same" and
"neither", through the service, in the report, the workbook and the zip."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.utils import translation
from django.utils.html import escape

from apps.analysis import labels
from apps.analysis.services import study_aggregate
from apps.judgments.models import PairJudgment
from apps.reports import services, writers
from apps.reports.formats import fmt, fmt_interval, fmt_percent
from tests.reports import outputs

DOCUMENT = Path(__file__).with_name("board_document.json")
LANGUAGES = ("en", "zh-hans")


@pytest.fixture
def document() -> dict[str, Any]:
    return json.loads(DOCUMENT.read_text(encoding="utf-8"))


def _html(document: dict[str, Any], language: str) -> str:
    study = writers.ReportStudy(
        name="Board study",
        slug="board-study",
        questions=[
            writers.ReportQuestion(name="funniness", kind="likert", min_value=1, max_value=5)
        ],
        groups=[],
        primary_question="funniness",
    )
    with translation.override(language):
        context = writers.report_context(
            document, study=study, generated_at=datetime(2026, 12, 1, tzinfo=UTC)
        )
        return writers.render_report_html(context)


def _section(html: str, name: str) -> str:
    start = html.index(f'<section id="{name}">')
    return html[start : html.index("</section>", start)]


def _row(html: str, heading: str, first: str, key: Any) -> dict[str, str]:
    """A row of the report's table under `heading` (both in the reader's language)."""
    table = outputs.read_html(html).table(heading, first)
    assert table is not None, (heading, first, list(outputs.read_html(html).tables))
    row = table.index().get(key)
    assert row is not None, (key, [cells[0] for _a, cells in table.rows])
    assert row is not outputs.AMBIGUOUS, key
    return row


def _t(text: str) -> str:
    """A heading of the report in the active language ({% translate %} keeps "%" as "%%")."""
    shown = translation.gettext(text.replace("%", "%%"))
    return shown.replace("%%", "%")


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_pair_board_names_its_model_tie_parameter_and_both_likelihoods(document, language):
    html = _html(document, language)
    fit = document["bradley_terry_fit"]
    with translation.override(language):
        row = _row(html, _t("The model of each board"), _t("Board"), ("data-board", "all"))
        assert row[_t("Model")] == labels.tie_model_label("davidson")
        assert row[_t("Tie parameter [95% CI]")] == outputs.squash(
            f"ν = {fmt_interval(fit['tie_param'])}"
        )
        davidson = translation.gettext("Log-likelihood, %(model)s") % {
            "model": labels.tie_model_label("davidson")
        }
        rao_kupper = translation.gettext("Log-likelihood, %(model)s") % {
            "model": labels.tie_model_label("rao_kupper")
        }
        assert row[davidson] == fmt(fit["tie_models"]["davidson"]["log_lik"])
        assert row[rao_kupper] == fmt(fit["tie_models"]["rao_kupper"]["log_lik"])
        assert (row[_t("Judgments")], row[_t("Ties")]) == ("1072", "197")
        # A level without ties is plain Bradley-Terry: no tie parameter, no tie likelihoods.
        level = _row(html, _t("The model of each board"), _t("Board"), ("data-board", "single"))
        assert level[_t("Model")] == labels.tie_model_label("bradley_terry")
        assert level[_t("Tie parameter [95% CI]")] == "—"
        assert level[davidson] == "—"
    # The chosen model's likelihood is the one in bold.
    board = _section(html, "pair-board")
    assert f"<strong>{fmt(fit['tie_models']['davidson']['log_lik'])}</strong>" in board
    assert f"<strong>{fmt(fit['tie_models']['rao_kupper']['log_lik'])}</strong>" not in board


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_ends_are_counted_and_each_bounded_item_is_at_least_or_at_most(document, language):
    html = _html(document, language)
    with translation.override(language):
        ends = _row(html, _t("The ends of each board"), _t("Board"), ("data-board", "single"))
        assert ends[_t("Undefeated")] == "1"
        assert ends[_t("Never won")] == "1"
        assert ends[_t("With a one-sided bound")] == "2"
        assert ends[_t("Not placed on the scale")] == "0"
        undefeated = _row(html, _t("The ends of each board"), _t("Item"), ("data-item", "i20"))
        assert (
            undefeated[_t("One-sided bound")]
            == f"≥ 0.73 {translation.gettext('at least this strong')}"
        )
        assert (undefeated[_t("Wins")], undefeated[_t("Losses")]) == ("9", "0")
        never = _row(html, _t("The ends of each board"), _t("Item"), ("data-item", "i21"))
        assert (
            never[_t("One-sided bound")] == f"≤ -1.20 {translation.gettext('at most this strong')}"
        )
    # On the leaderboard the undefeated item shows its bound where the score would be.
    leaderboard = _section(html, "leaderboard")
    assert "≥ 0.73" in leaderboard
    with translation.override(language):
        assert translation.gettext("undefeated: at least this strong") in leaderboard


@pytest.mark.parametrize("language", LANGUAGES)
def test_tie_and_neither_rates_read_as_stored_overall_and_per_model_and_background(
    document, language
):
    html = _html(document, language)
    section = document["pair_outcomes"]
    with translation.override(language):
        heading, first = _t("“About the same” and “neither”"), _t("Group")
        columns = {
            kind: translation.gettext("%(answer)s [95%% CI]")
            % {"answer": labels.pair_outcome_label(kind)}
            for kind in ("tie", "neither")
        }
        rows = [(translation.gettext("All judgments"), "overall", None)]
        rows += [(labels.source_label(s), "by_source", s) for s in section["tie"]["by_source"]]
        rows += [
            (labels.background_label(g), "by_background", g)
            for g in section["tie"]["by_background"]
        ]
        for label, scope, name in rows:
            row = _row(html, heading, first, label)
            for kind, column in columns.items():
                stats = section[kind][scope] if name is None else section[kind][scope][name]
                assert row[column] == outputs.squash(
                    f"{fmt_percent(stats)} ({stats['count']} / {stats['n']})"
                )
    sample = _section(html, "sample")
    assert ">197<" in sample
    assert ">128<" in sample


@pytest.mark.parametrize("language", LANGUAGES)
def test_style_control_shows_both_boards_each_beta_the_dropped_and_the_order_changes(
    document, language
):
    html = _html(document, language)
    style = document["style_control"]
    section = _section(html, "style-control")
    with translation.override(language):
        heading = _t("Sources, plain and style-controlled")
        for entry in style["sources"]:
            row = _row(html, heading, _t("Source"), ("data-source", entry["source"]))
            assert row[_t("Plain Bradley-Terry [95% CI]")] == outputs.squash(
                fmt_interval(entry["plain"])
            )
            assert row[_t("Style-controlled [95% CI]")] == outputs.squash(
                fmt_interval(entry["controlled"])
            )
        heading = _t("What raters reward besides what is measured")
        for covariate in style["covariates"]:
            row = _row(html, heading, _t("Covariate"), ("data-covariate", covariate["name"]))
            assert row[_t("Covariate")] == labels.covariate_label(covariate["name"])
            assert row[_t("Effect")] == labels.covariate_scale_label(True)
            assert row[_t("Beta (log-odds) [95% CI]")] == outputs.squash(
                fmt_interval(
                    {
                        "value": covariate["beta"],
                        "ci_low": covariate["ci_low"],
                        "ci_high": covariate["ci_high"],
                    }
                )
            )
        for name, why in style["dropped"].items():
            assert labels.covariate_label(name) in section
            assert labels.covariate_dropped_label(why) in section
        for change in style["order_changes"]:
            sentence = labels.order_change_sentence(change["change"], change["a"], change["b"])
            assert f"<li>{sentence}</li>" in section
        # The method in the section's own words: estimand, cluster-robust intervals, two stages.
        method = translation.gettext(
            "The controlled strengths come from a Bradley-Terry model of the sources with the "
            "covariates beside them, fitted on the decisive pair judgments. Its estimand treats "
            "raters as random and the study's items as fixed; the intervals are cluster-robust "
            "Wald t intervals (CR1, raters as clusters, t with one degree of freedom fewer than "
            "raters). An item's controlled score is its plain score minus the covariates' effect "
            "estimated at the source level (two stages), with an interval from a bootstrap of "
            "both stages that resamples raters."
        )
        assert method in outputs.squash(section)
    counts = section[section.index('class="style-counts"') :].split("</p>", 1)[0]
    assert "875" in counts
    assert "40" in counts
    assert str(style["item_order_changes"]) in section
    # No stored code reaches the reader.
    for code in ("log_length", "judged_human", "constant", "collinear", "flipped"):
        assert f">{code}<" not in section


@pytest.mark.parametrize("language", LANGUAGES)
def test_reliability_gives_split_halves_with_their_spread_and_k_rater_intervals(document, language):
    html = _html(document, language)
    section = document["reliability"]
    with translation.override(language):
        heading, first = _t("Reliability of the board"), _t("Source")
        study = section["study"]
        row = _row(html, heading, first, ("data-group", "all"))
        pairs = row[_t("Split-half, pairs (middle 95% of splits)")]
        assert (
            pairs
            == f"{fmt(study['pairs']['mean'])} ({fmt(study['pairs']['q025'])} – {fmt(study['pairs']['q975'])})"
        )
        assert row[_t("Spearman-Brown, pairs")] == fmt(study["pairs"]["spearman_brown"])
        assert row[_t("Split-half, item means (middle 95% of splits)")].startswith(
            fmt(study["scores"]["mean"])
        )
        assert row[_t("Spearman-Brown, item means")] == fmt(study["scores"]["spearman_brown"])
        k_rater = study["k_rater"]
        assert row[_t("ICC(1) [95% CI]")] == outputs.squash(
            fmt_interval(
                {
                    "value": k_rater["icc"],
                    "ci_low": k_rater["icc_ci_low"],
                    "ci_high": k_rater["icc_ci_high"],
                }
            )
        )
        assert row[_t("Mean of k raters [95% CI]")] == outputs.squash(
            f"{fmt_interval(k_rater['at_mean'])} k = {fmt(k_rater['k_mean'], 1)}"
        )
        # A split-half that is undefined says why, with no number.
        undefined = _row(html, heading, first, ("data-group", "model-b"))
        reason = labels.reliability_reason_label("too_few_items")
        assert undefined[_t("Split-half, pairs (middle 95% of splits)")] == reason
        # The mean of k raters at each k, with the empirical check where it exists.
        k_heading = translation.gettext(
            "Reliability of the mean of k raters' scores of %(question)s"
        ) % {"question": labels.question_label("funniness")}
        for entry in k_rater["by_k"]:
            k_row = _row(html, k_heading, "k", ("data-k", fmt(entry["k"], 0)))
            assert k_row[_t("Reliability [95% CI]")] == outputs.squash(fmt_interval(entry))
            if entry["empirical"] is not None:
                assert k_row[_t("Empirical")].startswith(fmt(entry["empirical"]))
    # The spread over splits is said not to be a confidence interval, in the method and here.
    method = html[html.index('id="method"') : html.index('id="sample"')]
    assert 'class="method-reliability"' in method
    if language == "en":
        assert "not a confidence interval" in _section(html, "reliability")
        assert "not a confidence interval" in method


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_method_describes_ties_ends_style_control_and_reliability(document, language):
    html = _html(document, language)
    method = html[html.index('id="method"') : html.index('id="sample"')]
    for css in ("method-ends", "method-ties", "method-style", "method-reliability"):
        assert f'class="{css}"' in method, css
    if language == "en":
        for phrase in (
            "simultaneous for the whole board",
            "Davidson's or Rao and Kupper's model, whichever has the higher likelihood",
            "bias-corrected expanded-percentile bootstrap interval",
            "never enters a score",
            "standardised",
            "Spearman-Brown step-up 2r / (1 + r)",
            "ICC(1) of the one-way random-effects ANOVA",
        ):
            assert phrase in outputs.squash(method), phrase
    else:
        for phrase in ("Davidson", "Rao-Kupper", "斯皮尔曼-布朗", "组内相关系数", "同时成立"):
            assert phrase in method, phrase


def test_a_study_without_the_new_sections_has_no_board_sections():
    """Results stored before these sections existed (or a study without pairs) leave them out."""
    html = _html({"counts": {"items": 0}}, "en")
    for name in ("pair-board", "style-control", "reliability"):
        assert f'<section id="{name}">' not in html
    assert 'class="method-ties"' not in html


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_pdf_prints_every_number_of_the_board_sections(document, language, tmp_path):
    html = _html(document, language)
    path = tmp_path / "report.pdf"
    writers.write_pdf(html, path)
    text = outputs.pdf_text(path)
    sections = "".join(
        _section(html, name) for name in ("pair-board", "style-control", "reliability")
    )
    shown = outputs.table_numbers(outputs.read_html(sections))
    assert len(shown) > 100
    missing = Counter(shown) - Counter(outputs.numbers(text))
    assert not missing, f"numbers of the board sections missing from the PDF: {dict(missing)}"
    with translation.override(language):
        for heading in ("The pair board", "Style-controlled boards", "Reliability of the board"):
            assert "".join(translation.gettext(heading).split()) in "".join(text.split())


# --- a study with ties and "neither", through the service ---------------------------------------


@pytest.fixture
def tied_study(demo_study):
    """The demo study with every sixth pair judgment answered "about the same" and every ninth
    (from the second) "neither", computed."""
    pairs = list(
        PairJudgment.objects.filter(study=demo_study).order_by("pk").values_list("pk", flat=True)
    )
    PairJudgment.objects.filter(pk__in=pairs[::6]).update(outcome="tie", winner=None)
    PairJudgment.objects.filter(pk__in=pairs[1::9]).update(outcome="neither", winner=None)
    study_aggregate(study=demo_study, rounds=30)
    return demo_study


def test_a_study_with_ties_shows_them_in_the_report_the_workbook_and_the_zip(tied_study, tmp_path):
    document = services.study_result_document(study=tied_study)
    assert document["bradley_terry_fit"]["model"] in ("davidson", "rao_kupper")
    assert document["pair_outcomes"]["tie"]["count"] > 0
    assert document["pair_outcomes"]["neither"]["count"] > 0
    written = {}
    for fmt_name, read in (("xlsx", outputs.xlsx_tables), ("tables", outputs.zip_tables)):
        path = tmp_path / f"results.{fmt_name}"
        services.export_write(study=tied_study, fmt=fmt_name, path=path)
        written[fmt_name] = read(path)
    fit = document["bradley_terry_fit"]
    tie = document["pair_outcomes"]["tie"]
    style = document["style_control"]
    reliability = document["reliability"]["study"]
    for name, tables in written.items():
        (row,) = [r for r in tables["bradley_terry_fit"] if r["scope_level"] == "all"]
        assert row["model"] == fit["model"], name
        assert float(row["tie_param"]) == pytest.approx(fit["tie_param"]["value"], rel=1e-12)
        # A tie parameter whose resamples lie far from it has no interval, and says why.
        if fit["tie_param"]["ci_low"] is None:
            assert row["tie_param_ci_low"] in (None, ""), name
            assert row["tie_param_interval_reason"] == fit["tie_param"]["reason"], name
            assert fit["tie_param"]["reason"] == "resamples_far_from_estimate"
        else:
            assert float(row["tie_param_ci_low"]) == pytest.approx(
                fit["tie_param"]["ci_low"], rel=1e-12
            )
        assert float(row["davidson_log_lik"]) == pytest.approx(
            fit["tie_models"]["davidson"]["log_lik"], rel=1e-12
        )
        (overall,) = [
            r for r in tables["pair_outcomes"] if r["outcome"] == "tie" and r["level"] == "overall"
        ]
        assert float(overall["rate"]) == pytest.approx(tie["overall"]["value"], rel=1e-12)
        assert int(overall["count"]) == tie["overall"]["count"]
        items = [
            r for r in tables["pair_outcomes"] if r["outcome"] == "tie" and r["level"] == "item"
        ]
        assert len(items) == len(tie["items"])
        sources = [r for r in tables["style_sources"] if r["row"] == "source"]
        assert {r["source"] for r in sources} == {s["source"] for s in style["sources"]}
        assert len(tables["style_items"]) == len(style["items"])
        (split,) = [
            r
            for r in tables["reliability"]
            if r["scope"] == "study" and r["measure"] == "split_half_pairs"
        ]
        assert float(split["value"]) == pytest.approx(reliability["pairs"]["mean"], rel=1e-12)
        ties = {r["item"]: int(r["ties"]) for r in tables["bradley_terry"]}
        assert ties == {r["item"]: r["ties"] for r in document["bradley_terry"]}
    # The report follows the study's items view, as the pages do.
    for language in LANGUAGES:
        html = services.study_report_html(study=tied_study, language=language)
        board = _section(html, "pair-board")
        with translation.override(language):
            assert escape(labels.tie_model_label(fit["model"])) in board
            assert escape(labels.pair_outcome_label("neither")) in board
        for name in ("style-control", "reliability"):
            assert f'<section id="{name}">' in html


def test_a_board_without_ties_shows_no_tie_model_columns(document):
    """A study whose raters could not answer "about the same" is plain Bradley-Terry: the
    report says so and shows no tie parameter or tie models' likelihoods."""
    plain = document["bradley_terry_fit_by_level"]["single"]
    document["bradley_terry_fit"] = plain
    del document["pair_outcomes"]
    html = _html(document, "en")
    row = _row(html, "The model of each board", "Board", ("data-board", "all"))
    assert row["Model"] == labels.tie_model_label("bradley_terry")
    assert "Tie parameter [95% CI]" not in row
    assert "Log-likelihood" not in _section(html, "pair-board")
    assert 'class="method-ties"' not in html


@pytest.mark.parametrize("language", LANGUAGES)
def test_style_control_without_boards_or_intervals_says_why(document, language):
    style = document["style_control"]
    document["style_control"] = {**style, "reason": "too_few_raters"}
    html = _html(document, language)
    with translation.override(language):
        reason = labels.style_reason_label("too_few_raters")
        assert escape(reason) in _section(html, "style-control")
    document["style_control"] = {
        key: style[key] for key in ("level", "covariates_offered", "estimand", "interval")
    } | {"reason": "sources_not_connected"}
    html = _html(document, language)
    section = _section(html, "style-control")
    with translation.override(language):
        assert escape(labels.style_reason_label("sources_not_connected")) in section
    assert 'class="style-sources"' not in section


def test_a_tie_parameter_without_an_interval_says_why_in_both_languages() -> None:
    from django.utils import translation

    from apps.analysis import labels

    with translation.override("en"):
        en = labels.tie_interval_reason_label("resamples_far_from_estimate")
    with translation.override("zh-hans"):
        zh = labels.tie_interval_reason_label("resamples_far_from_estimate")
    assert en.startswith("The tie parameter has no interval")
    assert zh.startswith("平局参数没有区间")
    assert labels.tie_interval_reason_label(None) == ""
