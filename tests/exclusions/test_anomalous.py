"""The anomalous-choices rule: proposed with its evidence, in both languages, never applied until
a researcher accepts it, and blind to pairs that chose no side (a tie, "neither")."""

from __future__ import annotations

import re
from collections import defaultdict
from itertools import combinations

import pytest
from django.test import Client
from django.utils import translation

from apps.exclusions.evidence import rater_quality
from apps.exclusions.models import Exclusion, ExclusionProposal, Rule
from apps.exclusions.services import exclusion_proposals_refresh
from apps.judgments.services import study_judgments_import
from apps.studies.lengths import text_length
from apps.studies.models import Item
from apps.studies.services import study_configure, study_member_add
from tests.exclusions.conftest import _lines
from tests.pages.untranslated import untranslated

pytestmark = pytest.mark.django_db


def _pair_line(rater: str, i: int, left: str, right: str, **choice: str) -> dict:
    t = 30 + 20 * i
    return {
        "kind": "pair",
        "rater": rater,
        "left": left,
        "right": right,
        "active_seconds": 15.0,
        "seconds_into_session": t,
        "submitted_at": f"2026-11-22T12:{t // 60:02d}:{t % 60:02d}+00:00",
        **choice,
    }


@pytest.fixture
def longfan(crafted):
    """The crafted study, plus a rater who picks the longer joke in 30 pairs of the demo's own
    groups (one topic and level, as the demo pairs them), and answers two more pairs with
    "about the same" and "neither"."""
    groups: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    for external, topic, level, text, language in Item.objects.filter(
        study=crafted, is_attention_check=False
    ).values_list("external_id", "topic", "level", "text", "language"):
        groups[(topic, level)].append((external, text_length(text, language)))
    unequal = [
        (a, length_a, b, length_b)
        for key in sorted(groups)
        for (a, length_a), (b, length_b) in combinations(sorted(groups[key]), 2)
        if length_a != length_b
    ]
    rows = []
    for i, (a, length_a, b, length_b) in enumerate(unequal[:30]):
        left, right = (a, b) if i % 2 else (b, a)
        rows.append(_pair_line("longfan", i, left, right, winner=a if length_a > length_b else b))
    for i, outcome in enumerate(("tie", "neither"), start=30):
        a, _la, b, _lb = unequal[i]
        rows.append(_pair_line("longfan", i, a, b, outcome=outcome))
    study_judgments_import(study=crafted, data=_lines(rows), filename="longfan.jsonl")
    return crafted


def _anomalous(study) -> dict[str, ExclusionProposal]:
    return {
        p.rater.external_id: p
        for p in ExclusionProposal.objects.filter(study=study, rule=Rule.ANOMALOUS)
        .select_related("rater")
        .order_by("pk")
    }


@pytest.fixture
def member(longfan, django_user_model, settings) -> Client:
    user = django_user_model.objects.create_user(
        settings.DEMO_RESEARCHER_USERNAME, password="pw-member-123"
    )
    study_member_add(study=longfan, user=user)
    client = Client()
    client.force_login(user)
    return client


def page(study) -> str:
    return f"/studies/{study.slug}/exclusions/"


def test_the_rule_proposes_the_length_lover_with_counts_and_no_demo_rater(longfan):
    exclusion_proposals_refresh(study=longfan)
    found = _anomalous(longfan)
    # The demo's 24 simulated raters are careful; "lefty" (12 of 12 on the left, the
    # position-only rule's case) sits at the line, and is not part of this test.
    assert "longfan" in found
    assert set(found) <= {"longfan", "lefty"}
    evidence = found["longfan"].evidence
    assert evidence["findings"][0] == "length"
    assert evidence["longer_choices"] == evidence["length_pairs"] == evidence["pairs"] == 30
    assert evidence["expected_longer"] < 25
    assert evidence["tests"]["length"]["p"] <= evidence["threshold"]
    assert evidence["combined_p"] <= evidence["threshold"] == 0.02
    assert evidence["seed"] == longfan.random_seed


def test_ties_and_neither_choose_no_side_and_count_in_no_test(longfan):
    quality = {q.rater: q for q in rater_quality(study=longfan)}["longfan"]
    # 32 pair judgments, of which 30 chose an item.
    assert quality.pairs == 30
    exclusion_proposals_refresh(study=longfan)
    evidence = _anomalous(longfan)["longfan"].evidence
    assert evidence["pairs"] == 30
    assert evidence["tests"]["side"]["n"] == 30


def test_nothing_is_excluded_until_a_researcher_accepts_even_with_automatic_rules(longfan, member):
    assert member.post(page(longfan) + "proposals/refresh/").status_code == 302
    assert not Exclusion.objects.filter(study=longfan).exists()

    study_configure(study=longfan, exclusion_rules_automatic=True)
    longfan.refresh_from_db()
    # The other rules' proposals are applied; the anomalous ones wait.
    waiting = exclusion_proposals_refresh(study=longfan)
    assert waiting == len(_anomalous(longfan)) >= 1
    excluded = set(
        Exclusion.objects.filter(study=longfan, undone_at__isnull=True).values_list(
            "rater__external_id", "rule"
        )
    )
    assert ("longfan", Rule.ANOMALOUS) not in excluded
    assert not Exclusion.objects.filter(study=longfan, rater__external_id="longfan").exists()
    proposal = _anomalous(longfan)["longfan"]
    assert proposal.status == ExclusionProposal.Status.OPEN
    html = member.get(page(longfan)).content.decode()
    assert f'data-proposal="{proposal.pk}"' in html
    assert "except anomalous choices" in html

    # A researcher accepts it from the page: now the rater is excluded, with the finding.
    response = member.post(page(longfan) + "proposals/confirm/", {"id": proposal.pk})
    assert response.status_code == 302
    exclusion = Exclusion.objects.get(study=longfan, rater__external_id="longfan")
    assert exclusion.rule == Rule.ANOMALOUS
    assert exclusion.reason.startswith(
        "Anomalous choices: chose the longer item in 30 of 30 pairs of unequal length"
    )
    assert exclusion.created_by is not None
    proposal.refresh_from_db()
    assert proposal.status == ExclusionProposal.Status.CONFIRMED


