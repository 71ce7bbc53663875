"""Sentences built in code and shown later, perhaps in another language: a reason, a finding, an
import's complaint about a line.

A background job runs in whatever language its worker has, and a page may be read in Chinese
months after the job wrote in English. So such a sentence is stored as its message id (the
English text, marked for the catalogue) and named parameters, and rendered when it is shown,
in the reader's language. The English rendering is stored beside it for exports, the API and
scripts; rows stored before a sentence had an id show that text as it is.

A parameter may itself be a code with a label in the reader's language (`label("level",
"single")`) or another sentence (a reason that adds to an earlier one). Mark a message id with
`gettext_noop` (or build a plural with `Sentence.ngettext_lazy`) so makemessages finds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import translation
from django.utils.module_loading import import_string
from django.utils.translation import gettext, ngettext, pgettext

# What a labelled parameter's kind names: a function from the code to its label in the reader's
# language. Imported when first used, so that this module stays free of the apps it serves.
LABELS: dict[str, str] = {
    "level": "apps.analysis.labels.level_label",
    "question": "apps.analysis.labels.question_label",
    "source": "apps.analysis.labels.source_label",
    "rule": "apps.analysis.labels.exclusion_rule_label",
    "judge_status": "apps.screening.reasons.judge_status_label",
    "intercept_reason": "apps.screening.reasons.intercept_reason_label",
    "side": "apps.exclusions.reasons.side_label",
}


# The stored English text names these by their code, as it did before they had labels: the
# exports, the API and the scripts reading them keep the words they know.
CODES_IN_STORED_TEXT = frozenset({"level", "question", "judge_status"})


def label(kind: str, code: object) -> dict[str, str]:
    """A parameter shown as the label of `code` (a level, a question, ...) in the reader's
    language; an unknown kind or code is shown as it is."""
    return {"label": kind, "code": str(code)}


def _labelled(kind: str, code: str) -> str:
    path = LABELS.get(kind)
    if path is None:
        return code
    function: Callable[[str], object] = import_string(path)
    return str(function(code))


@dataclass(frozen=True)
class Sentence:
    msgid: str
    params: Mapping[str, Any] = field(default_factory=dict)
    # A plural: the other form, and the parameter whose number chooses between them.
    plural: str = ""
    number: str = ""

    @classmethod
    def ngettext_lazy(cls, singular: str, plural: str, number: str, **params: Any) -> Sentence:
        """A sentence with a singular and a plural form, chosen by the parameter `number`."""
        return cls(singular, params, plural=plural, number=number)

    def text(self, *, stored: bool = False) -> str:
        """The sentence in the active language (`stored`: codes named as CODES_IN_STORED_TEXT
        says)."""
        values = {key: _value(value, stored=stored) for key, value in self.params.items()}
        count = self.params.get(self.number) if self.plural else None
        n = int(count) if isinstance(count, int | float) else 0
        template = ngettext(self.msgid, self.plural, n) if self.plural else gettext(self.msgid)
        if not values:
            return template
        try:
            return template % values
        except (KeyError, TypeError, ValueError):
            # A translation that does not fit the stored parameters: the English one does.
            return (self.plural if self.plural and n != 1 else self.msgid) % values

    def english(self) -> str:
        """The English text stored beside the sentence, for the exports, the API and scripts."""
        with translation.override("en"):
            return self.text(stored=True)

    def __str__(self) -> str:
        return self.text()

    def as_dict(self) -> dict[str, Any]:
        stored: dict[str, Any] = {"msgid": self.msgid, "params": _stored(self.params)}
        if self.plural:
            stored.update(plural=self.plural, number=self.number)
        return stored

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> Sentence:
        return cls(
            str(stored.get("msgid") or ""),
            dict(stored.get("params") or {}),
            plural=str(stored.get("plural") or ""),
            number=str(stored.get("number") or ""),
        )

    def then(self, msgid: str, **params: Any) -> Sentence:
        """This sentence followed by another that speaks of it (`msgid` has `%(reason)s`)."""
        return Sentence(msgid, {"reason": self, **params})


def _stored(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: value.as_dict() if isinstance(value, Sentence) else value
        for key, value in params.items()
    }


def _value(value: Any, *, stored: bool) -> Any:
    if isinstance(value, Sentence):
        return value.text(stored=stored)
    if isinstance(value, Mapping):
        if "msgid" in value:
            return Sentence.from_dict(value).text(stored=stored)
        if "label" in value:
            kind, code = str(value["label"]), str(value.get("code", ""))
            return code if stored and kind in CODES_IN_STORED_TEXT else _labelled(kind, code)
    return value


def stored_text(stored: Mapping[str, Any] | Sequence[Any] | None, fallback: object = "") -> str:
    """A stored sentence (or a list of them, one reason each) in the reader's language; the
    stored English `fallback` when none was stored (rows written before sentences had ids)."""
    if isinstance(stored, Sentence):
        return stored.text()
    if isinstance(stored, Mapping) and stored.get("msgid"):
        return Sentence.from_dict(stored).text()
    if isinstance(stored, list | tuple) and stored:
        parts = [stored_text(part) for part in stored if isinstance(part, Mapping)]
        return pgettext("between reasons", "; ").join(part for part in parts if part)
    return "" if fallback is None else str(fallback)


def joined(sentences: Sequence[Sentence]) -> tuple[str, list[dict[str, Any]]]:
    """Reasons given together: the English text (as stored before) and what to store."""
    return "; ".join(s.english() for s in sentences), [s.as_dict() for s in sentences]
