"""Results pages: who may see them, that the numbers shown are the stored ones, the CSV files, the
sorting, filtering and paging of the items, rater quality, and bounded work on a large study."""

from __future__ import annotations

import csv
import io
import re
import statistics
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.analysis.models import StudyResult
from apps.analysis.services import study_aggregate
from apps.assignments.models import Assignment
from apps.dashboard.results import CSV_NAMES, LIST_LIMIT, PAGE_SIZE
from apps.findings.charts import fmt, fmt_ci, fmt_pct
from apps.findings.estimands import group_means
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse
from apps.raters.models import Rater, RaterSession
from apps.studies.models import Item, Question, Study
from apps.studies.services import study_create, study_member_add

pytestmark = pytest.mark.django_db

SECTIONS = ["models", "leaderboard", "items", "agreement", "turing", "quality", "safety"]
PAGES = ["", *(f"{section}/" for section in SECTIONS)]
MAX_QUERIES = 15


def url(study, page: str = "") -> str:
    return f"/studies/{study.slug}/results/{page}"


def data_url(study, name: str) -> str:
    return f"/studies/{study.slug}/results/data/{name}.csv"


@pytest.fixture
def results(demo_study):
    # These tests read the pages against the full stored document: every page then starts
    # from all items. The study's items view (evidence only by default) has its own tests.
    demo_study.exclude_items_not_evidence = False
    demo_study.save(update_fields=["exclude_items_not_evidence"])
    return study_aggregate(study=demo_study, rounds=50)


@pytest.fixture
def member(demo_study, django_user_model):
    user = django_user_model.objects.create_user("researcher", password="pw-researcher-1")
    study_member_add(study=demo_study, user=user)
    client = Client()
    client.force_login(user)
    return client


