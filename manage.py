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


if __name__ == "__main__":
    main()
