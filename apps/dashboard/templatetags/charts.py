"""Formatting for the results pages: `{% load charts %}`.

The pages show the stored numbers through these filters only, so a test can format a payload
value with the same function (`apps.dashboard.charts.fmt*`) and find it on the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.translation import gettext as _

from apps.dashboard import charts
from apps.studies.models import Item

register = template.Library()


@register.filter
def num(value: float | None, digits: int = 2) -> str:
    return charts.fmt(value, int(digits))


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
    try:
        return str(Item.Level(level).label)
    except ValueError:
        return level


def _flag_labels() -> dict[str, str]:
    return {
        "culture_dependent": _("culture-dependent"),
        "controversial": _("controversial"),
        "offensive": _("offensive"),
        "safety_intercepted": _("safety-intercepted"),
        "too_few_raters": _("too few raters"),
    }


@register.filter
def flag_label(flag: str) -> str:
    return _flag_labels().get(flag, flag)


@register.filter
def verdict_label(verdict: str | None) -> str:
    labels = {
        "passes": _("passes (reads as human)"),
        "detectable": _("detectable (reads as machine-made)"),
        "inconclusive": _("inconclusive"),
    }
    return labels.get(verdict or "", verdict or "—")
