"""The links researchers copy and hand to raters: one place builds them, for the pages and for
`make demo`'s banner alike, so what is printed is what the pages show."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse

# Prolific fills these in for each participant (its "URL parameters" option).
PROLIFIC_QUERY = (
    "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
)


def public_base(*, request: HttpRequest | None = None, host: str = "", port: int = 0) -> str:
    """`PUBLIC_BASE_URL` when set; else the scheme, host and port of `request`; else (a command
    with no request) `http://host:port`. Never ends in a slash."""
    if settings.PUBLIC_BASE_URL:
        return str(settings.PUBLIC_BASE_URL).rstrip("/")
    if request is not None:
        return request.build_absolute_uri("/").rstrip("/")
    # A server bound to every interface is reached on this machine through the loopback.
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else ("[::1]" if host == "::" else host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def rater_links(*, base: str, slug: str) -> dict[str, str]:
    """The study's rater link, and the same link with Prolific's participant parameters."""
    rater = f"{base}{reverse('raters:entry', args=[slug])}"
    return {"rater": rater, "prolific": f"{rater}?{PROLIFIC_QUERY}"}
