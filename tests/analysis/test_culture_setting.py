"""The culture test's false-discovery rate is a study setting that the aggregation uses."""

from __future__ import annotations

import pytest

from apps.analysis.selectors import study_inputs_load
from apps.analysis.services import study_aggregate
from apps.studies.services import study_configure

pytestmark = pytest.mark.django_db


def _culture_dependent(payload: dict) -> set[str]:
    return {item["item"] for item in payload["items"] if "culture_dependent" in item["flags"]}


def test_a_stricter_culture_fdr_gives_another_flag_set_on_the_planted_demo(demo_study):
    default = study_aggregate(study=demo_study, rounds=50).payload
    # The demo plants a group effect on j001, j003 and j012; at q = 0.1 the test finds them.
    assert {"j001", "j003", "j012"} <= _culture_dependent(default)
    assert default["culture_test"]["fdr"] == 0.1
    study_configure(study=demo_study, culture_fdr=0.001)
    demo_study.refresh_from_db()
    assert study_inputs_load(study=demo_study).thresholds.culture_fdr == 0.001
    strict = study_aggregate(study=demo_study, rounds=50).payload
    assert strict["culture_test"]["fdr"] == 0.001
    # With 999 permutations no p-value is below 0.001, so Benjamini-Hochberg at q = 0.001
    # over several candidates confirms none: the items below the line are controversial.
    assert strict["culture_test"]["tested"] == default["culture_test"]["tested"] > 1
    assert _culture_dependent(strict) == set()
    assert strict["culture_test"]["discoveries"] == 0
    below = {item["item"] for item in strict["items"] if item["culture_test"] is not None}
    controversial = {item["item"] for item in strict["items"] if "controversial" in item["flags"]}
    assert below <= controversial
