"""The printable report carries Cohen's kappa per question (mean over rater pairs, with the
pairs it rests on), the rater-jackknife method and the culture test's q."""

from __future__ import annotations

import re

import pytest

from apps.analysis.services import study_aggregate
from apps.findings.document import default_items_view, shown_document
from apps.reports import services
from apps.reports.writers import fmt_interval
from apps.studies.services import study_configure

pytestmark = pytest.mark.django_db


def test_the_report_shows_cohens_kappa_per_question_and_the_culture_tests_q(demo_study):
    study_configure(study=demo_study, culture_fdr=0.05)
    demo_study.refresh_from_db()
    # The report follows the study's items view (evidence only by default), as the pages do.
    payload = shown_document(
        study_aggregate(study=demo_study, rounds=30).payload,
        default_items_view(exclude_items_not_evidence=demo_study.exclude_items_not_evidence),
    )
    html = services.study_report_html(study=demo_study)
    section = re.search(r'<section id="agreement">(.*?)</section>', html, re.S)
    assert section
    rows = re.findall(r"<tr><td>(.*?)</tr>", section.group(1), re.S)
    assert len(rows) == len(payload["agreement"])
    for row in rows:
        question = re.sub(r"<.*?>", "", row.split("</td>", 1)[0]).strip()
        entry = next(
            entry
            for name, entry in payload["agreement"].items()
            if name == question or question.lower() == name
        )
        for stats in entry["cohen_kappa"].values():
            if stats["n_pairs"]:
                assert fmt_interval(stats) in row
                assert f"{stats['n_pairs']} pairs" in row
            else:
                assert f"no pair of raters shares {stats['min_shared_items']} items" in row
    assert "delete-a-group jackknife over raters" in html
    assert "q = 0.05 " in section.group(1)
