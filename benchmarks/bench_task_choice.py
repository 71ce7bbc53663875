"""Cost of choosing a rater's next task on a large study: with the ranking counts read afresh for
every task (TASK_COUNTS_MAX_AGE_SECONDS=0), and kept per process (the default, 5 s), measured
in the same process, alternating, so the ratio holds on a noisy machine.

    .venv/bin/python benchmarks/bench_task_choice.py --postgres         # 2,000 items (~2 min)
    .venv/bin/python benchmarks/bench_task_choice.py --postgres --quick # a tenth of the data

The study is the one of bench_dashboard.py: 2,000 items, 600 raters, 50,000 scorecards and
100,000 pair judgments, opened with targets above what it holds so every kind has tasks to
give. Fresh raters then ask for tasks of one kind at a time; each task is marked answered at
once (the choice is what is timed: `assignment_next`, in its own transaction, as the task page
calls it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import make_full_study, setup_django

MODES = (("fresh", 0.0), ("kept", 5.0))
KINDS = ("scorecard", "turing", "pair")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the two modes")
    parser.add_argument("--tasks", type=int, default=20, help="tasks per kind, mode and round")
    args = parser.parse_args()
    if args.rounds < 1 or args.tasks < 1:
        parser.error("--rounds and --tasks must be at least 1")
    scale = 10 if args.quick else 1
    setup_django(args.postgres)
    from django.test import override_settings

    from apps.assignments import ranking_counts
    from apps.assignments.models import Assignment
    from apps.assignments.services import assignment_next
    from apps.raters.models import Rater
    from apps.raters.services import rater_enroll
    from apps.studies.models import Study

    started = time.perf_counter()
    study = make_full_study("bench-choice", scale=scale, seed=21)
    Study.objects.filter(pk=study.pk).update(
        status=Study.Status.OPEN,
        target_scorecards_per_item=1000,
        turing_judgments_per_item=1000,
        pair_appearances_per_item=1000,
        tasks_per_session=500,
        attention_check_rate=0,
        adaptive_pairing=False,
        session_minutes=120,
    )
    groups = list(study.background_groups.values_list("code", flat=True))
    enrolled = [
        rater_enroll(
            study=Study.objects.get(pk=study.pk),
            background=groups[i % len(groups)],
            age_band="25-34",
            consent=True,
            external_id=f"bench-{i:03d}",
        )
        for i in range(12)
    ]
    print(f"built the study in {time.perf_counter() - started:.1f} s")

    times: dict[tuple[str, str], list[float]] = {(m, k): [] for m, _ in MODES for k in KINDS}
    turn = 0
    for _ in range(args.rounds):
        for mode, max_age in MODES:
            with override_settings(TASK_COUNTS_MAX_AGE_SECONDS=max_age):
                ranking_counts.forget_all()
                for kind in KINDS:
                    Study.objects.filter(pk=study.pk).update(task_mix={kind: 1.0})
                    current = Study.objects.select_related("rubric").get(pk=study.pk)
                    for _ in range(args.tasks):
                        enrollment = enrolled[turn % len(enrolled)]
                        turn += 1
                        rater = Rater.objects.get(pk=enrollment.rater.pk)
                        rater.study = current
                        t0 = time.perf_counter()
                        task = assignment_next(rater=rater, session=enrollment.session)
                        times[(mode, kind)].append((time.perf_counter() - t0) * 1000)
                        if task is None:
                            raise SystemExit(f"no {kind} task was given; the study ran out")
                        Assignment.objects.filter(pk=task.pk).update(status=Assignment.Status.DONE)
    print(f"{'kind':10} {'fresh ms':>9} {'kept ms':>8} {'fresh/kept':>10}   (median per task)")
    for kind in KINDS:
        fresh = statistics.median(times[("fresh", kind)])
        kept = statistics.median(times[("kept", kind)])
        print(f"{kind:10} {fresh:>9.1f} {kept:>8.1f} {fresh / kept:>10.1f}x")


if __name__ == "__main__":
    main()
