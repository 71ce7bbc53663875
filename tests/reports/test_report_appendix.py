"""The printable report as the study's paper appendix: the pages' charts as inline SVG with their
reading, the reproducibility block, and the language the researcher chose for it."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.analysis.selectors import study_input_hashes
from apps.analysis.services import study_aggregate
from apps.core.versions import software_versions
from apps.exclusions.services import exclusion_create
from apps.judgments.models import ScoreAnswer
from apps.reports import services
from apps.reports.models import ExportJob
from apps.studies.services import study_member_add
from tests.pages.untranslated import untranslated

pytestmark = pytest.mark.django_db

SVG = re.compile(r"<svg\b.*?</svg>", re.S)


@pytest.fixture
def result(demo_study):
    return study_aggregate(study=demo_study, rounds=30)


@pytest.fixture
def member(client, django_user_model, demo_study):
    user = django_user_model.objects.create_user("member", password="pw")
    study_member_add(study=demo_study, user=user)
    client.force_login(user)
    return client


def _figure(html: str, key: str) -> str:
    """The SVG of one figure of the report, by its data-figure key."""
    match = re.search(
        rf'<figure class="chart" data-figure="{re.escape(key)}">(.*?)</figure>', html, re.S
    )
    assert match, f"no figure {key!r} in the report"
    svgs = SVG.findall(match.group(1))
    assert len(svgs) == 1
    return svgs[0]


def test_the_report_draws_each_chart_of_the_pages_identically_with_its_reading(
    demo_study, result, member
):
    html = services.study_report_html(study=demo_study)
    base = f"/studies/{demo_study.slug}/results/"
    pages = {
        "agreement": member.get(f"{base}agreement/").content.decode(),
        "turing": member.get(f"{base}turing/").content.decode(),
        "quality": member.get(f"{base}quality/").content.decode(),
    }
    expected = {
        "agreement": ("agreement", 0),
        "turing-accuracy": ("turing", 0),
        "turing-judged-human": ("turing", 1),
        "turing-level": ("turing", 2),
        "fatigue": ("quality", 0),
        "position-bias": ("quality", 1),
    }
    for key, (page, index) in expected.items():
        assert _figure(html, key) == SVG.findall(pages[page])[index], key
    levels = sorted(result.payload["bradley_terry_by_level"])
    assert levels
    for level in levels:
        page = member.get(f"{base}leaderboard/", {"level": level}).content.decode()
        assert _figure(html, f"leaderboard-{level}") == SVG.findall(page)[0], level
    # Each chart has its "how to read" line, the page's own sentence.
    agreement = re.search(r'data-figure="agreement">.*?<p class="how">(.*?)</p>', html, re.S)
    assert agreement
    assert agreement.group(1) in pages["agreement"]
    assert "<img" not in html


def test_the_reproducibility_block_names_seed_rounds_hashes_and_versions(demo_study, result):
    html = services.study_report_html(study=demo_study)
    block = html[html.index('id="reproducibility"') :]
    hashes = study_input_hashes(study=demo_study)
    assert '<tr data-key="input_hash">' in block
    assert f"<code>{result.input_hash}</code>" in block
    assert hashes.input == result.input_hash
    assert result.exclusion_hash == ""
    assert re.search(r'data-key="exclusion_hash"><th>[^<]*</th><td>none: no data', block)
    assert re.search(rf'data-key="seed"><th>[^<]*</th><td>{result.seed}</td>', block)
    assert re.search(r'data-key="rounds"><th>[^<]*</th><td>30</td>', block)
    assert 'data-status="current"' in block
    versions = software_versions()
    for key in ("python", "django", "numpy", "scipy", "choix", "laughlab"):
        assert f'data-package="{key}"' in block
        assert f"<code>{versions[key]}</code>" in block
    assert result.payload["software"] == versions
    computed = result.computed_at.isoformat(timespec="seconds")
    assert re.search(rf'data-key="computed_at"><th>[^<]*</th><td>{re.escape(computed)}</td>', block)


def test_the_report_says_when_the_data_changed_after_the_results(demo_study, result):
    answer = ScoreAnswer.objects.filter(response__study=demo_study).order_by("pk").first()
    answer.value = (
        answer.question.min_value
        if answer.value != answer.question.min_value
        else answer.question.max_value
    )
    answer.save(update_fields=["value"])
    html = services.study_report_html(study=demo_study)
    assert 'data-status="stale"' in html
    assert 'data-status="current"' not in html


def test_an_export_job_takes_the_requesters_language_unless_another_is_chosen(
    demo_study, result, django_capture_on_commit_callbacks, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    user = get_user_model().objects.create_user("zh-reader", password="pw")
    study_member_add(study=demo_study, user=user)
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(user)
    url = reverse("reports:exports", args=[demo_study.slug])
    page = client.get(url).content.decode()
    assert '<option value="zh-hans" selected>' in page
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url, {"format": "report-html"}).status_code == 302
        assert (
            client.post(url, {"format": "report-html", "report_language": "en"}).status_code == 302
        )
    chinese, english = ExportJob.objects.order_by("pk")
    assert (chinese.language, english.language) == ("zh-hans", "en")
    for job, heading in ((chinese, "<h2>方法</h2>"), (english, "<h2>Method</h2>")):
        job.refresh_from_db()
        assert job.status == ExportJob.Status.DONE, job.error
        text = (tmp_path / job.file_path).read_text(encoding="utf-8")
        assert f'<html lang="{job.language}">' in text
        assert heading in text


def test_an_unknown_report_language_is_refused_and_nothing_is_stored(demo_study, result, member):
    url = reverse("reports:exports", args=[demo_study.slug])
    response = member.post(url, {"format": "report-pdf", "report_language": "fr"})
    assert response.status_code == 400
    assert "fr" in response.content.decode()
    assert not ExportJob.objects.exists()
    direct = member.get(
        reverse("reports:direct", args=[demo_study.slug, "report-html"]), {"language": "fr"}
    )
    assert direct.status_code == 400
    assert "unknown report language" in direct.content.decode()


def test_the_api_takes_the_report_language_and_refuses_an_unknown_one(demo_study, result):
    from rest_framework.test import APIClient

    user = get_user_model().objects.create_user("api-user", password="pw")
    study_member_add(study=demo_study, user=user)
    api = APIClient()
    api.force_authenticate(user)
    url = f"/api/v1/studies/{demo_study.slug}/exports/"
    created = api.post(url, {"format": "report-pdf", "language": "zh-hans"}, format="json")
    assert created.status_code == 201
    assert created.json()["language"] == "zh-hans"
    default = api.post(url, {"format": "json"}, format="json", HTTP_ACCEPT_LANGUAGE="en")
    assert default.json()["language"] == "en"
    refused = api.post(url, {"format": "json", "language": "fr"}, format="json")
    assert refused.status_code == 400
    assert ExportJob.objects.count() == 2


@pytest.mark.parametrize("which", ["humor", "content"])
def test_the_chinese_report_of_each_demo_study_has_no_english_interface_string(demo_site, which):
    study = getattr(demo_site, which)
    html = services.study_report_html(study=study, language="zh-hans")
    assert '<html lang="zh-hans">' in html
    # Markup inside a translation is kept as markup, never shown as text.
    assert "&lt;code&gt;" not in html
    found = untranslated({"report": html})
    assert not found, "English in the Chinese report:\n  " + "\n  ".join(found.get("report", []))


@pytest.mark.parametrize("which", ["humor", "content"])
def test_the_english_report_of_each_demo_study_is_complete(demo_site, which):
    study = getattr(demo_site, which)
    html = services.study_report_html(study=study, language="en")
    for section in ("method", "sample", "summary", "models", "agreement", "turing", "warnings"):
        assert f'id="{section}"' in html, section
    assert 'id="reproducibility"' in html
    if which == "content":
        assert 'id="content-evaluation"' in html
        assert 'data-dimension="content_type"' in html
        for tier in ("L1", "L2", "L3"):
            assert f'<tr data-tier="{tier}">' in html.split('id="content-evaluation"')[1]
    else:
        # The humor demo holds a screening run, the judge against the humans and the tiers.
        screening = html.split('id="screening"', 1)[1].split("</section>", 1)[0]
        assert "<h3>Latest run</h3>" in screening
        assert "judge-comparison" in screening
        for tier in ("L1", "L2", "L3"):
            assert f'<tr data-tier="{tier}">' in screening
    assert len(html.encode()) < 1_000_000


def test_the_report_names_the_exclusion_set_by_its_hash(demo_study, result):
    exclusion_create(
        study=demo_study, user=None, target="rater", subject="r01", reason="test rater"
    )
    excluded = study_aggregate(study=demo_study, rounds=10)
    assert excluded.exclusion_hash
    html = services.study_report_html(study=demo_study)
    block = html[html.index('id="reproducibility"') :]
    assert f"<code>{excluded.exclusion_hash}</code>" in block
    assert f"<code>{excluded.input_hash}</code>" in block
    assert 'data-status="current"' in block


@pytest.mark.parametrize(
    ("language", "phrases"),
    [
        ("en", ("studentized t", "expanded-percentile", "crossed-design", "Wilson", "jackknife")),
        ("zh-hans", ("学生化 t", "扩展百分位", "交叉设计", "Wilson", "刀切法")),
    ],
)
def test_the_method_text_names_each_intervals_method_as_computed(
    demo_study, result, language, phrases
):
    """Item means are studentized t intervals, item Bradley-Terry scores expanded percentiles,
    the model comparison a crossed-design t, agreement a rater jackknife: not "every interval is
    a percentile bootstrap"."""
    from django.utils import translation

    with translation.override(language):
        html = services.study_report_html(study=demo_study)
    method = html[html.index('id="method"') : html.index('id="sample"')]
    for phrase in phrases:
        assert phrase in method, phrase
    assert "Every mean, proportion and score carries a 95% percentile" not in method
    assert str(result.seed) in method
