"""Typed field reading for imported lines: each problem becomes a LineError naming the field."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from typing import Any

from django.utils.translation import gettext_noop

from apps.core.errors import LineError
from apps.core.lines import Record
from apps.core.sentences import Sentence

# Fields with this prefix go into `meta`: "meta.dataset", "meta.split" become
# {"dataset": ..., "split": ...}. Extra CSV columns go there under their own name.
META_PREFIX = "meta."
_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no"}


class LineFields:
    """Reads one record's fields; problems are collected in `errors`, reads return None."""

    def __init__(self, record: Record, errors: list[LineError]) -> None:
        self.record = record
        self.errors = errors
        self._start = len(errors)

    @property
    def ok(self) -> bool:
        return len(self.errors) == self._start

    def error(self, field: str, message: str | Sentence, /, **params: Any) -> None:
        """A problem with `field`: `message` a message id (marked with gettext_noop) and its
        parameters, or a sentence; a page shows it in its reader's language."""
        sentence = message if isinstance(message, Sentence) else Sentence(message, params)
        self.errors.append(LineError.said(self.record.line, field, sentence))

    def has(self, name: str) -> bool:
        return self.record.fields.get(name) is not None

    def reject_unknown(self, allowed: Iterable[str]) -> None:
        allowed_set = set(allowed)
        for name in self.record.fields:
            if name not in allowed_set:
                self.error(name, gettext_noop("is not a known field"))

    def string(
        self, name: str, *, required: bool = False, max_length: int = 10_000, default: str = ""
    ) -> str | None:
        value = self.record.fields.get(name)
        if value is None:
            if required:
                self.error(name, gettext_noop("is required"))
                return None
            return default
        if not isinstance(value, str):
            self.error(
                name, gettext_noop("must be a string, got %(type)s"), type=type(value).__name__
            )
            return None
        value = value.strip()
        if required and not value:
            self.error(name, gettext_noop("must not be empty"))
            return None
        if len(value) > max_length:
            self.error(name, gettext_noop("is longer than %(max)s characters"), max=max_length)
            return None
        return value

    def choice(
        self, name: str, choices: Collection[str], *, required: bool = False, default: str = ""
    ) -> str | None:
        value = self.string(name, required=required, default=default)
        if value is None or (not required and value == default):
            return value
        if value not in choices:
            self.error(
                name,
                gettext_noop("must be one of %(choices)s; got %(value)s"),
                choices=", ".join(sorted(choices)),
                value=repr(value),
            )
            return None
        return value

    def integer(self, name: str, *, minimum: int, maximum: int) -> int | None:
        """An integer in [minimum, maximum]; None (and no error) when absent."""
        value = self.record.fields.get(name)
        if value is None:
            return None
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(
                name,
                gettext_noop("must be an integer from %(min)s to %(max)s, got %(value)s"),
                min=minimum,
                max=maximum,
                value=repr(value),
            )
            return None
        if not minimum <= value <= maximum:
            self.error(
                name,
                gettext_noop("must be from %(min)s to %(max)s, got %(value)s"),
                min=minimum,
                max=maximum,
                value=str(value),
            )
            return None
        return value

    def number(self, name: str, *, minimum: float | None = None) -> float | None:
        value = self.record.fields.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                self.error(name, gettext_noop("must be a number, got %(value)s"), value=repr(value))
                return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            self.error(
                name, gettext_noop("must be a finite number, got %(value)s"), value=repr(value)
            )
            return None
        if minimum is not None and value < minimum:
            self.error(
                name,
                gettext_noop("must be at least %(min)s, got %(value)s"),
                min=minimum,
                value=str(value),
            )
            return None
        return float(value)

    def boolean(self, name: str, *, default: bool = False) -> bool | None:
        value = self.record.fields.get(name)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        self.error(name, gettext_noop("must be true or false, got %(value)s"), value=repr(value))
        return None

    def timestamp(self, name: str) -> datetime | None:
        """ISO-8601; a time without an offset is read as UTC."""
        value = self.record.fields.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            self.error(name, gettext_noop("must be an ISO-8601 date and time string"))
            return None
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            self.error(
                name, gettext_noop("is not an ISO-8601 date and time: %(value)s"), value=repr(value)
            )
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment

    def mapping(self, name: str) -> dict[str, Any] | None:
        value = self.record.fields.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.error(name, gettext_noop("must be a JSON object"))
            return None
        return value

    def raw(self, name: str) -> Any:
        return self.record.fields.get(name)


def meta_of(fields: LineFields, known: frozenset[str]) -> dict[str, Any] | None:
    """The line's `meta` object merged with its `meta.<key>` fields and, in a CSV file, its
    other columns under their own names; another unknown field of a JSON line is an error naming
    it (so a typo such as "lnag" is not silently kept). Items and judgments share these rules."""
    meta = fields.mapping("meta")
    if meta is None:
        return None
    merged = dict(meta)
    for name, value in fields.record.fields.items():
        if name in known:
            continue
        key = name[len(META_PREFIX) :] if name.startswith(META_PREFIX) else ""
        if not key and fields.record.from_csv:
            key = name
        if not key:
            fields.error(
                name,
                gettext_noop(
                    "is not a known field (keep extra data in a 'meta' object or a "
                    "'%(column)s' column)"
                ),
                column=f"{META_PREFIX}{name}",
            )
            continue
        if key in merged:
            fields.error(
                name,
                gettext_noop("repeats meta key %(key)s given in the 'meta' object"),
                key=repr(key),
            )
            continue
        merged[key] = value
    return merged
