"""Every screening decision's reason in the reader's language: stored as a sentence id with its
parameters by the run (which may run in another language), rendered when the page is read; the
English text stays stored beside it for the exports and the API."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.test import Client
from django.utils import translation
from django.utils.translation import gettext_noop

from apps.core.sentences import joined, stored_text
from apps.screening import calibration as calib
from apps.screening.learned import AUDIT_MIN_ITEMS, sieve_audit
from apps.screening.models import (
    FunnyScoreCalibration,
    JudgeVerdict,
    ScreeningOutcome,
    ScreeningRun,
)
from apps.screening.services import runs
from apps.screening.services.runs import screening_run_finish
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from tests.pages.untranslated import untranslated
from tests.screening.test_runs import features_for, page

pytestmark = pytest.mark.django_db

JUDGE = "judge-m"


def add(study: Study, external_id: str, level: str = "single", **fields) -> Item:
    return Item.objects.create(
        study=study,
        external_id=external_id,
        text=f"joke {external_id}",
        source="laughter-7b",
        level=level,
        language="en",
        stage=Item.Stage.CANDIDATE,
        **fields,
    )


def verdict(item: Item, status: str, funniness: int | None = None) -> None:
    JudgeVerdict.objects.create(
        item=item,
        model_name=JUDGE,
        status=status,
        scores={} if funniness is None else {"funniness": funniness},
    )


@pytest.fixture
def decided(django_user_model, monkeypatch, settings) -> tuple[Study, object]:
    """A run with a decision of every kind, decided while English was active."""
    # The demo researcher's name: the page checker knows it as a name, not an English word.
    owner = django_user_model.objects.create_user(
        settings.DEMO_RESEARCHER_USERNAME, password="pw-owner-123"
    )
    study = study_create(slug="reasons", rubric_slug="humor", name="Reasons", owner=owner)
    # FunnyScore (defaults) = surprise + coherence: single jokes score 3.5, 2.5, 1.5, 0.5, -0.5.
    singles = [add(study, f"s{i}") for i in range(5)]
    for i, item in enumerate(singles):
        features_for(item, 3.0 - i, 0.5, 0.0)
    verdict(singles[0], JudgeVerdict.Status.OK, 5)  # kept: rank 1 of 2 in the top 1
    verdict(singles[1], JudgeVerdict.Status.OK, 2)  # dropped by the judge
    verdict(singles[2], JudgeVerdict.Status.TIMEOUT)  # not sieved; rank 2, below the top 1
    # s3, s4: past the L1 pass of 3. A scenario response below the L1 minimum, one kept.
    scenario = [add(study, f"r{i}", level="scenario") for i in range(2)]
    features_for(scenario[0], 3.0, 0.5, 0.0)
    features_for(scenario[1], 0.0, 0.5, 0.0)
    verdict(scenario[0], JudgeVerdict.Status.OK, 6)
    held = add(study, "held")
    Item.objects.filter(pk=held.pk).update(stage=Item.Stage.HELD, held_from_stage="candidate")
    add(study, "check", is_attention_check=True)
    add(study, "unscored")  # no features at all
    add(study, "refused", safety_intercepted=True)
    # s4 was rated by people earlier (an earlier run kept it), so it stays in the study.
    rated = singles[4].pk
    monkeypatch.setattr(runs, "_rated_item_ids", lambda ids: [pk for pk in ids if pk == rated])
    run = ScreeningRun.objects.create(
        study=study,
        status=ScreeningRun.Status.DONE,
        top_k=1,
        l1_keep=3,
        l1_min_score=1.0,
        judge_model=JUDGE,
        judge_min=3.0,
        batch_size=250,
        batches_total=1,
    )
    with translation.override("en"):
        screening_run_finish(run=run)
    return study, owner


def chinese(owner) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(owner)
    return client


def reasons(study: Study) -> dict[str, ScreeningOutcome]:
    return {
        o.item.external_id: o
        for o in ScreeningOutcome.objects.filter(run__study=study).select_related("item")
    }


def test_the_run_stores_each_reason_in_english_and_as_a_sentence(decided):
    study, _owner = decided
    got = reasons(study)
    assert got["s0"].reason == "rank 1 of 2 for laughter-7b, single: in the top 1"
    assert got["s1"].reason == f"LLM judge {JUDGE}: funniness 2 below 3"
    assert got["s2"].reason == (
        "rank 2 of 2 for laughter-7b, single: below the top 1; the judge gave no score "
        "(timeout), so it did not sieve"
    )
    assert got["s3"].reason == "L1: rank 4 of 5 for laughter-7b, single: below the L1 pass of 3"
    assert got["s4"].reason == (
        "L1: rank 5 of 5 for laughter-7b, single: below the L1 pass of 3; already rated by "
        "people, so it stays in the study"
    )
    assert got["r1"].reason == "L1: FunnyScore 0.500 below the minimum 1"
    assert got["held"].reason == "held by the offense filter"
    assert got["check"].reason == "attention check: goes into the study unscreened"
    assert got["unscored"].reason == (
        "no L1 score: what it reads is missing (no features were computed)"
    )
    assert got["refused"].reason == "intercepted by a guardrail at generation"
    assert all(o.reason_message.get("msgid") for o in got.values())


def test_the_screening_page_gives_every_decision_in_chinese(decided):
    study, owner = decided
    html = chinese(owner).get(page(study)).content.decode()
    text = re.sub(r"\s+", " ", html)
    for sentence in (
        "在 laughter-7b，单条笑话 中排第 1/2：进入前 1",
        "LLM 评审 judge-m：好笑程度 2，低于 3",
        "在 laughter-7b，单条笑话 中排第 2/2：未进入前 1；评审未给出分数（已超时），因此未参与筛选",
        "L1：在 laughter-7b，单条笑话 中排第 4/5，未进入 L1 放行的前 3",
        "L1：在 laughter-7b，单条笑话 中排第 5/5，未进入 L1 放行的前 3；已有人评分，因此保留在研究中",
        "L1：FunnyScore 0.500 低于最低值 1",
        "注意力检查题：不经筛选直接进入研究",
        "没有 L1 分数：缺少其所需的输入（未计算特征）",
        "生成时被安全护栏拦截",
    ):
        assert sentence in text, sentence
    for english in ("in the top", "below the L1 pass", "already rated by people", "below 3"):
        assert english not in text
    assert untranslated({page(study): html}) == {}


def test_the_english_page_reads_as_before_with_the_level_named(decided):
    study, owner = decided
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(owner)
    text = re.sub(r"\s+", " ", client.get(page(study)).content.decode())
    assert "rank 1 of 2 for laughter-7b, Single joke: in the top 1" in text
    assert f"LLM judge {JUDGE}: funniness 2 below 3" in text
    assert "held by the offense filter" in text


def test_the_sieve_audit_says_why_it_has_no_figures_in_the_reader_language():
    audit = sieve_audit(np.array([0.1, 0.2]), np.array([3.0, 4.0]), seed=1)
    assert audit["reason"] == (
        f"only 2 rated items with an L1 score; the audit needs {AUDIT_MIN_ITEMS}"
    )
    with translation.override("zh-hans"):
        assert stored_text(audit["reason_message"], audit["reason"]) == (
            f"只有 2 个已评分且有 L1 分数的条目；审计需要 {AUDIT_MIN_ITEMS} 个"
        )


def test_an_outcome_stored_before_reasons_had_ids_shows_its_text(decided):
    study, owner = decided
    ScreeningOutcome.objects.filter(run__study=study, item__external_id="s0").update(
        reason="an old reason", reason_message={}
    )
    assert "an old reason" in chinese(owner).get(page(study)).content.decode()


def test_why_a_fit_is_not_applied_is_given_in_chinese(decided):
    study, owner = decided
    undefined = calib.Sentence(gettext_noop("undefined"))
    reasons = [
        calib.too_few_items(12, calib.MIN_ITEMS_PER_SCOPE),
        calib.Sentence(
            gettext_noop(
                "its held-out rho %(value)s does not beat the current scorer's %(current)s "
                "on the same items"
            ),
            {"value": "0.10", "current": undefined},
        ),
    ]
    english, sentences = joined(reasons)
    FunnyScoreCalibration.objects.create(
        study=study,
        scope="all",
        kind=FunnyScoreCalibration.Kind.FEATURES,
        a=1.0,
        b=1.0,
        c=1.0,
        intercept=0.0,
        is_default=False,
        n_items=12,
        r2=0.1,
        cv_spearman=0.1,
        cv_spearman_low=-0.1,
        cv_spearman_high=0.3,
        intervals={"a": [0.5, 1.5], "b": [0.5, 1.5], "c": [0.5, 1.5], "intercept": [-1.0, 1.0]},
        validation={"current_rho": 0.2},
        applicable=False,
        not_applicable_reason=english,
        not_applicable_message=sentences,
        applied=False,
    )
    assert english == (
        "only 12 items; at least 30 are needed; its held-out rho 0.10 does not beat the current "
        "scorer's undefined on the same items"
    )
    html = chinese(owner).get(page(study)).content.decode()
    text = re.sub(r"\s+", " ", html)
    assert (
        "只有 12 个条目；至少需要 30 个；其留出数据上的 rho 0.10 在相同条目上未超过当前评分器的 无定义"
        in text
    )
    assert "at least 30 are needed" not in text
    assert untranslated({page(study): html}) == {}
