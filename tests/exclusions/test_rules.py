"""Each exclusion rule on crafted data: it finds its rater, with evidence, and no one else."""

from __future__ import annotations

import re

import pytest

from apps.exclusions.models import Exclusion, ExclusionProposal
from apps.exclusions.services import (
    exclusion_proposal_confirm,
    exclusion_proposal_dismiss,
    exclusion_proposals_refresh,
)
from apps.studies.services import study_configure

pytestmark = pytest.mark.django_db


def _found(study) -> dict[tuple[str, str], dict]:
    return {
        (p.rater.external_id, p.rule): p.evidence
        for p in ExclusionProposal.objects.filter(study=study).select_related("rater")
    }


def test_each_rule_proposes_its_crafted_rater_with_evidence(crafted):
    exclusion_proposals_refresh(study=crafted)
    found = _found(crafted)
    assert found[("speedy", "speeder")]["median_seconds"] == 1.0
    assert found[("speedy", "speeder")]["threshold_seconds"] == 3.0
    assert found[("flat", "straight_line")]["longest_run"] == 6
    assert found[("lefty", "position")] == {
        "pairs": 12,
        "left_choices": 12,
        "side": "left",
        "min_pairs": 10,
    }
    assert found[("careless", "attention")] == {"failed": 2, "checks": 3, "max_allowed": 1}
    # The demo's own raters are careful: the rules propose only the crafted ones.
    assert {rater for rater, _rule in found} == {"speedy", "flat", "lefty", "careless"}


def test_thresholds_are_study_settings(crafted):
    study_configure(
        study=crafted,
        exclusion_max_attention_failures=2,
        exclusion_straight_line_tasks=7,
        exclusion_position_min_pairs=13,
        exclusion_speeder_seconds=0.5,
    )
    crafted.refresh_from_db()
    exclusion_proposals_refresh(study=crafted)
    assert _found(crafted) == {}


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("exclusion_speeder_seconds", -1.0),
        ("exclusion_straight_line_tasks", 1),
        ("exclusion_position_min_pairs", 5000),
        ("screening_top_k", 0),
    ],
)
def test_out_of_range_thresholds_are_refused(crafted, setting, value):
    from apps.core.errors import DomainError

    before = getattr(crafted, setting)
    with pytest.raises(DomainError) as caught:
        study_configure(study=crafted, **{setting: value})
    assert caught.value.field == setting
    crafted.refresh_from_db()
    assert getattr(crafted, setting) == before


def test_confirming_excludes_the_rater_and_dismissing_is_remembered(crafted, django_user_model):
    user = django_user_model.objects.create_user("r", password="pw-r-123456")
    exclusion_proposals_refresh(study=crafted)
    speedy = ExclusionProposal.objects.get(study=crafted, rule="speeder")
    lefty = ExclusionProposal.objects.get(study=crafted, rule="position")
    exclusion_proposal_confirm(study=crafted, user=user, proposal_id=speedy.pk)
    exclusion_proposal_dismiss(study=crafted, user=user, proposal_id=lefty.pk)
    exclusion = Exclusion.objects.get(study=crafted, rater__external_id="speedy")
    assert exclusion.rule == "speeder"
    assert "median 1.0 s per task" in exclusion.reason
    assert exclusion.created_by == user
    # A second check keeps both decisions.
    exclusion_proposals_refresh(study=crafted)
    statuses = dict(ExclusionProposal.objects.filter(study=crafted).values_list("rule", "status"))
    assert statuses["speeder"] == "confirmed"
    assert statuses["position"] == "dismissed"


def test_automatic_rules_exclude_without_a_researcher(crafted):
    study_configure(study=crafted, exclusion_rules_automatic=True)
    crafted.refresh_from_db()
    # Only the anomalous-choices screen's proposals (if any) stay open: it only proposes.
    waiting = ExclusionProposal.objects.filter(study=crafted, rule="anomalous")
    assert exclusion_proposals_refresh(study=crafted) == waiting.count()
    assert not waiting.exclude(status=ExclusionProposal.Status.OPEN).exists()
    excluded = set(
        Exclusion.objects.filter(study=crafted, undone_at__isnull=True).values_list(
            "rater__external_id", flat=True
        )
    )
    assert excluded == {"speedy", "flat", "lefty", "careless"}
    assert not Exclusion.objects.filter(study=crafted, created_by__isnull=False).exists()


def test_rules_that_need_order_or_time_skip_imported_rows_without_them_and_say_so(
    demo_study, client, django_user_model
):
    """A straight-lining rater imported without times: file order is not answer order, so no
    run is counted; the same rows with their times are proposed. The page says what the rules
    could not look at."""
    from apps.judgments.services import study_judgments_import
    from tests.exclusions.conftest import _card, _lines

    items = sorted(
        demo_study.items.filter(is_attention_check=False).values_list("external_id", flat=True)
    )
    timeless = []
    for i in range(6):
        card = _card("unordered", items[i], 20 + i * 30, 4)
        for key in ("seconds_into_session", "submitted_at", "active_seconds"):
            del card[key]
        timeless.append(card)
    timed = [_card("ordered", items[10 + i], 20 + i * 30, 4) for i in range(6)]
    study_judgments_import(study=demo_study, data=_lines(timeless + timed), filename="s.jsonl")
    exclusion_proposals_refresh(study=demo_study)
    found = _found(demo_study)
    assert ("ordered", "straight_line") in found
    assert ("unordered", "straight_line") not in found

    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-boss-1"))
    page = client.get(f"/studies/{demo_study.slug}/exclusions/").content.decode()
    assert 'data-unordered="6"' in page
    assert "The straight-liner rule did not run on 6 imported scorecards" in page
    untimed = re.search(r'data-untimed="(\d+)"', page)
    assert untimed is not None
    assert int(untimed.group(1)) >= 6  # the six above, and any the demo imported
