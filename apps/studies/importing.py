"""Validation of item lines (the `import_items` interchange format of DESIGN.md).

Pure with respect to the database: it turns records into ItemRow values or LineErrors; the
service compares them with what is stored and writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext_noop

from apps.core.errors import LineError
from apps.core.fields import LineFields, meta_of
from apps.core.lines import Record, parse_unique_rows
from apps.studies.languages import LANGUAGE_CODE, normalise
from apps.studies.models import Item

ITEM_FIELDS = frozenset(
    {
        "id",
        "text",
        "source",
        "level",
        "humor_type",
        "topic",
        "lang",
        "context",
        "scenario",
        "explanation",
        "safety_intercepted",
        "generation",
        "content_type",
        "attention_check",
        "attention_expected",
        "meta",
        "image_file",
        "image_alt",
    }
)
# Cells of these columns hold JSON in CSV files.
ITEM_JSON_COLUMNS = frozenset({"context", "generation", "attention_expected", "meta", "image_alt"})
MAX_ALT = 1_000
MAX_TEXT = 20_000
# Choices read once (a TextChoices' `values` is rebuilt on every access).
_LEVELS = frozenset(Item.Level.values)
_CONTENT_TYPES = frozenset(c for c in Item.ContentType.values if c)


@dataclass(frozen=True)
class ItemRow:
    line: int
    external_id: str
    text: str
    source: str
    level: str
    humor_type: str
    topic: str
    language: str
    context: list[dict[str, str]] = field(default_factory=list)
    scenario: str = ""
    explanation: str = ""
    safety_intercepted: bool = False
    generation: dict[str, Any] = field(default_factory=dict)
    content_type: str = ""
    is_attention_check: bool = False
    attention_expected: dict[str, Any] = field(default_factory=dict)
    # Anything else the researcher keeps with the item: stored and exported unchanged.
    meta: dict[str, Any] = field(default_factory=dict)
    # As parsed: the picture's path in the zip; once stored, its storage name (and hash).
    image: str = ""
    image_sha256: str = ""
    image_alt: dict[str, str] = field(default_factory=dict)

    def model_fields(self) -> dict[str, Any]:
        # Field by field, not dataclasses.asdict: that deep-copies every JSON value, a third of
        # the time of a 15,000-item import.
        return {name: getattr(self, name) for name in _MODEL_FIELDS}


_MODEL_FIELDS = tuple(name for name in ItemRow.__dataclass_fields__ if name != "line")


def _context(fields: LineFields) -> list[dict[str, str]] | None:
    value = fields.raw("context")
    if value is None:
        return []
    if not isinstance(value, list):
        fields.error(
            "context", gettext_noop('must be a list of turns like {"role": "user", "text": "..."}')
        )
        return None
    turns: list[dict[str, str]] = []
    for index, turn in enumerate(value):
        if (
            not isinstance(turn, dict)
            or not isinstance(turn.get("role"), str)
            or not isinstance(turn.get("text"), str)
            or not turn["text"].strip()
            or set(turn) - {"role", "text"}
        ):
            fields.error(
                f"context[{index}]",
                gettext_noop("must be an object with a string 'role' and a non-empty 'text'"),
            )
            return None
        turns.append({"role": turn["role"].strip(), "text": turn["text"]})
    return turns


def _image_alt(fields: LineFields, image: str | None) -> dict[str, str] | None:
    """The picture's description per language: required with a picture, and only with one."""
    value = fields.raw("image_alt")
    if not image:
        if value not in (None, "", {}):
            fields.error("image_alt", gettext_noop("describes a picture, but the line has none"))
            return None
        return {}
    if (
        not isinstance(value, dict)
        or not value
        or not all(
            isinstance(key, str)
            and LANGUAGE_CODE.match(normalise(key))
            and isinstance(text, str)
            and text.strip()
            and len(text) <= MAX_ALT
            for key, text in value.items()
        )
    ):
        fields.error(
            "image_alt",
            gettext_noop(
                'is required with a picture: what it shows, per language, like {"en": "...", '
                '"zh": "..."} (at most 1,000 characters each)'
            ),
        )
        return None
    return {normalise(key): text.strip() for key, text in value.items()}


def parse_item(record: Record, errors: list[LineError]) -> ItemRow | None:
    fields = LineFields(record, errors)
    meta = meta_of(fields, ITEM_FIELDS)
    external_id = fields.string("id", required=True, max_length=128)
    text = fields.string("text", required=True, max_length=MAX_TEXT)
    source = fields.string("source", required=True, max_length=128)
    level = fields.choice("level", _LEVELS, default=Item.Level.SINGLE)
    humor_type = fields.string("humor_type", max_length=64)
    topic = fields.string("topic", max_length=128)
    language = fields.string("lang", max_length=16, default="en")
    if language is not None:
        language = normalise(language)
        if not LANGUAGE_CODE.match(language):
            fields.error(
                "lang",
                gettext_noop("must be a language code such as 'en' or 'zh', got %(value)s"),
                value=repr(language),
            )
    context = _context(fields)
    scenario = fields.string("scenario", max_length=MAX_TEXT)
    explanation = fields.string("explanation", max_length=MAX_TEXT)
    safety = fields.boolean("safety_intercepted")
    generation = fields.mapping("generation")
    content_type = fields.choice("content_type", _CONTENT_TYPES)
    attention = fields.boolean("attention_check")
    expected = fields.mapping("attention_expected")
    image = fields.string("image_file", max_length=255)
    image_alt = _image_alt(fields, image)
    # Without its dialogue a multi-turn reply, or without its situation a scenario response,
    # cannot be judged for what it is: refuse rather than show raters half an item.
    if level == Item.Level.MULTI_TURN and context == []:
        fields.error(
            "context",
            gettext_noop("is required for a multi_turn item (the dialogue before the reply)"),
        )
    if level == Item.Level.SCENARIO and scenario == "":
        fields.error(
            "scenario",
            gettext_noop("is required for a scenario item (the situation responded to)"),
        )
    if (
        not fields.ok
        or meta is None
        or external_id is None
        or text is None
        or source is None
        or level is None
        or language is None
    ):
        return None
    return ItemRow(
        line=record.line,
        external_id=external_id,
        text=text,
        source=source,
        level=level,
        humor_type=humor_type or "",
        topic=topic or "",
        language=language,
        context=context or [],
        scenario=scenario or "",
        explanation=explanation or "",
        safety_intercepted=bool(safety),
        generation=generation or {},
        content_type=content_type or "",
        is_attention_check=bool(attention),
        attention_expected=expected or {},
        meta=meta or {},
        image=image or "",
        image_alt=image_alt or {},
    )


def parse_items(records: Iterable[Record | LineError]) -> tuple[list[ItemRow], list[LineError]]:
    """Every line validated; duplicate ids within the file are errors on the later line."""
    return parse_unique_rows(records, parse_item)
