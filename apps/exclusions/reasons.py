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
    if rule == Rule.ANOMALOUS:
        return anomalous_finding(evidence)
    return Sentence(
        gettext_noop("chose the %(side)s item in all %(pairs)s pairs"),
        {"side": label("side", evidence["side"]), "pairs": evidence["pairs"]},
    )


def _percent(share: Any) -> int | None:
    return None if share is None else round(100 * float(share))


def _anomalous_test(test: str, evidence: Mapping[str, Any]) -> Sentence:
    """What one failed test of the anomalous-choices screen saw, in counts."""
    if test == "side":
        others = _percent(evidence.get("others_left_share"))
        params = {
            "left": evidence["left_choices"],
            "pairs": evidence["pairs"],
            "expected": evidence["expected_left"],
        }
        if others is None:
            return Sentence(
                gettext_noop(
                    "chose the left item in %(left)s of %(pairs)s pairs (expected %(expected)s)"
                ),
                params,
            )
        return Sentence(
            gettext_noop(
                "chose the left item in %(left)s of %(pairs)s pairs (other raters: "
                "%(others)s%% left; expected %(expected)s)"
            ),
            {**params, "others": others},
        )
    if test == "length":
        return Sentence(
            gettext_noop(
                "chose the longer item in %(longer)s of %(length_pairs)s pairs of unequal "
                "length (expected %(expected)s)"
            ),
            {
                "longer": evidence["longer_choices"],
                "length_pairs": evidence["length_pairs"],
                "expected": evidence["expected_longer"],
            },
        )
    if test == "consensus":
        return Sentence(
            gettext_noop(
                "chose the item the other raters favour in %(agree)s of %(pairs)s pairs "
                "(expected %(expected)s)"
            ),
            {
                "agree": evidence["favoured_choices"],
                "pairs": evidence["favoured_pairs"],
                "expected": evidence["expected_favoured"],
            },
        )
    if test == "turing_answer":
        others = _percent(evidence.get("others_ai_share"))
        params = {
            "ai": evidence["ai_answers"],
            "items": evidence["turing"],
            "expected": evidence["expected_ai"],
        }
        if others is None:
            return Sentence(
                gettext_noop("answered “AI” for %(ai)s of %(items)s items (expected %(expected)s)"),
                params,
            )
        return Sentence(
            gettext_noop(
                "answered “AI” for %(ai)s of %(items)s items (other raters: %(others)s%%; "
                "expected %(expected)s)"
            ),
            {**params, "others": others},
        )
    return Sentence(
        gettext_noop(
            "gave the other raters' majority answer for %(agree)s of %(items)s items "
            "(expected %(expected)s)"
        ),
        {
            "agree": evidence["majority_answers"],
            "items": evidence["majority_items"],
            "expected": evidence["expected_majority"],
        },
    )


def anomalous_finding(evidence: Mapping[str, Any]) -> Sentence:
    """The failed tests in counts, most certain first, and the combined p-value."""
    tests = [_anomalous_test(test, evidence) for test in evidence.get("findings") or []]
    if not tests:
        return Sentence(gettext_noop("combined p = %(p)s"), {"p": evidence["combined_p"]})
    found = tests[-1]
    for earlier in reversed(tests[:-1]):
        found = Sentence(gettext_noop("%(first)s; %(rest)s"), {"first": earlier, "rest": found})
    return Sentence(
        gettext_noop("%(findings)s (combined p = %(p)s)"),
        {"findings": found, "p": evidence["combined_p"]},
    )


def proposal_sentence(rule: str, evidence: Mapping[str, Any]) -> Sentence:
    """The rule's name and what it found: the reason of the exclusion it proposes."""
    return Sentence(
        gettext_noop("%(rule)s: %(finding)s"),
        {"rule": label("rule", rule), "finding": finding(rule, evidence)},
    )
