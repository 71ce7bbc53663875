"""The task page: shows the rater's current task, exactly as the server chose it.

Nothing here reveals an item's source, model, generation settings or anyone else's answers:
the templates receive only what a rater may see (see `task_view_model`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from apps.assignments.models import Assignment
from apps.assignments.next_step import NextStep, next_step
from apps.core.errors import Busy, SessionExpired
from apps.judgments.models import ScoreResponse
from apps.raters.models import Rater, RaterSession
from apps.raters.selectors import rater_and_session_with_study_for_request, rater_session_get
from apps.raters.services import rater_session_check_open, rater_session_end
from apps.studies import scales
from apps.studies.models import Item, Question, Rubric, Study
from apps.studies.selectors import study_questions

# The self-explanation's verdict: a page of the task flow, though not an assignment kind.
EXPLANATION = "explanation"


def _lang_key() -> str:
    return "zh" if (get_language() or "en").lower().startswith("zh") else "en"


def _text(labels: dict[str, str]) -> str:
    key = _lang_key()
    return labels.get(key) or labels.get("en") or next(iter(labels.values()), "")


def _item_view(item: Item, slug: str) -> dict[str, Any]:
    """The only fields of an item a rater ever sees (a picture by its hash, never its file's
    name, which could say where it came from)."""
    return {
        "text": item.text,
        "lang": item.language,
        "level": item.level,
        "context": item.context,
        "scenario": item.scenario,
        "image": {
            "url": reverse("raters:item_image", args=[slug, item.image.rsplit("/", 1)[-1]]),
            "alt": _text(item.image_alt),
        }
        if item.image
        else None,
    }


def _point_key(question: Question, value: int) -> str:
    """The key that chooses this point (the page shows it and rater.js reads it, so what is
    shown is what works): Y and N on a yes/no question, the point's own digit on a scale (0
    for 10 on a 1-10 scale); "" for a point no single key reaches (its question is then typed,
    see `_question_view`). Two points never share a key, and no key reaches another question:
    keys answer only the highlighted one."""
    if question.kind == Question.Kind.BINARY and value in (0, 1):
        return "y" if value == 1 else "n"
    if question.kind == Question.Kind.CHOICE:
        # Options are counted from 1 on the page, as people count them (stored: the index).
        return str(value + 1) if question.max_value < 9 else ""
    if 0 <= value <= 9:
        return str(value)
    return "0" if value == 10 and question.min_value >= 1 else ""


# Points a row of choices shows at most: wider scales (0-100) get a number field and a slider,
# as sliders do, on phones too.
MAX_POINTS_SHOWN = 11


def _field_view(question: Question, anchors: dict[str, str]) -> dict[str, Any]:
    """A slider, or a scale too wide for a row of points: a number field and a slider that
    follow each other. The slider starts unset (no value is an answer until the rater gives
    one); the ends carry their anchors."""
    step = question.step if question.step is not None else 1.0
    low, high = question.min_value, question.max_value
    return {
        "name": question.name,
        "kind": question.kind,
        "prompt": _text(question.prompt),
        "entry": "field",
        "min": low,
        "max": high,
        "step": f"{step:.17g}",
        "step_text": scales.step_text(step),
        "middle": scales.plain(low + round((high - low) / step / 2) * step),
        "low_label": anchors.get(str(low), ""),
        "high_label": anchors.get(str(high), ""),
        "points": [],
        "not_understood": question.allow_not_understood,
        "required": question.required,
        "after": ",".join(q.name for q in question.answered_after.all()),
    }


def _question_view(question: Question) -> dict[str, Any]:
    anchors = question.anchors.get(_lang_key()) or question.anchors.get("en") or {}
    wide = question.max_value - question.min_value + 1 > MAX_POINTS_SHOWN
    if question.kind == Question.Kind.SLIDER or (
        question.kind == Question.Kind.LIKERT
        and (
            question.entry == Question.Entry.FIELD
            or (wide and question.entry != Question.Entry.POINTS)
        )
    ):
        return _field_view(question, anchors)
    values = range(question.min_value, question.max_value + 1)
    keys = [_point_key(question, value) for value in values]
    # A scale with a point no single key reaches (above 9 or below 0) is answered by typing the
    # whole number: then no point has a key of its own, or "1" would choose 1 on the way to 10
    # and "2" would choose +2 on the way to -2 (rater.js waits for the number to be complete).
    typed = question.kind == Question.Kind.LIKERT and "" in keys
    choices = question.choices if isinstance(question.choices, list) else []
    points = [
        {
            "value": value,
            "label": anchors.get(str(value), ""),
            "key": "" if typed else key,
            # A choice shows its own words in the rater's language, never its index.
            "choice": _text(choices[value])
            if question.kind == Question.Kind.CHOICE and 0 <= value < len(choices)
            else "",
        }
        for value, key in zip(values, keys, strict=True)
    ]
    return {
        "name": question.name,
        "kind": question.kind,
        "prompt": _text(question.prompt),
        "points": points,
        "entry": "typed" if typed else "keys",
        "not_understood": question.allow_not_understood,
        "required": question.required,
        "after": ",".join(q.name for q in question.answered_after.all()),
    }


def task_view_model(
    study: Study, assignment: Assignment, *, questions: bool = True
) -> dict[str, Any]:
    """What a rater sees of a task; `questions=False` leaves out a scorecard's questions, which
    a page showing the next task in place already has (same layout, see `task_layout`)."""
    view: dict[str, Any] = {
        "id": assignment.pk,
        "kind": assignment.kind,
        "position": assignment.position,
        "layout": task_layout(study, assignment.kind),
    }
    if assignment.kind == Assignment.Kind.PAIR:
        assert assignment.right_item is not None
        view["left"] = _item_view(assignment.item, study.slug)
        view["right"] = _item_view(assignment.right_item, study.slug)
        if view["left"]["image"] and view["left"]["image"] == view["right"]["image"]:
            # Two captions for one picture: shown once, above both.
            view["shared_image"] = view["left"]["image"]
            view["left"]["image"] = view["right"]["image"] = None
    else:
        view["item"] = _item_view(assignment.item, study.slug)
    if assignment.kind == Assignment.Kind.SCORECARD and questions:
        view["questions"] = [_question_view(q) for q in study_questions(study=study)]
        view["typed"] = any(q["entry"] == "typed" for q in view["questions"])
        view["field"] = any(q["entry"] == "field" for q in view["questions"])
        view["not_understood"] = any(q["not_understood"] for q in view["questions"])
    return view


def _return_url(study: Study, rater: Rater) -> str:
    # Only a Prolific participant has a submission to return; anyone else just closes the tab.
    return reverse("raters:return", args=[study.slug]) if rater.from_prolific else ""


def _session_context(study: Study, session: RaterSession, done: int) -> dict[str, Any]:
    planned = max(study.tasks_per_session, done)
    return {
        "deadline": session.deadline.isoformat(),
        "server_now": timezone.now().isoformat(),
        "done": done,
        "planned": planned,
        "percent": round(100 * done / planned) if planned else 100,
    }


def _page_title(study: Study, kind: str) -> str:
    if kind == Assignment.Kind.PAIR:
        if study.rubric.kind == Rubric.Kind.HUMOR:
            return _("Which is funnier?")
        return _("Which article is better overall?")
    return {
        Assignment.Kind.SCORECARD: _("Rate this"),
        Assignment.Kind.TURING: _("Who wrote this?"),
        EXPLANATION: _("The writer's explanation"),
    }[kind]


def _task_context(
    study: Study,
    assignment: Assignment,
    session: RaterSession,
    done: int,
    *,
    questions: bool = True,
) -> dict[str, Any]:
    return {
        "study": study,
        "task": task_view_model(study, assignment, questions=questions),
        # The task just given is still open, so it does not change the count read before.
        "session": _session_context(study, session, done),
        "page_title": _page_title(study, assignment.kind),
        "form_template": f"assignments/_form_{assignment.kind}.html",
    }


def _explanation_context(
    study: Study, session: RaterSession, response: ScoreResponse, done: int
) -> dict[str, Any]:
    """The self-explanation's reveal, asked right after its scorecard."""
    return {
        "study": study,
        "response_id": response.pk,
        "item": _item_view(response.item, study.slug),
        "explanation": response.item.explanation,
        "session": _session_context(study, session, done),
        "page_title": _page_title(study, EXPLANATION),
        "form_template": "assignments/_form_explanation.html",
    }


