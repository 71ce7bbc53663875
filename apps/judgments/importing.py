"""Validation of judgment lines (the `import_judgments` interchange format of DESIGN.md).

Each line becomes a typed row or LineErrors naming the line and field. Checks that need only the
file and the study's definitions (items, questions, background groups) happen here; the service
then compares the rows with what is already stored.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from apps.core.errors import LineError
from apps.core.fields import LineFields, meta_of
from apps.core.lines import Record
from apps.core.sentences import Sentence
from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import UNKNOWN_BACKGROUND, AgeBand
from apps.studies import scales

COMMON_FIELDS = frozenset(
    {
        "kind",
        "rater",
        "background",
        "age_band",
        "seconds_into_session",
        "submitted_at",
        "active_seconds",
        "meta",
    }
)
KINDS = ("score", "pair", "turing")
# Cells of these columns hold JSON in CSV files.
JUDGMENT_JSON_COLUMNS = frozenset({"meta"})
PAIR_FIELDS = COMMON_FIELDS | {"left", "right", "winner", "outcome"}
TURING_FIELDS = COMMON_FIELDS | {"item", "guess"}
# Choices read once (a TextChoices' `values` is rebuilt on every access).
_AGE_BANDS = frozenset(AgeBand.values)
_EXPLANATION_MATCHES = frozenset(c for c in ScoreResponse.ExplanationMatch.values if c)
_GUESSES = frozenset(TuringJudgment.Guess.values)
_PAIR_OUTCOMES = frozenset(PairJudgment.Outcome.values)
# The longest ids a line may give: those their columns store.
_ID_LENGTH = 128  # a rater's or an item's external id
_GROUP_LENGTH = 64  # a background group's code
# What a plain scorecard line holds besides its answers (`_plain_scores`).
_PLAIN_FIELDS = frozenset({"kind", "rater", "background", "item"})
# Lines read at a time by `_plain_scores`.
PLAIN_BATCH = 1_000


@dataclass(frozen=True)
class QuestionSpec:
    name: str
    min_value: int
    max_value: int
    kind: str = "likert"
    step: float | None = None  # a slider's grid; None for the integer kinds
    not_understood: bool = False  # the question offers "I don't get it"


@dataclass(frozen=True)
class ImportContext:
    """What a line may refer to: the study's questions, items and background groups."""

    questions: dict[str, QuestionSpec]
    items_with_explanation: dict[str, bool]  # external id -> has an explanation
    backgrounds: frozenset[str]
    # The fields a scorecard line may carry (built once, not per line).
    score_fields: frozenset[str] = field(init=False)
    # Every field some kind of line takes: on a line of another kind it is an error, never
    # metadata, so a CSV file mixing kinds cannot slip a guess or a winner into a scorecard's meta.
    judgment_fields: frozenset[str] = field(init=False)
    # The fields of a plain scorecard line (`_plain_scores`); empty when a question's name is
    # also a field's, which only the line-by-line reading sorts out.
    plain_score_fields: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        allowed = COMMON_FIELDS | {"item", "explanation_match"} | set(self.questions)
        object.__setattr__(self, "score_fields", allowed)
        object.__setattr__(self, "judgment_fields", allowed | PAIR_FIELDS | TURING_FIELDS)
        plain = frozenset(_PLAIN_FIELDS | set(self.questions))
        clash = set(self.questions) & (COMMON_FIELDS | PAIR_FIELDS | TURING_FIELDS | {"item"})
        object.__setattr__(self, "plain_score_fields", frozenset() if clash else plain)

    def fields_of(self, kind: str) -> frozenset[str]:
        if kind == "score":
            return self.score_fields
        return PAIR_FIELDS if kind == "pair" else TURING_FIELDS


# The rows and their headers are named tuples: one of each per line of a million-line file, and
# a frozen dataclass took 1.2 us to make a header (each field set through object.__setattr__),
# a named tuple 0.36 us. They are as immutable, and compared and hashed by their fields alike.
class Header(NamedTuple):
    line: int
    rater: str
    background: str | None  # None: "unknown"
    age_band: str | None
    seconds_into_session: float | None
    active_seconds: float | None
    submitted_at: datetime | None
    meta: dict[str, Any] | None = None


