"""Domain errors raised by services and selectors.

Services raise these instead of returning error values; the API handler, the HTML views and the
management commands turn them into a 4xx response or a command error with the same message.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from apps.core.sentences import Sentence


class DomainError(Exception):
    """A rule of the domain was broken; the message is written for the person who broke it."""

    status_code = 400
    code = "invalid"

    # The message as a sentence, for a page that shows it later in the reader's language.
    sentence: Sentence | None = None

    def __init__(
        self, message: str | Sentence, *, field: str | None = None, code: str | None = None
    ) -> None:
        if isinstance(message, Sentence):
            self.sentence = message
            message = message.english()
        super().__init__(message)
        self.message = message
        self.field = field
        if code is not None:
            self.code = code

    def as_dict(self) -> dict[str, object]:
        body: dict[str, object] = {"code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        return body


class NotFound(DomainError):
    """Missing, or not the caller's: both look the same so that IDs leak nothing."""

    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class Busy(DomainError):
    """Everything there is to give is held by other requests this moment; asking again works."""

    status_code = 503
    code = "busy"


class SessionExpired(DomainError):
    status_code = 410
    code = "session_expired"


@dataclass(frozen=True)
class LineError:
    """One problem in one line of an imported file (line numbers start at 1).

    `message` is English (the API's and the scripts' text); `sentence`, when the problem was
    written as one, renders it in the reader's language (a background job's errors are read
    later, perhaps in another language than the worker's)."""

    line: int
    field: str
    message: str
    sentence: Sentence | None = dataclass_field(default=None, compare=False)

    @classmethod
    def said(cls, line: int, field: str, sentence: Sentence) -> LineError:
        return cls(line, field, sentence.english(), sentence)

    @property
    def text(self) -> str:
        return self.sentence.text() if self.sentence is not None else self.message

    def __str__(self) -> str:
        return f"line {self.line}, field '{self.field}': {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {"line": self.line, "field": self.field, "message": self.message}

    def stored(self) -> dict[str, Any]:
        """As an import job keeps it: with the sentence, to show in the reader's language."""
        body: dict[str, Any] = {"line": self.line, "field": self.field, "message": self.message}
        if self.sentence is not None:
            body["sentence"] = self.sentence.as_dict()
        return body


class ImportRejected(DomainError):
    """An import found bad lines; nothing was written. Every bad line is listed."""

    code = "import_rejected"

    def __init__(self, errors: list[LineError]) -> None:
        self.errors = errors
        count = len({error.line for error in errors})
        super().__init__(
            Sentence.ngettext_lazy(
                "%(count)s bad line; nothing was imported",
                "%(count)s bad lines; nothing was imported",
                "count",
                count=count,
            )
        )

    def as_dict(self) -> dict[str, object]:
        body = super().as_dict()
        body["errors"] = [error.as_dict() for error in self.errors]
        return body