def task_page(request: HttpRequest, slug: str) -> HttpResponse:
    rater, session = rater_and_session_with_study_for_request(request=request, slug=slug)
    study = rater.study
    end_url = reverse("raters:end", args=[study.slug])
    try:
        rater_session_check_open(session=session)
    except SessionExpired:
        return HttpResponseRedirect(end_url)
    if study.status != Study.Status.OPEN:
        # Closed while this rater was in it: what they answered is kept; nothing more is asked.
        rater_session_end(session=session, reason=RaterSession.EndReason.COMPLETED)
        return render(request, "raters/unavailable.html", {"study": study}, status=409)
    step = next_step(rater, session)
    awaiting, assignment, done = step.awaiting, step.assignment, step.done
    if awaiting is not None:
        context = _explanation_context(study, session, awaiting, done)
    elif assignment is None:
        rater_session_end(session=session, reason=RaterSession.EndReason.COMPLETED)
        return HttpResponseRedirect(end_url)
    else:
        context = _task_context(study, assignment, session, done)
    context.update(end_url=end_url, return_url=_return_url(study, rater))
    return render(request, "assignments/task.html", context)


def task_layout(study: Study, kind: str) -> str:
    """What a task page of this kind shows besides its items: two tasks with the same layout
    differ only in their items, so the page can show the next one in place. A scorecard's
    questions change with the rubric, a pair's extra answers with the study's settings."""
    if kind == Assignment.Kind.SCORECARD:
        return f"scorecard:{study.rubric_id}:{study.rubric.updated_at.timestamp():.6f}"
    if kind == Assignment.Kind.PAIR:
        return f"pair:tie={int(study.pair_offers_tie)}:neither={int(study.pair_offers_neither)}"
    return kind


