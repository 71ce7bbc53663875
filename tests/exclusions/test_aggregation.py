"""Aggregation respects exclusions, records which set it used, and undo restores the results."""

from __future__ import annotations

import pytest

from apps.analysis.selectors import study_inputs_load
from apps.analysis.services import study_aggregate
from apps.core.errors import Conflict, DomainError, NotFound
from apps.exclusions.models import Exclusion
from apps.exclusions.selectors import exclusion_set_for_study
from apps.exclusions.services import exclusion_create, exclusion_undo
from apps.judgments.models import PairJudgment, ScoreResponse

pytestmark = pytest.mark.django_db
ROUNDS = 30


def _comparable(payload: dict) -> dict:
    return {key: value for key, value in payload.items() if key != "exclusions"}


def test_an_excluded_rater_leaves_every_statistic(demo_study):
    before = study_aggregate(study=demo_study, rounds=ROUNDS).payload
    exclusion_create(
        study=demo_study, user=None, target="rater", subject="r01", reason="test rater"
    )
    after = study_aggregate(study=demo_study, rounds=ROUNDS)
    counts = after.payload["counts"]
    r01 = ScoreResponse.objects.filter(study=demo_study, rater__external_id="r01")
    assert counts["raters"] == before["counts"]["raters"] - 1
    assert counts["score_answers"] < before["counts"]["score_answers"]
    assert (
        "r01"
        not in study_inputs_load(
            study=demo_study, exclusions=exclusion_set_for_study(study=demo_study)
        ).rater_ids
    )
    # Raw judgments stay stored.
    assert r01.exists()
    assert after.exclusion_hash == exclusion_set_for_study(study=demo_study).digest != ""
    assert after.payload["exclusions"]["entries"][0]["subject"] == "r01"
    # The headline table before the exclusions sits beside the one after.
    assert after.payload["before_exclusions"]["counts"]["raters"] == before["counts"]["raters"]
    assert set(after.payload["before_exclusions"]["source"]) == set(
        after.payload["groups"]["source"]
    )


def test_undo_restores_the_previous_results_exactly(demo_study):
    first = study_aggregate(study=demo_study, rounds=ROUNDS)
    exclusion = exclusion_create(
        study=demo_study, user=None, target="item", subject="j002", reason="ambiguous wording"
    )
    excluded = study_aggregate(study=demo_study, rounds=ROUNDS)
    assert "j002" not in [item["item"] for item in excluded.payload["items"]]
    assert excluded.input_hash != first.input_hash
    exclusion_undo(study=demo_study, user=None, exclusion_id=exclusion.pk, reason="mistake")
    restored = study_aggregate(study=demo_study, rounds=ROUNDS)
    assert restored.input_hash == first.input_hash
    assert restored.exclusion_hash == first.exclusion_hash == ""
    assert _comparable(restored.payload) == _comparable(first.payload)
    exclusion.refresh_from_db()
    assert exclusion.undone_at is not None
    assert exclusion.undo_reason == "mistake"


def test_an_excluded_judgment_is_left_out_alone(demo_study):
    pair = PairJudgment.objects.filter(study=demo_study).order_by("pk").first()
    first = study_aggregate(study=demo_study, rounds=ROUNDS)
    exclusion_create(
        study=demo_study,
        user=None,
        target="judgment",
        judgment_kind="pair",
        subject=str(pair.pk),
        reason="clicked by mistake, reported by the rater",
    )
    after = study_aggregate(study=demo_study, rounds=ROUNDS)
    assert (
        after.payload["counts"]["pair_judgments"] == first.payload["counts"]["pair_judgments"] - 1
    )
    assert after.payload["counts"]["raters"] == first.payload["counts"]["raters"]


@pytest.mark.parametrize(
    ("fields", "error", "field"),
    [
        ({"target": "rater", "subject": "r01", "reason": "   "}, DomainError, "reason"),
        ({"target": "rater", "subject": "nobody", "reason": "x"}, NotFound, "subject"),
        ({"target": "item", "subject": "j999", "reason": "x"}, NotFound, "subject"),
        ({"target": "judgment", "subject": "1", "reason": "x"}, DomainError, "judgment_kind"),
        (
            {"target": "judgment", "judgment_kind": "pair", "subject": "abc", "reason": "x"},
            DomainError,
            "subject",
        ),
        ({"target": "model", "subject": "x", "reason": "x"}, DomainError, "target"),
    ],
)
def test_bad_exclusions_are_refused_and_store_nothing(demo_study, fields, error, field):
    with pytest.raises(error) as caught:
        exclusion_create(study=demo_study, user=None, **fields)
    assert caught.value.field == field
    assert not Exclusion.objects.exists()


