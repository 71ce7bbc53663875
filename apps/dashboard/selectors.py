"""Reads for the researcher pages: live progress of a study, in a bounded number of queries."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from apps.judgments.models import PairJudgment, ScoreResponse, TuringJudgment
from apps.raters.models import BackgroundGroup, Rater, RaterSession
from apps.studies.models import Item, Study


@dataclass(frozen=True)
class Coverage:
    """Scorecards per item and background group: rows sorted from least to most covered."""

    groups: list[str]
    rows: list[tuple[str, list[int]]]
    per_group_target: int


def _pair_coverage(study: Study) -> tuple[Counter[int], Counter[int]]:
    """Pairings and distinct opponents per item, counted by the database in one query.

    Each judgment counts once for each of its two items, so the query reads the pair table as
    (item, opponent) rows from both sides.
    """
    table = connection.ops.quote_name(PairJudgment._meta.db_table)
    sql = (
        "SELECT item, COUNT(*), COUNT(DISTINCT opponent) FROM ("
        f"SELECT left_id AS item, right_id AS opponent FROM {table} WHERE study_id = %s "
        f"UNION ALL SELECT right_id, left_id FROM {table} WHERE study_id = %s"
        ") AS sides GROUP BY item"
    )
    appearances: Counter[int] = Counter()
    opponents: Counter[int] = Counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, [study.pk, study.pk])
        for item, count, distinct in cursor.fetchall():
            appearances[item] = count
            opponents[item] = distinct
    return appearances, opponents


def study_progress(*, study: Study) -> dict[str, Any]:
    now = timezone.now()
    groups = list(BackgroundGroup.objects.filter(study=study).order_by("position", "code"))
    enrolled = dict(
        Rater.objects.filter(study=study, origin=Rater.Origin.ENROLLED)
        .values_list("background_id")
        .annotate(n=Count("pk"))
    )
    imported = dict(
        Rater.objects.filter(study=study, origin=Rater.Origin.IMPORTED)
        .values_list("background_id")
        .annotate(n=Count("pk"))
    )
    sessions = RaterSession.objects.filter(rater__study=study).aggregate(
        active=Count("pk", filter=Q(ended_at__isnull=True, deadline__gt=now)),
        completed=Count("pk", filter=Q(end_reason=RaterSession.EndReason.COMPLETED)),
        timed_out=Count(
            "pk",
            filter=Q(end_reason=RaterSession.EndReason.TIMED_OUT)
            | Q(ended_at__isnull=True, deadline__lte=now),
        ),
        withdrawn=Count("pk", filter=Q(end_reason=RaterSession.EndReason.WITHDRAWN)),
        returned=Count("pk", filter=Q(end_reason=RaterSession.EndReason.RETURNED)),
        imported=Count("pk", filter=Q(end_reason=RaterSession.EndReason.IMPORTED)),
    )
    items = list(
        Item.objects.filter(study=study, is_attention_check=False, stage=Item.Stage.STUDY)
        .order_by("external_id")
        .values_list("pk", "external_id")
    )
    scorecards = ScoreResponse.objects.filter(study=study, item__is_attention_check=False)
    per_item_group = Counter(
        {
            (item, group): n
            for item, group, n in scorecards.values_list(
                "item_id", "rater__background_id"
            ).annotate(n=Count("pk"))
        }
    )
    per_item: Counter[int] = Counter()
    for (item, _group), n in per_item_group.items():
        per_item[item] += n
    appearances, opponents = _pair_coverage(study)
    turing = Counter(
        dict(
            TuringJudgment.objects.filter(study=study)
            .values_list("item_id")
            .annotate(n=Count("pk"))
            .values_list("item_id", "n")
        )
    )

    target = study.target_scorecards_per_item
    n_items = len(items)
    scorecards_left = sum(max(0, target - per_item[pk]) for pk, _ in items)
    pairs_left = sum(max(0, study.pair_appearances_per_item - appearances[pk]) for pk, _ in items)
    turing_left = sum(max(0, study.turing_judgments_per_item - turing[pk]) for pk, _ in items)
    # Pace over the last hour, from the judgments themselves (imports excluded).
    hour_ago = now - timedelta(hours=1)
    recent = (
        scorecards.filter(created_at__gte=hour_ago, origin="collected").count()
        + PairJudgment.objects.filter(
            study=study, created_at__gte=hour_ago, origin="collected"
        ).count()
        + TuringJudgment.objects.filter(
            study=study, created_at__gte=hour_ago, origin="collected"
        ).count()
    )
    tasks_left = scorecards_left + (pairs_left + 1) // 2 + turing_left
    n_groups = max(1, len(groups))
    per_group_target = -(-target // n_groups)
    coverage_rows = sorted(
        ((external, [per_item_group[(pk, g.pk)] for g in groups]) for pk, external in items),
        key=lambda row: (sum(row[1]), row[0]),
    )
    return {
        "groups": [
            {
                "code": g.code,
                "label": g.label,
                "quota": g.quota,
                "filled": g.filled,
                "enrolled": enrolled.get(g.pk, 0),
                "imported": imported.get(g.pk, 0),
                "percent": round(100 * g.filled / g.quota) if g.quota else None,
            }
            for g in groups
        ],
        "sessions": sessions,
        "items": n_items,
        "scorecards": {
            "target": target,
            "done": sum(per_item.values()),
            "items_at_target": sum(1 for pk, _ in items if per_item[pk] >= target),
            "min": min((per_item[pk] for pk, _ in items), default=0),
            "left": scorecards_left,
        },
        "pairs": {
            "target": study.pair_appearances_per_item,
            "min_opponents": study.pair_min_opponents,
            "done": sum(appearances.values()) // 2,
            "items_at_target": sum(
                1
                for pk, _ in items
                if appearances[pk] >= study.pair_appearances_per_item
                and opponents[pk] >= study.pair_min_opponents
            ),
            "left": pairs_left,
        },
        "turing": {
            "target": study.turing_judgments_per_item,
            "done": sum(turing.values()),
            "left": turing_left,
        },
        "estimate": {
            "tasks_left": tasks_left,
            "sessions_left": -(-tasks_left // max(1, study.tasks_per_session)),
            "per_hour": recent,
            "hours_left": round(tasks_left / recent, 1) if recent else None,
        },
        "coverage": Coverage(
            groups=[g.code for g in groups], rows=coverage_rows, per_group_target=per_group_target
        ),
    }
