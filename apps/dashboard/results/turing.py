"""Turing judgments: accuracy and judged-human rate per model and level against 50%."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.dashboard import charts
from apps.dashboard.results.common import PCT, Payload, Table, download_url, group_order, level_name
from apps.studies.models import Item, Study


def _turing_rows(payload: Payload) -> list[dict[str, Any]]:
    turing = payload.get("turing") or {}
    rows: list[dict[str, Any]] = []
    if turing.get("overall"):
        rows.append(
            {"scope": "overall", "name": "overall", "label": _("All items"), **turing["overall"]}
        )
    by_source = turing.get("by_source") or {}
    for name in group_order(by_source, "source"):
        rows.append(
            {"scope": "source", "name": name, "label": labels.source_label(name), **by_source[name]}
        )
    by_level = turing.get("by_level") or {}
    for name in group_order(by_level, "level"):
        rows.append({"scope": "level", "name": name, "label": level_name(name), **by_level[name]})
    return rows


def _chart_row(row: Mapping[str, Any], key: str) -> charts.Row:
    interval = row.get(key) or {}
    return charts.Row(
        label=row["label"],
        value=interval.get("value"),
        low=interval.get("ci_low"),
        high=interval.get("ci_high"),
        detail=f"n = {row.get('n', 0)}",
    )


def turing_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any]:
    rows = _turing_rows(payload)
    models = [row for row in rows if row["scope"] in ("overall", "source")]
    levels = [row for row in rows if row["scope"] == "level"]
    return {
        "overall": next((row for row in rows if row["scope"] == "overall"), None),
        "models": models,
        "levels": levels,
        "human": Item.HUMAN_SOURCE,
        "accuracy_chart": charts.turing_chart(
            [_chart_row(row, "accuracy") for row in models],
            label=_("Turing accuracy per source with %(level)s intervals; lines at %(a)s and %(b)s")
            % PCT,
        ),
        "judged_human_chart": charts.proportion_chart(
            [_chart_row(row, "judged_human") for row in models],
            label=_(
                "Share judged 'written by a person' per source with %(level)s intervals; "
                "line at %(a)s"
            )
            % PCT,
        ),
        "level_chart": charts.turing_chart(
            [_chart_row(row, "accuracy") for row in levels],
            label=_("Turing accuracy per level with %(level)s intervals; lines at %(a)s and %(b)s")
            % PCT,
        ),
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