def widen_bounds(bounds: dict[str, tuple[datetime, datetime]], header: Header) -> None:
    """Widen the header's rater's (earliest start, latest line) in `bounds` by a dated line:
    its start is its time less its seconds into the session. An undated line changes nothing."""
    submitted = header.submitted_at
    if submitted is None:
        return
    start = submitted - timedelta(seconds=header.seconds_into_session or 0.0)
    known = bounds.get(header.rater)
    bounds[header.rater] = (
        (start, submitted) if known is None else (min(known[0], start), max(known[1], submitted))
    )


class ScoreRow(NamedTuple):
    header: Header
    item: str
    # (question, value) in the rubric's order: a tuple, not a dict, to keep a million rows small.
    # None for "I don't get it" (NOT_UNDERSTOOD in the file), on a question that offers it.
    answers: tuple[tuple[str, float | None], ...]
    explanation_match: str = ""

    @property
    def key(self) -> tuple[str, ...]:
        return ("score", self.header.rater, self.item)


class PairRow(NamedTuple):
    header: Header
    left: str
    right: str
    # "left" | "right" | "tie" | "neither"; winner is the chosen item, "" for a tie or neither.
    outcome: str
    winner: str

    @property
    def key(self) -> tuple[str, ...]:
        low, high = sorted((self.left, self.right))
        return ("pair", self.header.rater, low, high)


class TuringRow(NamedTuple):
    header: Header
    item: str
    guess: str

    @property
    def key(self) -> tuple[str, ...]:
        return ("turing", self.header.rater, self.item)


Row = ScoreRow | PairRow | TuringRow


@dataclass
class ParsedJudgments:
    rows: list[Row] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    # rater external id -> (background or None when unknown, age band or None), from the first
    # line naming the rater
    raters: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)


def _item_ref(fields: LineFields, name: str, context: ImportContext) -> str | None:
    value = fields.string(name, required=True, max_length=_ID_LENGTH)
    if value is not None and value not in context.items_with_explanation:
        fields.error(
            name, gettext_noop("names item %(item)s, which is not in this study"), item=repr(value)
        )
        return None
    return value


def _meta(fields: LineFields, kind: str, context: ImportContext) -> dict[str, Any] | None:
    """The line's metadata, read as an item's (apps.core.fields.meta_of): a `meta` object (a
    JSON cell in a CSV file), `meta.KEY` fields, and a CSV file's extra columns."""
    allowed = context.fields_of(kind)
    for name in fields.record.fields:
        if name not in allowed and name in context.judgment_fields:
            fields.error(name, gettext_noop("is not a field of a %(kind)s line"), kind=kind)
    return meta_of(fields, context.judgment_fields)


def _header(
    fields: LineFields, context: ImportContext, meta: dict[str, Any] | None
) -> Header | None:
    rater = fields.string("rater", required=True, max_length=_ID_LENGTH)
    background = fields.string("background", required=True, max_length=_GROUP_LENGTH)
    if (
        background is not None
        and background not in context.backgrounds
        and background != UNKNOWN_BACKGROUND
    ):
        fields.error(
            "background",
            gettext_noop("%(value)s is not a background group of this study (%(groups)s)"),
            value=repr(background),
            groups=", ".join([*sorted(context.backgrounds), UNKNOWN_BACKGROUND]),
        )
    age_band = fields.choice("age_band", _AGE_BANDS) if fields.has("age_band") else None
    seconds = fields.number("seconds_into_session", minimum=0)
    active = fields.number("active_seconds", minimum=0)
    submitted_at = fields.timestamp("submitted_at")
    if not fields.ok or rater is None or background is None or meta is None:
        return None
    return Header(
        fields.record.line,
        rater,
        None if background == UNKNOWN_BACKGROUND else background,
        age_band or None,
        seconds,
        active,
        submitted_at,
        meta or None,
    )


