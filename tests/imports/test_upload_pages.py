"""Uploading judgments (and large item files) on the set-up page, and the import's own page:
who may, what the page says in both languages, and nothing stored on any error or denial."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.imports.models import ImportJob
from apps.judgments.models import ScoreResponse
from apps.studies.models import Item
from apps.studies.services import study_create
from tests.imports.data import item_lines, jsonl, person_scores, positional_scores

pytestmark = pytest.mark.django_db


def client_for(user, language: str = "en") -> Client:  # type: ignore[no-untyped-def]
    client = Client(headers={"accept-language": language})
    if user is not None:
        client.force_login(user)
    return client


def post_judgments(client: Client, slug: str, content: bytes, *, follow: bool = True):  # type: ignore[no-untyped-def]
    return client.post(
        f"/studies/{slug}/judgments/",
        {"judgments-file": SimpleUploadedFile("g.jsonl", content)},
        follow=follow,
    )


def queued_then_shown(client: Client, capture, send):  # type: ignore[no-untyped-def]
    """Post (the job runs as the request's transaction commits), then open the page it leads to."""
    with capture(execute=True):
        response = send()
    assert response.status_code == 302, response.content[:300]
    return response["Location"], client.get(response["Location"])


def test_the_set_up_page_offers_the_judgments_upload(study, owner):
    page = client_for(owner).get(f"/studies/{study.slug}/settings/").content.decode()
    assert 'action="/studies/crowd/judgments/"' in page
    assert 'name="judgments-file"' in page
    assert "Judgments collected elsewhere" in page
    zh = client_for(owner, "zh-hans").get(f"/studies/{study.slug}/settings/").content.decode()
    assert "在别处收集的评判" in zh


def test_a_small_judgments_file_is_imported_at_once_with_its_warning(study, owner):
    response = post_judgments(client_for(owner), study.slug, jsonl(positional_scores(30)))
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == f"/studies/{study.slug}/settings/"
    page = response.content.decode()
    assert "90 judgments imported (90 scorecards, 0 pairs, 0 Turing judgments)" in page
    assert "3 new raters" in page
    assert "rater ids look like grade positions" in page
    assert ScoreResponse.objects.filter(study=study).count() == 90
    assert not ImportJob.objects.exists()


def test_the_warning_is_shown_in_chinese_to_a_chinese_reader(study, owner):
    response = post_judgments(
        client_for(owner, "zh-hans"), study.slug, jsonl(positional_scores(30))
    )
    page = response.content.decode()
    assert "评分者编号看起来像评分的位置" in page
    assert "已导入 90 条评判" in page


def test_a_bad_judgments_file_names_line_and_field_and_stores_nothing(study, owner):
    lines = person_scores(30)
    lines[2]["funniness"] = 8
    lines[7]["background"] = "astronauts"
    response = client_for(owner).post(
        f"/studies/{study.slug}/judgments/",
        {"judgments-file": SimpleUploadedFile("g.jsonl", jsonl(lines))},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "2 bad lines; nothing was imported" in page
    assert '<td class="num">3</td><td><code>funniness</code></td>' in page
    assert '<td class="num">8</td><td><code>background</code></td>' in page
    assert not ScoreResponse.objects.filter(study=study).exists()


def test_a_file_of_an_unknown_type_is_refused(study, owner):
    response = client_for(owner).post(
        f"/studies/{study.slug}/judgments/",
        {"judgments-file": SimpleUploadedFile("g.xlsx", b"PK\x03\x04")},
    )
    assert response.status_code == 400
    assert "has an unknown type" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_a_large_judgments_file_becomes_a_job_whose_page_shows_the_outcome(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    content = jsonl(positional_scores(30))
    client = client_for(owner)
    location, response = queued_then_shown(
        client,
        django_capture_on_commit_callbacks,
        lambda: post_judgments(client, study.slug, content, follow=False),
    )
    job = ImportJob.objects.get()
    assert location == f"/studies/{study.slug}/imports/{job.pk}/"
    page = response.content.decode()
    assert job.status == ImportJob.Status.DONE
    assert "90 of 90 lines read" in page
    assert 'value="100"' in page
    assert "Imported 90 scorecards, 0 pairs and 0 Turing judgments" in page
    assert "rater ids look like grade positions" in page
    assert 'data-refresh-url="/studies/crowd/imports/' in page
    assert ScoreResponse.objects.filter(study=study).count() == 90
    # The refreshed block says it is finished, so the page stops asking.
    state = client_for(owner).get(f"/studies/{study.slug}/imports/{job.pk}/state/")
    assert 'data-finished="true"' in state.content.decode()
    zh = client_for(owner, "zh-hans").get(f"/studies/{study.slug}/imports/{job.pk}/")
    assert "已读取 90 / 90 行" in zh.content.decode()
    assert "评分者编号看起来像评分的位置" in zh.content.decode()
    # The set-up page lists the import.
    setup = client_for(owner).get(f"/studies/{study.slug}/settings/").content.decode()
    assert f'href="/studies/crowd/imports/{job.pk}/"' in setup


def test_a_queued_job_page_keeps_refreshing(study, owner, settings, monkeypatch):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    monkeypatch.setattr("apps.imports.services._enqueue", lambda job_id: None)
    response = post_judgments(client_for(owner), study.slug, jsonl(person_scores(30)))
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.QUEUED
    page = response.content.decode()
    assert "Queued" in page
    assert "0 of 60 lines read" in page
    assert "data-finished" not in page


def test_a_large_bad_file_fails_as_a_job_that_lists_its_lines(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    lines = person_scores(30)
    lines[10]["guess"] = "ai"
    client = client_for(owner)
    _location, response = queued_then_shown(
        client,
        django_capture_on_commit_callbacks,
        lambda: post_judgments(client, study.slug, jsonl(lines), follow=False),
    )
    page = response.content.decode()
    assert "1 bad line; nothing was imported" in page
    assert '<td class="num">11</td><td><code>guess</code></td>' in page
    assert not ScoreResponse.objects.filter(study=study).exists()
    assert ImportJob.objects.get().status == ImportJob.Status.FAILED


def test_a_large_items_file_becomes_a_job_too(
    study, owner, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    lines = [dict(line, id=f"n{i}") for i, line in enumerate(item_lines(20))]
    client = client_for(owner)
    location, response = queued_then_shown(
        client,
        django_capture_on_commit_callbacks,
        lambda: client.post(
            f"/studies/{study.slug}/items/",
            {"file": SimpleUploadedFile("more.jsonl", jsonl(lines))},
        ),
    )
    job = ImportJob.objects.get()
    assert location == f"/studies/{study.slug}/imports/{job.pk}/"
    assert "20 items imported, 0 already present." in response.content.decode()
    assert Item.objects.filter(study=study, external_id__startswith="n").count() == 20


def test_another_studys_researcher_can_neither_upload_nor_see_the_job(
    study, owner, outsider, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    with django_capture_on_commit_callbacks(execute=True):
        post_judgments(client_for(owner), study.slug, jsonl(person_scores(30)))
    job = ImportJob.objects.get()
    other = client_for(outsider)
    response = post_judgments(other, study.slug, jsonl(person_scores(30)))
    assert response.status_code == 404
    assert ImportJob.objects.count() == 1
    assert ScoreResponse.objects.filter(study=study).count() == 60
    for path in ("", "state/"):
        assert other.get(f"/studies/{study.slug}/imports/{job.pk}/{path}").status_code == 404
        # Through a study of their own, someone else's job is not found either.
        assert other.get(f"/studies/elsewhere/imports/{job.pk}/{path}").status_code == 404


def test_every_researcher_of_the_study_sees_its_imports(
    study, owner, member, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    with django_capture_on_commit_callbacks(execute=True):
        post_judgments(client_for(owner), study.slug, jsonl(person_scores(30)))
    job = ImportJob.objects.get()
    assert client_for(member).get(f"/studies/{study.slug}/imports/{job.pk}/").status_code == 200


def test_anonymous_visitors_are_sent_to_login_and_nothing_is_stored(study):
    response = Client().post(
        f"/studies/{study.slug}/judgments/",
        {"judgments-file": SimpleUploadedFile("g.jsonl", jsonl(person_scores(30)))},
    )
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert not ScoreResponse.objects.filter(study=study).exists()


def test_a_job_is_found_only_under_its_own_study(study, owner, settings, monkeypatch):
    settings.IMPORT_INLINE_MAX_BYTES = 1024
    monkeypatch.setattr("apps.imports.services._enqueue", lambda job_id: None)
    post_judgments(client_for(owner), study.slug, jsonl(person_scores(30)))
    job = ImportJob.objects.get()
    mine = study_create(slug="mine", rubric_slug="humor", owner=owner)
    assert client_for(owner).get(f"/studies/{mine.slug}/imports/{job.pk}/").status_code == 404
    assert client_for(owner).get(f"/studies/{study.slug}/imports/{job.pk}/").status_code == 200
