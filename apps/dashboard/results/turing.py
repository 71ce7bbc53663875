"""Turing judgments: accuracy and judged-human rate per model and level against 50%."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from apps.dashboard.results.common import Payload, Table, download_url
from apps.dashboard.results.summary import humor_rubric
from apps.findings import figures
from apps.studies.models import Item, Study


def _turing_rows(payload: Payload) -> list[dict[str, Any]]:
    return figures.turing_rows(payload)


def turing_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    rows = _turing_rows(payload)
    models = [row for row in rows if row["scope"] in ("overall", "source")]
    levels = [row for row in rows if row["scope"] == "level"]
    shown = figures.turing_figures(payload, humor=humor_rubric(study))
    return {
        "overall": next((row for row in rows if row["scope"] == "overall"), None),
        "models": models,
        "levels": levels,
        "human": Item.HUMAN_SOURCE,
        "accuracy_chart": shown["accuracy"],
        "judged_human_chart": shown["judged_human"],
        "level_chart": shown["level"],
        "download": download_url(request, study, "turing"),
    }


def turing_csv(payload: Payload) -> Table:
    header = ["scope", "name", "n", "accuracy", "accuracy_ci_low", "accuracy_ci_high"]
    header += ["judged_human", "judged_human_ci_low", "judged_human_ci_high"]
    header += [
        "d_prime",
        "hits",
        "misses",
        "false_alarms",
        "correct_rejections",
        "verdict",
        "threshold",
        "p_vs_chance",
        "judged_human_minus_human_items",
        "judged_human_minus_human_items_ci_low",
        "judged_human_minus_human_items_ci_high",
        "judged_human_minus_human_items_p_holm",
    ]
    rows = []
    for row in _turing_rows(payload):
        accuracy, human = row.get("accuracy") or {}, row.get("judged_human") or {}
        rows.append(
            [row["scope"], row["name"], row.get("n")]
            + [accuracy.get("value"), accuracy.get("ci_low"), accuracy.get("ci_high")]
            + [human.get("value"), human.get("ci_low"), human.get("ci_high")]
            + [
                row.get(key)
                for key in ("d_prime", "hits", "misses", "false_alarms", "correct_rejections")
            ]
            + [row.get("verdict"), row.get("threshold")]
            + [(row.get("vs_chance") or {}).get("p_value")]
            + [
                (row.get("vs_human") or {}).get(key)
                for key in ("value", "ci_low", "ci_high", "p_holm")
            ]
        )
    return header, rows
