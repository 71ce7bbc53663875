"""The rules' findings in the reader's language: on open proposals, and on exclusions confirmed
earlier in another language (stored as a sentence beside the English reason)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import translation

from apps.exclusions.models import Exclusion, ExclusionProposal, Rule
from apps.exclusions.services import exclusion_proposal_confirm, exclusion_proposals_refresh
from apps.studies.services import study_member_add
from tests.pages.untranslated import untranslated

pytestmark = pytest.mark.django_db


def page(study) -> str:
    return f"/studies/{study.slug}/exclusions/"


@pytest.fixture
def reader(crafted, django_user_model, settings) -> Client:
    # The demo researcher's name: the page checker knows it as a name, not an English word.
    user = django_user_model.objects.create_user(
        settings.DEMO_RESEARCHER_USERNAME, password="pw-member-123"
    )
    study_member_add(study=crafted, user=user)
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(user)
    return client


def proposal(study, rule: str) -> ExclusionProposal:
    return ExclusionProposal.objects.get(study=study, rule=rule)


def chinese_finding(rule: str, evidence: dict) -> str:
    if rule == Rule.ATTENTION:
        return (
            f"未通过注意力检查：{evidence['checks']} 道注意力检查题中答错 {evidence['failed']} 道"
            f"（最多允许 {evidence['max_allowed']} 道）"
        )
    if rule == Rule.SPEEDER:
        return (
            f"{evidence['timed_tasks']} 个任务每个用时的中位数为 {evidence['median_seconds']} 秒，"
            f"低于 {evidence['threshold_seconds']} 秒"
        )
    if rule == Rule.STRAIGHT_LINE:
        return (
            f"连续 {evidence['longest_run']} 张评分卡在每个量表上都给出相同的值"
            f"（阈值 {evidence['threshold_tasks']}）"
        )
    return f"在全部 {evidence['pairs']} 组配对中都选择了左侧的条目"


def test_findings_and_confirmed_reasons_are_shown_in_chinese(crafted, reader):
    with translation.override("en"):
        exclusion_proposals_refresh(study=crafted)
        for rule in (Rule.ATTENTION, Rule.POSITION):
            exclusion_proposal_confirm(
                study=crafted, user=None, proposal_id=proposal(crafted, rule).pk
            )
    confirmed = Exclusion.objects.get(study=crafted, rule=Rule.ATTENTION)
    evidence = confirmed.evidence
    assert confirmed.reason == (
        f"Failed attention checks: failed {evidence['failed']} of {evidence['checks']} attention "
        f"checks (more than {evidence['max_allowed']} allowed)"
    )
    html = reader.get(page(crafted)).content.decode()
    text = re.sub(r"\s+", " ", html)
    for rule in (Rule.SPEEDER, Rule.STRAIGHT_LINE, Rule.ATTENTION, Rule.POSITION):
        assert chinese_finding(rule, proposal(crafted, rule).evidence) in text, rule
    for english in ("attention checks (more than", "s per task over", "scorecards in a row"):
        assert english not in text
    assert "chose the left item" not in text
    assert untranslated({page(crafted): html}) == {}


def test_a_reason_the_researcher_wrote_is_shown_as_written(crafted, reader):
    exclusion_proposals_refresh(study=crafted)
    exclusion_proposal_confirm(
        study=crafted,
        user=None,
        proposal_id=proposal(crafted, Rule.SPEEDER).pk,
        reason="seen rushing in the session log",
    )
    exclusion = Exclusion.objects.get(study=crafted, rule=Rule.SPEEDER)
    assert (exclusion.reason, exclusion.reason_message) == ("seen rushing in the session log", {})
    assert "seen rushing in the session log" in reader.get(page(crafted)).content.decode()
