"""One view per number: the Summary, the Models page and the report show the same figure for
the same thing (a source's mean on a question), from the same items, and each names at the
number what it estimates."""

from __future__ import annotations

import html
import re

import pytest

from apps.analysis.services import study_aggregate
from apps.findings.charts import fmt_ci
from apps.findings.document import default_items_view, shown_document
from apps.reports import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(demo_member):
    return demo_member


def _row(page: str, pattern: str) -> str:
    match = re.search(pattern, page, re.S)
    assert match, pattern
    return match.group(1)


def test_a_sources_mean_is_the_same_number_on_summary_models_and_report(demo_study, member):
    result = study_aggregate(study=demo_study, rounds=30)
    items = default_items_view(exclude_items_not_evidence=demo_study.exclude_items_not_evidence)
    shown = shown_document(result.payload, items)
    base = f"/studies/{demo_study.slug}/results/"
    summary = html.unescape(member.get(base).content.decode())
    models = html.unescape(member.get(f"{base}models/").content.decode())
    report = html.unescape(services.study_report_html(study=demo_study, language="en"))
    by_source = _row(summary, r'data-dimension="source">(.*?)</table>')
    report_sources = _row(
        report, r'<table class="summary" data-dimension="source">(.*?)</table>'
    ).replace("\xa0", " ")
    assert "items and raters random" in by_source
    assert "items and raters random" in models
    assert "these items, raters random" in summary  # the other splits say theirs
    for source, entry in shown["models"]["by_model"].items():
        funniness = fmt_ci(entry["questions"]["funniness"])
        assert funniness in _row(by_source, rf'<tr data-group="{re.escape(source)}">(.*?)</tr>')
        assert funniness in _row(models, rf'<tr data-source="{re.escape(source)}">(.*?)</tr>')
        assert funniness in report_sources, (source, funniness)


def test_every_page_starts_from_the_studys_items_view_and_says_so(demo_study, member):
    study_aggregate(study=demo_study, rounds=30)
    assert demo_study.exclude_items_not_evidence
    for section in ("", "models/", "leaderboard/"):
        page = member.get(f"/studies/{demo_study.slug}/results/{section}").content.decode()
        assert 'data-view="evidence"' in page, section
    switched = member.get(f"/studies/{demo_study.slug}/results/models/?view=all").content.decode()
    assert 'data-view="all"' in switched
