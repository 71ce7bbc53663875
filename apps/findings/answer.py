"""The study's answer in words: which source does best on the primary question, by how much,
how sure, and every caveat that touches those numbers.

Built from the stored `models` section (apps/analysis/stats/model_comparison.py) and nothing
else, by the same number formats as the tables beside it (apps.findings.charts), so each number
in a sentence is the table's. The Models page and the report both call `study_answer`.

What is said, per pair of sources (all pairs up to MAX_ALL_PAIRS sources; beyond that, each
source against the next one down): the difference of the primary question's means with its 95%
interval (items and raters random), P(a random item of A beats one of B) from the pair
judgments, and the strength of evidence read from the Holm-adjusted p-value. A pair whose
interval contains 0 is said not to be separated; it is not ranked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations, pairwise
from typing import Any

from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.findings.charts import fmt, fmt_p_stated, fmt_pct

Payload = Mapping[str, Any]

# Up to this many sources every pair is described; more, and only neighbours in the order.
MAX_ALL_PAIRS = 4
# Strength of evidence from the Holm-adjusted p-value (the family of one question's pairs).
STRENGTHS = ((0.001, "very_strong"), (0.01, "strong"), (0.05, "moderate"))


@dataclass(frozen=True)
class Statement:
    """One sentence about one pair, and the numbers it shows, as the tables format them."""

    a: str
    b: str
    separated: bool
    strength: str
    text: str
    numbers: dict[str, str]


@dataclass(frozen=True)
class Answer:
    question: str
    headline: str
    statements: list[Statement] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.statements


def strength_of(p_holm: float | None) -> str:
    if p_holm is None:
        return "none"
    for bound, name in STRENGTHS:
        if p_holm < bound:
            return name
    return "none"


def strength_label(strength: str) -> str:
    return {
        "very_strong": _("very strong evidence"),
        "strong": _("strong evidence"),
        "moderate": _("moderate evidence"),
        "none": _("no clear evidence"),
    }[strength]


def _mean(view: Payload, source: str, question: str) -> float | None:
    entry = ((view.get("by_model") or {}).get(source) or {}).get("questions") or {}
    value = (entry.get(question) or {}).get("value")
    return float(value) if isinstance(value, int | float) else None


def _oriented(row: Mapping[str, Any], a: str) -> dict[str, Any]:
    """A stored difference row as `a` minus the other source (the row may be stored b − a)."""
    if row.get("a") == a:
        return dict(row)
    flipped = {
        "value": -row["value"] if row.get("value") is not None else None,
        "ci_low": -row["ci_high"] if row.get("ci_high") is not None else None,
        "ci_high": -row["ci_low"] if row.get("ci_low") is not None else None,
        "p_holm": row.get("p_holm"),
    }
    beats = row.get("p_a_beats_b")
    if isinstance(beats, Mapping) and beats.get("value") is not None:
        flipped["p_a_beats_b"] = {
            "value": 1 - beats["value"],
            "ci_low": 1 - beats["ci_high"] if beats.get("ci_high") is not None else None,
            "ci_high": 1 - beats["ci_low"] if beats.get("ci_low") is not None else None,
        }
    return flipped


def _difference(view: Payload, a: str, b: str, question: str) -> dict[str, Any] | None:
    for row in view.get("differences") or []:
        if row.get("question") == question and {row.get("a"), row.get("b")} == {a, b}:
            return _oriented(row, a)
    return None


def _pairs(order: Sequence[str]) -> list[tuple[str, str]]:
    if len(order) <= MAX_ALL_PAIRS:
        return list(combinations(order, 2))
    return list(pairwise(order))


def _scale_text(scale: tuple[float, float] | None) -> str:
    if scale is None:
        return ""
    low, high = scale
    digits = 0 if float(low).is_integer() and float(high).is_integer() else 2
    return f"{fmt(low, digits)}–{fmt(high, digits)}"


def _statement(
    view: Payload,
    a: str,
    b: str,
    *,
    question: str,
    scale: tuple[float, float] | None,
    humor: bool,
) -> Statement | None:
    row = _difference(view, a, b, question)
    if row is None or row.get("value") is None:
        return None
    name_a = labels.group_label(a, "source", humor=humor)
    name_b = labels.group_label(b, "source", humor=humor)
    question_name = labels.question_label(question)
    low, high = row.get("ci_low"), row.get("ci_high")
    separated = low is not None and high is not None and (low > 0 or high < 0)
    strength = strength_of(row.get("p_holm")) if separated else "none"
    numbers = {
        "difference": fmt(row["value"]),
        "low": fmt(low),
        "high": fmt(high),
        "p": fmt_p_stated(row.get("p_holm")),
    }
    params: dict[str, str] = {
        "a": name_a,
        "b": name_b,
        "question": question_name,
        "scale": _scale_text(scale),
        **numbers,
    }
    if not separated:
        text = (
            _(
                "The evidence does not separate %(a)s and %(b)s on %(question)s: the difference is "
                "%(difference)s [%(low)s, %(high)s] (%(p)s, Holm)."
            )
            % params
        )
        return Statement(a, b, False, strength, text, numbers)
    funnier = humor and question == "funniness"
    if funnier and params["scale"]:
        text = (
            _(
                "%(a)s is funnier than %(b)s by %(difference)s points on the %(scale)s scale "
                "[%(low)s, %(high)s]"
            )
            % params
        )
    elif funnier:
        text = _("%(a)s is funnier than %(b)s by %(difference)s [%(low)s, %(high)s]") % params
    elif params["scale"]:
        text = (
            _(
                "%(a)s scores higher than %(b)s on %(question)s by %(difference)s points on the "
                "%(scale)s scale [%(low)s, %(high)s]"
            )
            % params
        )
    else:
        text = (
            _(
                "%(a)s scores higher than %(b)s on %(question)s by %(difference)s [%(low)s, %(high)s]"
            )
            % params
        )
    bt = _difference(view, a, b, "bt") or {}
    beats = bt.get("p_a_beats_b")
    if isinstance(beats, Mapping) and beats.get("value") is not None:
        numbers.update(
            beats=fmt_pct(beats["value"], 0),
            beats_low=fmt_pct(beats.get("ci_low"), 0),
            beats_high=fmt_pct(beats.get("ci_high"), 0),
        )
        template = (
            _("; P(a joke of %(a)s beats one of %(b)s) %(beats)s [%(beats_low)s, %(beats_high)s]")
            if humor
            else _(
                "; P(an item of %(a)s beats one of %(b)s) %(beats)s [%(beats_low)s, %(beats_high)s]"
            )
        )
        text += template % {**params, **numbers}
    text += ". " + _("%(strength)s (%(p)s, Holm).") % {
        "strength": strength_label(strength).capitalize(),
        "p": numbers["p"],
    }
    return Statement(a, b, True, strength, text, numbers)


def _caveats(
    view: Payload,
    sources: Sequence[str],
    *,
    warnings: Sequence[Mapping[str, Any]],
    not_evidence: int,
    evidence_only: bool,
    exclusions: int,
    humor: bool,
) -> list[str]:
    caveats = []
    for warning in warnings:
        code = warning.get("code")
        if (code == "too_few_items" and warning.get("subject") in sources) or (
            code == "too_few_raters" and warning.get("scope") == "items"
        ):
            caveats.append(labels.warning_text(warning))
    if not_evidence and evidence_only:
        caveats.append(
            _(
                "These numbers leave out %(n)s items that are not evidence about their model "
                "(culture-dependent or safety-intercepted)."
            )
            % {"n": not_evidence}
        )
    elif not_evidence:
        caveats.append(
            _(
                "These numbers include %(n)s items that are not evidence about their model "
                "(culture-dependent or safety-intercepted); the evidence-only view leaves them "
                "out."
            )
            % {"n": not_evidence}
        )
    if exclusions:
        caveats.append(
            _("The study's exclusions are applied: %(n)s recorded exclusions are left out.")
            % {"n": exclusions}
        )
    else:
        caveats.append(_("No rater or answer is excluded."))
    few_raters = [
        labels.group_label(name, "source", humor=humor)
        for name in sources
        if ((view.get("by_model") or {}).get(name) or {}).get("n_raters") is not None
        and view["by_model"][name]["n_raters"] < 2
    ]
    if few_raters:
        caveats.append(
            _("Fewer than two raters judged %(sources)s: no interval between raters.")
            % {"sources": ", ".join(few_raters)}
        )
    return caveats


def study_answer(
    view: Payload,
    *,
    question: str | None,
    scale: tuple[float, float] | None,
    humor: bool,
    view_label: str,
    warnings: Sequence[Mapping[str, Any]] = (),
    not_evidence: int = 0,
    evidence_only: bool = False,
    exclusions: int = 0,
) -> Answer | None:
    """The answer for one view of the `models` section on the primary `question`, or None when
    there is nothing to compare (one source, or no primary scale question)."""
    if not question:
        return None
    means = {
        name: mean
        for name in (view.get("by_model") or {})
        if (mean := _mean(view, name, question)) is not None
    }
    if len(means) < 2:
        return None
    order = sorted(means, key=lambda name: (-means[name], name))
    statements = [
        statement
        for a, b in _pairs(order)
        if (statement := _statement(view, a, b, question=question, scale=scale, humor=humor))
    ]
    headline = _(
        "On %(question)s (%(view)s; means with items and raters random, 95%% intervals):"
    ) % {"question": labels.question_label(question), "view": view_label}
    return Answer(
        question=question,
        headline=headline,
        statements=statements,
        caveats=_caveats(
            view,
            order,
            warnings=warnings,
            not_evidence=not_evidence,
            evidence_only=evidence_only,
            exclusions=exclusions,
            humor=humor,
        ),
    )
