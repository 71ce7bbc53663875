"""The rater pages' answer endpoints (JSON, browser session + CSRF). Thin: one service call each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from apps.assignments.next_step import NextStep, next_step_in_transaction
from apps.assignments.views import next_task_in_place
from apps.core.rater_api import RaterAPIView
from apps.core.serializers import ErrorOut, validated
from apps.judgments import serializers
from apps.judgments.submission import (
    AnswerIn,
    SubmitResult,
    early_answers_submit,
    explanation_match_submit,
    pair_judgment_submit,
    score_response_submit,
    turing_judgment_submit,
)
from apps.raters.models import Rater, RaterSession
from apps.raters.selectors import rater_with_study_for_request

_RATER_ERRORS = {
    400: "Invalid answer: `field` names the first bad field (order, range, missing answer).",
    403: "CSRF check failed.",
    404: "This browser is not enrolled in the study, or the task is not this rater's.",
    409: "The task was already answered, the key was used by someone else, or the study closed.",
    410: "The rater's session has ended (time is up); earlier answers are kept.",
    429: "Too many answers in a short time; see Retry-After.",
    503: "The database was briefly unavailable; nothing was saved. Retry with the same key.",
}
ERROR_RESPONSES = {
    code: OpenApiResponse(ErrorOut, description=text) for code, text in _RATER_ERRORS.items()
}
SUBMITTED = {
    201: OpenApiResponse(serializers.SubmitOut, description="Stored; `next` is the page to show."),
    200: OpenApiResponse(
        serializers.SubmitOut, description="A retry: the first result, nothing new stored."
    ),
    **ERROR_RESPONSES,
}


def _next_url(slug: str, result: SubmitResult) -> str:
    # The same page after every answer, whatever the item: a self-explanation, when an item
    # has one, is revealed there, so nothing in the route says which items have one.
    return reverse("raters:task", args=[slug])


def _then(rater: Rater, values: dict[str, Any]) -> Callable[[SubmitResult], NextStep] | None:
    """With `with_next`, the rater's next task is chosen in the answer's own transaction."""
    if not values.get("with_next"):
        return None
    study = rater.study

    def choose(result: SubmitResult) -> NextStep:
        assert result.session is not None  # a new answer's session, as the submission read it
        return next_step_in_transaction(study, rater, result.session)

    return choose


def _out(
    request: Request, slug: str, rater: Rater, values: dict[str, Any], result: SubmitResult
) -> Response:
    body: dict[str, Any] = {
        "kind": result.kind,
        "replayed": result.replayed,
        "next": _next_url(slug, result),
    }
    step = result.following if isinstance(result.following, NextStep) else None
    _with_next(request, rater, values, body, result.session, step)
    return Response(body, status=status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED)


def _with_next(
    request: Request,
    rater: Rater,
    values: dict[str, Any],
    body: dict[str, Any],
    session: RaterSession | None = None,
    step: NextStep | None = None,
) -> None:
    if values.get("with_next"):
        # The step chosen in the answer's transaction, rendered after its commit; or, where
        # none was (a replay, a self-explanation's verdict), the task page's own choice now.
        body["task"] = next_task_in_place(
            request._request,
            rater.study,
            rater,
            {values["layout"], *values["layouts"]},
            session,
            step,
        )


def _rater_and_input(
    request: Request, slug: str, serializer_class: type[Serializer]
) -> tuple[Rater, dict[str, Any]]:
    """Validate the body first (a malformed answer is a 400 whoever sends it), then find the
    browser's rater in this study (404 when this browser is not enrolled in it)."""
    values = validated(serializer_class, request.data)
    rater = rater_with_study_for_request(request=request._request, slug=slug)
    return rater, values


def _answers(values: dict[str, Any]) -> dict[str, AnswerIn]:
    return {
        name: AnswerIn(a.get("value"), a["at_ms"], bool(a.get("not_understood")))
        for name, a in values["answers"].items()
    }


class EarlyAnswersApi(RaterAPIView):
    """The first step of a scorecard: the answers others depend on, before those are open."""

    @extend_schema(
        request=serializers.EarlyAnswersIn,
        responses={200: serializers.EarlyAnswersOut, **ERROR_RESPONSES},
    )
    def post(self, request: Request, slug: str) -> Response:
        rater, values = _rater_and_input(request, slug, serializers.EarlyAnswersIn)
        answers = _answers(values)
        unlocked = early_answers_submit(
            rater=rater,
            assignment_id=values["assignment"],
            answers=answers,
            active_ms=values["active_ms"],
        )
        return Response({"received": sorted(answers), "unlocked": unlocked})


class ScorecardSubmitApi(RaterAPIView):
    @extend_schema(request=serializers.ScorecardIn, responses=SUBMITTED)
    def post(self, request: Request, slug: str) -> Response:
        rater, values = _rater_and_input(request, slug, serializers.ScorecardIn)
        result = score_response_submit(
            rater=rater,
            then=_then(rater, values),
            assignment_id=values["assignment"],
            idempotency_key=values["idempotency_key"],
            answers=_answers(values),
            active_ms=values["active_ms"],
        )
        return _out(request, slug, rater, values, result)


class PairSubmitApi(RaterAPIView):
    @extend_schema(request=serializers.PairIn, responses=SUBMITTED)
    def post(self, request: Request, slug: str) -> Response:
        rater, values = _rater_and_input(request, slug, serializers.PairIn)
        result = pair_judgment_submit(
            rater=rater,
            then=_then(rater, values),
            assignment_id=values["assignment"],
            idempotency_key=values["idempotency_key"],
            winner=values["winner"],
            active_ms=values["active_ms"],
        )
        return _out(request, slug, rater, values, result)


class TuringSubmitApi(RaterAPIView):
    @extend_schema(request=serializers.TuringIn, responses=SUBMITTED)
    def post(self, request: Request, slug: str) -> Response:
        rater, values = _rater_and_input(request, slug, serializers.TuringIn)
        result = turing_judgment_submit(
            rater=rater,
            then=_then(rater, values),
            assignment_id=values["assignment"],
            idempotency_key=values["idempotency_key"],
            guess=values["guess"],
            active_ms=values["active_ms"],
        )
        return _out(request, slug, rater, values, result)


class ExplanationSubmitApi(RaterAPIView):
    @extend_schema(
        request=serializers.ExplanationIn, responses={200: serializers.SubmitOut, **ERROR_RESPONSES}
    )
    def post(self, request: Request, slug: str) -> Response:
        rater, values = _rater_and_input(request, slug, serializers.ExplanationIn)
        answered = explanation_match_submit(
            rater=rater,
            response_id=values["response"],
            verdict=values["verdict"],
        )
        body = {
            "kind": "explanation",
            "replayed": False,
            "next": reverse("raters:task", args=[slug]),
        }
        _with_next(request, rater, values, body, answered.session)
        return Response(body)
