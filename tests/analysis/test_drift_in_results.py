"""Sessions that drift, end to end: imported answers with their time, aggregated, and the
results' quality page, warnings and printable report saying that late answers differ, with the
size of the drift, in both languages."""

from __future__ import annotations

import pytest
from django.test import Client

from apps.analysis.services import study_aggregate
from apps.reports.services import study_report_html
from apps.studies.services import study_member_add
from tests.analysis.drift_data import PLANTED_PER_MINUTE, drifting_study

pytestmark = pytest.mark.django_db

WORDS = {
    "en": ("Late answers differ", "per 10 minutes"),
    "zh-hans": ("较晚的回答有差异", "每 10 分钟"),
}


@pytest.fixture
def aggregated():  # type: ignore[no-untyped-def]
    study = drifting_study()
    document = study_aggregate(study=study, rounds=199).payload
    return study, document


def test_the_drift_is_found_within_raters_with_its_size(aggregated) -> None:
    _, document = aggregated
    drift = document["diagnostics"]["session_drift"]
    assert drift["drifts"] is True
    slope = drift["per_minute"]
    # Rounding to the 1-7 scale pulls the slope towards 0 a little; the interval is wide enough.
    assert slope["ci_low"] <= PLANTED_PER_MINUTE * 0.9
    assert slope["ci_high"] < 0
    assert drift["per_position"]["ci_high"] < 0
    [warning] = [w for w in document["warnings"] if w["code"] == "session_drift"]
    assert warning["params"]["question"] == "funniness"
    assert warning["params"]["size"] == pytest.approx(10 * slope["value"], abs=1e-3)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_quality_page_and_the_report_say_late_answers_differ(
    aggregated, django_user_model, language
) -> None:
    study, _ = aggregated
    user = django_user_model.objects.create_user("res", password="pw-res-12345")
    study_member_add(study=study, user=user)
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    headline, unit = WORDS[language]
    quality = client.get(f"/studies/{study.slug}/results/quality/").content.decode()
    assert 'data-drifts="yes"' in quality
    summary = client.get(f"/studies/{study.slug}/results/?view=all").content.decode()
    assert headline in summary
    assert unit in summary
    report = study_report_html(study=study, language=language)
    assert headline in report
    assert unit in report
