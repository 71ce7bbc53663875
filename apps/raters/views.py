"""Rater pages around the tasks: the study link (consent and enrolment), and the end of a session."""

from __future__ import annotations

from django.conf import settings
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from apps.core.errors import DomainError, SessionExpired
from apps.core.ratelimit import client_address, rate_limit_check
from apps.raters.forms import EnrollForm
from apps.raters.models import RaterSession
from apps.raters.selectors import (
    item_image_for_rater,
    rater_for_request,
    rater_remember,
    rater_session_get,
)
from apps.raters.services import (
    ParticipantInUse,
    StudyFull,
    StudyNotOpen,
    rater_enroll,
    rater_resume,
    rater_session_check_open,
    rater_session_end,
)
from apps.studies.images import image_type
from apps.studies.models import Study
from apps.studies.selectors import study_for_raters

PROLIFIC_KEYS = {"PROLIFIC_PID": "pid", "STUDY_ID": "study_id", "SESSION_ID": "session_id"}


def _prolific_key(study: Study) -> str:
    return f"laughlab:prolific:{study.pk}"


def _prolific(request: HttpRequest, study: Study) -> dict[str, str]:
    """Prolific's URL parameters, merged over those this browser session already holds.

    Kept in the session (`_keep_prolific`) only once the browser may use them: a PID that is
    someone else's is not remembered."""
    stored: dict[str, str] = dict(request.session.get(_prolific_key(study), {}))
    for param, name in PROLIFIC_KEYS.items():
        value = request.GET.get(param, "").strip()
        if value and len(value) <= 64 and value.replace("-", "").replace("_", "").isalnum():
            stored[name] = value
    return stored


def _keep_prolific(request: HttpRequest, study: Study, prolific: dict[str, str]) -> None:
    if prolific and request.session.get(_prolific_key(study)) != prolific:
        request.session[_prolific_key(study)] = prolific


def _in_use(request: HttpRequest, study: Study) -> HttpResponse:
    # Nothing is stored and nothing changes: the participant's own browser goes on as before.
    request.session.pop(_prolific_key(study), None)
    return render(request, "raters/in_use.html", {"study": study}, status=409)


def _unavailable(request: HttpRequest, study: Study, status: int) -> HttpResponse:
    return render(request, "raters/unavailable.html", {"study": study}, status=status)


@require_http_methods(["GET", "POST"])
def study_entry(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_for_raters(slug=slug)
    prolific = _prolific(request, study)
    task_url = reverse("raters:task", args=[study.slug])
    if rater_for_request(request=request, study=study) is not None:
        return HttpResponseRedirect(task_url)
    if prolific.get("pid"):
        # A returning Prolific participant in a new browser resumes their own session, with
        # the SESSION_ID Prolific gave them; a PID alone is not theirs to prove.
        try:
            resumed = rater_resume(
                study=study,
                external_id=prolific["pid"],
                prolific_session_id=prolific.get("session_id", ""),
            )
        except ParticipantInUse:
            return _in_use(request, study)
        if resumed is not None:
            rater_remember(request=request, study=study, rater=resumed.rater)
            _keep_prolific(request, study, prolific)
            return HttpResponseRedirect(task_url)
    _keep_prolific(request, study, prolific)
    if study.status != Study.Status.OPEN:
        return _unavailable(request, study, 409)
    if request.method == "POST" and "decline" in request.POST:
        # Declining stores nothing; a Prolific participant leaves with the study's code for it.
        return render(
            request,
            "raters/declined.html",
            {
                "study": study,
                "no_consent_code": study.prolific_no_consent_code if prolific.get("pid") else "",
            },
        )
    form = EnrollForm(request.POST or None, study=study)
    status = 200
    if request.method == "POST":
        rate_limit_check(
            scope="enroll",
            key=client_address(request.META),
            rate=settings.RATE_LIMIT_ENROLL,
            what=_("enrolment attempts"),
        )
        if form.is_valid():
            try:
                enrollment = rater_enroll(
                    study=study,
                    background=form.cleaned_data["background"],
                    age_band=form.cleaned_data["age_band"],
                    consent=form.cleaned_data["consent"],
                    # The form asks only when the study has several languages.
                    languages=form.cleaned_data.get("languages", []),
                    language=get_language() or "",
                    external_id=prolific.get("pid"),
                    prolific_study_id=prolific.get("study_id", ""),
                    prolific_session_id=prolific.get("session_id", ""),
                    from_prolific=bool(prolific.get("pid")),
                )
            except ParticipantInUse:
                return _in_use(request, study)
            except StudyFull:
                # The screen-out code is Prolific's: only a participant sent by Prolific gets it.
                return render(
                    request,
                    "raters/full.html",
                    {"study": study, "from_prolific": bool(prolific.get("pid"))},
                    status=409,
                )
            except StudyNotOpen:
                return _unavailable(request, study, 409)
            except DomainError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.message)
                status = 400
            else:
                rater_remember(request=request, study=study, rater=enrollment.rater)
                return HttpResponseRedirect(task_url)
        else:
            status = 400
    return render(request, "raters/enroll.html", {"study": study, "form": form}, status=status)


