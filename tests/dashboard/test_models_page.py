"""The model comparison page and its CSV show the stored `models` section."""

from __future__ import annotations

import csv
import io
import re

import pytest

from apps.analysis.services import study_aggregate
from apps.findings.charts import fmt_ci

pytestmark = pytest.mark.django_db


@pytest.fixture
def results(demo_study):
    # These tests read the pages against the full stored document: every page then starts
    # from all items. The study's items view (evidence only by default) has its own tests.
    demo_study.exclude_items_not_evidence = False
    demo_study.save(update_fields=["exclude_items_not_evidence"])
    return study_aggregate(study=demo_study, rounds=50)


@pytest.fixture
def member(demo_member):
    return demo_member


def test_the_models_page_shows_each_sources_stored_means_ranks_and_differences(
    results, demo_study, member
):
    models = results.payload["models"]
    assert models["estimand"] == "items_and_raters"
    page = member.get(f"/studies/{demo_study.slug}/results/models/").content.decode()
    for source, entry in models["by_model"].items():
        match = re.search(rf'<tr data-source="{re.escape(source)}">(.*?)</tr>', page, re.S)
        assert match, source
        row = match.group(1)
        funniness = entry["questions"].get("funniness")
        if funniness:
            assert fmt_ci(funniness) in row
            assert fmt_ci(entry["fixed_items"]["funniness"]) in row
        rank = entry["rank"]
        shown = str(rank["low"]) if rank["low"] == rank["high"] else f"{rank['low']}–{rank['high']}"
        assert shown in row
    first = next(d for d in models["differences"] if d["question"] == "funniness")
    assert f'data-a="{first["a"]}" data-b="{first["b"]}" data-question="funniness"' in page


def test_the_models_page_switches_to_one_level(results, demo_study, member):
    level = next(iter(results.payload["models"]["by_level"]))
    response = member.get(
        f"/studies/{demo_study.slug}/results/models/", {"view_of": f"by_level:{level}"}
    )
    assert response.status_code == 200
    assert f'value="by_level:{level}" selected' in response.content.decode()
    # An unknown view falls back to all items instead of failing.
    response = member.get(f"/studies/{demo_study.slug}/results/models/", {"view_of": "by_x:y"})
    assert response.status_code == 200
    assert 'value="overall" selected' in response.content.decode()


def test_the_models_csv_holds_every_view_and_both_offense_readings(results, demo_study, member):
    response = member.get(f"/studies/{demo_study.slug}/results/data/models.csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    models = results.payload["models"]
    views = {row["view"] for row in rows}
    assert "overall" in views
    assert "by_level" in views
    for source, entry in models["by_model"].items():
        if "offense" not in entry:
            continue
        any_rater = next(
            r
            for r in rows
            if r["view"] == "overall"
            and r["source"] == source
            and r["measure"] == "offense_any_rater"
        )
        assert float(any_rater["value"]) == pytest.approx(entry["offense"]["any_rater"]["value"])


def test_a_difference_with_a_model_without_finite_strength_is_named_not_numbered(
    results, demo_study, member
):
    # In some humor-type views of the demo one source never won and another never lost.
    views = results.payload["models"].get("by_humor_type") or {}
    flagged = [
        (name, row)
        for name, view in views.items()
        for row in view["differences"]
        if row.get("flag") == "no_finite_strength"
    ]
    assert flagged
    name, row = flagged[0]
    assert row["value"] is None
    page = member.get(
        f"/studies/{demo_study.slug}/results/models/", {"view_of": f"by_humor_type:{name}"}
    ).content.decode()
    match = re.search(
        rf'<tr data-a="{re.escape(row["a"])}" data-b="{re.escape(row["b"])}" '
        r'data-question="bt">(.*?)</tr>',
        page,
        re.S,
    )
    assert match
    assert "no finite strength on one side" in match.group(1)
