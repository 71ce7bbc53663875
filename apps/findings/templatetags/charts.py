"""Formatting for the results pages: `{% load charts %}`.

The pages show the stored numbers through these filters only, so a test can format a payload
value with the same function (`apps.findings.charts.fmt*`) and find it on the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.findings import charts
from apps.studies import languages

register = template.Library()


@register.filter
def num(value: float | None, digits: int = 2) -> str:
    return charts.fmt(value, int(digits))


@register.filter
def p_value(value: float | None) -> str:
    """A p-value, "< 0.001" below that."""
    return charts.fmt_p(value)


@register.filter
def p_stated(value: float | None) -> str:
    """ "p = 0.023" or "p < 0.001"."""
    return charts.fmt_p_stated(value)


@register.filter
def pct(value: float | None, digits: int = 1) -> str:
    return charts.fmt_pct(value, int(digits))


@register.filter
def ci(interval: Mapping[str, Any] | None, digits: int = 2) -> str:
    """A stored interval as "value [low, high]"."""
    return charts.fmt_ci(interval, int(digits))


@register.filter
def ci_pct(interval: Mapping[str, Any] | None, digits: int = 1) -> str:
    """A stored proportion interval as "74.4% [64.0%, 83.8%]"."""
    return charts.fmt_ci(interval, int(digits), pct=True)


@register.filter
def get(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """`mapping|get:key` for a key held in a variable."""
    if not mapping:
        return None
    return mapping.get(key)


@register.filter
def level_label(level: str) -> str:
    """A test level's label ("multi_turn" -> "Multi-turn reply"); unknown codes as they are."""
    return labels.level_label(level)


@register.filter
def language_label(code: str) -> str:
    """An item language's name in the page's language ("zh" -> "Chinese"); unknown as it is."""
    return languages.name(code or "")


@register.filter
def flag_label(flag: str) -> str:
    return labels.flag_label(flag)


@register.filter
def question_label(name: str) -> str:
    return labels.question_label(str(name))


@register.filter
def humor_type_label(code: str) -> str:
    return labels.humor_type_label(str(code))


@register.filter
def content_type_label(code: str) -> str:
    return labels.content_type_label(str(code))


@register.filter
def background_label(code: str) -> str:
    return labels.background_label(str(code))


@register.filter
def measure_label(measure: str) -> str:
    return labels.measure_label(str(measure))


@register.filter
def metric_label(name: str) -> str:
    return labels.metric_label(str(name))


@register.filter
def l1_kind_label(kind: str) -> str:
    return labels.l1_kind_label(str(kind))


@register.filter
def source_label(name: str) -> str:
    return labels.source_label(str(name))


@register.filter
def tier_label(label: str) -> str:
    return labels.tier_label(str(label))


@register.filter
def offense_category_label(category: str) -> str:
    return labels.offense_category_label(str(category))


@register.filter
def scope_label(scope: str) -> str:
    return labels.scope_label(str(scope))


@register.filter
def group_label(name: str, dimension: str) -> str:
    return labels.group_label(str(name), str(dimension))


@register.filter
def verdict_label(verdict: str | None) -> str:
    labels = {
        "passes": _("passes (raters do no better than chance)"),
        "above_chance": _("told apart above chance, below the detectability line"),
        "detectable": _("detectable (reads as machine-made)"),
        "inconclusive": _("inconclusive"),
        # One model's verdicts, from its judged-human rate against the human-written items'.
        "as_human": _("passes (judged human as often as the human-written items)"),
        "more_human": _("judged human more often than the human-written items"),
        "told_apart": _("told apart from the human-written items, below the detectability line"),
    }
    return labels.get(verdict or "", verdict or "—")


@register.filter
def exclusion_target_label(target: str) -> str:
    return labels.exclusion_target_label(str(target or ""))


@register.filter
def exclusion_rule_label(rule: str) -> str:
    return labels.exclusion_rule_label(str(rule or ""))


@register.filter
def primary_label(study: Any) -> str:
    """The name of the question a study's headline numbers follow, in the page's language
    (the humor scorecard's "funniness" -> "好笑程度")."""
    return labels.question_label(study.rubric.primary_question)
