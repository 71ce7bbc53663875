"""The study's navigation for the researcher pages' base template."""

from __future__ import annotations

from typing import Any

from django import template

from apps.dashboard.nav import Group, study_nav

register = template.Library()


@register.simple_tag(takes_context=True)
def study_nav_groups(context: template.Context, study: Any) -> list[Group]:
    request = context.get("request")
    return study_nav(study=study, path=request.path if request is not None else "")
