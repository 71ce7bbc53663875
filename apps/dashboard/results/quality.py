"""Quality: fatigue, position bias, explanation match, and rater quality from bounded queries."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, F, Max, Min, Q
from django.http import HttpRequest
from django.utils.translation import gettext as _

from apps.assignments.models import Assignment
from apps.dashboard import charts
from apps.dashboard.results.common import (
    LIST_LIMIT,
    PCT,
    SPEEDER_SECONDS,
    STRAIGHT_LINE_RUN,
    Payload,
    Table,
    download_url,
    interval_cells,
)
from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse, TuringJudgment
from apps.raters.models import Rater
from apps.studies.models import Question, Study


@dataclass
class RaterQuality:
    rater: str
    background: str
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

    @property
    def speeder(self) -> bool:
        return self.median_seconds is not None and self.median_seconds < SPEEDER_SECONDS

    @property
    def straight_liner(self) -> bool:
        return self.longest_run >= STRAIGHT_LINE_RUN

    @property
    def flagged(self) -> bool:
        return self.attention_failed > 0 or self.speeder or self.straight_liner


_Judgment = type[ScoreResponse] | type[PairJudgment] | type[TuringJudgment]


def rater_quality(*, study: Study, all_medians: bool = False) -> list[RaterQuality]:
    """Per rater: failed attention checks, median active time per task, straight-lining.

    At most seven queries whatever the number of raters, each an aggregate or bounded:
    1. the raters; 2. attention checks counted per rater;
    3. per rater, timed tasks and tasks under SPEEDER_SECONDS (one UNION ALL of three GROUP
       BYs). A median is below the line only if at least half the tasks are, so:
    4. the active times of those candidate raters only (of every rater with `all_medians`, for
       the download), whose exact median is taken in Python;
    5. the scale questions; 6. the scorecards whose scale answers are all equal (one GROUP BY
       ... HAVING over the answers); 7. every scorecard's rater in time order, for the runs.
    """
    raters = {
        pk: RaterQuality(rater=external, background=background or "")
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
    return list(raters.values())


def _speed(study: Study, raters: dict[int, RaterQuality], *, all_medians: bool) -> None:
    def counts(model: _Judgment) -> Any:
        return (
            model.objects.filter(rater__study=study, active_seconds__isnull=False)
            .order_by()
            .values("rater_id")
            .annotate(n=Count("pk"), fast=Count("pk", filter=Q(active_seconds__lt=SPEEDER_SECONDS)))
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


def _straight_lining(study: Study, raters: dict[int, RaterQuality]) -> None:
    kinds = list(Question.objects.filter(rubric_id=study.rubric_id).values_list("pk", "kind"))
    scale = [pk for pk, kind in kinds if kind == Question.Kind.LIKERT]
    others = [pk for pk, kind in kinds if kind != Question.Kind.LIKERT]
    if not scale:
        return
    # Filters written so that both SQLite and PostgreSQL walk the study's raters through their
    # indexes instead of visiting every judgment of the study's index in random order.
    responses = ScoreResponse.objects.filter(rater__study=study)
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
        if run == STRAIGHT_LINE_RUN:
            quality.straight_runs += 1
        quality.longest_run = max(quality.longest_run, run)


def quality_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    diagnostics = payload.get("diagnostics") or {}
    fatigue = diagnostics.get("fatigue") or {}
    bias = diagnostics.get("position_bias") or {}
    left = bias.get("left_choice_rate") or {}
    quality = rater_quality(study=study)
    flagged = sorted(
        (q for q in quality if q.flagged),
        key=lambda q: (
            -q.attention_failed,
            not q.straight_liner,
            float("inf") if q.median_seconds is None else q.median_seconds,
            q.rater,
        ),
    )
    coverage = diagnostics.get("coverage") or {}
    return {
        "fatigue": fatigue,
        "fatigue_chart": charts.fatigue_chart(
            fatigue.get("bins") or [],
            label=_("Mean funniness per minute into the session, with %(level)s intervals") % PCT,
        ),
        "slope": fatigue.get("slope"),
        "position_bias": bias,
        "position_chart": charts.proportion_chart(
            [
                charts.Row(
                    label=_("Left item chosen"),
                    value=left.get("value"),
                    low=left.get("ci_low"),
                    high=left.get("ci_high"),
                    detail=f"n = {left.get('n', 0)}",
                )
            ]
            if left
            else [],
            label=_(
                "Share of A/B judgments won by the left item, with %(level)s interval; line at %(a)s"
            )
            % PCT,
        ),
        "explanation": diagnostics.get("explanation_match_rate"),
        "coverage": [
            {"group": group, "missing": (coverage.get("items_without_group") or {}).get(group)}
            for group in coverage.get("groups") or []
        ],
        "raters": len(quality),
        "attention_failures": sum(1 for q in quality if q.attention_failed),
        "speeders": sum(1 for q in quality if q.speeder),
        "straight_liners": sum(1 for q in quality if q.straight_liner),
        "flagged": flagged[:LIST_LIMIT],
        "n_flagged": len(flagged),
        "list_limit": LIST_LIMIT,
        "speeder_seconds": SPEEDER_SECONDS,
        "straight_line_run": STRAIGHT_LINE_RUN,
        "download_fatigue": download_url(study, "fatigue"),
        "download_position": download_url(study, "position-bias"),
        "download_raters": download_url(study, "rater-quality"),
    }


def fatigue_csv(payload: Payload) -> Table:
    fatigue = (payload.get("diagnostics") or {}).get("fatigue") or {}
    header = ["start_minute", "end_minute", "n", "mean", "ci_low", "ci_high"]
    rows = [
        [b.get("start"), b.get("end"), b.get("n"), b.get("mean"), b.get("ci_low"), b.get("ci_high")]
        for b in fatigue.get("bins") or []
    ]
    return header, rows


def position_csv(payload: Payload) -> Table:
    bias = (payload.get("diagnostics") or {}).get("position_bias") or {}
    header = ["measure", "value", "ci_low", "ci_high", "n", "p_value"]
    if not bias:
        return header, []
    return header, [
        ["left_choice_rate", *interval_cells(bias.get("left_choice_rate")), bias.get("p_value")]
    ]


def rater_quality_csv(study: Study) -> Table:
    header = [
        "rater",
        "background",
        "attention_checks",
        "attention_failed",
        "timed_tasks",
        "tasks_under_speeder_line",
        "median_active_seconds",
        "speeder",
        "scorecards",
        "straight_line_runs",
        "longest_straight_run",
        "straight_liner",
    ]
    rows = [
        [
            q.rater,
            q.background,
            q.attention_checks,
            q.attention_failed,
            q.timed_tasks,
            q.fast_tasks,
            q.median_seconds,
            q.speeder,
            q.scorecards,
            q.straight_runs,
            q.longest_run,
            q.straight_liner,
        ]
        for q in rater_quality(study=study, all_medians=True)
    ]
    return header, rows
