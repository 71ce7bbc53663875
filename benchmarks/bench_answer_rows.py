"""A scorecard's answer rows stored through the ORM's `bulk_create` (up to 2026-12-07) and
through `CompiledRows` (apps/core/compiled.py), in one process on PostgreSQL, alternating.

    .venv/bin/python benchmarks/bench_answer_rows.py                 # 8 rounds of 400 each way
    .venv/bin/python benchmarks/bench_answer_rows.py --rounds 12 --scorecards 600

Each round stores, each way in turn, `--scorecards` scorecards' answers: the four rows of the
humor rubric for a response of its own (the submit's `ScoreAnswer`s), then two early answers
sent again for an assignment (the first step's upsert of `EarlyAnswer`s), one transaction per
scorecard as a request has. The figure is this process's CPU time (what a gunicorn worker
spends; PostgreSQL's own is not in it) and the wall time, each way's median over the rounds,
and the ratio of the two. Needs PostgreSQL on 127.0.0.1:5432 (database `laughlab_bench`, or
BENCH_DB_NAME), which it drops and creates.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import setup_django


def _fixtures(scorecards: int) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """Responses to answer, and assignments whose early answers are sent again."""
    from django.core.management import call_command
    from django.utils import timezone

    from apps.assignments.models import Assignment
    from apps.judgments.models import ScoreResponse
    from apps.raters.models import Rater, RaterSession
    from apps.studies.models import Item, Question
    from apps.studies.services import study_create

    call_command("migrate", "--noinput", verbosity=0)
    study = study_create(slug="bench-rows", rubric_slug="humor", random_seed=1)
    questions = list(Question.objects.filter(rubric=study.rubric).order_by("position"))
    item = Item.objects.create(study=study, external_id="i1", text="a joke", source="human")
    group = study.background_groups.order_by("position").first()
    now = timezone.now()
    responses, assignments = [], []
    for n in range(2 * scorecards):
        rater = Rater.objects.create(
            study=study, background=group, consent_at=now, external_id=f"r{n}"
        )
        session = RaterSession.objects.create(
            rater=rater, started_at=now, deadline=now + timedelta(hours=1)
        )
        responses.append(
            ScoreResponse.objects.create(
                study=study, rater=rater, session=session, item=item, idempotency_key=f"k{n}"
            )
        )
        assignments.append(
            Assignment.objects.create(
                study=study,
                rater=rater,
                session=session,
                kind=Assignment.Kind.SCORECARD,
                item=item,
                position=1,
            )
        )
    return responses, assignments, questions[:4], questions[:2]


def _orm(responses: list[Any], assignments: list[Any], card: list[Any], early: list[Any]) -> None:
    from django.db import transaction
    from django.utils import timezone

    from apps.judgments.models import EarlyAnswer, ScoreAnswer

    for response, assignment in zip(responses, assignments, strict=True):
        now = timezone.now()
        with transaction.atomic():
            EarlyAnswer.objects.bulk_create(
                [
                    EarlyAnswer(
                        assignment=assignment,
                        question=q,
                        value=3.0,
                        answered_at=now,
                        received_at=now,
                    )
                    for q in early
                ],
                update_conflicts=True,
                unique_fields=["assignment", "question"],
                update_fields=["value", "answered_at", "received_at"],
            )
        with transaction.atomic():
            ScoreAnswer.objects.bulk_create(
                [
                    ScoreAnswer(
                        response=response,
                        question=q,
                        value=2.0,
                        answered_at=now,
                        received_at=now,
                    )
                    for q in card
                ]
            )


def _compiled(
    responses: list[Any], assignments: list[Any], card: list[Any], early: list[Any]
) -> None:
    from django.db import transaction
    from django.utils import timezone

    from apps.judgments.submission import _EARLY_ANSWERS_STORED, _NEW_SCORE_ANSWERS

    for response, assignment in zip(responses, assignments, strict=True):
        now = timezone.now()
        with transaction.atomic():
            _EARLY_ANSWERS_STORED([(assignment.pk, q.pk, 3.0, now, now) for q in early])
        with transaction.atomic():
            _NEW_SCORE_ANSWERS([(response.pk, q.pk, 2.0, now, now) for q in card])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--scorecards", type=int, default=400)
    args = parser.parse_args()
    setup_django(postgres=True)
    from apps.judgments.models import ScoreAnswer

    responses, assignments, card, early = _fixtures(args.scorecards)
    ways = {"bulk_create": _orm, "CompiledRows": _compiled}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    half = args.scorecards
    for round_ in range(args.rounds):
        # Each way answers its own half of the responses, which are emptied after the round.
        order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
        for k, name in enumerate(order):
            part = slice(k * half, (k + 1) * half)
            started, started_cpu = time.perf_counter(), time.process_time()
            ways[name](responses[part], assignments[part], card, early)
            cpu[name].append((time.process_time() - started_cpu) / half * 1000)
            wall[name].append((time.perf_counter() - started) / half * 1000)
        ScoreAnswer.objects.all().delete()
    for name in ways:
        print(
            f"{name:>12}: CPU {statistics.median(cpu[name]):.3f} ms, wall "
            f"{statistics.median(wall[name]):.3f} ms a scorecard (median of {args.rounds})"
        )
    ratios = [c / o for c, o in zip(cpu["CompiledRows"], cpu["bulk_create"], strict=True)]
    print(
        f"CompiledRows / bulk_create, CPU: median {statistics.median(ratios):.2f} "
        f"(rounds {min(ratios):.2f}-{max(ratios):.2f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