def test_a_dismissed_finding_stays_dismissed(longfan, member):
    exclusion_proposals_refresh(study=longfan)
    proposal = _anomalous(longfan)["longfan"]
    assert member.post(page(longfan) + "proposals/dismiss/", {"id": proposal.pk}).status_code == 302
    exclusion_proposals_refresh(study=longfan)
    proposal.refresh_from_db()
    assert proposal.status == ExclusionProposal.Status.DISMISSED
    assert not Exclusion.objects.filter(study=longfan, rater__external_id="longfan").exists()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", html)


def test_the_finding_reads_in_english(longfan, member):
    exclusion_proposals_refresh(study=longfan)
    evidence = _anomalous(longfan)["longfan"].evidence
    text = _text(member.get(page(longfan)).content.decode())
    assert "Anomalous choices" in text
    assert (
        f"chose the longer item in 30 of 30 pairs of unequal length (expected "
        f"{evidence['expected_longer']})"
    ) in text
    assert f"(combined p = {evidence['combined_p']})" in text
    assert 'id="anomalous-rule"' in text
    assert "with a combined p-value of at most 0.02 after calibration by simulation" in text


def test_the_finding_reads_in_chinese(longfan, member):
    with translation.override("en"):
        exclusion_proposals_refresh(study=longfan)
    evidence = _anomalous(longfan)["longfan"].evidence
    member.defaults["HTTP_ACCEPT_LANGUAGE"] = "zh-hans"
    html = member.get(page(longfan)).content.decode()
    text = _text(html)
    assert "异常选择" in text
    assert (
        f"在 30 组长度不同的配对中有 30 次选择了较长的条目（预期 {evidence['expected_longer']} 次）"
    ) in text
    assert f"（合并 p = {evidence['combined_p']}）" in text
    assert "经模拟校准后的合并 p 值不超过 0.02" in text
    for english in ("chose the longer item", "combined p =", "Anomalous choices"):
        assert english not in text
    assert untranslated({page(longfan): html}) == {}


EVIDENCE = {
    "combined_p": 0.004,
    "findings": ["side", "length", "consensus", "turing_answer", "turing_consensus"],
    "pairs": 40,
    "left_choices": 33,
    "expected_left": 21.5,
    "others_left_share": 0.5362,
    "length_pairs": 38,
    "longer_choices": 30,
    "expected_longer": 20.1,
    "favoured_pairs": 40,
    "favoured_choices": 12,
    "expected_favoured": 26.4,
    "turing": 15,
    "ai_answers": 14,
    "expected_ai": 7.2,
    "others_ai_share": 0.48,
    "majority_items": 15,
    "majority_answers": 4,
    "expected_majority": 9.8,
}


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        (
            "en",
            "Anomalous choices: chose the left item in 33 of 40 pairs (other raters: 54% left; "
            "expected 21.5); chose the longer item in 30 of 38 pairs of unequal length (expected "
            "20.1); chose the item the other raters favour in 12 of 40 pairs (expected 26.4); "
            "answered “AI” for 14 of 15 items (other raters: 48%; expected 7.2); gave the other "
            "raters' majority answer for 4 of 15 items (expected 9.8) (combined p = 0.004)",
        ),
        (
            "zh-hans",
            "异常选择：在 40 组配对中有 33 次选择了左侧的条目（其他评分者选择左侧的比例为 54%；"
            "预期 21.5 次）；在 38 组长度不同的配对中有 30 次选择了较长的条目（预期 20.1 次）；"
            "在 40 组配对中有 12 次选择了其他评分者更青睐的条目（预期 26.4 次）；"
            "在 15 个条目中有 14 次回答“AI”（其他评分者的比例为 48%；预期 7.2 次）；"
            "在 15 个条目中有 4 次给出了与其他评分者多数一致的回答（预期 9.8 次）"
            "（合并 p = 0.004）",
        ),
    ],
)
def test_every_finding_reads_in_both_languages(language, expected):
    from apps.exclusions.reasons import proposal_sentence

    with translation.override(language):
        assert proposal_sentence(Rule.ANOMALOUS, EVIDENCE).text() == expected


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_a_finding_without_other_raters_leaves_their_share_out(language):
    from apps.exclusions.reasons import proposal_sentence

    alone = {
        **EVIDENCE,
        "findings": ["side", "turing_answer"],
        "others_left_share": None,
        "others_ai_share": None,
    }
    with translation.override(language):
        text = proposal_sentence(Rule.ANOMALOUS, alone).text()
    assert "%" not in text
    assert ("expected 21.5" in text) if language == "en" else ("预期 21.5 次" in text)
