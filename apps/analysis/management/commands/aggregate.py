from __future__ import annotations

import os
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.analysis.services import study_aggregate
from apps.core.commands import DataCommand, command_errors
from apps.studies.selectors import study_get_by_slug


def _cores() -> int:
    """The cores this process may run on (all of the machine's where the system cannot say)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


class Command(DataCommand):
    help = "Recompute a study's results from its raw judgments, synchronously."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="Study slug")
        parser.add_argument(
            "--rounds", type=int, default=None, help="Bootstrap rounds (default BOOTSTRAP_ROUNDS)"
        )
        parser.add_argument(
            "--seed", type=int, default=None, help="Random seed (default: the study's seed)"
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="Threads to compute with (default: every core this process may run on); "
            "the results are the same with any number",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["rounds"] is not None and not 10 <= options["rounds"] <= 100_000:
            raise CommandError(f"--rounds must be from 10 to 100000, got {options['rounds']}")
        if options["seed"] is not None and not 0 <= options["seed"] < 2**63:
            raise CommandError(f"--seed must be a non-negative integer, got {options['seed']}")
        threads = options["threads"]
        if threads is not None and not 1 <= threads <= 64:
            raise CommandError(f"--threads must be from 1 to 64, got {threads}")
        with command_errors():
            study = study_get_by_slug(slug=options["study"])
            result = study_aggregate(
                study=study,
                rounds=options["rounds"],
                seed=options["seed"],
                threads=threads or _cores(),
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Results of {study.slug!r} computed in {result.duration_seconds:.2f} s "
                f"(seed {result.seed}, {result.rounds} rounds, input {result.input_hash[:12]})"
            )
        )
