"""Shared plumbing for management commands: domain errors become CommandErrors, and the base of
the commands a researcher runs on their data."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import DomainError, ImportRejected

MAX_LISTED_ERRORS = 200


class DataCommand(BaseCommand):
    """A command that reads or writes a study's data (imports, aggregation, exports).

    Django runs its system checks before every command; they import the whole URL
    configuration, every view and what the views import (about 2 s here), which an import of a
    crowd dataset would pay on each of its steps. The checks guard the configuration, not the
    data: `manage.py check`, `migrate` and the servers still run them, as CI does.
    """

    requires_system_checks: list[str] = []


@contextmanager
def command_errors() -> Iterator[None]:
    try:
        yield
    except ImportRejected as exc:
        lines = [str(error) for error in exc.errors[:MAX_LISTED_ERRORS]]
        if len(exc.errors) > MAX_LISTED_ERRORS:
            lines.append(f"... and {len(exc.errors) - MAX_LISTED_ERRORS} more")
        raise CommandError(f"{exc.message}:\n" + "\n".join(lines)) from exc
    except DomainError as exc:
        where = f" ({exc.field})" if exc.field else ""
        raise CommandError(f"{exc.message}{where}") from exc


def read_input_file(path: str) -> bytes:
    file = Path(path)
    if not file.is_file():
        raise CommandError(f"FILE {path!r} does not exist or is not a file")
    try:
        return file.read_bytes()
    except OSError as exc:
        raise CommandError(f"FILE {path!r} cannot be read: {exc.strerror}") from exc
