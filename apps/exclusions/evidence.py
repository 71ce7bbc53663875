"""Evidence about raters for the exclusion rules and the rater-quality page, from bounded queries.

The rules (thresholds are study settings):
- attention: more failed attention checks than `exclusion_max_attention_failures`;
- speeder: median active time per task (scorecards, pairs, Turing) below
  `exclusion_speeder_seconds`;
- straight-liner: the same value on every scale question of `exclusion_straight_line_tasks`
  consecutive scorecards, in the order they were submitted (imported scorecards without a time
  have no order, and the rule does not run on them: see `unordered_scorecards`);
- position-only: every pair choice on the same side (always left or always right) over at
  least `exclusion_position_min_pairs` decisive pairs (a tie or "neither" chooses no side);
- anomalous choices (`anomalous_choices`): pair or Turing choices that run against the other
  raters' (side, length, agreement), by the screen of apps/analysis/stats/pair_raters.py; only
  ever proposed (models.PROPOSE_ONLY).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import Count, F, Max, Min, Q, QuerySet

from apps.analysis.stats.pair_raters import (
    DEFAULT_THRESHOLD,
    PairJudgments,
    RaterScreen,
    TuringJudgments,
    screen_raters,
)
from apps.assignments.models import Assignment
from apps.exclusions.models import Exclusion
from apps.judgments.models import (
    Origin,
    PairJudgment,
    ScoreAnswer,
    ScoreResponse,
    TuringJudgment,
)
from apps.raters.models import Rater
from apps.studies.lengths import text_length
from apps.studies.models import Item, Question, Study


@dataclass(frozen=True)
class RuleThresholds:
    max_attention_failures: int = 1
    speeder_seconds: float = 3.0
    straight_line_tasks: int = 5
    position_min_pairs: int = 10

    @classmethod
    def of(cls, study: Study) -> RuleThresholds:
        return cls(
            max_attention_failures=study.exclusion_max_attention_failures,
            speeder_seconds=float(study.exclusion_speeder_seconds),
            straight_line_tasks=study.exclusion_straight_line_tasks,
            position_min_pairs=study.exclusion_position_min_pairs,
        )


@dataclass
class RaterQuality:
    rater: str
    background: str
    pk: int = 0
    attention_checks: int = 0
    attention_failed: int = 0
    timed_tasks: int = 0
    fast_tasks: int = 0
    # Exact when computed; None for a rater with fewer than half their tasks under the speeder
    # line, whose median is then known to be at or above it (see rater_quality).
    median_seconds: float | None = None
    scorecards: int = 0
    straight_runs: int = 0
    longest_run: int = 0
    pairs: int = 0
    left_choices: int = 0
    thresholds: RuleThresholds = field(default_factory=lambda: RuleThresholds())

    @property
    def too_many_attention_failures(self) -> bool:
        return self.attention_failed > self.thresholds.max_attention_failures

    @property
    def speeder(self) -> bool:
        return (
            self.median_seconds is not None
            and self.median_seconds < self.thresholds.speeder_seconds
        )

    @property
    def straight_liner(self) -> bool:
        return self.longest_run >= self.thresholds.straight_line_tasks

    @property
    def position_only(self) -> bool:
        """Every pair choice on the same side, over enough pairs to mean something."""
        return self.pairs >= self.thresholds.position_min_pairs and self.left_choices in (
            0,
            self.pairs,
        )

    @property
    def flagged(self) -> bool:
        return (
            self.attention_failed > 0 or self.speeder or self.straight_liner or self.position_only
        )


# The anomalous-choices screen proposes a rater whose combined p-value is at most this (a rate
# of about 1-3% among careful raters: benchmarks/sim_pair_raters.py).
ANOMALOUS_THRESHOLD = DEFAULT_THRESHOLD

_Judgment = type[ScoreResponse] | type[PairJudgment] | type[TuringJudgment]


def rater_quality(*, study: Study, all_medians: bool = False) -> list[RaterQuality]:
    """Per rater: failed attention checks, median active time per task, straight-lining, and
    the side of their pair choices, judged against the study's thresholds.

    At most eight queries whatever the number of raters, each an aggregate or bounded:
    1. the raters; 2. attention checks counted per rater;
    3. per rater, timed tasks and tasks under SPEEDER_SECONDS (one UNION ALL of three GROUP
       BYs). A median is below the line only if at least half the tasks are, so:
    4. the active times of those candidate raters only (of every rater with `all_medians`, for
       the download), whose exact median is taken in Python;
    5. the scale questions; 6. the scorecards whose scale answers are all equal (one GROUP BY
       ... HAVING over the answers); 7. every scorecard's rater in time order, for the runs;
    8. pair judgments and left choices counted per rater.
    """
    thresholds = RuleThresholds.of(study)
    raters = {
        pk: RaterQuality(rater=external, background=background or "", pk=pk, thresholds=thresholds)
        for pk, external, background in Rater.objects.filter(study=study)
        .order_by("external_id")
        .values_list("pk", "external_id", "background__code")
    }
    checks = (
        Assignment.objects.filter(study=study, is_attention_check=True)
        .order_by()
        .values("rater_id")
        .annotate(
            seen=Count("pk", filter=Q(attention_passed__isnull=False)),
            failed=Count("pk", filter=Q(attention_passed=False)),
        )
        .values_list("rater_id", "seen", "failed")
    )
    for rater, seen, failed in checks:
        if rater in raters:
            raters[rater].attention_checks, raters[rater].attention_failed = seen, failed
    _speed(study, raters, all_medians=all_medians)
    _straight_lining(study, raters)
    _sides(study, raters)
    return list(raters.values())


def _speed(study: Study, raters: dict[int, RaterQuality], *, all_medians: bool) -> None:
    line = float(study.exclusion_speeder_seconds)

    def counts(model: _Judgment) -> Any:
        return (
            model.objects.filter(rater__study=study, active_seconds__isnull=False)
            .order_by()
            .values("rater_id")
            .annotate(n=Count("pk"), fast=Count("pk", filter=Q(active_seconds__lt=line)))
            .values_list("rater_id", "n", "fast")
        )

    for rater, n, fast in counts(ScoreResponse).union(
        counts(PairJudgment), counts(TuringJudgment), all=True
    ):
        if rater in raters:
            raters[rater].timed_tasks += n
            raters[rater].fast_tasks += fast
    # With k values under the line out of n, the median is below it only if 2k >= n (for odd n
    # the middle value is under it; for even n both middle values must be, or the lower one
    # with an average still under): everyone else's median is at or above the line.
    candidates = [
        pk
        for pk, q in raters.items()
        if q.timed_tasks and (all_medians or 2 * q.fast_tasks >= q.timed_tasks)
    ]
    if not candidates:
        return

    def times(model: _Judgment) -> Any:
        return (
            model.objects.filter(rater_id__in=candidates, active_seconds__isnull=False)
            .order_by()
            .values_list("rater_id", "active_seconds")
        )

    seconds: dict[int, list[float]] = defaultdict(list)
    for rater, value in times(ScoreResponse).union(
        times(PairJudgment), times(TuringJudgment), all=True
    ):
        seconds[rater].append(value)
    for rater, values in seconds.items():
        raters[rater].median_seconds = statistics.median(values)


def unordered_scorecards(queryset: QuerySet[ScoreResponse]) -> QuerySet[ScoreResponse]:
    """Scorecards whose place in their rater's sequence is unknown: imported without a
    submission time or a time into the session. The import stores the moment of the import as
    both their submission and creation time (apps/judgments/services.py), so the two are equal
    only there."""
    return queryset.filter(_UNORDERED)


def ordered_scorecards(queryset: QuerySet[ScoreResponse]) -> QuerySet[ScoreResponse]:
    """The scorecards whose place in their rater's sequence is known (the rest of them)."""
    return queryset.exclude(_UNORDERED)