def next_task_in_place(
    request: HttpRequest,
    study: Study,
    rater: Rater,
    layouts: Collection[str] = (),
    session: RaterSession | None = None,
    step: NextStep | None = None,
) -> dict[str, Any] | None:
    """The rater's next task, for the page they are on to show in place of the one just
    answered (the submit's `with_next`), so the next page is not a request of its own.

    Only what the page does not have is rendered: for a task of a layout whose form the page
    has (its own, or one it keeps from an earlier task: `layouts`), its items (`content`); for
    any other (a kind not shown yet, a self-explanation to judge, a changed rubric), the task's
    whole form (`form`); and the progress. None when the next page is no task (the end, a
    closed study, a session over): the page then loads `next` as before, and that page does
    what ends a session. `session`: the rater's, when the caller has read it; `step`: the step
    `next_step_in_transaction` chose in the answer's transaction, else it is chosen here.
    """
    if step is None and study.status != Study.Status.OPEN:
        return None
    session = session or rater_session_get(rater=rater)
    if step is None:
        try:
            rater_session_check_open(session=session)
            step = next_step(rater, session)
        except (SessionExpired, Busy):
            # The answer is stored; the next page asks again, and says so if need be.
            return None
    awaiting, assignment, done = step.awaiting, step.assignment, step.done
    task: dict[str, Any]
    if awaiting is not None:
        context = _explanation_context(study, session, awaiting, done)
        task = {"kind": EXPLANATION, "id": awaiting.pk, "layout": ""}
    elif assignment is None:
        return None
    else:
        next_layout = task_layout(study, assignment.kind)
        in_place = next_layout in layouts
        context = _task_context(study, assignment, session, done, questions=not in_place)
        task = {"kind": assignment.kind, "id": assignment.pk, "layout": next_layout}
        if in_place:
            content = (
                "assignments/_content_pair.html"
                if assignment.kind == Assignment.Kind.PAIR
                else "assignments/_content_item.html"
            )
            task["content"] = render_to_string(content, context, request=request)
    if "content" not in task:
        task["form"] = render_to_string(context["form_template"], context, request=request)
    task["progress"] = render_to_string("assignments/_progress.html", context, request=request)
    return task
