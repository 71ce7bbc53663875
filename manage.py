#!/usr/bin/env python
"""Django's command-line utility for LaughLab."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # One BLAS thread per process: statistics run in several worker processes at once, and a
    # multi-threaded BLAS on a busy core runs many times slower. Set before numpy is imported.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
    _leave_without_collecting()


def _leave_without_collecting() -> None:
    """The command is done and the process ends: freeze every object, so that the
    interpreter's exit skips the cycle collections over them.

    Those collections walk the ~80,000 objects of Django, numpy and the command's own data and
    free what they find, which the ending process does not need: they took 0.1-0.5 s of each
    command's exit (benchmarks/README.md, "A command's exit without the cycle collections").
    Django has closed the database connections already (`BaseCommand.run_from_argv`); objects
    outside reference cycles are still freed as the interpreter exits, and the standard
    streams flushed.
    """
    import gc

    gc.freeze()


if __name__ == "__main__":
    main()