# A cell that says "I don't get it" (the raw export writes the same).
NOT_UNDERSTOOD = "not_understood"


class _Absent:
    """The line leaves the question out (distinct from "I don't get it", which is None)."""


ABSENT = _Absent()


def _answer(fields: LineFields, spec: QuestionSpec) -> float | _Absent | None:
    """An answer to a rubric question: a point of its scale (scales.problem's rule, the same for
    the rater's page and the API); None for "not_understood" where the question offers it;
    ABSENT (and no error) when the line leaves it out."""
    name, low, high = spec.name, spec.min_value, spec.max_value
    value = fields.record.fields.get(name)
    if value is None:
        return ABSENT
    if isinstance(value, str) and value.strip().lower() == NOT_UNDERSTOOD:
        if spec.not_understood:
            return None
        fields.error(name, f'does not offer "I don\'t get it" ({NOT_UNDERSTOOD}): give a value')
        return ABSENT
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            fields.error(name, _expected(spec, value))
            return ABSENT
    if isinstance(value, bool) or not isinstance(value, int | float):
        fields.error(name, _expected(spec, value))
        return ABSENT
    wrong = scales.problem_sentence(
        kind=spec.kind, low=low, high=high, step=spec.step, value=float(value)
    )
    if wrong is not None:
        fields.error(name, wrong)
        return ABSENT
    return float(value)


def _expected(spec: QuestionSpec, value: object) -> Sentence:
    """What an answer to `spec` must be, for a value that is not a number at all."""
    low, high, shown = spec.min_value, spec.max_value, repr(value)
    if spec.step is not None:
        return Sentence(
            gettext_noop(
                "must be a number from %(low)s to %(high)s in steps of %(step)s, got %(value)s"
            ),
            {"low": low, "high": high, "step": scales.step_text(spec.step), "value": shown},
        )
    return Sentence(
        gettext_noop("must be an integer from %(low)s to %(high)s, got %(value)s"),
        {"low": low, "high": high, "value": shown},
    )


def _score(fields: LineFields, header: Header, context: ImportContext) -> ScoreRow | None:
    item = _item_ref(fields, "item", context)
    answers: list[tuple[str, float | None]] = []
    for name, spec in context.questions.items():
        value = _answer(fields, spec)
        if not isinstance(value, _Absent):
            answers.append((name, value))
    if fields.ok and not answers:
        fields.error(
            "(line)",
            gettext_noop("answers none of the questions (%(questions)s)"),
            questions=", ".join(context.questions),
        )
    match = fields.choice("explanation_match", _EXPLANATION_MATCHES)
    if match and item is not None and not context.items_with_explanation.get(item):
        fields.error(
            "explanation_match",
            gettext_noop("item %(item)s has no explanation to judge"),
            item=repr(item),
        )
    if not fields.ok or item is None:
        return None
    return ScoreRow(header, item, tuple(answers), match or "")


def _pair(fields: LineFields, header: Header, context: ImportContext) -> PairRow | None:
    """A pair line: `winner` names the chosen item; `outcome` (optional) says which side, or
    "tie" / "neither", in which case there is no winner. Either may be left out when the other
    says it all; when both are given they must agree."""
    left = _item_ref(fields, "left", context)
    right = _item_ref(fields, "right", context)
    outcome = fields.choice("outcome", _PAIR_OUTCOMES)
    undecided = outcome in (PairJudgment.Outcome.TIE, PairJudgment.Outcome.NEITHER)
    winner = fields.string("winner", required=outcome == "", max_length=_ID_LENGTH)
    if left is not None and left == right:
        fields.error("right", gettext_noop("must differ from left"))
    if winner and undecided:
        fields.error(
            "winner",
            gettext_noop("must be empty when the outcome is %(outcome)s, got %(value)s"),
            outcome=repr(outcome),
            value=repr(winner),
        )
    elif winner and left is not None and right is not None:
        if winner not in (left, right):
            fields.error(
                "winner",
                gettext_noop(
                    "must be the left (%(left)s) or the right (%(right)s) item, got %(value)s"
                ),
                left=repr(left),
                right=repr(right),
                value=repr(winner),
            )
        elif outcome and winner != (left if outcome == PairJudgment.Outcome.LEFT else right):
            fields.error(
                "winner",
                gettext_noop("is the left item, but the outcome says %(outcome)s")
                if winner == left
                else gettext_noop("is the right item, but the outcome says %(outcome)s"),
                outcome=repr(outcome),
            )
    if not fields.ok or left is None or right is None or winner is None or outcome is None:
        return None
    if not outcome:
        outcome = PairJudgment.Outcome.LEFT if winner == left else PairJudgment.Outcome.RIGHT
    elif not undecided:
        winner = left if outcome == PairJudgment.Outcome.LEFT else right
    return PairRow(header, left, right, outcome, winner)


