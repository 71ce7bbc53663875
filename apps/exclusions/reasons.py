"""What an exclusion rule found about a rater, as a sentence (apps/core/sentences.py): stored
with the exclusion it proposes, and shown in the reader's language."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext_noop, pgettext

from apps.core.sentences import Sentence, label
from apps.exclusions.models import Rule


def side_label(side: str) -> str:
    labels = {"left": pgettext("pair side", "left"), "right": pgettext("pair side", "right")}
    return labels.get(side, side)


def finding(rule: str, evidence: Mapping[str, Any]) -> Sentence:
    if rule == Rule.ATTENTION:
        return Sentence(
            gettext_noop(
                "failed %(failed)s of %(checks)s attention checks (more than %(max_allowed)s "
                "allowed)"
            ),
            {key: evidence[key] for key in ("failed", "checks", "max_allowed")},
        )
    if rule == Rule.SPEEDER:
        return Sentence(
            gettext_noop(
                "median %(median_seconds)s s per task over %(timed_tasks)s tasks, below "
                "%(threshold_seconds)s s"
            ),
            {key: evidence[key] for key in ("median_seconds", "timed_tasks", "threshold_seconds")},
        )
    if rule == Rule.STRAIGHT_LINE:
        return Sentence(
            gettext_noop(
                "the same value on every scale for %(longest_run)s scorecards in a row "
                "(threshold %(threshold_tasks)s)"
            ),
            {key: evidence[key] for key in ("longest_run", "threshold_tasks")},
        )
    return Sentence(
        gettext_noop("chose the %(side)s item in all %(pairs)s pairs"),
        {"side": label("side", evidence["side"]), "pairs": evidence["pairs"]},
    )


def proposal_sentence(rule: str, evidence: Mapping[str, Any]) -> Sentence:
    """The rule's name and what it found: the reason of the exclusion it proposes."""
    return Sentence(
        gettext_noop("%(rule)s: %(finding)s"),
        {"rule": label("rule", rule), "finding": finding(rule, evidence)},
    )
