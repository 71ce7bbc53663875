"""Every downloaded file is named by its study, its kind and, where its words are in a language,
that language: the English and the Chinese report are two files that can sit in one folder
(both were `demo-report.pdf`)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.analysis.services import study_aggregate
from apps.reports import services
from apps.reports.models import ExportFormat, ExportJob
from apps.studies.services import study_member_add

pytestmark = pytest.mark.django_db

# The raw judgments and the results JSON hold codes and numbers only; the tables' labels and
# warnings, and the report, are written in the export's language.
EXPECTED = {
    ("raw", "en"): "demo-copy-raw-judgments.csv",
    ("raw", "zh-hans"): "demo-copy-raw-judgments.csv",
    ("json", "en"): "demo-copy-results.json",
    ("json", "zh-hans"): "demo-copy-results.json",
    ("tables", "en"): "demo-copy-tables-en.zip",
    ("tables", "zh-hans"): "demo-copy-tables-zh-hans.zip",
    ("xlsx", "en"): "demo-copy-results-en.xlsx",
    ("xlsx", "zh-hans"): "demo-copy-results-zh-hans.xlsx",
    ("report-html", "en"): "demo-copy-report-en.html",
    ("report-html", "zh-hans"): "demo-copy-report-zh-hans.html",
    ("report-pdf", "en"): "demo-copy-report-en.pdf",
    ("report-pdf", "zh-hans"): "demo-copy-report-zh-hans.pdf",
}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def member(client, django_user_model, demo_study):
    study_aggregate(study=demo_study, rounds=50)
    user = django_user_model.objects.create_user("member", password="pw")
    study_member_add(study=demo_study, user=user)
    client.force_login(user)
    return client


def test_every_format_and_language_has_a_name_of_its_own(demo_study):
    names = {
        key: services.export_download_name(
            job=ExportJob(study=demo_study, format=key[0], language=key[1])
        )
        for key in EXPECTED
    }
    assert names == EXPECTED
    assert {fmt for fmt, _ in EXPECTED} == set(ExportFormat.values)
    # Two files of one study never share a name unless they hold the same bytes.
    assert len(set(names.values())) == len(EXPECTED) - 2


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_downloaded_report_pdf_is_named_by_its_language(
    member, demo_study, language, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = services.export_job_create(
            study=demo_study, user=None, fmt="report-pdf", language=language
        )
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE, job.error
    response = member.get(reverse("reports:download", args=[demo_study.slug, job.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == (
        f'attachment; filename="demo-copy-report-{language}.pdf"'
    )
    assert b"".join(response.streaming_content).startswith(b"%PDF")


@pytest.mark.parametrize(
    ("path", "interface", "disposition"),
    [
        ("json", "en", 'attachment; filename="demo-copy-results.json"'),
        ("csv?table=bradley_terry", "en", 'attachment; filename="demo-copy-bradley_terry-en.csv"'),
        (
            "csv?table=bradley_terry",
            "zh-hans",
            'attachment; filename="demo-copy-bradley_terry-zh-hans.csv"',
        ),
        ("report-html", "en", 'inline; filename="demo-copy-report-en.html"'),
        ("report-html", "zh-hans", 'inline; filename="demo-copy-report-zh-hans.html"'),
        (
            "report-html?language=zh-hans",
            "en",
            'inline; filename="demo-copy-report-zh-hans.html"',
        ),
    ],
)
def test_direct_downloads_are_named_by_study_kind_and_language(
    member, demo_study, path, interface, disposition
):
    fmt, _, query = path.partition("?")
    member.cookies["django_language"] = interface
    url = reverse("reports:direct", args=[demo_study.slug, fmt]) + (f"?{query}" if query else "")
    response = member.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == disposition
