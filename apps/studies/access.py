"""Who may open a researcher page: logged-in admins, and researchers of that study.

Anonymous visitors are sent to the login page; a logged-in user who is not a member of the study
gets 404 (never 403), so study slugs leak nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse

from apps.studies.models import Study
from apps.studies.selectors import study_get_for_user

StudyView = Callable[..., HttpResponse]


def study_view(view: StudyView) -> Callable[..., HttpResponse]:
    """Decorate `view(request, study, **kwargs)`; the URL passes `slug`."""

    @functools.wraps(view)
    @login_required
    def wrapper(request: HttpRequest, slug: str, **kwargs: Any) -> HttpResponse:
        study: Study = study_get_for_user(user=request.user, slug=slug)
        return view(request, study, **kwargs)

    return wrapper