def _turing(fields: LineFields, header: Header, context: ImportContext) -> TuringRow | None:
    item = _item_ref(fields, "item", context)
    guess = fields.choice("guess", _GUESSES, required=True)
    if not fields.ok or item is None or guess is None:
        return None
    return TuringRow(header, item, guess)


def parse_judgments(
    records: Iterable[Record | LineError],
    context: ImportContext,
    *,
    plain_lane: bool = True,
    each_batch: Callable[[ParsedJudgments], None] | None = None,
) -> ParsedJudgments:
    """Every line's row, or its errors. Lines are taken a batch at a time: a batch of plain
    scorecard lines is read column by column (`_plain_scores`), any other line by line, with
    the same rows, errors and raters either way (`plain_lane=False` reads every line by line,
    as the tests compare). `each_batch` is shown what has been read after each batch (rows and
    errors are only ever appended)."""
    parsed = ParsedJudgments()
    first_line: dict[tuple[str, ...], int] = {}
    iterator = iter(records)
    while batch := list(itertools.islice(iterator, PLAIN_BATCH)):
        if not (plain_lane and _plain_scores(batch, context, parsed, first_line)):
            for record in batch:
                _parse_line(record, context, parsed, first_line)
        if each_batch is not None:
            each_batch(parsed)
    return parsed


def _plain_scores(
    batch: list[Record | LineError],
    context: ImportContext,
    parsed: ParsedJudgments,
    first_line: dict[tuple[str, ...], int],
) -> bool:
    """Add a batch of plain scorecard lines to `parsed`, or nothing (False) if any line of it
    is not one.

    A plain line is a JSON line with only a kind ("score"), a rater, a background, an item and
    answers given as numbers, every one of them valid: the shape of a large crowd file, nearly
    every line of which is plain. Each value is checked as `_parse_line` checks it (each
    distinct answer once), and the rows are those it builds; any doubt (another field, a
    string to convert, a problem, a repeat, a rater's background changing) leaves the whole
    batch to `_parse_line`, so every error is found and worded by one reading.
    """
    allowed = context.plain_score_fields
    if not allowed:
        return False
    questions = list(context.questions.values())
    backgrounds = context.backgrounds
    items = context.items_with_explanation
    raters = parsed.raters
    answers_ok: dict[tuple[str, type, float], bool] = {}
    rows: list[Row] = []
    new_raters: dict[str, tuple[str | None, str | None]] = {}
    keys: dict[tuple[str, ...], int] = {}
    for record in batch:
        if not isinstance(record, Record) or record.from_csv:
            return False
        values = record.fields
        if not values.keys() <= allowed or values.get("kind") != "score":
            return False
        rater, background, item = values.get("rater"), values.get("background"), values.get("item")
        if type(rater) is not str or type(background) is not str or type(item) is not str:
            return False
        rater, background, item = rater.strip(), background.strip(), item.strip()
        if not (
            0 < len(rater) <= _ID_LENGTH
            and 0 < len(background) <= _GROUP_LENGTH
            and 0 < len(item) <= _ID_LENGTH
        ):
            return False
        if item not in items:
            return False
        if background == UNKNOWN_BACKGROUND:
            group = None
        elif background in backgrounds:
            group = background
        else:
            return False
        answers: list[tuple[str, float | None]] = []
        for spec in questions:
            value = values.get(spec.name)
            if value is None:
                continue
            kind = type(value)
            if kind is not int and kind is not float:
                return False
            seen = (spec.name, kind, value)
            valid = answers_ok.get(seen)
            if valid is None:
                valid = answers_ok[seen] = (
                    scales.problem_sentence(
                        kind=spec.kind,
                        low=spec.min_value,
                        high=spec.max_value,
                        step=spec.step,
                        value=float(value),
                    )
                    is None
                )
            if not valid:
                return False
            answers.append((spec.name, float(value)))
        if not answers:
            return False
        known = raters.get(rater) or new_raters.get(rater)
        if known is None:
            new_raters[rater] = (group, None)
        elif known[0] != group:
            return False
        key = ("score", rater, item)
        if key in first_line or key in keys:
            return False
        keys[key] = record.line
        header = Header(record.line, rater, group, None, None, None, None, None)
        rows.append(ScoreRow(header, item, tuple(answers), ""))
    parsed.rows.extend(rows)
    raters.update(new_raters)
    first_line.update(keys)
    return True


