"""Template context shared by the researcher pages."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

# The results sections, in tab order: (URL key, tab label).
RESULT_SECTIONS = [
    ("models", _("Models")),
    ("leaderboard", _("Leaderboard")),
    ("items", _("Items")),
    ("agreement", _("Agreement")),
    ("turing", _("Turing")),
    ("quality", _("Quality")),
    ("safety", _("Safety")),
]


def dashboard(request: HttpRequest) -> dict[str, object]:
    return {"result_sections": RESULT_SECTIONS}