def page_text(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def row_html(page: str, attr: str, value: str, within: str | None = None) -> str:
    """The HTML of the table row marked data-<attr>="<value>" (inside the table marked
    data-dimension="<within>" when given)."""
    if within is not None:
        match = re.search(rf'<table[^>]*data-dimension="{within}".*?</table>', page, re.S)
        assert match, f"no table for {within}"
        page = match.group(0)
    match = re.search(rf'<tr data-{attr}="{re.escape(value)}">(.*?)</tr>', page, re.S)
    assert match, f"no row {attr}={value}"
    return match.group(1)


def read_csv(response) -> list[dict[str, str]]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    return rows


def number(cell: str) -> float | None:
    return None if cell == "" else float(cell)


# ---------------------------------------------------------------------------------------------
# Access


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_for_a_member_in_a_bounded_number_of_queries(
    results, member, demo_study, page, django_assert_max_num_queries
):
    with django_assert_max_num_queries(MAX_QUERIES):
        response = member.get(url(demo_study, page))
    text = page_text(response)
    assert "No results yet" not in text
    # Every chart and table comes with a line on how to read it and its data.
    assert text.count('class="how"') >= 1
    assert "/results/data/" in text


@pytest.mark.parametrize("page", [*PAGES, "data/leaderboard.csv"])
def test_anonymous_visitors_are_sent_to_login(results, demo_study, page):
    response = Client().get(url(demo_study, page))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("page", [*PAGES, "data/leaderboard.csv"])
def test_a_researcher_of_another_study_gets_not_found(results, demo_study, django_user_model, page):
    outsider = django_user_model.objects.create_user("outsider", password="pw-outsider-1")
    study_create(slug="theirs", rubric_slug="humor", owner=outsider)
    client = Client()
    client.force_login(outsider)
    response = client.get(url(demo_study, page))
    assert response.status_code == 404
    assert b"Bradley" not in response.content


@pytest.mark.parametrize("page", ["", "items/", "data/items.csv"])
def test_an_admin_sees_any_study(results, demo_study, django_user_model, page):
    admin = django_user_model.objects.create_superuser("boss", password="pw-boss-1234")
    client = Client()
    client.force_login(admin)
    assert client.get(url(demo_study, page)).status_code == 200


@pytest.mark.parametrize("page", ["", "quality/", "data/rater-quality.csv"])
def test_a_rater_browser_session_gives_no_access_to_results(results, demo_study, page):
    demo_study.status = Study.Status.OPEN
    demo_study.save()
    client = Client()
    client.post(
        f"/s/{demo_study.slug}/",
        {
            "background": "technical",
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    response = client.get(url(demo_study, page))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("page", PAGES)
def test_before_any_results_each_page_says_so_with_status_200(demo_study, member, page):
    assert not StudyResult.objects.filter(study=demo_study).exists()
    text = page_text(member.get(url(demo_study, page)))
    assert "No results yet." in text


def test_before_any_results_the_downloads_are_not_found(demo_study, member):
    assert member.get(data_url(demo_study, "leaderboard")).status_code == 404


def test_unknown_section_and_unknown_download_are_not_found(results, demo_study, member):
    assert member.get(url(demo_study, "nonsense/")).status_code == 404
    assert member.get(data_url(demo_study, "nonsense")).status_code == 404


# ---------------------------------------------------------------------------------------------
# The numbers on the pages are the stored ones


def test_summary_shows_the_stored_group_means_warnings_and_provenance(results, demo_study, member):
    payload = results.payload
    text = page_text(member.get(url(demo_study) + "?view=all"))
    for dimension in ("humor_type", "level_humor_type", "source", "level"):
        # Per source the means are the model comparison's (items and raters random).
        means = group_means(payload, dimension)
        for name, entry in payload["groups"][dimension].items():
            row = row_html(text, "group", name, within=dimension)
            for question in ("surprise", "coherence", "funniness"):
                assert fmt_ci(means[name][question]) in row
            assert fmt_pct(entry["offense_rate"]) in row
            assert fmt_ci(entry["turing_accuracy"], 1, pct=True) in row
    pun = row_html(text, "group", "pun", within="humor_type")
    assert fmt_ci(payload["groups"]["humor_type"]["pun"]["questions"]["funniness"]) in pun
    for warning in payload["warnings"]:
        assert warning["code"] in text
    assert str(results.seed) in text
    assert str(results.rounds) in text
    assert results.input_hash in text
    assert results.computed_at.strftime("%Y-%m-%d %H:%M") in text


def test_leaderboard_shows_the_stored_scores_and_ranks(results, demo_study, member):
    payload = results.payload
    text = page_text(member.get(url(demo_study, "leaderboard/")))
    bt = payload["bradley_terry"]
    sizes = {c: sum(1 for r in bt if r["component"] == c) for c in {r["component"] for r in bt}}
    largest = min(sizes, key=lambda c: (-sizes[c], c))
    # Items without a finite score (undefeated, never won) are not drawn.
    top = max(
        (r for r in bt if r["component"] == largest and r["score"] is not None),
        key=lambda r: r["score"],
    )
    chart = text[text.index("<svg") : text.index("</svg>")]
    assert top["item"] in chart
    assert f"{fmt(top['score'])} [{fmt(top['ci_low'])}, {fmt(top['ci_high'])}]" in chart
    # Top items first in the chart.
    labels = re.findall(r'class="label"[^>]*>([^<]+)<', chart)
    scores = {r["item"]: r["score"] for r in bt}
    assert [scores[label] for label in labels] == sorted(
        (scores[label] for label in labels), reverse=True
    )
    for entry in bt[:PAGE_SIZE]:
        row = row_html(text, "item", entry["item"])
        rank = entry["rank"] if entry["rank"] is not None else "—"
        if entry["score"] is None:
            # Won or lost every comparison: no ridge-driven number; the one-sided bound where
            # the data give one, and the rank that follows from it.
            if entry["bound"] is None:
                assert "every comparison: no finite score" in row
                assert '<td class="num">—</td>' in row
            else:
                sign = "≥" if entry["bound_side"] == "lower" else "≤"
                assert f"{sign} {fmt(entry['bound'])}" in row
                assert f'<td class="num">{rank}</td>' in row
            continue
        assert fmt(entry["score"]) in row
        if entry["ci_low"] is not None:
            assert f"[{fmt(entry['ci_low'])}, {fmt(entry['ci_high'])}]" in row
        rank = entry["rank"] if entry["rank"] is not None else "—"
        assert f'<td class="num">{rank}</td>' in row
    source_of = {item["item"]: item["source"] for item in payload["items"]}
    for source in {item["source"] for item in payload["items"]}:
        mean = statistics.fmean(
            r["score"] for r in bt if source_of[r["item"]] == source and r["score"] is not None
        )
        assert fmt(mean) in row_html(text, "source", source)


def test_leaderboard_per_level_uses_the_level_fit(results, demo_study, member):
    payload = results.payload
    text = page_text(member.get(url(demo_study, "leaderboard/?level=scenario")))
    for entry in payload["bradley_terry_by_level"]["scenario"]:
        row = row_html(text, "item", entry["item"])
        shown = entry["score"] if entry["score"] is not None else entry["bound"]
        assert fmt(shown) in row
    # An unknown level falls back to all levels instead of failing.
    text = page_text(member.get(url(demo_study, "leaderboard/?level=bogus&component=x&page=-4")))
    assert "showing all levels" in text


def test_agreement_shows_the_stored_kappa_alpha_and_the_culture_dependent_items(
    results, demo_study, member
):
    payload = results.payload
    text = page_text(member.get(url(demo_study, "agreement/")))
    for question, entry in payload["agreement"].items():
        row = row_html(text, "question", question)
        assert fmt_ci(entry["fleiss_kappa"]) in row
        for alpha in entry["krippendorff_alpha"].values():
            assert fmt_ci(alpha) in row
        # Cohen's kappa, mean over pairs of raters: the interval and its pairs, or the reason
        # there is none.
        for stats in entry["cohen_kappa"].values():
            if stats["n_pairs"]:
                assert fmt_ci(stats) in row
                assert f"{stats['n_pairs']} pair" in row
            else:
                assert f"no pair of raters shares {stats['min_shared_items']} items" in row
    assert "delete-a-group jackknife over raters" in text
    assert "q = 0.1 " in text  # the culture test's false-discovery rate, a study setting
    flagged = [
        i["item"]
        for i in payload["items"]
        if i["cross_group_agreement"] is not None and i["cross_group_agreement"] < 0.3
    ]
    assert flagged
    listed = re.findall(
        r'<tr data-item="([^"]+)">', text[text.index("Culture-dependent items</h2>") :]
    )
    assert sorted(listed) == sorted(flagged)
    # Each listed item says whether the group test confirmed it.
    for item in payload["items"]:
        if item["item"] in flagged:
            row = row_html(text, "item", item["item"])
            verdict = (
                "culture-dependent" if "culture_dependent" in item["flags"] else "controversial"
            )
            assert f"<td>{verdict}</td>" in row
            assert fmt(item["culture_test"]["q_value"], 3) in row
    assert "D<sub>obs</sub>" in text  # the one-line formula


def test_turing_shows_each_models_stored_accuracy_against_the_50_and_70_lines(
    results, demo_study, member
):
    payload = results.payload
    text = page_text(member.get(url(demo_study, "turing/")))
    for source, summary in payload["turing"]["by_source"].items():
        row = row_html(text, "source", source)
        assert fmt_ci(summary["accuracy"], 1, pct=True) in row
        assert fmt_ci(summary["judged_human"], 1, pct=True) in row
        if source != "human":
            assert fmt(summary["d_prime"]) in row
    for level, summary in payload["turing"]["by_level"].items():
        assert fmt_ci(summary["accuracy"], 1, pct=True) in row_html(text, "level", level)
    assert "<title>50%</title>" in text
    assert "<title>70%</title>" in text
    assert "stroke-dasharray" in text


def test_quality_shows_fatigue_position_bias_and_explanations(results, demo_study, member):
    diagnostics = results.payload["diagnostics"]
    text = page_text(member.get(url(demo_study, "quality/")))
    assert fmt_ci(diagnostics["fatigue"]["slope"], 3) in text
    assert fmt_ci(diagnostics["position_bias"]["left_choice_rate"], 1, pct=True) in text
    assert fmt(diagnostics["position_bias"]["p_value"], 3) in text
    assert fmt_ci(diagnostics["explanation_match_rate"], 1, pct=True) in text
    assert text.count('class="dot"') >= len(diagnostics["fatigue"]["bins"])


def test_safety_lists_the_intercepted_items_apart_with_their_means(results, demo_study, member):
    payload = results.payload
    text = page_text(member.get(url(demo_study, "safety/")))
    assert "product-safety events, not" in text
    intercepted = [item for item in payload["items"] if item["safety_intercepted"]]
    assert intercepted
    for item in intercepted:
        row = row_html(text, "item", item["item"])
        assert fmt_ci(item["questions"]["funniness"]) in row
    listed = re.findall(r'<tr data-item="([^"]+)">', text)
    assert sorted(listed) == sorted(item["item"] for item in intercepted)


# ---------------------------------------------------------------------------------------------
# Items: sort, filter, page


def item_ids(text: str) -> list[str]:
    return re.findall(r'<tr data-item="([^"]+)">', text)


def test_items_sort_by_a_column_in_both_directions(results, demo_study, member):
    items = results.payload["items"]
    funniness = {i["item"]: i["questions"]["funniness"]["value"] for i in items}
    down = item_ids(page_text(member.get(url(demo_study, "items/?sort=funniness&dir=desc"))))
    assert len(down) == len(items)
    assert [funniness[i] for i in down] == sorted(funniness.values(), reverse=True)
    up = item_ids(page_text(member.get(url(demo_study, "items/?sort=funniness&dir=asc"))))
    assert [funniness[i] for i in up] == sorted(funniness.values())
    scores = {
        r["item"]: r["score"] for r in results.payload["bradley_terry"] if r["score"] is not None
    }
    by_bt = item_ids(page_text(member.get(url(demo_study, "items/?sort=bt_score&dir=desc"))))
    assert by_bt[0] == max(scores, key=scores.get)


def test_items_filter_by_level_humor_type_source_and_flag(results, demo_study, member):
    items = results.payload["items"]
    shown = item_ids(page_text(member.get(url(demo_study, "items/?level=scenario&source=human"))))
    assert shown == sorted(
        i["item"] for i in items if i["level"] == "scenario" and i["source"] == "human"
    )
    shown = item_ids(page_text(member.get(url(demo_study, "items/?humor_type=pun"))))
    assert shown == sorted(i["item"] for i in items if i["humor_type"] == "pun")
    shown = item_ids(page_text(member.get(url(demo_study, "items/?flag=culture_dependent"))))
    assert shown == sorted(i["item"] for i in items if "culture_dependent" in i["flags"])
    assert shown
    row = row_html(
        page_text(member.get(url(demo_study, "items/?flag=culture_dependent"))), "item", shown[0]
    )
    assert "culture-dependent" in row
    assert item_ids(page_text(member.get(url(demo_study, "items/?source=nobody")))) == []


@pytest.mark.parametrize(
    "query",
    [
        "sort=drop%20table&dir=sideways",
        "page=abc",
        "page=999",
        "page=-1",
        "sort=__class__",
        "level=%3Cscript%3E",
    ],
)
def test_items_bad_parameters_fall_back_instead_of_failing(results, demo_study, member, query):
    response = member.get(url(demo_study, f"items/?{query}"))
    text = page_text(response)
    assert "<script>" not in text


def test_items_unknown_sort_column_is_said_and_sorted_by_item(results, demo_study, member):
    text = page_text(member.get(url(demo_study, "items/?sort=secret")))
    assert "Unknown sort column" in text
    assert item_ids(text) == sorted(i["item"] for i in results.payload["items"])


# ---------------------------------------------------------------------------------------------
# CSV downloads


@pytest.mark.parametrize("name", CSV_NAMES)
def test_every_download_is_a_csv_with_a_header_row(results, demo_study, member, name):
    response = member.get(data_url(demo_study, name))
    assert response.status_code == 200
    assert f"{demo_study.slug}-{name}.csv" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows
    assert rows[0]
    assert all(rows[0])
    assert all(len(row) == len(rows[0]) for row in rows)


def test_downloads_match_the_payload_exactly(results, demo_study, member):
    payload = results.payload
    rows = read_csv(member.get(data_url(demo_study, "leaderboard")))
    assert [
        (r["item"], number(r["score"]), number(r["ci_low"]), number(r["rank"])) for r in rows
    ] == [(b["item"], b["score"], b["ci_low"], b["rank"]) for b in payload["bradley_terry"]]
    rows = read_csv(member.get(data_url(demo_study, "items")))
    assert len(rows) == len(payload["items"])
    for row, item in zip(rows, payload["items"], strict=True):
        assert row["item"] == item["item"]
        assert number(row["funniness_mean"]) == item["questions"]["funniness"]["value"]
        assert number(row["turing_accuracy"]) == item["turing_accuracy"]["value"]
        assert row["flags"] == ";".join(item["flags"])
    rows = read_csv(member.get(data_url(demo_study, "turing")))
    by_source = {r["name"]: r for r in rows if r["scope"] == "source"}
    for source, summary in payload["turing"]["by_source"].items():
        assert number(by_source[source]["accuracy"]) == summary["accuracy"]["value"]
        assert number(by_source[source]["accuracy_ci_high"]) == summary["accuracy"]["ci_high"]
    rows = read_csv(member.get(data_url(demo_study, "summary") + "?view=all"))
    pun = next(r for r in rows if r["dimension"] == "humor_type" and r["group"] == "pun")
    assert (
        number(pun["funniness_mean"])
        == payload["groups"]["humor_type"]["pun"]["questions"]["funniness"]["value"]
    )
    assert pun["means_estimand"] == "these_items"
    for source, entry in payload["models"]["by_model"].items():
        row = next(r for r in rows if r["dimension"] == "source" and r["group"] == source)
        assert number(row["funniness_mean"]) == entry["questions"]["funniness"]["value"]
        assert row["means_estimand"] == "items_and_raters"
    rows = read_csv(member.get(data_url(demo_study, "fatigue")))
    assert [number(r["mean"]) for r in rows] == [
        b["mean"] for b in payload["diagnostics"]["fatigue"]["bins"]
    ]
    rows = read_csv(member.get(data_url(demo_study, "position-bias")))
    assert (
        number(rows[0]["value"])
        == payload["diagnostics"]["position_bias"]["left_choice_rate"]["value"]
    )
    assert number(rows[0]["p_value"]) == payload["diagnostics"]["position_bias"]["p_value"]
    rows = read_csv(member.get(data_url(demo_study, "agreement")))
    kappa = next(r for r in rows if r["question"] == "funniness" and r["measure"] == "fleiss_kappa")
    assert number(kappa["value"]) == payload["agreement"]["funniness"]["fleiss_kappa"]["value"]
    rows = read_csv(member.get(data_url(demo_study, "safety")))
    assert sorted(r["item"] for r in rows) == sorted(
        i["item"] for i in payload["items"] if i["safety_intercepted"]
    )


# ---------------------------------------------------------------------------------------------
# Rater quality from the raw judgments


def test_rater_quality_counts_attention_failures_speeders_and_straight_liners(
    results, demo_study, member, django_assert_max_num_queries
):
    raters = list(Rater.objects.filter(study=demo_study).order_by("external_id"))
    careless, fast, flat = raters[0], raters[1], raters[2]
    # An attention check failed and one passed.
    session = RaterSession.objects.get(rater=careless)
    items = list(Item.objects.filter(study=demo_study).order_by("pk")[:2])
    for position, (item, passed) in enumerate(zip(items, [False, True], strict=True), start=1):
        Assignment.objects.create(
            study=demo_study,
            rater=careless,
            session=session,
            kind="scorecard",
            status="done",
            item=item,
            position=900 + position,
            is_attention_check=True,
            attention_passed=passed,
        )
    # Every task of one rater under 3 seconds; another rater's slow.
    ScoreResponse.objects.filter(rater=fast).update(active_seconds=1.5)
    PairJudgment.objects.filter(rater=fast).update(active_seconds=2.0)
    ScoreResponse.objects.filter(rater=raters[3]).update(active_seconds=12.0)
    # Five consecutive scorecards with 4 on every scale question.
    cards = list(
        ScoreResponse.objects.filter(rater=flat).order_by(
            "submitted_at", "seconds_into_session", "pk"
        )
    )
    start = timezone.now()
    for k, card in enumerate(cards):
        ScoreResponse.objects.filter(pk=card.pk).update(submitted_at=start + timedelta(seconds=k))
    scale = Question.objects.filter(rubric=demo_study.rubric, kind="likert")
    ScoreAnswer.objects.filter(response__in=cards[3:8], question__in=scale).update(value=4)
    # The neighbours differ, so the run is exactly five long.
    ScoreAnswer.objects.filter(response__in=[cards[2], cards[8]], question__in=scale).update(
        value=1
    )
    ScoreAnswer.objects.filter(
        response__in=[cards[2], cards[8]], question=scale.order_by("position").first()
    ).update(value=2)

    with django_assert_max_num_queries(MAX_QUERIES):
        text = page_text(member.get(url(demo_study, "quality/")))
    assert re.search(r'class="attention">1<', text)
    assert re.search(r'class="speeders">1<', text)
    assert re.search(r'class="straight">1<', text)
    assert "1 / 2" in row_html(text, "rater", careless.external_id)
    assert "speeder" in row_html(text, "rater", fast.external_id)
    assert ">5<" in row_html(text, "rater", flat.external_id)
    assert 'data-rater="' + raters[3].external_id not in text

    rows = {r["rater"]: r for r in read_csv(member.get(data_url(demo_study, "rater-quality")))}
    assert len(rows) == len(raters)
    assert rows[careless.external_id]["attention_failed"] == "1"
    assert rows[fast.external_id]["speeder"] == "True"
    assert float(rows[fast.external_id]["median_active_seconds"]) in (1.5, 1.75, 2.0)
    assert rows[flat.external_id]["longest_straight_run"] == "5"
    assert rows[flat.external_id]["straight_liner"] == "True"
    assert rows[raters[3].external_id]["speeder"] == "False"

    # Four in a row is not a straight-liner.
    ScoreAnswer.objects.filter(response=cards[7], question__in=scale).update(value=5)
    rows = {r["rater"]: r for r in read_csv(member.get(data_url(demo_study, "rater-quality")))}
    assert rows[flat.external_id]["longest_straight_run"] == "4"
    assert rows[flat.external_id]["straight_liner"] == "False"


def half_fast(rater, slow: float) -> None:
    """Half the rater's timed tasks at 2.0 s and half at `slow` s (an even count)."""
    cards = list(ScoreResponse.objects.filter(rater=rater).order_by("pk"))
    PairJudgment.objects.filter(rater=rater).update(active_seconds=None)
    half = len(cards) // 2
    ScoreResponse.objects.filter(pk__in=[c.pk for c in cards[:half]]).update(active_seconds=2.0)
    ScoreResponse.objects.filter(pk__in=[c.pk for c in cards[half : 2 * half]]).update(
        active_seconds=slow
    )
    ScoreResponse.objects.filter(pk__in=[c.pk for c in cards[2 * half :]]).update(
        active_seconds=None
    )


def test_the_speeder_line_uses_the_exact_median_of_an_even_count(results, demo_study, member):
    above, below = Rater.objects.filter(study=demo_study).order_by("external_id")[:2]
    half_fast(above, slow=4.5)  # median (2.0 + 4.5) / 2 = 3.25: not a speeder
    half_fast(below, slow=3.5)  # median (2.0 + 3.5) / 2 = 2.75: a speeder
    text = page_text(member.get(url(demo_study, "quality/")))
    assert re.search(r'class="speeders">1<', text)
    assert "speeder" in row_html(text, "rater", below.external_id)
    assert "2.8" in row_html(text, "rater", below.external_id)
    assert f'data-rater="{above.external_id}"' not in text
    rows = {r["rater"]: r for r in read_csv(member.get(data_url(demo_study, "rater-quality")))}
    assert float(rows[above.external_id]["median_active_seconds"]) == 3.25
    assert rows[above.external_id]["speeder"] == "False"
    assert float(rows[below.external_id]["median_active_seconds"]) == 2.75
    assert rows[below.external_id]["speeder"] == "True"


# ---------------------------------------------------------------------------------------------
# A large study: bounded charts, paged tables, escaped text (payload written directly)


def interval(value, low=None, high=None, n=10):
    return {"value": value, "ci_low": low, "ci_high": high, "n": n}


def big_payload(n: int) -> dict:
    levels = ["single", "multi_turn", "scenario"]
    sources = ["model-a", "model-b", "human"]
    ids = [f"i{k:05d}" for k in range(n)]
    ids[7] = '<script>alert("x")</script>'
    items = []
    for k, item in enumerate(ids):
        items.append(
            {
                "item": item,
                "source": sources[k % 3],
                "level": levels[k % 3],
                "humor_type": "pun",
                "topic": "t",
                "safety_intercepted": k % 500 == 0,
                "n_raters": 15,
                "n_pairs": 3,
                "questions": {
                    "surprise": interval(3.0, 2.5, 3.5),
                    "coherence": interval(3.0, 2.5, 3.5),
                    "funniness": interval(4.0 + (k % 7) / 10, None, None),
                    "offensive": interval(0.0, 0.0, 0.0),
                },
                "offensive": False,
                "turing_accuracy": interval(0.5, 0.3, 0.7, 4),
                "explanation_match": None,
                "agreement": 0.5,
                "cross_group_agreement": 0.1 if k % 3 == 0 else 0.6,
                "flags": ["culture_dependent"] if k % 3 == 0 else [],
            }
        )
    bt = [
        {
            "item": item,
            "score": 3.0 - 6.0 * k / n,
            "ci_low": 2.0 - 6.0 * k / n,
            "ci_high": 4.0 - 6.0 * k / n,
            "rank": k + 1,
            "component": 0,
        }
        for k, item in enumerate(ids)
    ]
    group = {
        "n_items": n // 3,
        "questions": {
            q: interval(3.0, 2.9, 3.1, 100)
            for q in ("surprise", "coherence", "funniness", "offensive")
        },
        "turing_accuracy": interval(0.6, 0.5, 0.7, 100),
        "offensive_items": 0,
        "offense_rate": 0.0,
        "safety_intercepted_items": 1,
    }
    summary = {
        "n": 100,
        "accuracy": interval(0.6, 0.5, 0.7, 100),
        "judged_human": interval(0.4, 0.3, 0.5, 100),
        "d_prime": 0.5,
        "verdict": "inconclusive",
    }
    return {
        "seed": 1,
        "rounds": 10,
        "counts": {"items": n, "raters": 600},
        "bradley_terry": bt,
        "bradley_terry_components": 1,
        "bradley_terry_by_level": {
            level: [b for b, i in zip(bt, items, strict=True) if i["level"] == level]
            for level in levels
        },
        "agreement": {
            q: {
                "n_ratings": 100,
                "weights": "nominal" if q == "offensive" else "quadratic",
                "fleiss_kappa": interval(0.3, 0.2, 0.4),
                "krippendorff_alpha": {"nominal": interval(0.3, 0.2, 0.4)},
                "krippendorff_alpha_by_group": {"technical": interval(0.3, 0.2, 0.4)},
                "per_item": [{"item": item, "agreement": 0.5, "cross_group": 0.1} for item in ids],
            }
            for q in ("surprise", "coherence", "funniness", "offensive")
        },
        "items": items,
        "groups": {
            "source": dict.fromkeys(sources, group),
            "level": dict.fromkeys(levels, group),
            "humor_type": {"pun": group},
            "level_humor_type": {f"{lv}/pun": group for lv in levels},
            "background": {"technical": {"n_raters": 600, "questions": group["questions"]}},
        },
        "turing": {
            "overall": summary,
            "by_source": dict.fromkeys(sources, summary),
            "by_level": dict.fromkeys(levels, summary),
        },
        "diagnostics": {
            "fatigue": {
                "bins": [
                    {"start": m, "end": m + 1, "n": 50, "mean": 4.0, "ci_low": 3.8, "ci_high": 4.2}
                    for m in range(30)
                ],
                "slope": interval(-0.01, -0.02, 0.0),
            },
            "position_bias": {"left_choice_rate": interval(0.52, 0.5, 0.54, 1000), "p_value": 0.04},
        },
        "warnings": [],
    }


@pytest.fixture
def big_study(django_user_model):
    owner = django_user_model.objects.create_user("owner", password="pw-owner-123")
    study = study_create(slug="big", rubric_slug="humor", owner=owner)
    StudyResult.objects.create(
        study=study,
        payload=big_payload(2000),
        input_hash="0" * 64,
        seed=1,
        rounds=10,
        computed_at=timezone.now(),
        duration_seconds=1.0,
    )
    client = Client()
    client.force_login(owner)
    return study, client


@pytest.mark.parametrize("page", PAGES)
def test_a_large_study_renders_every_page_with_bounded_queries_and_escaped_ids(
    big_study, page, django_assert_max_num_queries
):
    study, client = big_study
    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(url(study, page))
    text = page_text(response)
    assert "<script>alert" not in text
    # Tables of items are paged, lists cut.
    assert len(re.findall(r"<tr data-item=", text)) <= max(PAGE_SIZE, LIST_LIMIT)


def test_the_leaderboard_chart_of_a_large_study_shows_the_top_50_and_bottom_10(big_study):
    study, client = big_study
    text = page_text(client.get(url(study, "leaderboard/")))
    chart = text[text.index("<svg") : text.index("</svg>")]
    assert chart.count('class="dot"') == 60
    assert "1940 items not shown" in chart
    assert "the top 50 and the bottom 10 of the 2000 items" in text
    assert "i00000" in chart
    assert "i01999" in chart
    assert "i00050" not in chart
    assert "&lt;script&gt;" in chart
    # Paged table: page 2 holds items 101-200 in rank order.
    rows = item_ids(page_text(client.get(url(study, "leaderboard/?page=2"))))
    assert rows == [f"i{k:05d}" for k in range(100, 200)]


def test_the_items_of_a_large_study_are_paged_by_100(big_study):
    study, client = big_study
    first = item_ids(page_text(client.get(url(study, "items/"))))
    assert len(first) == PAGE_SIZE
    last = item_ids(page_text(client.get(url(study, "items/?page=20"))))
    assert len(last) == PAGE_SIZE
    assert last[-1] == "i01999"
    assert item_ids(page_text(client.get(url(study, "items/?page=9999")))) == last
    assert item_ids(page_text(client.get(url(study, "items/?page=zero")))) == first
    third = page_text(client.get(url(study, "items/?level=single&sort=funniness&dir=desc&page=3")))
    assert len(item_ids(third)) == PAGE_SIZE
    # Paging links keep the filter and the sort.
    assert "level=single" in third
    assert "sort=funniness" in third
    assert "page=4" in third


def test_the_agreement_page_of_a_large_study_lists_at_most_200_flagged_items(big_study):
    study, client = big_study
    text = page_text(client.get(url(study, "agreement/")))
    section = text[text.index("Culture-dependent items</h2>") :]
    assert len(re.findall(r'<tr data-item="', section)) == 200
    assert "667 items are flagged" in section


@pytest.fixture
def bare_study(django_user_model):
    """Results stored before any pair, Turing or scorecard evidence: every section is empty."""
    owner = django_user_model.objects.create_user("bare", password="pw-bare-1234")
    study = study_create(slug="bare", rubric_slug="humor", owner=owner)
    StudyResult.objects.create(
        study=study,
        payload={"seed": 1, "rounds": 10, "items": [], "bradley_terry": [], "groups": {}},
        input_hash="f" * 64,
        seed=1,
        rounds=10,
        computed_at=timezone.now(),
        duration_seconds=0.1,
    )
    client = Client()
    client.force_login(owner)
    return study, client


@pytest.mark.parametrize("page", PAGES)
def test_a_payload_without_evidence_renders_every_page(bare_study, page):
    study, client = bare_study
    text = page_text(client.get(url(study, page)))
    assert "No results yet." not in text


@pytest.mark.parametrize("name", CSV_NAMES)
def test_a_payload_without_evidence_gives_header_only_downloads(bare_study, name):
    study, client = bare_study
    response = client.get(data_url(study, name))
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0]
    assert response.status_code == 200


def test_the_summary_leaves_out_items_that_are_not_evidence_by_default(results, demo_study, member):
    demo_study.exclude_items_not_evidence = True
    demo_study.save(update_fields=["exclude_items_not_evidence"])
    evidence = results.payload["evidence_only"]
    left_out = {entry["item"] for entry in evidence["left_out"]}
    assert left_out
    text = page_text(member.get(url(demo_study)))
    assert 'data-view="evidence"' in text
    for item in left_out:
        assert f"<code>{item}</code>" in text
    # A source's mean is the model comparison's (items and raters random), without those items.
    for name, entry in evidence["results"]["models"]["by_model"].items():
        row = row_html(text, "group", name, within="source")
        assert fmt_ci(entry["questions"]["funniness"]) in row
    # The difference per model is on the page, and the other view is one click away.
    assert "The difference, per model" in text
    assert 'href="?view=all"' in text
    # Every page starts from the study's setting; a bad view name falls back to it.
    for section in ("leaderboard/", "models/", "items/", "turing/"):
        assert 'data-view="evidence"' in page_text(member.get(url(demo_study, section)))
    assert 'data-view="evidence"' in page_text(member.get(url(demo_study) + "?view=nonsense"))
    demo_study.exclude_items_not_evidence = False
    demo_study.save()
    assert 'data-view="all"' in page_text(member.get(url(demo_study)))
    assert 'data-view="all"' in page_text(member.get(url(demo_study, "leaderboard/")))


def test_a_switched_view_carries_over_to_the_downloads(results, demo_study, member):
    text = page_text(member.get(url(demo_study) + "?view=all"))
    assert f"/studies/{demo_study.slug}/results/data/summary.csv?view=all" in text
    rows = read_csv(member.get(data_url(demo_study, "summary") + "?view=all"))
    sources = {r["group"] for r in rows if r["dimension"] == "source"}
    assert sources == set(results.payload["groups"]["source"])
    # Without a switch the links are plain: each download follows its page's default view.
    assert "summary.csv?view" not in page_text(member.get(url(demo_study)))
