"""The results' figures: each chart of the results pages with its "how to read" line, built from
the stored results document.

One definition for every reader: the results pages and the printable report both call these, so
the report draws the same figure, from the same stored numbers, with the same labels and the
same reading, as the page. Pure: a payload (and the rubric's question order) in, a `Figure` out;
no request, no query. The SVG itself is drawn by `apps.findings.charts`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.analysis.stats.inputs import Thresholds
from apps.findings import charts

Payload = Mapping[str, Any]

# The leaderboard chart's bound: the top and the bottom of one comparison group.
CHART_TOP, CHART_BOTTOM = 50, 10
# Percentages put into translated chart titles as values, so no "%" sits in a message.
PCT = {"level": "95%", "a": "50%", "b": "70%"}
LEVELS = ("single", "multi_turn", "scenario")
HUMAN = "human"


@dataclass(frozen=True)
class Figure:
    """A chart (inline SVG, safe to insert), what it shows, and how to read it."""

    key: str
    title: str
    svg: SafeString
    how: str
    # What the caller needs besides the drawing (the leaderboard's groups and bounds).
    meta: dict[str, Any] = field(default_factory=dict)


def _threshold(payload: Payload, code: str, default: float) -> float:
    for warning in payload.get("warnings") or []:
        if warning.get("code") == code and warning.get("threshold") is not None:
            return float(warning["threshold"])
    return default


def group_order(names: Iterable[str], dimension: str) -> list[str]:
    """Levels in the method's order, models before the human baseline, the rest by name: the
    order of every by-group table on the pages and in the report."""

    def level_index(name: str) -> int:
        return LEVELS.index(name) if name in LEVELS else len(LEVELS)

    names = list(names)
    if dimension == "level":
        return sorted(names, key=lambda n: (level_index(n), n))
    if dimension == "level_humor_type":
        return sorted(names, key=lambda n: (level_index(n.split("/", 1)[0]), n))
    if dimension == "source":
        return sorted(names, key=lambda n: (n == HUMAN, n))
    return sorted(names)


def _level_order(names: Sequence[str]) -> list[str]:
    return group_order(names, "level")


def _source_order(names: Sequence[str]) -> list[str]:
    return group_order(names, "source")


def questions_shown(
    rubric: Sequence[tuple[str, str]], payload: Payload
) -> tuple[list[str], list[str]]:
    """The questions the results show, as (scale, binary) in scorecard order: `rubric` is the
    rubric's (name, kind) pairs in order. Choice questions store an option's index, whose mean
    means nothing: they are left out. A question the payload has and the rubric does not (a
    rubric changed since) is shown after the scales, by name."""
    present = set((payload.get("agreement") or {}).keys())
    for item in (payload.get("items") or [])[:1]:
        present |= set(item.get("questions", {}).keys())
    known = {name for name, _kind in rubric}
    scale = [name for name, kind in rubric if name in present and kind in ("likert", "slider")]
    binary = [name for name, kind in rubric if name in present and kind == "binary"]
    scale += sorted(present - known)
    return scale, binary


# --- leaderboard -------------------------------------------------------------------------------


def _bounded(rows: Sequence[Mapping[str, Any]], top: int, bottom: int) -> tuple[list[Any], int]:
    """The first `top` and last `bottom` rows, and how many were left out between them."""
    if len(rows) <= top + bottom:
        return list(rows), 0
    return [*rows[:top], None, *rows[-bottom:]], len(rows) - top - bottom


def leaderboard_rows(payload: Payload, scope: str) -> list[Mapping[str, Any]]:
    """The Bradley-Terry rows of one level ("" for all levels pooled)."""
    if scope:
        return (payload.get("bradley_terry_by_level") or {}).get(scope) or []
    return payload.get("bradley_terry") or []


def leaderboard_figure(
    payload: Payload, *, scope: str = "", component: int | None = None, humor: bool = True
) -> Figure:
    """One comparison group's Bradley-Terry scores, top CHART_TOP and bottom CHART_BOTTOM.

    `component` None (or one the level does not have) charts the largest group (lowest number
    on a tie). `meta` holds the group charted, the group sizes, and how many items are hidden.
    """
    rows = leaderboard_rows(payload, scope)
    items = {item["item"]: item for item in payload.get("items") or []}
    sizes = Counter(row["component"] for row in rows)
    default = min(sizes, key=lambda c: (-sizes[c], c)) if sizes else None
    if component not in sizes:
        component = default
    in_component = sorted(
        (row for row in rows if row["component"] == component),
        key=lambda row: (
            -(row["score"] if row["score"] is not None else float("-inf")),
            row["item"],
        ),
    )
    # Items without a finite score (undefeated, never won) have no dot to draw.
    shown, hidden = _bounded(
        [row for row in in_component if row["score"] is not None], CHART_TOP, CHART_BOTTOM
    )
    chart_rows = []
    for row in shown:
        if row is None:
            chart_rows.append(
                charts.Row(label="…", detail=_("%(n)d items not shown") % {"n": hidden})
            )
            continue
        info = items.get(row["item"], {})
        chart_rows.append(
            charts.Row(
                label=row["item"],
                value=row["score"],
                low=row["ci_low"],
                high=row["ci_high"],
                detail=f"{labels.source_label(info.get('source', ''))}, "
                f"{labels.humor_type_label(info.get('humor_type', ''))}; "
                + (_("rank %(rank)s") % {"rank": row["rank"]} if row["rank"] else _("not ranked")),
            )
        )
    title = _("Bradley-Terry scores with %(level)s intervals, comparison group %(c)s") % {
        "level": "95%",
        "c": component,
    }
    if humor:
        how = (
            _(
                "Each dot is an item's Bradley-Terry score (log-strength from the \"which is "
                'funnier?" pairs, centred at 0 within its group); the whisker is its 95%% bootstrap '
                "interval. Items whose whiskers overlap are not clearly different. Top items first."
            )
            % {}
        )
    else:
        how = (
            _(
                "Each dot is an item's Bradley-Terry score (log-strength from the pairs in which "
                "raters chose the preferred item, centred at 0 within its group); the whisker is its "
                "95%% bootstrap interval. Items whose whiskers overlap are not clearly different. "
                "Top items first."
            )
            % {}
        )
    if hidden:
        how += " " + _(
            "The chart shows the top %(top)s and the bottom %(bottom)s of the %(total)s items "
            "in this group; the table lists them all."
        ) % {"top": CHART_TOP, "bottom": CHART_BOTTOM, "total": len(in_component)}
    return Figure(
        key=f"leaderboard-{scope or 'all'}",
        title=title,
        svg=charts.leaderboard_chart(chart_rows, label=title),
        how=how,
        meta={
            "component": component,
            "sizes": dict(sizes),
            "total": len(in_component),
            "hidden": hidden,
        },
    )


# --- agreement ---------------------------------------------------------------------------------


def alpha_level(entry: Mapping[str, Any]) -> str:
    """The alpha that fits the scale, as pages, exports and the report all read it: the stored
    level, else ordinal for Likert answers and nominal for flags."""
    if entry.get("alpha_level"):
        return str(entry["alpha_level"])
    alphas = entry.get("krippendorff_alpha") or {}
    return "ordinal" if "ordinal" in alphas else "nominal"


def headline_alpha(entry: Mapping[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
    """The alpha that fits the scale (`alpha_level`) and its interval."""
    measure = alpha_level(entry)
    return measure, (entry.get("krippendorff_alpha") or {}).get(measure)


def agreement_figure(payload: Payload, questions: Sequence[str]) -> Figure:
    """Krippendorff's alpha per question (in scorecard order), the controversy line across."""
    agreement = payload.get("agreement") or {}
    controversial = _threshold(payload, "controversial_question", Thresholds().controversial_kappa)
    chart_rows = []
    for name in questions:
        entry = agreement.get(name)
        if entry is None:
            continue
        measure, headline = headline_alpha(entry)
        headline = headline or {}
        chart_rows.append(
            charts.Row(
                label=labels.question_label(name),
                value=headline.get("value"),
                low=headline.get("ci_low"),
                high=headline.get("ci_high"),
                detail=_("Krippendorff's alpha (%(m)s)") % {"m": labels.measure_label(measure)},
            )
        )
    lows = [r.low for r in chart_rows if r.low is not None]
    title = _("Krippendorff's alpha per question with %(level)s intervals") % {"level": "95%"}
    # Results computed since the rater jackknife give intervals for raters in general; older
    # documents resampled items only.
    rater_intervals = any(
        (entry.get("interval") or {}).get("method") == "rater_jackknife"
        for entry in agreement.values()
    )
    if rater_intervals:
        how = _(
            "Krippendorff's alpha per question (ordinal for rating scales, nominal for flags) "
            "with its 95%% interval for these items rated by raters in general (raters left out "
            "in groups: a delete-a-group jackknife over raters). 1 = perfect agreement, "
            "0 = chance; below the red line at %(t)s a question is too controversial to rank on."
        ) % {"t": charts.fmt(controversial)}
    else:
        how = _(
            "Krippendorff's alpha per question (ordinal for rating scales, nominal for flags) "
            "with its 95%% interval (items resampled). 1 = perfect agreement, 0 = chance; below "
            "the red line at %(t)s a question is too controversial to rank on."
        ) % {"t": charts.fmt(controversial)}
    return Figure(
        key="agreement",
        title=title,
        svg=charts.interval_chart(
            chart_rows,
            label=title,
            axis_label=_("Krippendorff's alpha"),
            domain=(min([-0.2, *lows]), 1.0),
            references=[charts.Reference(controversial, f"{charts.fmt(controversial)}")],
        ),
        how=how,
    )