_UNORDERED = Q(
    origin=Origin.IMPORTED, seconds_into_session__isnull=True, submitted_at=F("created_at")
)


def _straight_lining(study: Study, raters: dict[int, RaterQuality]) -> None:
    kinds = list(Question.objects.filter(rubric_id=study.rubric_id).values_list("pk", "kind"))
    scales = (Question.Kind.LIKERT, Question.Kind.SLIDER)
    scale = [pk for pk, kind in kinds if kind in scales]
    others = [pk for pk, kind in kinds if kind not in scales]
    if not scale:
        return
    # Filters written so that both SQLite and PostgreSQL walk the study's raters through their
    # indexes instead of visiting every judgment of the study's index in random order. A run
    # needs the order the rater answered in: scorecards without one never join a run nor
    # count, so they are not read at all (an import without times is all of them).
    responses = ordered_scorecards(ScoreResponse.objects.filter(rater__study=study))
    uniform = dict(
        ScoreAnswer.objects.filter(response_id__in=responses.values("pk"))
        .exclude(question_id__in=others)
        .order_by()
        .values("response_id")
        .annotate(lo=Min("value"), hi=Max("value"), k=Count("pk"))
        .filter(lo=F("hi"), k=len(scale))
        .values_list("response_id", "lo")
    )
    cards = responses.order_by(
        "rater_id", "submitted_at", "seconds_into_session", "pk"
    ).values_list("rater_id", "pk")
    current, run, value = None, 0, None
    for rater, card in cards:
        if rater != current:
            current, run, value = rater, 0, None
        quality = raters.get(rater)
        if quality is None:
            continue
        quality.scorecards += 1
        same = uniform.get(card)
        if same is not None and same == value:
            run += 1
        else:
            run, value = (1, same) if same is not None else (0, None)
        if run == quality.thresholds.straight_line_tasks:
            quality.straight_runs += 1
        quality.longest_run = max(quality.longest_run, run)


