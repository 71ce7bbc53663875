"""The two hashes a result names its input by are computed deterministically from the data: the
same data give the same hashes, a changed judgment or exclusion changes them, and the stored
result's hashes are the ones the selector computes for the data it was computed from."""

from __future__ import annotations

import pytest

from apps.analysis.selectors import study_input_hashes
from apps.analysis.services import study_aggregate
from apps.exclusions.services import exclusion_create
from apps.judgments.models import ScoreAnswer

pytestmark = pytest.mark.django_db


def test_the_same_data_give_the_same_hashes_as_the_stored_result(demo_study):
    first = study_input_hashes(study=demo_study)
    again = study_input_hashes(study=demo_study)
    assert first == again
    assert len(first.input) == 64
    result = study_aggregate(study=demo_study, rounds=10)
    assert (result.input_hash, result.exclusion_hash) == (first.input, first.exclusions)


def test_a_changed_judgment_changes_the_input_hash_only(demo_study):
    before = study_input_hashes(study=demo_study)
    answer = ScoreAnswer.objects.filter(response__study=demo_study).order_by("pk").first()
    assert answer is not None
    question = answer.question
    answer.value = question.min_value if answer.value != question.min_value else question.max_value
    answer.save(update_fields=["value"])
    after = study_input_hashes(study=demo_study)
    assert after.input != before.input
    assert after.exclusions == before.exclusions


def test_an_exclusion_changes_the_exclusion_hash(demo_study):
    before = study_input_hashes(study=demo_study)
    exclusion_create(
        study=demo_study, user=None, target="rater", subject="r01", reason="test rater"
    )
    after = study_input_hashes(study=demo_study)
    assert after.exclusions != before.exclusions
    # The rater's judgments leave the input the statistics read.
    assert after.input != before.input
