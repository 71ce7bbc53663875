"""Quality: fatigue, position bias, explanation match, and rater quality from bounded queries."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from apps.analysis.labels import group_label
from apps.dashboard.results.common import (
    LIST_LIMIT,
    Payload,
    Table,
    download_url,
    interval_cells,
)
from apps.dashboard.results.summary import humor_rubric
from apps.exclusions.evidence import rater_quality
from apps.findings import figures
from apps.studies.models import Study


def _per_ten_minutes(interval: dict[str, Any] | None) -> dict[str, Any] | None:
    """A per-minute slope shown per 10 minutes, where a drift reads as a size."""
    if not interval or interval.get("value") is None:
        return None
    return {
        key: None if interval.get(key) is None else 10 * float(interval[key])
        for key in ("value", "ci_low", "ci_high")
    }


def drift_context(diagnostics: dict[str, Any]) -> dict[str, Any] | None:
    """The within-session drift test, per 10 minutes and per task, for the study and each level."""
    drift = diagnostics.get("session_drift")
    if not drift:
        return None
    return {
        "drifts": drift.get("drifts"),
        "per_ten_minutes": _per_ten_minutes(drift.get("per_minute")),
        "per_minute": drift.get("per_minute") or {},
        "per_position": drift.get("per_position") or {},
        "levels": [
            {
                "level": group_label(level, "level"),
                "per_ten_minutes": _per_ten_minutes(entry.get("per_minute")),
                "per_position": entry.get("per_position") or {},
                "raters": (entry.get("per_minute") or {}).get("raters"),
            }
            for level, entry in sorted((drift.get("by_level") or {}).items())
        ],
        "best": drift.get("method_best_minutes"),
        "drop": drift.get("method_drop_minutes"),
    }


def quality_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    diagnostics = payload.get("diagnostics") or {}
    fatigue = diagnostics.get("fatigue") or {}
    bias = diagnostics.get("position_bias") or {}
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
    humor = humor_rubric(study)
    return {
        "humor": humor,
        "fatigue": fatigue,
        "fatigue_chart": figures.fatigue_figure(payload, humor=humor),
        "slope": fatigue.get("slope"),
        "drift": drift_context(diagnostics),
        "position_bias": bias,
        "position_chart": figures.position_figure(payload, humor=humor),
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
        "speeder_seconds": study.exclusion_speeder_seconds,
        "straight_line_run": study.exclusion_straight_line_tasks,
        "download_fatigue": download_url(request, study, "fatigue"),
        "download_position": download_url(request, study, "position-bias"),
        "download_raters": download_url(request, study, "rater-quality"),
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