# --- Turing ------------------------------------------------------------------------------------


def turing_rows(payload: Payload, *, humor: bool = True) -> list[dict[str, Any]]:
    """Overall, then per source (models before the human baseline), then per level."""
    turing = payload.get("turing") or {}
    rows: list[dict[str, Any]] = []
    if turing.get("overall"):
        rows.append(
            {"scope": "overall", "name": "overall", "label": _("All items"), **turing["overall"]}
        )
    by_source = turing.get("by_source") or {}
    for name in _source_order(list(by_source)):
        rows.append(
            {"scope": "source", "name": name, "label": labels.source_label(name), **by_source[name]}
        )
    by_level = turing.get("by_level") or {}
    for name in _level_order(list(by_level)):
        rows.append(
            {
                "scope": "level",
                "name": name,
                "label": labels.level_label(name, humor=humor),
                **by_level[name],
            }
        )
    return rows


def _turing_chart_row(row: Mapping[str, Any], key: str) -> charts.Row:
    interval = row.get(key) or {}
    return charts.Row(
        label=row["label"],
        value=interval.get("value"),
        low=interval.get("ci_low"),
        high=interval.get("ci_high"),
        detail=f"n = {row.get('n', 0)}",
    )


def turing_figures(payload: Payload, *, humor: bool = True) -> dict[str, Figure]:
    """Accuracy per source, the judged-human rate per source, and accuracy per level."""
    rows = turing_rows(payload, humor=humor)
    models = [row for row in rows if row["scope"] in ("overall", "source")]
    levels = [row for row in rows if row["scope"] == "level"]
    accuracy_title = (
        _("Turing accuracy per source with %(level)s intervals; lines at %(a)s and %(b)s") % PCT
    )
    human_title = (
        _("Share judged 'written by a person' per source with %(level)s intervals; line at %(a)s")
        % PCT
    )
    level_title = (
        _("Turing accuracy per level with %(level)s intervals; lines at %(a)s and %(b)s") % PCT
    )
    if humor:
        human_how = (
            _(
                "Share of judgments that said 'written by a person', per source, with its 95%% "
                "interval. Above the 50%% line a model's jokes are taken for human work more often "
                "than not."
            )
            % {}
        )
    else:
        human_how = (
            _(
                "Share of judgments that said 'written by a person', per source, with its 95%% "
                "interval. Above the 50%% line a model's texts are taken for human work more often "
                "than not."
            )
            % {}
        )
    return {
        "accuracy": Figure(
            key="turing-accuracy",
            title=accuracy_title,
            svg=charts.turing_chart(
                [_turing_chart_row(row, "accuracy") for row in models], label=accuracy_title
            ),
            how=_(
                "Share of correct guesses per source, with its 95%% interval (raters resampled). "
                "Near the 50%% line raters cannot tell; a model whose whole interval lies below "
                "the 70%% line passes, one whose whole interval lies above it still reads as "
                "machine-made. For human items, accuracy is the share correctly judged human."
            )
            % {},
        ),
        "judged_human": Figure(
            key="turing-judged-human",
            title=human_title,
            svg=charts.proportion_chart(
                [_turing_chart_row(row, "judged_human") for row in models], label=human_title
            ),
            how=human_how,
        ),
        "level": Figure(
            key="turing-level",
            title=level_title,
            svg=charts.turing_chart(
                [_turing_chart_row(row, "accuracy") for row in levels], label=level_title
            ),
            how=_(
                "Accuracy per test level with its 95%% interval; same reading as above. Levels "
                "are separate tests: compare models within a level."
            )
            % {},
            meta={"rows": len(levels)},
        ),
    }


