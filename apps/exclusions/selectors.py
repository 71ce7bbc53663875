"""Reads for exclusions: the active set an analysis leaves out, the history, the proposals."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from apps.exclusions.models import Exclusion, ExclusionProposal, JudgmentKind
from apps.studies.models import Study


@dataclass(frozen=True)
class ExclusionSet:
    """Primary keys of what the analysis leaves out, with a digest the results record."""

    raters: frozenset[int] = frozenset()
    items: frozenset[int] = frozenset()
    scorecards: frozenset[int] = frozenset()
    pairs: frozenset[int] = frozenset()
    turing: frozenset[int] = frozenset()
    digest: str = ""
    # One entry per active exclusion, as the results document and the report list them.
    entries: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.entries)


def _subject(exclusion: Exclusion) -> str:
    if exclusion.target == Exclusion.Target.RATER:
        assert exclusion.rater is not None
        return exclusion.rater.external_id
    if exclusion.target == Exclusion.Target.ITEM:
        assert exclusion.item is not None
        return exclusion.item.external_id
    return f"{exclusion.judgment_kind}:{exclusion.judgment_id}"


def exclusion_set_for_study(*, study: Study) -> ExclusionSet:
    active = list(
        Exclusion.objects.filter(study=study, undone_at__isnull=True)
        .select_related("rater", "item", "created_by")
        .order_by("pk")
    )
    if not active:
        return ExclusionSet()
    by_kind: dict[str, set[int]] = {kind: set() for kind in JudgmentKind.values}
    entries = []
    for exclusion in active:
        if exclusion.target == Exclusion.Target.JUDGMENT and exclusion.judgment_id is not None:
            by_kind[exclusion.judgment_kind].add(exclusion.judgment_id)
        entries.append(
            {
                "id": exclusion.pk,
                "target": exclusion.target,
                "subject": _subject(exclusion),
                "reason": exclusion.reason,
                "rule": exclusion.rule,
                "by": exclusion.created_by.get_username() if exclusion.created_by else "",
                "at": exclusion.created_at.isoformat(),
            }
        )
    # The digest names what is left out, by ids fixed by the study (rater and item external
    # ids), so the same choices give the same digest whichever database holds them.
    lines = sorted(f"{entry['target']}:{entry['subject']}" for entry in entries)
    return ExclusionSet(
        raters=frozenset(e.rater_id for e in active if e.rater_id is not None),
        items=frozenset(e.item_id for e in active if e.item_id is not None),
        scorecards=frozenset(by_kind[JudgmentKind.SCORECARD]),
        pairs=frozenset(by_kind[JudgmentKind.PAIR]),
        turing=frozenset(by_kind[JudgmentKind.TURING]),
        digest=hashlib.sha256("\n".join(lines).encode()).hexdigest(),
        entries=entries,
    )


def exclusions_list(*, study: Study) -> QuerySet[Exclusion]:
    """Every exclusion of the study, active and undone, newest first."""
    return (
        Exclusion.objects.filter(study=study)
        .select_related("rater", "item", "created_by", "undone_by")
        .order_by("-created_at", "-pk")
    )


def proposals_list(*, study: Study) -> QuerySet[ExclusionProposal]:
    return (
        ExclusionProposal.objects.filter(study=study)
        .select_related("rater", "decided_by")
        .order_by("status", "rule", "rater__external_id")
    )


@dataclass(frozen=True)
class ExclusionReasons:
    """Active exclusions by what they name, for marking raw rows (primary key -> reason)."""

    raters: dict[int, str] = field(default_factory=dict)
    items: dict[int, str] = field(default_factory=dict)
    judgments: dict[tuple[str, int], str] = field(default_factory=dict)

    def reason(self, *, rater: int, items: tuple[int | None, ...], kind: str, judgment: int) -> str:
        """Why this judgment is left out of the analysis ("" when it is not)."""
        found = [
            self.judgments.get((kind, judgment), ""),
            self.raters.get(rater, ""),
            *(self.items.get(item, "") for item in items if item is not None),
        ]
        return "; ".join(reason for reason in found if reason)


def exclusion_reasons(*, study: Study) -> ExclusionReasons:
    reasons = ExclusionReasons()
    for target, rater, item, kind, judgment, reason in Exclusion.objects.filter(
        study=study, undone_at__isnull=True
    ).values_list("target", "rater_id", "item_id", "judgment_kind", "judgment_id", "reason"):
        if target == Exclusion.Target.RATER:
            reasons.raters[rater] = f"rater excluded: {reason}"
        elif target == Exclusion.Target.ITEM:
            reasons.items[item] = f"item excluded: {reason}"
        elif judgment is not None:
            reasons.judgments[(kind, judgment)] = f"judgment excluded: {reason}"
    return reasons


@dataclass(frozen=True)
class RuleCoverage:
    """What the order and time rules could not look at: imported scorecards without an order
    (the straight-liner rule skips them) and tasks without an active time (the speeder rule
    has nothing to measure)."""

    unordered_scorecards: int
    untimed_tasks: int


def rule_coverage(*, study: Study) -> RuleCoverage:
    from apps.exclusions.evidence import unordered_scorecards
    from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment

    untimed = sum(
        model.objects.filter(study=study, active_seconds__isnull=True).count()
        for model in (ScoreResponse, PairJudgment, TuringJudgment)
    )
    return RuleCoverage(
        unordered_scorecards=unordered_scorecards(
            ScoreResponse.objects.filter(study=study)
        ).count(),
        untimed_tasks=untimed,
    )
