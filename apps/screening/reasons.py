"""Labels of the codes a screening outcome's reason names (apps/core/sentences.py renders the
reason in the reader's language)."""

from __future__ import annotations

from django.utils.translation import gettext as _


def judge_status_label(status: str) -> str:
    """Why the judge gave no score: its verdict's status, or "none" when it has no verdict."""
    from apps.screening.models import JudgeVerdict

    if status == "none":
        return _("no verdict")
    return str(dict(JudgeVerdict.Status.choices).get(status, status))


def intercept_reason_label(reason: str) -> str:
    from apps.generation.models import GenerationOutput

    return str(dict(GenerationOutput.Intercept.choices).get(reason, reason))
