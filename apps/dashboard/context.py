"""Template context shared by the researcher pages."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from apps.core.heartbeat import worker_state

# The results sections, in the study's order: (URL key, tab label). Quality (who rated what,
# and how carefully) is read while ratings are collected, so the navigation shows it there.
RESULT_SECTIONS = [
    ("quality", _("Quality")),
    ("models", _("Models")),
    ("leaderboard", _("Leaderboard")),
    ("items", _("Items")),
    ("agreement", _("Agreement")),
    ("turing", _("Turing")),
    ("safety", _("Safety")),
]


def dashboard(request: HttpRequest) -> dict[str, object]:
    context: dict[str, object] = {"result_sections": RESULT_SECTIONS}
    user = getattr(request, "user", None)
    # Researchers only (the rater pages never wait on a worker): one small query per page.
    if user is not None and user.is_authenticated and request.path.startswith("/studies/"):
        context["worker"] = worker_state()
    return context
