"""Writes for exclusions: exclude, undo, and the rules' proposals. Nothing here deletes evidence.

Every change marks the study's results as stale (analysis.services.study_results_request), so
the next aggregation recomputes every statistic without (or again with) the data concerned.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.analysis.services import study_results_request
from apps.core.errors import Conflict, DomainError, NotFound
from apps.exclusions.evidence import RaterQuality, anomalous_choices, rater_quality
from apps.exclusions.models import PROPOSE_ONLY, Exclusion, ExclusionProposal, JudgmentKind, Rule
from apps.exclusions.reasons import proposal_sentence
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import Rater
from apps.studies.models import Item, Study

User = AbstractBaseUser | AnonymousUser | None

_JUDGMENT_MODELS: dict[str, type[ScoreResponse] | type[PairJudgment] | type[TuringJudgment]] = {
    JudgmentKind.SCORECARD: ScoreResponse,
    JudgmentKind.PAIR: PairJudgment,
    JudgmentKind.TURING: TuringJudgment,
}
MAX_REASON = 2000


def _who(user: User) -> Any:
    return user if user is not None and user.is_authenticated else None


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise DomainError("a reason is required for every exclusion", field="reason")
    if len(reason) > MAX_REASON:
        raise DomainError(f"the reason must be at most {MAX_REASON} characters", field="reason")
    return reason


def _target_fields(study: Study, target: str, subject: str, judgment_kind: str) -> dict[str, Any]:
    subject = (subject or "").strip()
    if target == Exclusion.Target.RATER:
        rater = Rater.objects.filter(study=study, external_id=subject).first()
        if rater is None:
            raise NotFound(f"no rater {subject!r} in this study", field="subject")
        return {"rater": rater}
    if target == Exclusion.Target.ITEM:
        item = Item.objects.filter(study=study, external_id=subject).first()
        if item is None:
            raise NotFound(f"no item {subject!r} in this study", field="subject")
        return {"item": item}
    if target == Exclusion.Target.JUDGMENT:
        if judgment_kind not in JudgmentKind.values:
            raise DomainError(
                f"judgment_kind must be one of {', '.join(JudgmentKind.values)}",
                field="judgment_kind",
            )
        if not subject.isdigit():
            raise DomainError("a judgment is named by its number", field="subject")
        model = _JUDGMENT_MODELS[judgment_kind]
        if not model.objects.filter(study=study, pk=int(subject)).exists():
            raise NotFound(f"no {judgment_kind} judgment {subject} in this study", field="subject")
        return {"judgment_kind": judgment_kind, "judgment_id": int(subject)}
    raise DomainError("target must be rater, judgment or item", field="target")


@transaction.atomic
def exclusion_create(
    *,
    study: Study,
    user: User,
    target: str,
    subject: str,
    reason: str,
    judgment_kind: str = "",
    rule: str = "",
    evidence: dict[str, Any] | None = None,
    reason_message: dict[str, Any] | None = None,
    request_results: bool = True,
) -> Exclusion:
    """Leave a rater, a judgment or an item out of the analysis, with a required reason (and,
    when a rule wrote it, the same reason as a sentence shown in the reader's language)."""
    fields = _target_fields(study, target, subject, judgment_kind)
    try:
        with transaction.atomic():
            exclusion = Exclusion.objects.create(
                study=study,
                target=target,
                reason=_reason(reason),
                reason_message=reason_message or {},
                rule=rule,
                evidence=evidence or {},
                created_by=_who(user),
                **fields,
            )
    except IntegrityError:
        raise Conflict(f"this {target} is already excluded", field="subject") from None
    if request_results:
        study_results_request(study_id=study.pk)
    return exclusion


@transaction.atomic
def exclusion_undo(*, study: Study, user: User, exclusion_id: int, reason: str = "") -> Exclusion:
    """Put the data back into the analysis; the exclusion stays in the history as undone."""
    exclusion = Exclusion.objects.select_for_update().filter(study=study, pk=exclusion_id).first()
    if exclusion is None:
        raise NotFound("no such exclusion in this study", field="exclusion")
    if exclusion.undone_at is not None:
        raise Conflict("this exclusion was already undone", field="exclusion")
    exclusion.undone_at = timezone.now()
    exclusion.undone_by = _who(user)
    exclusion.undo_reason = (reason or "").strip()[:MAX_REASON]
    exclusion.save(update_fields=["undone_at", "undone_by", "undo_reason"])
    # A proposal confirmed into this exclusion is open again: the rater may still be flagged.
    ExclusionProposal.objects.filter(exclusion=exclusion).update(
        status=ExclusionProposal.Status.OPEN, exclusion=None, decided_at=None, decided_by=None
    )
    study_results_request(study_id=study.pk)
    return exclusion


def _findings(quality: RaterQuality) -> dict[str, dict[str, Any]]:
    """What each rule found about one rater, with its evidence."""
    limits = quality.thresholds
    found: dict[str, dict[str, Any]] = {}
    if quality.too_many_attention_failures:
        found[Rule.ATTENTION] = {
            "failed": quality.attention_failed,
            "checks": quality.attention_checks,
            "max_allowed": limits.max_attention_failures,
        }
    if quality.speeder:
        found[Rule.SPEEDER] = {
            "median_seconds": round(float(quality.median_seconds or 0.0), 3),
            "threshold_seconds": limits.speeder_seconds,
            "timed_tasks": quality.timed_tasks,
            "tasks_under_threshold": quality.fast_tasks,
        }
    if quality.straight_liner:
        found[Rule.STRAIGHT_LINE] = {
            "longest_run": quality.longest_run,
            "runs": quality.straight_runs,
            "threshold_tasks": limits.straight_line_tasks,
            "scorecards": quality.scorecards,
        }
    if quality.position_only:
        found[Rule.POSITION] = {
            "pairs": quality.pairs,
            "left_choices": quality.left_choices,
            "side": "left" if quality.left_choices == quality.pairs else "right",
            "min_pairs": limits.position_min_pairs,
        }
    return found


def proposal_reason(proposal: ExclusionProposal) -> str:
    """The rule's finding in the reader's language."""
    return proposal_sentence(proposal.rule, proposal.evidence).text()


@transaction.atomic
def exclusion_proposals_refresh(*, study: Study, request_results: bool = True) -> int:
    """Run the rules over the raw data; returns the number of open proposals.

    A proposal a researcher dismissed or confirmed keeps its decision (its evidence is
    refreshed); an open proposal whose rule no longer fires is withdrawn. With the study's
    `exclusion_rules_automatic`, open proposals are confirmed at once, except those of the
    rules in PROPOSE_ONLY (anomalous choices), which always wait for a researcher.
    """
    now = timezone.now()
    found = {
        (quality.pk, rule): evidence
        for quality in rater_quality(study=study)
        for rule, evidence in _findings(quality).items()
    }
    for rater_id, evidence in anomalous_choices(study=study).items():
        found[(rater_id, Rule.ANOMALOUS)] = evidence
    existing = {(p.rater_id, p.rule): p for p in ExclusionProposal.objects.filter(study=study)}
    stale = [
        p.pk
        for key, p in existing.items()
        if key not in found and p.status == ExclusionProposal.Status.OPEN
    ]
    ExclusionProposal.objects.filter(pk__in=stale).delete()
    for (rater_id, rule), evidence in found.items():
        proposal = existing.get((rater_id, rule))
        if proposal is None:
            ExclusionProposal.objects.create(
                study=study, rater_id=rater_id, rule=rule, evidence=evidence, found_at=now
            )
        elif proposal.evidence != evidence:
            proposal.evidence = evidence
            proposal.save(update_fields=["evidence"])
    open_proposals = ExclusionProposal.objects.filter(
        study=study, status=ExclusionProposal.Status.OPEN
    ).select_related("rater")
    if study.exclusion_rules_automatic:
        waiting = 0
        for proposal in open_proposals:
            if proposal.rule in PROPOSE_ONLY:
                waiting += 1
                continue
            _confirm(study, None, proposal, "", request_results=False)
        if request_results and any(rule not in PROPOSE_ONLY for _rater, rule in found):
            study_results_request(study_id=study.pk)
        return waiting
    return open_proposals.count()


def _confirm(
    study: Study, user: User, proposal: ExclusionProposal, reason: str, *, request_results: bool
) -> ExclusionProposal:
    exclusion = Exclusion.objects.filter(
        study=study, rater_id=proposal.rater_id, undone_at__isnull=True
    ).first()
    if exclusion is None:
        # The rule's finding unless the researcher wrote a reason: stored in English (for the
        # exports and the API) and as a sentence, so each reader sees it in their language.
        found = proposal_sentence(proposal.rule, proposal.evidence)
        own = (reason or "").strip()
        exclusion = exclusion_create(
            study=study,
            user=user,
            target=Exclusion.Target.RATER,
            subject=proposal.rater.external_id,
            reason=own or found.english(),
            reason_message={} if own else found.as_dict(),
            rule=proposal.rule,
            evidence=proposal.evidence,
            request_results=request_results,
        )
    proposal.status = ExclusionProposal.Status.CONFIRMED
    proposal.exclusion = exclusion
    proposal.decided_at = timezone.now()
    proposal.decided_by = _who(user)
    proposal.save(update_fields=["status", "exclusion", "decided_at", "decided_by"])
    return proposal


def _open_proposal(study: Study, proposal_id: int) -> ExclusionProposal:
    proposal = (
        ExclusionProposal.objects.select_for_update()
        .select_related("rater")
        .filter(study=study, pk=proposal_id)
        .first()
    )
    if proposal is None:
        raise NotFound("no such proposal in this study", field="proposal")
    if proposal.status != ExclusionProposal.Status.OPEN:
        raise Conflict(f"this proposal was already {proposal.status}", field="proposal")
    return proposal


@transaction.atomic
def exclusion_proposal_confirm(
    *, study: Study, user: User, proposal_id: int, reason: str = ""
) -> ExclusionProposal:
    """Exclude the proposal's rater, with the rule's finding as the reason unless one is given."""
    proposal = _open_proposal(study, proposal_id)
    return _confirm(study, user, proposal, reason, request_results=True)


@transaction.atomic
def exclusion_proposal_dismiss(*, study: Study, user: User, proposal_id: int) -> ExclusionProposal:
    proposal = _open_proposal(study, proposal_id)
    proposal.status = ExclusionProposal.Status.DISMISSED
    proposal.decided_at = timezone.now()
    proposal.decided_by = _who(user)
    proposal.save(update_fields=["status", "decided_at", "decided_by"])
    return proposal