def _parse_line(
    record: Record | LineError,
    context: ImportContext,
    parsed: ParsedJudgments,
    first_line: dict[tuple[str, ...], int],
) -> None:
    """One line's row into `parsed.rows`, or its errors into `parsed.errors`."""
    if isinstance(record, LineError):
        parsed.errors.append(record)
        return
    fields = LineFields(record, parsed.errors)
    kind = fields.choice("kind", KINDS, required=True)
    # Without a kind the line's own fields are unknown, so nothing is read as metadata.
    meta = _meta(fields, kind, context) if kind is not None else {}
    header = _header(fields, context, meta)
    if kind is None or header is None:
        return
    row: Row | None
    if kind == "score":
        row = _score(fields, header, context)
    elif kind == "pair":
        row = _pair(fields, header, context)
    else:
        row = _turing(fields, header, context)
    if row is None:
        return
    known = parsed.raters.get(header.rater)
    if known is None:
        parsed.raters[header.rater] = (header.background, header.age_band)
    elif known[0] != header.background:
        fields.error(
            "background",
            gettext_noop("rater %(rater)s was given background %(value)s earlier in the file"),
            rater=repr(header.rater),
            value=repr(known[0]),
        )
        return
    elif header.age_band is not None and known[1] not in (None, header.age_band):
        fields.error(
            "age_band",
            gettext_noop("rater %(rater)s was given age band %(value)s earlier in the file"),
            rater=repr(header.rater),
            value=repr(known[1]),
        )
        return
    elif header.age_band is not None and known[1] is None:
        parsed.raters[header.rater] = (known[0], header.age_band)
    if row.key in first_line:
        fields.error(
            "(line)",
            gettext_noop(
                "judges the same task as line %(first)s (one judgment per rater and task)"
            ),
            first=first_line[row.key],
        )
        return
    first_line[row.key] = record.line
    parsed.rows.append(row)


@dataclass(frozen=True)
class ImportWarning:
    """Something about an accepted file that changes what its statistics mean.

    `params` are the numbers the message is made of, so a page can say it in its reader's
    language (`import_warning_text`); `message` is the English text, for the command and logs.
    """

    code: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        with translation.override("en"):
            return import_warning_text(self.code, self.params)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "params": dict(self.params)}


def import_warning_text(code: str, params: dict[str, Any]) -> str:
    """A stored warning in the active language (an unknown code: its code)."""
    if code == "positional_rater_ids":
        return (
            _(
                "the rater ids look like grade positions, not people: %(n_raters)s rater(s) "
                "(%(examples)s) each judged at least %(coverage)s%% of the %(n_items)s items. If "
                "each id stands for a column of grades given by many different people, the "
                "statistics see rater effects that are not there, and intervals clustered by rater "
                "(group means, model comparisons) come out several times too wide. When the grades "
                "carry no rater ids, give every grade its own rater id."
            )
            % params
        )
    return code