def _sides(study: Study, raters: dict[int, RaterQuality]) -> None:
    # Only decisive judgments choose a side: a tie or "neither" has no winner.
    rows = (
        PairJudgment.objects.filter(rater__study=study)
        .order_by()
        .values("rater_id")
        .annotate(
            n=Count("pk", filter=Q(winner__isnull=False)),
            left=Count("pk", filter=Q(winner_id=F("left_id"))),
        )
        .values_list("rater_id", "n", "left")
    )
    for rater, n, left in rows:
        if rater in raters:
            raters[rater].pairs, raters[rater].left_choices = n, left


# ---------------------------------------------------------------------------------------------
# Anomalous choices
# ---------------------------------------------------------------------------------------------


def _submission_rank(rows: list[tuple[Any, ...]]) -> np.ndarray:
    """Each row's place in its rater's sequence: by submission time, then time into the
    session, then primary key (rows end with submitted_at, seconds_into_session, pk)."""
    keyed = sorted(
        range(len(rows)),
        key=lambda i: (
            rows[i][-3],
            float("inf") if rows[i][-2] is None else rows[i][-2],
            rows[i][-1],
        ),
    )
    rank = np.empty(len(rows), dtype=np.float64)
    rank[keyed] = np.arange(len(rows), dtype=np.float64)
    return rank


def _test_summary(screen: RaterScreen) -> dict[str, dict[str, float | int]]:
    return {
        name: {
            "p": round(test.p_value, 4),
            "z": round(test.z, 2),
            "statistic": round(test.statistic, 2),
            "n": test.n,
        }
        for name, test in screen.tests.items()
    }


def anomalous_choices(*, study: Study) -> dict[int, dict[str, Any]]:
    """Per rater (primary key) the anomalous-choices screen proposes: its evidence, ready to
    store with the proposal.

    Five queries whatever the number of raters: the raters, the raters already excluded (left
    out of the consensus), the decisive pair judgments (a tie or "neither" has no winner and
    says nothing about side, length or agreement), the Turing judgments, and the texts of the
    study's items (their length in their own units, apps/studies/lengths.py). The screen's
    randomness is seeded by the study's seed, so the same data give the same proposals."""
    raters = list(Rater.objects.filter(study=study).order_by("pk").values_list("pk", flat=True))
    if not raters:
        return {}
    index = {pk: i for i, pk in enumerate(raters)}
    excluded = set(
        Exclusion.objects.filter(
            study=study, target=Exclusion.Target.RATER, undone_at__isnull=True
        ).values_list("rater_id", flat=True)
    )
    pair_rows = list(
        PairJudgment.objects.filter(study=study, winner__isnull=False)
        .order_by()
        .values_list(
            "rater_id",
            "left_id",
            "right_id",
            "winner_id",
            "submitted_at",
            "seconds_into_session",
            "pk",
        )
    )
    turing_rows = list(
        TuringJudgment.objects.filter(study=study)
        .order_by()
        .values_list("rater_id", "item_id", "guess", "submitted_at", "seconds_into_session", "pk")
    )
    pair_rows = [row for row in pair_rows if row[0] in index]
    turing_rows = [row for row in turing_rows if row[0] in index]
    if not pair_rows and not turing_rows:
        return {}
    items = list(
        Item.objects.filter(study=study).order_by("pk").values_list("pk", "text", "language")
    )
    item_index = {pk: i for i, (pk, _text, _language) in enumerate(items)}
    pairs = None
    if pair_rows:
        pairs = PairJudgments(
            left=np.array([item_index[row[1]] for row in pair_rows]),
            right=np.array([item_index[row[2]] for row in pair_rows]),
            left_won=np.array([row[3] == row[1] for row in pair_rows]),
            rater=np.array([index[row[0]] for row in pair_rows]),
            n_items=len(items),
            order=_submission_rank(pair_rows),
            item_length=np.array(
                [float(text_length(text, language or "")) for _pk, text, language in items]
            ),
        )
    turing = None
    if turing_rows:
        turing = TuringJudgments(
            item=np.array([item_index[row[1]] for row in turing_rows]),
            guessed_ai=np.array([row[2] == TuringJudgment.Guess.AI for row in turing_rows]),
            rater=np.array([index[row[0]] for row in turing_rows]),
            n_items=len(items),
            order=_submission_rank(turing_rows),
        )
    result = screen_raters(
        len(raters),
        pairs=pairs,
        turing=turing,
        seed=int(study.random_seed),
        threshold=ANOMALOUS_THRESHOLD,
        left_out=np.array([pk in excluded for pk in raters]),
    )
    found: dict[int, dict[str, Any]] = {}
    for screen in result.raters:
        if not screen.proposed or screen.combined_p is None:
            continue
        # The tests that found it, most certain first (at least one: the combined p-value is
        # never below the smallest test's).
        failed = sorted(
            (name for name, test in screen.tests.items() if test.p_value <= result.threshold),
            key=lambda name: (screen.tests[name].p_value, name),
        )
        found[raters[screen.rater]] = {
            "combined_p": round(screen.combined_p, 4),
            "threshold": result.threshold,
            "findings": failed,
            "tests": _test_summary(screen),
            **screen.evidence,
            "simulations": result.simulations,
            "seed": result.seed,
        }
    return found
