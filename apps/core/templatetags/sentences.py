"""`{{ stored|sentence:fallback }}`: a sentence stored as an id and parameters, in the reader's
language (apps/core/sentences.py); the stored English text for rows that have no id."""

from __future__ import annotations

from typing import Any

from django import template

from apps.core.sentences import stored_text

register = template.Library()


@register.filter
def sentence(stored: Any, fallback: Any = "") -> str:
    return stored_text(stored, fallback)