# --- quality -----------------------------------------------------------------------------------


def fatigue_figure(payload: Payload, *, humor: bool = True) -> Figure:
    fatigue = (payload.get("diagnostics") or {}).get("fatigue") or {}
    title = (
        _("Mean funniness per minute into the session, with %(level)s intervals")
        if humor
        else _(
            "Mean answer to the overall question per minute into the session, "
            "with %(level)s intervals"
        )
    ) % PCT
    if humor:
        how = (
            _(
                "Mean funniness of the scorecards submitted in each minute of a session; the shaded "
                "band is the 95%% interval (raters resampled). A line that falls to the right means "
                "scores drift down as raters tire."
            )
            % {}
        )
    else:
        how = (
            _(
                "Mean answer to the overall question on the scorecards submitted in each minute of "
                "a session; the shaded band is the 95%% interval (raters resampled). A line that "
                "falls to the right means scores drift down as raters tire."
            )
            % {}
        )
    return Figure(
        key="fatigue",
        title=title,
        svg=charts.fatigue_chart(fatigue.get("bins") or [], label=title),
        how=how,
        meta={"bins": len(fatigue.get("bins") or [])},
    )


def position_figure(payload: Payload, *, humor: bool = True) -> Figure:
    bias = (payload.get("diagnostics") or {}).get("position_bias") or {}
    left = bias.get("left_choice_rate") or {}
    title = (
        _("Share of A/B judgments won by the left item, with %(level)s interval; line at %(a)s")
        % PCT
    )
    rows = (
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
        else []
    )
    how = (
        _(
            "Share of 'which is funnier?' judgments won by the item shown on the left, with its "
            "95%% interval; without a position bias it sits on the 50%% line."
        )
        if humor
        else _(
            "Share of pair judgments won by the item shown on the left, with its 95%% interval; "
            "without a position bias it sits on the 50%% line."
        )
    ) % {}
    return Figure(
        key="position-bias",
        title=title,
        svg=charts.proportion_chart(rows, label=title),
        how=how,
        meta={"rows": len(rows)},
    )