# Rater ids that name a position in a row of grades rather than a person: a bare number ("1"),
# or a column word with a number ("grade_3", "judge-4", "annotator5", "rating 1"). Codes such as
# "r01" or "a7" are how studies name their own raters, so they alone say nothing.
_POSITIONAL_ID = re.compile(
    r"^(?:(?:col|column|grade|grades|rating|ratings|score|scores|judge|judges|"
    r"annotator|annotators|rater|raters|label|labels|worker|workers|vote|votes)[\s_\-.]?)?\d{1,2}$",
    re.IGNORECASE,
)
# Grades in the same order by rater on this share of items: columns of a sorted row of grades
# (Humicroedit's "32110"), whatever the ids are called.
SORTED_SHARE = 0.9


def _position(rater: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", rater)
    return (int(digits[-1]) if digits else 0, rater)


def _sorted_share(grades: dict[str, dict[str, float]], raters: list[str]) -> float:
    """The share of items (with more than one grade that differ) whose grades, read in the
    raters' positional order, never rise or never fall."""
    order = sorted(raters, key=_position)
    varied = down_all = up_all = 0
    for by_rater in grades.values():
        row = [by_rater[r] for r in order if r in by_rater]
        if len(row) < 2 or len(set(row)) < 2:
            continue
        varied += 1
        down = all(a >= b for a, b in itertools.pairwise(row))
        up = all(a <= b for a, b in itertools.pairwise(row))
        down_all += down
        up_all += up
    if varied == 0:
        return 1.0  # every item's grades agree exactly: no people disagree like that
    return max(down_all, up_all) / varied


def rater_id_warnings(rows: Iterable[Row]) -> list[ImportWarning]:
    """A warning when the file's rater ids look positional: a handful of "raters" each judging
    nearly every item, or many items and ids that are small numbers or column names, and in
    either case ids that name positions or grades sorted by position on nearly every item.

    Crowd datasets often carry five grades per item and no rater ids; numbering the grades
    1..5 makes five fake raters, each a mix of thousands of people. The statistics then see rater
    effects that are not there, and every interval clustered by rater (group means, model
    comparisons) comes out several times too wide.
    """
    per_rater: dict[str, int] = {}
    grades: dict[str, dict[str, float]] = {}
    for row in rows:
        if isinstance(row, ScoreRow):
            rater = row.header.rater
            per_rater[rater] = per_rater.get(rater, 0) + 1
            first = row.answers[0][1] if row.answers else None
            if first is not None:
                grades.setdefault(row.item, {})[rater] = first
            if len(per_rater) > 100:
                return []  # too many raters for either pattern
    n_raters, n_items = len(per_rater), len(grades)
    if n_raters == 0 or n_items < 20:
        return []
    # One scorecard per rater and item, so a rater's scorecards count the items they judged.
    coverage = min(per_rater.values()) / n_items
    positional = sum(1 for rater in per_rater if _POSITIONAL_ID.match(rater.strip()))
    few_rate_all = n_raters <= 20 and coverage >= 0.9
    numbered = positional == n_raters and n_items >= 5 * n_raters
    # A few raters who each judged (nearly) every item is also a fully crossed design of real
    # people: only ids that name positions, or grades sorted by position, say otherwise.
    looks_positional = positional == n_raters or (
        n_raters > 1 and _sorted_share(grades, list(per_rater)) >= SORTED_SHARE
    )
    if not ((few_rate_all or numbered) and looks_positional):
        return []
    examples = ", ".join(repr(rater) for rater in sorted(per_rater)[:3])
    return [
        ImportWarning(
            "positional_rater_ids",
            {
                "n_raters": n_raters,
                "examples": examples + (", ..." if n_raters > 3 else ""),
                "coverage": int(coverage * 100),
                "n_items": n_items,
            },
        )
    ]
