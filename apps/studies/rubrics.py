"""Custom rubrics: a rubric as plain data (the shape of builtin_rubrics), validated and stored.

A rubric spec is what `create_study --rubric FILE.json`, the API and the set-up page take::

    {"slug": "crowd-0-3", "name": "Crowd grade", "kind": "humor",
     "questions": [{"name": "grade", "kind": "likert", "min_value": 0, "max_value": 3,
                    "prompt": {"en": "How funny is it?", "zh": "有多好笑？"},
                    "anchors": {"en": {"0": "Not funny", "3": "Very funny"}},
                    "answered_after": []}]}

`"primary": "grade"` names the question the headline results, the LLM judge, the FunnyScore
calibration and screening follow; without it, funniness, else overall, else the last scale
question. Questions are asked in the order listed; `answered_after` (or `after`, as in builtin_rubrics)
names questions that must be answered first, and the server enforces it. A built-in rubric is
never edited: `rubric_spec` gives its spec to copy, edit and create under a new slug.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from apps.core.errors import Conflict, DomainError
from apps.core.lines import unstorable_path
from apps.studies import scales
from apps.studies.models import Question, Rubric

SCALE_LIMIT = 1000  # |value| of any scale point; the database checks the same bound
MAX_POINTS = 101  # points of one scale (0-100 is the widest)
MAX_QUESTIONS = 30
LANGUAGES = ("en", "zh")
_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_QUESTION_KEYS = {
    "name",
    "kind",
    "min_value",
    "max_value",
    "required",
    "prompt",
    "anchors",
    "choices",
    "answered_after",
    "after",
    "step",
    "not_understood",
    "entry",
}


class RubricInvalid(DomainError):
    code = "rubric_invalid"


def _fail(field: str, message: str) -> RubricInvalid:
    return RubricInvalid(f"{field}: {message}", field=field)


def _integer(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, f"must be an integer, got {value!r}")
    if not -SCALE_LIMIT <= value <= SCALE_LIMIT:
        raise _fail(field, f"must be from {-SCALE_LIMIT} to {SCALE_LIMIT}, got {value}")
    return value


def _texts(value: Any, field: str, *, required: bool) -> dict[str, str]:
    """{"en": ..., "zh": ...}: both languages, neither empty (Chinese is never second-class)."""
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise _fail(field, 'must be an object of texts per language, like {"en": ..., "zh": ...}')
    unknown = sorted(set(value) - set(LANGUAGES))
    if unknown:
        raise _fail(
            f"{field}.{unknown[0]}", f"is not a language of LaughLab ({', '.join(LANGUAGES)})"
        )
    for language in LANGUAGES:
        text = value.get(language)
        if not isinstance(text, str) or not text.strip():
            raise _fail(f"{field}.{language}", "is required, a non-empty text")
    return {language: value[language].strip() for language in LANGUAGES}


def _anchors(value: Any, field: str, low: int, high: int) -> dict[str, dict[str, str]]:
    if value in (None, {}):
        return {}
    if not isinstance(value, dict):
        raise _fail(
            field, 'must be an object per language of labels per point, like {"en": {"0": "No"}}'
        )
    out: dict[str, dict[str, str]] = {}
    for language, labels in value.items():
        where = f"{field}.{language}"
        if language not in LANGUAGES:
            raise _fail(where, f"is not a language of LaughLab ({', '.join(LANGUAGES)})")
        if not isinstance(labels, dict):
            raise _fail(where, "must be an object of labels per scale point")
        out[language] = {}
        for point, label in labels.items():
            try:
                number = int(str(point))
            except ValueError:
                raise _fail(f"{where}.{point}", "is not a scale point (an integer)") from None
            if not low <= number <= high:
                raise _fail(f"{where}.{point}", f"lies outside the scale {low} to {high}")
            if not isinstance(label, str) or not label.strip():
                raise _fail(f"{where}.{point}", "must be a non-empty text")
            out[language][str(number)] = label.strip()
    if out and set(out) != set(LANGUAGES):
        absent = sorted(set(LANGUAGES) - set(out))
        raise _fail(
            f"{field}.{absent[0]}", "is required when anchors are given in another language"
        )
    if out and set(out["en"]) != set(out["zh"]):
        raise _fail(f"{field}.zh", "must label the same scale points as en")
    return out


def _step(raw: dict[str, Any], kind: str, field: str, low: int, high: int) -> float | None:
    """A slider's step: required, positive, dividing the scale into at most
    MAX_SLIDER_POINTS steps; the integer kinds have none."""
    if kind != Question.Kind.SLIDER:
        if raw.get("step") is not None:
            raise _fail(f"{field}.step", "only slider questions have a step")
        return None
    if raw.get("step") is None:
        raise _fail(f"{field}.step", 'a slider needs a step, e.g. 1, 0.01 or "1/32"')
    step = scales.parse_step(raw["step"])
    if step is None:
        raise _fail(
            f"{field}.step",
            f'must be a positive number or a fraction like "1/32", got {raw["step"]!r}',
        )
    points = scales.grid_points(low, high, step)
    if points > scales.MAX_SLIDER_POINTS:
        raise _fail(f"{field}.step", f"a slider has at most {scales.MAX_SLIDER_POINTS} points")
    if scales.off_grid(float(high), float(low), step):
        raise _fail(
            f"{field}.step",
            f"must divide the scale {low} to {high} into whole steps, got {scales.step_text(step)}",
        )
    return step


def _question(raw: Any, index: int, earlier: dict[str, int]) -> dict[str, Any]:
    field = f"questions[{index}]"
    if not isinstance(raw, dict):
        raise _fail(field, "must be an object")
    unknown = sorted(set(raw) - _QUESTION_KEYS)
    if unknown:
        raise _fail(f"{field}.{unknown[0]}", "is not a question field")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise _fail(
            f"{field}.name",
            "must be a key of lowercase letters, digits and underscores, starting with a letter",
        )
    if name in earlier:
        raise _fail(f"{field}.name", f"repeats question {name!r}")
    kind = raw.get("kind", Question.Kind.LIKERT)
    if kind not in Question.Kind.values:
        raise _fail(
            f"{field}.kind", f"must be one of {', '.join(Question.Kind.values)}, got {kind!r}"
        )
    choices: list[dict[str, str]] = []
    if kind == Question.Kind.BINARY:
        low = _integer(raw.get("min_value", 0), f"{field}.min_value")
        high = _integer(raw.get("max_value", 1), f"{field}.max_value")
        if high - low != 1:
            raise _fail(f"{field}.max_value", "a binary question has two points (max = min + 1)")
    elif kind == Question.Kind.CHOICE:
        options = raw.get("choices")
        if not isinstance(options, list) or len(options) < 2:
            raise _fail(f"{field}.choices", "a choice question needs at least two choices")
        choices = [
            _texts(option, f"{field}.choices[{k}]", required=True)
            for k, option in enumerate(options)
        ]
        low, high = 0, len(choices) - 1
    else:
        if "min_value" not in raw or "max_value" not in raw:
            missing = "min_value" if "min_value" not in raw else "max_value"
            raise _fail(
                f"{field}.{missing}", f"is required for a {kind} question (the scale's ends)"
            )
        low = _integer(raw["min_value"], f"{field}.min_value")
        high = _integer(raw["max_value"], f"{field}.max_value")
    if kind != Question.Kind.CHOICE and raw.get("choices"):
        raise _fail(f"{field}.choices", "only choice questions have choices")
    if not low < high:
        raise _fail(f"{field}.max_value", f"must be greater than min_value ({low}), got {high}")
    step = _step(raw, kind, field, low, high)
    if step is None and high - low + 1 > MAX_POINTS:
        raise _fail(f"{field}.max_value", f"a scale has at most {MAX_POINTS} points")
    required = raw.get("required", True)
    if not isinstance(required, bool):
        raise _fail(f"{field}.required", "must be true or false")
    entry = raw.get("entry", "")
    if entry not in Question.Entry.values:
        raise _fail(
            f"{field}.entry", 'must be "points" or "field" (or left out), got ' + repr(entry)
        )
    if entry and kind != Question.Kind.LIKERT:
        raise _fail(f"{field}.entry", "only a likert question chooses between points and a field")
    not_understood = raw.get("not_understood", False)
    if not isinstance(not_understood, bool):
        raise _fail(f"{field}.not_understood", "must be true or false")
    if not_understood and kind == Question.Kind.BINARY:
        raise _fail(
            f"{field}.not_understood",
            'a yes-or-no flag does not offer "I don\'t get it" (offer it on a scale or choice)',
        )
    after = raw.get("answered_after", raw.get("after", []))
    if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
        raise _fail(f"{field}.answered_after", "must be a list of question names")
    for other in after:
        if other == name:
            raise _fail(f"{field}.answered_after", "a question cannot come after itself")
        if other not in earlier:
            raise _fail(
                f"{field}.answered_after",
                f"names {other!r}, which is not a question listed before this one",
            )
    return {
        "name": name,
        "kind": kind,
        "min_value": low,
        "max_value": high,
        "step": step,
        "required": required,
        "allow_not_understood": not_understood,
        "entry": entry,
        "prompt": _texts(raw.get("prompt"), f"{field}.prompt", required=True),
        "anchors": _anchors(raw.get("anchors"), f"{field}.anchors", low, high),
        "choices": choices,
        "answered_after": sorted(set(after), key=lambda other: earlier[other]),
    }


def rubric_spec_validate(spec: Any) -> dict[str, Any]:
    """The spec, checked and normalised; RubricInvalid names the first field that is wrong."""
    if not isinstance(spec, dict):
        raise _fail("(rubric)", "must be a JSON object with slug, name and questions")
    # PostgreSQL refuses NUL and lone surrogates in text: refuse them here, naming the field,
    # instead of failing at the insert.
    unstorable = unstorable_path(spec)
    if unstorable is not None:
        raise _fail(*unstorable)
    unknown = sorted(set(spec) - {"slug", "name", "kind", "questions", "builtin", "primary"})
    if unknown:
        raise _fail(unknown[0], "is not a rubric field")
    slug = spec.get("slug")
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise _fail(
            "slug", "must be lowercase letters, digits, hyphens or underscores (at most 64)"
        )
    name = spec.get("name", slug)
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise _fail("name", "must be a non-empty text of at most 200 characters")
    kind = spec.get("kind", Rubric.Kind.HUMOR)
    if kind not in Rubric.Kind.values:
        raise _fail("kind", f"must be one of {', '.join(Rubric.Kind.values)}, got {kind!r}")
    questions = spec.get("questions")
    if not isinstance(questions, list) or not questions:
        raise _fail("questions", "must be a non-empty list of questions")
    if len(questions) > MAX_QUESTIONS:
        raise _fail("questions", f"a rubric has at most {MAX_QUESTIONS} questions")
    earlier: dict[str, int] = {}
    checked = []
    for index, raw in enumerate(questions):
        question = _question(raw, index, earlier)
        earlier[question["name"]] = index
        checked.append(question)
    # The order rule holds a dependent question until its prerequisites' values arrived: a
    # prerequisite must be answered with a value, so it cannot offer "I don't get it".
    for question in checked:
        for other in question["answered_after"]:
            if checked[earlier[other]]["allow_not_understood"]:
                raise _fail(
                    f"questions[{earlier[other]}].not_understood",
                    f"{other!r} is answered before {question['name']!r}, so it needs a "
                    'value; offer "I don\'t get it" on questions nothing depends on',
                )
    return {
        "slug": slug,
        "name": name.strip(),
        "kind": kind,
        "primary": _primary(spec.get("primary"), checked),
        "questions": checked,
    }


# Kinds whose answers are points on a scale, so a mean of them is a headline number.
PRIMARY_KINDS = (Question.Kind.LIKERT, Question.Kind.SLIDER)
_DEFAULT_PRIMARY = ("funniness", "overall")


def primary_question_default(questions: list[tuple[str, str]]) -> str:
    """The primary question of a rubric that names none, from its (name, kind) pairs in order:
    funniness, else overall, else the last scale question (a rubric asks its analytic questions
    first); "" when it has no scale question."""
    scales = [name for name, kind in questions if kind in PRIMARY_KINDS]
    for name in _DEFAULT_PRIMARY:
        if name in scales:
            return name
    return scales[-1] if scales else ""


def _primary(value: Any, questions: list[dict[str, Any]]) -> str:
    kinds = {question["name"]: question["kind"] for question in questions}
    if value is None:
        return primary_question_default([(q["name"], q["kind"]) for q in questions])
    if not isinstance(value, str) or value not in kinds:
        raise _fail("primary", f"must name one of the rubric's questions, got {value!r}")
    if kinds[value] not in PRIMARY_KINDS:
        raise _fail(
            "primary",
            f"{value!r} is a {kinds[value]} question; the primary question is a scale "
            "(its mean is the headline result)",
        )
    return value


@transaction.atomic
def rubric_create(*, spec: Any) -> Rubric:
    """Store a custom rubric from its spec (rubric_spec_validate's rules)."""
    clean = rubric_spec_validate(spec)
    if Rubric.objects.filter(slug=clean["slug"]).exists():
        raise Conflict(
            f"a rubric with slug {clean['slug']!r} already exists; choose another slug",
            field="rubric",
        )
    rubric = Rubric.objects.create(
        slug=clean["slug"],
        name=clean["name"],
        kind=clean["kind"],
        builtin=False,
        primary_question=clean["primary"],
    )
    by_name: dict[str, Question] = {}
    for position, question in enumerate(clean["questions"], start=1):
        by_name[question["name"]] = Question.objects.create(
            rubric=rubric,
            position=position,
            **{key: value for key, value in question.items() if key != "answered_after"},
        )
    for question in clean["questions"]:
        if question["answered_after"]:
            by_name[question["name"]].answered_after.set(
                [by_name[other] for other in question["answered_after"]]
            )
    return rubric


def rubric_spec(rubric: Rubric) -> dict[str, Any]:
    """A stored rubric as a spec: what to copy, edit and create again under a new slug."""
    questions = list(rubric.questions.order_by("position").prefetch_related("answered_after"))
    return {
        "slug": rubric.slug,
        "name": rubric.name,
        "kind": rubric.kind,
        "builtin": rubric.builtin,
        "primary": rubric.primary_question,
        "questions": [
            {
                "name": q.name,
                "kind": q.kind,
                "min_value": q.min_value,
                "max_value": q.max_value,
                **({"step": q.step} if q.step is not None else {}),
                **({"not_understood": True} if q.allow_not_understood else {}),
                **({"entry": q.entry} if q.entry else {}),
                "required": q.required,
                "prompt": q.prompt,
                "anchors": q.anchors,
                "choices": q.choices,
                "answered_after": [
                    other.name for other in sorted(q.answered_after.all(), key=lambda o: o.position)
                ],
            }
            for q in questions
        ],
    }