@require_http_methods(["GET", "POST"])
def session_return(request: HttpRequest, slug: str) -> HttpResponse:
    """A Prolific participant returning the study from our side: asked once, then their session
    ends as returned and their place goes back to their group's quota at once."""
    study = study_for_raters(slug=slug)
    rater = rater_for_request(request=request, study=study)
    if rater is None:
        return HttpResponseRedirect(reverse("raters:entry", args=[study.slug]))
    session = rater_session_get(rater=rater)
    end_url = reverse("raters:end", args=[study.slug])
    try:
        rater_session_check_open(session=session)
    except SessionExpired:
        return HttpResponseRedirect(end_url)
    if not rater.from_prolific:
        # Nothing to return anywhere: this page is for Prolific's participants.
        return HttpResponseRedirect(reverse("raters:task", args=[study.slug]))
    if request.method == "POST":
        rater_session_end(session=session, reason=RaterSession.EndReason.RETURNED)
        return HttpResponseRedirect(end_url)
    return render(
        request,
        "raters/return.html",
        {"study": study, "task_url": reverse("raters:task", args=[study.slug])},
    )


@require_http_methods(["GET"])
def item_image(request: HttpRequest, slug: str, name: str) -> HttpResponseBase:
    """A picture of an item this rater has been given (any other, or no rater: 404)."""
    study = study_for_raters(slug=slug)
    rater = rater_for_request(request=request, study=study)
    if rater is None:
        raise Http404("no such picture")
    stored = item_image_for_rater(rater=rater, name=name)
    if stored is None:
        raise Http404("no such picture")
    response = FileResponse(default_storage.open(stored, "rb"), content_type=image_type(stored))
    # The rater's own page asks again for a task's picture; it never changes under its name.
    response["Cache-Control"] = "private, max-age=86400, immutable"
    return response


def session_end(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_for_raters(slug=slug)
    rater = rater_for_request(request=request, study=study)
    if rater is None:
        return HttpResponseRedirect(reverse("raters:entry", args=[study.slug]))
    session = rater_session_get(rater=rater)
    try:
        rater_session_check_open(session=session)
    except SessionExpired:
        pass
    else:
        # A GET changes nothing: a session with time left (and tasks to give) goes on. Sessions
        # end at their deadline, or when the task page has nothing more to hand out.
        return HttpResponseRedirect(reverse("raters:task", args=[study.slug]))
    return render(
        request,
        "raters/end.html",
        {
            "study": study,
            "session": session,
            "timed_out": session.end_reason == RaterSession.EndReason.TIMED_OUT,
            "returned": session.end_reason == RaterSession.EndReason.RETURNED,
            "place_released": rater.place_released_at is not None,
            # Prolific's code and way back, for a rater who came from Prolific only; a returned
            # submission has no code to complete with.
            "completion_code": study.prolific_completion_code
            if rater.from_prolific and session.end_reason != RaterSession.EndReason.RETURNED
            else "",
        },
    )
