"""Labels of the screening page's stored codes, in the reader's language."""

from __future__ import annotations

from django import template

from apps.screening.reasons import judge_status_label

register = template.Library()


@register.filter(name="judge_status_label")
def judge_status_label_filter(status: str) -> str:
    return judge_status_label(str(status))
