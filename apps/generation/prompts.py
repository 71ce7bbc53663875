"""Validation of prompt lines (the prompt-set JSONL format of the README).

Pure with respect to the database: records become PromptRow values or LineErrors, with the
project's line-error helpers, so a bad line is reported by line and field and nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.utils.translation import gettext_noop

from apps.core.errors import LineError
from apps.core.fields import LineFields
from apps.core.lines import Record, parse_unique_rows
from apps.studies.models import Item

PROMPT_FIELDS = frozenset(
    {"id", "level", "lang", "topic", "prompt", "context", "scenario", "constraints", "humor_type"}
)
PROMPT_JSON_COLUMNS = frozenset({"context", "constraints"})
ROLES = ("user", "assistant")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_LANG = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$")
_CHINESE = {"zh-cn", "zh-hans", "zh-sg", "cmn"}
MAX_TEXT = 5_000
MAX_TURNS = 40
MAX_CONSTRAINTS = 20


@dataclass(frozen=True)
class PromptRow:
    line: int
    external_id: str
    level: str
    language: str
    topic: str = ""
    text: str = ""
    context: list[dict[str, str]] = field(default_factory=list)
    scenario: str = ""
    constraints: list[str] = field(default_factory=list)
    humor_type: str = ""

    def model_fields(self) -> dict[str, Any]:
        values = asdict(self)
        values.pop("line")
        return values


def normalise_language(value: str) -> str:
    language = value.strip().lower().replace("_", "-")
    return "zh" if language in _CHINESE else language


def _context(fields: LineFields) -> list[dict[str, str]] | None:
    value = fields.raw("context")
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_TURNS:
        fields.error(
            "context",
            f'must be a list of at most {MAX_TURNS} turns like {{"role": "user", "text": "..."}}',
        )
        return None
    turns: list[dict[str, str]] = []
    for index, turn in enumerate(value):
        if (
            not isinstance(turn, dict)
            or turn.get("role") not in ROLES
            or not isinstance(turn.get("text"), str)
            or not turn["text"].strip()
            or len(turn["text"]) > MAX_TEXT
            or set(turn) - {"role", "text"}
        ):
            fields.error(
                f"context[{index}]",
                "must be an object with 'role' (user or assistant) and a non-empty 'text'",
            )
            return None
        turns.append({"role": turn["role"], "text": turn["text"].strip()})
    return turns


def _constraints(fields: LineFields) -> list[str] | None:
    value = fields.raw("constraints")
    if value is None:
        return []
    if (
        not isinstance(value, list)
        or len(value) > MAX_CONSTRAINTS
        or not all(isinstance(c, str) and c.strip() and len(c) <= 500 for c in value)
    ):
        fields.error(
            "constraints", f"must be a list of at most {MAX_CONSTRAINTS} non-empty strings"
        )
        return None
    return [c.strip() for c in value]


def parse_prompt(record: Record, errors: list[LineError]) -> PromptRow | None:
    fields = LineFields(record, errors)
    fields.reject_unknown(PROMPT_FIELDS)
    external_id = fields.string("id", required=True, max_length=64)
    if external_id and not _ID.match(external_id):
        fields.error(
            "id",
            gettext_noop("must be letters, digits and . _ : - (starting with a letter or digit)"),
        )
    level = fields.choice("level", Item.Level.values, required=True)
    language = fields.string("lang", required=True, max_length=16)
    if language:
        language = normalise_language(language)
        if not _LANG.match(language):
            fields.error(
                "lang",
                gettext_noop("must be a language code such as 'en' or 'zh', got %(value)s"),
                value=repr(language),
            )
    topic = fields.string("topic", max_length=128)
    text = fields.string("prompt", max_length=MAX_TEXT)
    context = _context(fields)
    scenario = fields.string("scenario", max_length=MAX_TEXT)
    constraints = _constraints(fields)
    humor_type = fields.string("humor_type", max_length=64)
    # Each level needs what makes it that level: a task, a dialogue, a situation.
    if level == Item.Level.SINGLE and not text and not topic:
        fields.error(
            "prompt", gettext_noop("a single prompt needs a 'prompt' (or at least a 'topic')")
        )
    if level == Item.Level.MULTI_TURN:
        if context == []:
            fields.error(
                "context",
                gettext_noop("is required at the multi_turn level (the dialogue history)"),
            )
        elif context and context[-1]["role"] != "user":
            fields.error(
                f"context[{len(context) - 1}]",
                gettext_noop("the dialogue must end with the user's turn"),
            )
    elif context:
        fields.error(
            "context", gettext_noop("is only for the multi_turn level, not %(level)s"), level=level
        )
    if level == Item.Level.SCENARIO and scenario == "":
        fields.error("scenario", gettext_noop("is required at the scenario level (the situation)"))
    elif level != Item.Level.SCENARIO and (scenario or constraints):
        fields.error(
            "scenario" if scenario else "constraints",
            f"is only for the scenario level, not {level}",
        )
    if not fields.ok or external_id is None or level is None or language is None:
        return None
    return PromptRow(
        line=record.line,
        external_id=external_id,
        level=level,
        language=language,
        topic=topic or "",
        text=text or "",
        context=context or [],
        scenario=scenario or "",
        constraints=constraints or [],
        humor_type=humor_type or "",
    )


def parse_prompts(
    records: Iterable[Record | LineError],
) -> tuple[list[PromptRow], list[LineError]]:
    """Every line validated; a repeated id within the file is an error on the later line."""
    return parse_unique_rows(records, parse_prompt)