def test_excluding_twice_and_undoing_twice_are_conflicts(demo_study):
    exclusion = exclusion_create(
        study=demo_study, user=None, target="rater", subject="r02", reason="x"
    )
    with pytest.raises(Conflict):
        exclusion_create(study=demo_study, user=None, target="rater", subject="r02", reason="y")
    exclusion_undo(study=demo_study, user=None, exclusion_id=exclusion.pk)
    with pytest.raises(Conflict):
        exclusion_undo(study=demo_study, user=None, exclusion_id=exclusion.pk)
    # Undone, the rater can be excluded again; the history keeps both rows.
    exclusion_create(study=demo_study, user=None, target="rater", subject="r02", reason="z")
    assert Exclusion.objects.filter(study=demo_study).count() == 2


def test_items_that_are_not_evidence_get_a_second_view(demo_study):
    result = study_aggregate(study=demo_study, rounds=ROUNDS).payload
    flagged = {
        item["item"]
        for item in result["items"]
        if {"culture_dependent", "safety_intercepted"} & set(item["flags"])
    }
    assert flagged, "the demo plants culture-dependent and safety-intercepted items"
    view = result["evidence_only"]
    assert {entry["item"] for entry in view["left_out"]} == flagged
    kept = {item["item"] for item in view["results"]["items"]}
    assert kept == {item["item"] for item in result["items"]} - flagged
    assert view["results"]["counts"]["items"] == result["counts"]["items"] - len(flagged)


def test_the_report_and_the_raw_export_list_the_exclusions(demo_study):
    from apps.reports.selectors import RAW_COLUMNS, raw_judgment_rows
    from apps.reports.services import study_report_html

    exclusion_create(
        study=demo_study, user=None, target="rater", subject="r03", reason="answered in 2 minutes"
    )
    result = study_aggregate(study=demo_study, rounds=ROUNDS)
    html = study_report_html(study=demo_study, document=result.payload)
    section = html[html.index('id="exclusions"') :]
    assert "answered in 2 minutes" in section
    assert "Headline numbers with and without the exclusions" in section
    assert "Items that are not evidence about their model" in section
    excluded_column = RAW_COLUMNS.index("excluded")
    rater_column = RAW_COLUMNS.index("rater")
    rows = list(raw_judgment_rows(study=demo_study))
    marked = {row[rater_column] for row in rows if row[excluded_column]}
    assert marked == {"r03"}
    assert all(
        row[excluded_column] == "rater excluded: answered in 2 minutes"
        for row in rows
        if row[rater_column] == "r03"
    )


def test_aggregation_refreshes_the_proposals_of_a_study_that_confirms_by_hand(crafted):
    """Refreshed while the reliability section finishes: proposed, not applied."""
    from apps.exclusions.models import ExclusionProposal

    result = study_aggregate(study=crafted, rounds=ROUNDS, threads=2)
    proposed = set(
        ExclusionProposal.objects.filter(study=crafted, status="open").values_list(
            "rater__external_id", flat=True
        )
    )
    assert {"speedy", "flat", "lefty", "careless"} <= proposed
    assert result.payload["exclusions"]["entries"] == []
    assert not Exclusion.objects.filter(study=crafted).exists()


def test_automatic_rules_are_applied_in_the_same_run(crafted):
    from apps.studies.services import study_configure

    every_rater = study_aggregate(study=crafted, rounds=ROUNDS).payload["counts"]["raters"]
    study_configure(study=crafted, exclusion_rules_automatic=True)
    Exclusion.objects.filter(study=crafted).delete()
    crafted.refresh_from_db()
    result = study_aggregate(study=crafted, rounds=ROUNDS, threads=2)
    subjects = {entry["subject"] for entry in result.payload["exclusions"]["entries"]}
    assert subjects == {"speedy", "flat", "lefty", "careless"}
    assert result.payload["counts"]["raters"] == every_rater - 4
