"""A background import's complaints in the reader's language: the worker stores each bad line's
problem as a sentence id with parameters beside the English message, and the job's page renders
them in the language of whoever reads it."""

from __future__ import annotations

import html as html_module
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import translation

from apps.imports.models import ImportJob
from apps.imports.services import import_job_create, import_job_run
from tests.imports.data import jsonl, person_scores
from tests.pages.untranslated import untranslated

pytestmark = pytest.mark.django_db


def failed_job(study, owner) -> ImportJob:
    lines = person_scores(30)
    lines[2]["item"] = "nope"
    lines[4]["seconds_into_session"] = -3
    lines[6]["colour"] = "blue"
    lines[8] = {**lines[8], "kind": "pair", "left": "t001", "right": "t001", "winner": "t001"}
    del lines[8]["funniness"], lines[8]["item"]
    upload = SimpleUploadedFile("grades.jsonl", jsonl(lines))
    job = import_job_create(study=study, user=owner, kind="judgments", upload=upload)
    with translation.override("en"):
        done = import_job_run(job_id=job.pk)
    assert done is not None
    assert done.status == ImportJob.Status.FAILED
    return done


def reader(user) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(user)
    return client


def test_the_job_keeps_english_messages_beside_the_sentences(study, owner):
    job = failed_job(study, owner)
    assert job.error == "4 bad lines; nothing was imported"
    messages = {(e["line"], e["field"]): e["message"] for e in job.errors}
    assert messages[(3, "item")] == "names item 'nope', which is not in this study"
    assert messages[(5, "seconds_into_session")] == "must be at least 0, got -3"
    assert all(e["sentence"]["msgid"] for e in job.errors)


def test_the_job_page_shows_every_problem_in_chinese(study, owner, settings):
    owner.username = settings.DEMO_RESEARCHER_USERNAME
    owner.save()
    job = failed_job(study, owner)
    url = f"/studies/{study.slug}/imports/{job.pk}/"
    response = reader(owner).get(url)
    assert response.status_code == 200, url
    html = response.content.decode()
    text = html_module.unescape(re.sub(r"\s+", " ", html))
    for sentence in (
        "4 行有错误；未导入任何内容",
        "引用的条目 'nope' 不在本研究中",
        "至少应为 0，收到的是 -3",
        "不是已知字段（请将额外数据放在 'meta' 对象或 'meta.colour' 列中）",
        "必须与 left 不同",
    ):
        assert sentence in text, sentence
    for english in ("bad lines", "which is not in this study", "must be at least"):
        assert english not in text
    # What the file itself brought is data, as item texts are: its value 'nope', its column
    # 'colour', and the names of the format's fields ('meta', 'left').
    brought = {"nope", "meta", "colour", "left"}
    for problem in untranslated({url: html}).get(url, []):
        words = set(re.findall(r"[A-Za-z]+", problem.rsplit("(", 1)[-1]))
        assert words <= brought, problem


def test_a_job_stored_before_sentences_shows_its_english_text(study, owner):
    job = failed_job(study, owner)
    ImportJob.objects.filter(pk=job.pk).update(
        error_message={}, errors=[{"line": 3, "field": "item", "message": "an old message"}]
    )
    html = reader(owner).get(f"/studies/{study.slug}/imports/{job.pk}/").content.decode()
    assert "an old message" in html
