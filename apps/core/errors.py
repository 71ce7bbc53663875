"""Domain errors raised by services and selectors.

Services raise these instead of returning error values; the API handler, the HTML views and the
management commands turn them into a 4xx response or a command error with the same message.
"""

from __future__ import annotations

from dataclasses import dataclass


class DomainError(Exception):
    """A rule of the domain was broken; the message is written for the person who broke it."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None, code: str | None = None) -> None:
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
    """One problem in one line of an imported file (line numbers start at 1)."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, field '{self.field}': {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {"line": self.line, "field": self.field, "message": self.message}


class ImportRejected(DomainError):
    """An import found bad lines; nothing was written. Every bad line is listed."""

    code = "import_rejected"

    def __init__(self, errors: list[LineError]) -> None:
        self.errors = errors
        count = len({error.line for error in errors})
        summary = f"{count} bad line{'s' if count != 1 else ''}; nothing was imported"
        super().__init__(summary)

    def as_dict(self) -> dict[str, object]:
        body = super().as_dict()
        body["errors"] = [error.as_dict() for error in self.errors]
        return body
