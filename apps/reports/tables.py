"""A results document (DESIGN.md shape) as named flat tables, one row per unit.

Pure: a dict in, lists of rows out, no Django, no files. The CSV, XLSX and zip writers all read
these tables, so every tabular export carries the same numbers, unrounded, as the stored payload.
Missing numbers stay None (an empty cell), never 0. The tables of the records stored apart from
the document (the content evaluation, the pre-screening) are built in `stored_tables`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apps.analysis import labels
from apps.analysis.exports import item_rows
from apps.analysis.stats.report import GROUP_DIMENSIONS, RATER_DIMENSIONS
from apps.findings.figures import alpha_level

# The tables of the results document (result_tables builds them, in this order).
RESULT_TABLE_NAMES = (
    "bradley_terry",
    "bradley_terry_by_level",
    # Which model fitted each board (tie parameter, log-likelihoods) and its ends.
    "bradley_terry_fit",
    # "About the same" and "neither" rates of the pairs, where offered.
    "pair_outcomes",
    "items",
    *(f"groups_{dimension}" for dimension in GROUP_DIMENSIONS),
    "agreement",
    "agreement_by_group",
    "agreement_per_item",
    "turing",
    "models",
    # The boards with what raters reward besides humor regressed out.
    "style_sources",
    "style_covariates",
    "style_items",
    # Would the study give the same order again: split-half and k-rater reliability.
    "reliability",
    "diagnostics",
    "warnings",
)
# The content evaluation (apps/content) and the pre-screening (apps/screening), stored apart from
# the document and written beside its tables (apps/reports/stored_tables.py builds them). Every
# study has them, without rows when it has no such record.
CONTENT_TABLE_NAMES = (
    "content_weights",
    "content_independence",
    "content_against_humans",
    "content_tiers",
)
SCREENING_TABLE_NAMES = (
    "screening_run",
    "screening_stages",
    "screening_calibration",
    "screening_audit",
    "screening_judge",
    "screening_tiers",
)
# Every table of the workbook and the zip, in their order (provenance comes last).
TABLE_NAMES = (*RESULT_TABLE_NAMES, *CONTENT_TABLE_NAMES, *SCREENING_TABLE_NAMES)
PROVENANCE = "provenance"
# Names a caller may ask for one at a time (a single CSV).
SELECTABLE_TABLES = (*TABLE_NAMES, PROVENANCE)


@dataclass(frozen=True)
class Table:
    name: str
    columns: list[str]
    rows: list[list[Any]]

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def _get(mapping: Any, *keys: str) -> Any:
    """A nested value, or None when any step is missing (a question nobody answered)."""
    for key in keys:
        if not isinstance(mapping, dict):
            return None
        mapping = mapping.get(key)
    return mapping


def _interval(stats: Any) -> list[Any]:
    return [_get(stats, "value"), _get(stats, "ci_low"), _get(stats, "ci_high"), _get(stats, "n")]


def _interval_columns(prefix: str, value_name: str = "mean") -> list[str]:
    return [f"{prefix}_{value_name}", f"{prefix}_ci_low", f"{prefix}_ci_high", f"{prefix}_n"]


def question_names(document: dict[str, Any], order: Sequence[str] | None = None) -> list[str]:
    """The questions in the document: in the rubric's order when given, else alphabetical.

    The payload's own key order is not trusted: a document stored before the results became
    `json` (analysis 0005) went through PostgreSQL's jsonb, which does not keep it.
    """
    found: set[str] = set(document.get("agreement") or {})
    for item in document.get("items") or []:
        found.update(item.get("questions") or {})
    ordered = [name for name in (order or []) if name in found]
    return ordered + sorted(found - set(ordered))


def _item_meta(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["item"]: item for item in document.get("items") or []}


def _bt_rows(rows: list[dict[str, Any]], meta: dict[str, dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            row.get("rank"),
            row["item"],
            _get(meta, row["item"], "source"),
            _get(meta, row["item"], "level"),
            _get(meta, row["item"], "humor_type"),
            _get(meta, row["item"], "content_type"),
            row.get("score"),
            row.get("ci_low"),
            row.get("ci_high"),
            row.get("component"),
            row.get("wins"),
            row.get("losses"),
            # "About the same" answers the item was in (a tie model's studies only; else 0).
            row.get("ties"),
            # Why an item has no score or rank ("undefeated", "never_won", "not_ranked", ...).
            " ".join(row.get("flags") or []),
            # An undefeated item's lower bound or a never-winning item's upper bound.
            row.get("bound"),
            row.get("bound_side") or "",
        ]
        for row in rows
    ]


BT_COLUMNS = [
    "rank",
    "item",
    "source",
    "level",
    "humor_type",
    "content_type",
    "score",
    "ci_low",
    "ci_high",
    "component",
    "wins",
    "losses",
    "ties",
    "flags",
    "bound",
    "bound_side",
]


def bradley_terry_table(document: dict[str, Any]) -> Table:
    meta = _item_meta(document)
    return Table("bradley_terry", BT_COLUMNS, _bt_rows(document.get("bradley_terry") or [], meta))


def bradley_terry_by_level_table(document: dict[str, Any]) -> Table:
    meta = _item_meta(document)
    by_level = document.get("bradley_terry_by_level") or {}
    rows = [[level, *row] for level in sorted(by_level) for row in _bt_rows(by_level[level], meta)]
    return Table("bradley_terry_by_level", ["scope_level", *BT_COLUMNS], rows)


def items_table(document: dict[str, Any]) -> Table:
    rows = item_rows(document)
    columns = list(rows[0]) if rows else ["item"]
    return Table("items", columns, [[row.get(column) for column in columns] for row in rows])


def group_table(
    document: dict[str, Any], dimension: str, order: Sequence[str] | None = None
) -> Table:
    groups = _get(document, "groups", dimension) or {}
    questions = question_names(document, order)
    size = "n_raters" if dimension in RATER_DIMENSIONS else "n_items"
    columns = ["group", size]
    for name in questions:
        columns += _interval_columns(name)
    columns += _interval_columns("turing", "accuracy")
    if dimension not in RATER_DIMENSIONS:
        columns += ["offensive_items", "offense_rate", "safety_intercepted_items"]
        columns += _interval_columns("offense_any_rater", "rate")
        columns += _interval_columns("offense_share_of_raters", "rate")
    rows = []
    for group in sorted(groups):
        entry = groups[group]
        row = [group, entry.get(size)]
        for name in questions:
            row += _interval(_get(entry, "questions", name))
        row += _interval(entry.get("turing_accuracy"))
        if dimension not in RATER_DIMENSIONS:
            row += [
                entry.get("offensive_items"),
                entry.get("offense_rate"),
                entry.get("safety_intercepted_items"),
            ]
            row += _interval(_get(entry, "offense", "any_rater"))
            row += _interval(_get(entry, "offense", "share_of_raters"))
        rows.append(row)
    return Table(f"groups_{dimension}", columns, rows)


ALPHA_LEVELS = ("nominal", "ordinal", "interval")


def agreement_table(document: dict[str, Any], order: Sequence[str] | None = None) -> Table:
    agreement = document.get("agreement") or {}
    columns = ["question", "n_ratings", "weights"]
    columns += ["fleiss_kappa", "fleiss_kappa_ci_low", "fleiss_kappa_ci_high", "n_items"]
    for level in ALPHA_LEVELS:
        columns += [f"alpha_{level}", f"alpha_{level}_ci_low", f"alpha_{level}_ci_high"]
    # The level that fits the scale (the headline), and how many raters' backgrounds are unknown.
    columns += ["alpha_level", "unknown_background_raters"]
    # Cohen's kappa: the mean over pairs of raters sharing at least min_shared_items items,
    # plain and quadratic-weighted (rating scales only); no value, and 0 pairs, when no pair
    # qualifies (the note column says so).
    for weighting in COHEN_WEIGHTINGS:
        prefix = "cohen_kappa" if weighting == "unweighted" else f"cohen_kappa_{weighting}"
        columns += [prefix, f"{prefix}_ci_low", f"{prefix}_ci_high", f"{prefix}_pairs"]
    columns += ["cohen_kappa_min_shared_items", "cohen_kappa_note", "interval"]
    rows = []
    for name in question_names(document, order):
        if name not in agreement:
            continue
        entry = agreement[name]
        row = [name, entry.get("n_ratings"), entry.get("weights")]
        row += _interval(entry.get("fleiss_kappa"))
        for level in ALPHA_LEVELS:
            row += _interval(_get(entry, "krippendorff_alpha", level))[:3]
        row += [alpha_level(entry), entry.get("unknown_background_raters")]
        cohen = entry.get("cohen_kappa") or {}
        for weighting in COHEN_WEIGHTINGS:
            stats = cohen.get(weighting)
            row += [*_interval(stats)[:3], _get(stats, "n_pairs")]
        plain = cohen.get("unweighted") or {}
        row += [
            plain.get("min_shared_items"),
            cohen_kappa_note(plain),
            _get(entry, "interval", "method"),
        ]
        rows.append(row)
    return Table("agreement", columns, rows)


COHEN_WEIGHTINGS = ("unweighted", "quadratic")


def cohen_kappa_note(stats: dict[str, Any] | None) -> str:
    """Why a Cohen's kappa has no value: no pair of raters shares enough items."""
    if not stats or stats.get("n_pairs"):
        return ""
    return labels.no_kappa_pairs(stats.get("min_shared_items"))


def agreement_by_group_table(document: dict[str, Any], order: Sequence[str] | None = None) -> Table:
    agreement = document.get("agreement") or {}
    rows = []
    for name in question_names(document, order):
        entry = agreement.get(name) or {}
        by_group = entry.get("krippendorff_alpha_by_group") or {}
        for group in sorted(by_group):
            rows.append([name, group, alpha_level(entry), *_interval(by_group[group])])
        # Interval alpha beside ordinal on numeric scales, its level named in `measure`.
        by_group_interval = entry.get("krippendorff_alpha_by_group_interval") or {}
        for group in sorted(by_group_interval):
            rows.append([name, group, "interval", *_interval(by_group_interval[group])])
    return Table(
        "agreement_by_group",
        ["question", "group", "measure", "alpha", "ci_low", "ci_high", "n_items"],
        rows,
    )


def agreement_per_item_table(document: dict[str, Any], order: Sequence[str] | None = None) -> Table:
    agreement = document.get("agreement") or {}
    rows = [
        [
            row["item"],
            name,
            row.get("agreement"),
            row.get("cross_group"),
            row.get("cross_group_reason") or "",
        ]
        for name in question_names(document, order)
        for row in (agreement.get(name) or {}).get("per_item") or []
    ]
    return Table(
        "agreement_per_item",
        ["item", "question", "agreement", "cross_group_agreement", "cross_group_reason"],
        rows,
    )


TURING_COLUMNS = [
    "scope",
    "group",
    "n",
    "accuracy",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "judged_human",
    "judged_human_ci_low",
    "judged_human_ci_high",
    "d_prime",
    "hits",
    "misses",
    "false_alarms",
    "correct_rejections",
    "verdict",
    "threshold",
    "seed",
    # The tests beside the estimates, as the Turing page shows them.
    "p_vs_chance",
    "judged_human_minus_human_items",
    "judged_human_minus_human_items_ci_low",
    "judged_human_minus_human_items_ci_high",
    "judged_human_minus_human_items_p_holm",
]


def _turing_row(scope: str, group: str, entry: dict[str, Any]) -> list[Any]:
    return [
        scope,
        group,
        entry.get("n"),
        *_interval(entry.get("accuracy"))[:3],
        *_interval(entry.get("judged_human"))[:3],
        entry.get("d_prime"),
        entry.get("hits"),
        entry.get("misses"),
        entry.get("false_alarms"),
        entry.get("correct_rejections"),
        entry.get("verdict"),
        entry.get("threshold"),
        entry.get("seed"),
        _get(entry, "vs_chance", "p_value"),
        *_interval(entry.get("vs_human"))[:3],
        _get(entry, "vs_human", "p_holm"),
    ]


def turing_table(document: dict[str, Any]) -> Table:
    turing = document.get("turing") or {}
    rows = []
    if turing.get("overall"):
        rows.append(_turing_row("overall", "all", turing["overall"]))
    for scope in ("source", "level"):
        entries = turing.get(f"by_{scope}") or {}
        rows += [_turing_row(scope, group, entries[group]) for group in sorted(entries)]
    return Table("turing", TURING_COLUMNS, rows)


def diagnostics_table(document: dict[str, Any]) -> Table:
    diagnostics = document.get("diagnostics") or {}
    rows: list[list[Any]] = []
    left = _get(diagnostics, "position_bias", "left_choice_rate")
    if left:
        rows.append(["position_bias_left_choice_rate", "", *_interval(left)])
        rows.append(
            [
                "position_bias_p_value",
                "",
                _get(diagnostics, "position_bias", "p_value"),
                None,
                None,
                None,
            ]
        )
    fatigue = diagnostics.get("fatigue") or {}
    if fatigue.get("slope"):
        rows.append(["fatigue_slope_per_minute", "", *_interval(fatigue["slope"])])
    drift = diagnostics.get("session_drift") or {}
    for clock in ("per_minute", "per_position"):
        if (drift.get(clock) or {}).get("value") is not None:
            rows.append([f"drift_within_raters_{clock}", "", *_interval(drift[clock])])
    for level, entry in sorted((drift.get("by_level") or {}).items()):
        for clock in ("per_minute", "per_position"):
            if (entry.get(clock) or {}).get("value") is not None:
                rows.append([f"drift_within_raters_{clock}", level, *_interval(entry[clock])])
    for b in fatigue.get("bins") or []:
        rows.append(
            [
                "fatigue_mean_by_minute",
                f"{b.get('start')}-{b.get('end')}",
                b.get("mean"),
                b.get("ci_low"),
                b.get("ci_high"),
                b.get("n"),
            ]
        )
    for group, count in sorted(
        (_get(diagnostics, "coverage", "items_without_group") or {}).items()
    ):
        rows.append(["items_without_group", group, count, None, None, None])
    if diagnostics.get("explanation_match_rate"):
        rows.append(
            ["explanation_match_rate", "", *_interval(diagnostics["explanation_match_rate"])]
        )
    # Choice questions: the share choosing each option, by name, overall and per model and
    # background (never a mean of the options' indices).
    for question, entry in sorted((document.get("choices") or {}).items()):
        names = entry.get("names") or []
        scopes = [("", {"all": entry.get("overall") or []})]
        scopes += [
            (f" {scope}=", entry.get(f"by_{scope}") or {}) for scope in ("source", "background")
        ]
        for prefix, table in scopes:
            for group, cells in sorted(table.items()):
                where = f"{prefix}{group}" if prefix else ""
                for k, cell in enumerate(cells):
                    name = names[k] if k < len(names) else str(k)
                    rows.append(["choice_share", f"{question}={name}{where}", *_interval(cell)])
    # "I don't get it": its rate per question, overall and per model, background and item.
    for question, entry in sorted(
        ((document.get("not_understood") or {}).get("questions") or {}).items()
    ):
        if entry.get("overall"):
            rows.append(["not_understood_rate", question, *_interval(entry["overall"])])
        for scope in ("source", "background"):
            for name, stats in sorted((entry.get(f"by_{scope}") or {}).items()):
                rows.append(
                    ["not_understood_rate", f"{question} {scope}={name}", *_interval(stats)]
                )
        for row in entry.get("items") or []:
            rows.append(
                ["not_understood_rate", f"{question} item={row['item']}", *_interval(row["rate"])]
            )
    return Table("diagnostics", ["measure", "subject", "value", "ci_low", "ci_high", "n"], rows)


def warnings_table(document: dict[str, Any]) -> Table:
    """One row per stored warning: its code, scope and parameters (JSON) for scripts, the
    sentence in English (``message``) and in the reader's language (``text``)."""
    columns = ["code", "scope", "subject", "params", "message", "text", "value", "threshold"]
    rows = []
    for warning in document.get("warnings") or []:
        shown = labels.warning_export(warning)
        rows.append(
            [
                shown["code"],
                shown["scope"],
                warning.get("subject"),
                json.dumps(shown["params"], ensure_ascii=False, sort_keys=True),
                shown["message"],
                shown["text"],
                warning.get("value"),
                warning.get("threshold"),
            ]
        )
    return Table("warnings", columns, rows)


def provenance_table(
    document: dict[str, Any], *, study: str = "", more: Sequence[list[Any]] = ()
) -> Table:
    """What a reader needs to trust and reproduce the numbers; one key per row (`more`: the
    provenance of the records stored apart, stored_tables.stored_provenance_rows)."""
    rows: list[list[Any]] = [
        ["study", study or document.get("study")],
        ["seed", document.get("seed")],
        ["rounds", document.get("rounds")],
        ["confidence_level", document.get("level")],
        ["bootstrap_cluster", document.get("cluster")],
        ["input_hash", document.get("input_hash")],
        ["exclusion_hash", document.get("exclusion_hash")],
        ["computed_at", document.get("computed_at")],
    ]
    rows += [[f"count_{key}", value] for key, value in (document.get("counts") or {}).items()]
    # The versions the results were computed with (results of older runs have none).
    rows += [
        [f"software_{key}", value]
        for key, value in sorted((document.get("software") or {}).items())
    ]
    rows += [list(row) for row in more]
    return Table(PROVENANCE, ["key", "value"], rows)


MODEL_VIEWS = ("by_level", "by_humor_type", "by_language")
MODELS_COLUMNS = [
    "view",
    "group",
    "row",
    "source",
    "other",
    "measure",
    "value",
    "ci_low",
    "ci_high",
    "p_value",
    "p_holm",
    "n_items",
    "n_raters",
    # A difference's simultaneous interval (Bonferroni over its family: one view, one measure).
    "simultaneous_ci_low",
    "simultaneous_ci_high",
    # "undefeated" / "never_won" on a source's bt, "no_finite_strength" on a difference.
    "flag",
]


def models_table(document: dict[str, Any], order: Sequence[str] | None = None) -> Table:
    """The model comparison (`models`): per view, each source's intervals, then every pairwise
    difference (with p_a_beats_b on its own row after each Bradley-Terry difference)."""
    models = document.get("models") or {}
    questions = question_names(document, order)
    views: list[tuple[str, str, dict[str, Any]]] = [("overall", "", models)]
    for dimension in MODEL_VIEWS:
        for name, view in sorted((models.get(dimension) or {}).items()):
            views.append((dimension, name, view))
    rows: list[list[Any]] = []
    for dimension, name, view in views:
        for source, entry in (view.get("by_model") or {}).items():
            base = [dimension, name, "source", source, ""]
            counts = [entry.get("n_items"), entry.get("n_raters")]
            measures: list[tuple[str, Any]] = []
            for q in questions:
                measures += [
                    (q, _get(entry, "questions", q)),
                    (f"{q}_fixed_items", _get(entry, "fixed_items", q)),
                    (f"{q}_adjusted", _get(entry, "adjusted", q)),
                ]
            measures += [
                ("bt", entry.get("bt")),
                ("judged_human", entry.get("judged_human")),
                ("offense_any_rater", _get(entry, "offense", "any_rater")),
                ("offense_share_of_raters", _get(entry, "offense", "share_of_raters")),
            ]
            for measure, stats in measures:
                rows.append(
                    [
                        *base,
                        measure,
                        _get(stats, "value"),
                        _get(stats, "ci_low"),
                        _get(stats, "ci_high"),
                        None,
                        None,
                        *counts,
                        None,
                        None,
                        _get(stats, "flag"),
                    ]
                )
            bt = entry.get("bt") or {}
            if bt.get("bound") is not None:
                # A source that never lost (never won): at least (most) this strong.
                rows.append(
                    [
                        *base,
                        "bt_bound",
                        bt["bound"],
                        None,
                        None,
                        None,
                        None,
                        *counts,
                        None,
                        None,
                        bt.get("bound_side"),
                    ]
                )
            rank = entry.get("rank") or {}
            rows.append(
                [
                    *base,
                    "rank",
                    None,
                    rank.get("low"),
                    rank.get("high"),
                    None,
                    None,
                    *counts,
                    None,
                    None,
                    None,
                ]
            )
        for diff in view.get("differences") or []:
            head = [dimension, name, "difference", diff.get("a"), diff.get("b")]
            rows.append(
                [
                    *head,
                    diff.get("question"),
                    diff.get("value"),
                    diff.get("ci_low"),
                    diff.get("ci_high"),
                    diff.get("p_value"),
                    diff.get("p_holm"),
                    None,
                    None,
                    _get(diff, "simultaneous", "ci_low"),
                    _get(diff, "simultaneous", "ci_high"),
                    diff.get("flag"),
                ]
            )
            beats = diff.get("p_a_beats_b")
            if beats:
                rows.append(
                    [
                        *head,
                        "p_a_beats_b",
                        beats.get("value"),
                        beats.get("ci_low"),
                        beats.get("ci_high"),
                        None,
                        None,
                        None,
                        None,
                        _get(beats, "simultaneous", "ci_low"),
                        _get(beats, "simultaneous", "ci_high"),
                        None,
                    ]
                )
    return Table("models", MODELS_COLUMNS, rows)


BT_FIT_COLUMNS = [
    "scope_level",
    "model",
    "n_judgments",
    "ties",
    "tie_param",
    "tie_param_ci_low",
    "tie_param_ci_high",
    # Why the tie parameter has no interval, when it has none (e.g. resamples_far_from_estimate).
    "tie_param_interval_reason",
    "davidson_log_lik",
    "davidson_aic",
    "rao_kupper_log_lik",
    "rao_kupper_aic",
    "converged",
    "iterations",
    "rounds",
    "disconnected_rounds",
    "interval",
    "undefeated",
    "never_won",
    "end_bounds",
    "end_bound_level",
    "end_bound_cut",
    "end_bound_simultaneous",
    "scale_not_identified",
    "barely_compared",
]


def _bt_fit_row(scope: str, fit: dict[str, Any]) -> list[Any]:
    tie_models = fit.get("tie_models") or {}
    return [
        scope,
        fit.get("model"),
        fit.get("n_judgments"),
        fit.get("ties"),
        *_interval(fit.get("tie_param"))[:3],
        _get(fit, "tie_param", "reason"),
        _get(tie_models, "davidson", "log_lik"),
        _get(tie_models, "davidson", "aic"),
        _get(tie_models, "rao_kupper", "log_lik"),
        _get(tie_models, "rao_kupper", "aic"),
        fit.get("converged"),
        fit.get("iterations"),
        fit.get("rounds"),
        fit.get("disconnected_rounds"),
        fit.get("interval"),
        fit.get("undefeated"),
        fit.get("never_won"),
        fit.get("end_bounds"),
        _get(fit, "end_bound", "level"),
        _get(fit, "end_bound", "cut"),
        _get(fit, "end_bound", "simultaneous"),
        fit.get("scale_not_identified"),
        fit.get("barely_compared"),
    ]


def bradley_terry_fit_table(document: dict[str, Any]) -> Table:
    """One row per board (`all`, then each level): the model that fitted it (plain
    Bradley-Terry, or Davidson / Rao-Kupper with the tie parameter's bootstrap interval and both
    tie models' log-likelihood and AIC), and its ends (how many end items have a one-sided bound,
    at which level and likelihood-ratio cut, simultaneous or not)."""
    rows = []
    fit = document.get("bradley_terry_fit")
    if fit:
        rows.append(_bt_fit_row("all", fit))
    by_level = document.get("bradley_terry_fit_by_level") or {}
    rows += [_bt_fit_row(level, by_level[level]) for level in sorted(by_level)]
    return Table("bradley_terry_fit", BT_FIT_COLUMNS, rows)


PAIR_OUTCOMES = ("tie", "neither")
PAIR_OUTCOME_COLUMNS = ["outcome", "level", "group", "rate", "ci_low", "ci_high", "n", "count"]


def pair_outcomes_table(document: dict[str, Any]) -> Table:
    """The share of pair judgments answered "about the same" (`tie`) or "neither", per outcome:
    `level` names the row's scope: `overall` (of all pair judgments), `source` and `background`
    (of the pairings of a model's items or a group's raters; rater-clustered bootstrap
    intervals) and `item` (of the item's pairings; Wilson intervals). Only studies that offered
    those answers have rows."""
    section = document.get("pair_outcomes") or {}
    rows: list[list[Any]] = []
    for outcome in PAIR_OUTCOMES:
        entry = section.get(outcome)
        if not entry:
            continue
        overall = entry.get("overall")
        if overall:
            count = overall.get("count", entry.get("count"))
            rows.append([outcome, "overall", "", *_interval(overall), count])
        for level in ("source", "background"):
            groups = entry.get(f"by_{level}") or {}
            rows += [
                [outcome, level, group, *_interval(groups[group]), _get(groups[group], "count")]
                for group in sorted(groups)
            ]
        rows += [
            [outcome, "item", item["item"], *_interval(item.get("rate")), item.get("count")]
            for item in entry.get("items") or []
        ]
    return Table("pair_outcomes", PAIR_OUTCOME_COLUMNS, rows)


STYLE_SOURCE_COLUMNS = [
    "row",
    "source",
    "other",
    "plain",
    "plain_ci_low",
    "plain_ci_high",
    "controlled",
    "controlled_ci_low",
    "controlled_ci_high",
    # "undefeated", "never_won", "no_pairs", "no_cross_source_pairs" on a source.
    "flag",
    # On an order_change row: "flipped", "separation_lost" or "separation_gained".
    "change",
    "n_pairs",
    "n_raters",
    "interval",
    "estimand",
    # Why there are no intervals ("sources_not_connected", too few raters), else empty.
    "reason",
]


def style_sources_table(document: dict[str, Any]) -> Table:
    """The sources' Bradley-Terry strengths plain and style-controlled (cluster-robust CR1 Wald
    t intervals, raters random, items fixed), one `source` row each; then one `order_change`
    row per pair of sources (`source` a, `other` b) whose separated order flips, appears or
    disappears when style is controlled."""
    style = document.get("style_control") or {}
    if not style:
        return Table("style_sources", STYLE_SOURCE_COLUMNS, [])
    common = [
        style.get("n_pairs"),
        style.get("n_raters"),
        _get(style, "interval", "sources"),
        style.get("estimand"),
        style.get("reason") or "",
    ]
    rows: list[list[Any]] = [
        [
            "source",
            entry.get("source"),
            "",
            *_interval(entry.get("plain"))[:3],
            *_interval(entry.get("controlled"))[:3],
            entry.get("flag") or "",
            "",
            *common,
        ]
        for entry in style.get("sources") or []
    ]
    rows += [
        [
            "order_change",
            change.get("a"),
            change.get("b"),
            *[None] * 6,
            "",
            change.get("change"),
            *common,
        ]
        for change in style.get("order_changes") or []
    ]
    return Table("style_sources", STYLE_SOURCE_COLUMNS, rows)


STYLE_COVARIATE_COLUMNS = ["covariate", "beta", "ci_low", "ci_high", "standardised", "dropped"]


def style_covariates_table(document: dict[str, Any]) -> Table:
    """Every covariate offered to style control, in the order offered: its beta (log-odds per
    standard deviation when `standardised`, else for having the attribute) with its CR1 Wald t
    interval, or why it was dropped ("constant", "collinear": no beta)."""
    style = document.get("style_control") or {}
    fitted = {entry["name"]: entry for entry in style.get("covariates") or []}
    dropped = style.get("dropped") or {}
    names = list(style.get("covariates_offered") or [])
    names += [name for name in [*fitted, *dropped] if name not in names]
    rows = []
    for name in names:
        entry = fitted.get(name) or {}
        rows.append(
            [
                name,
                entry.get("beta"),
                entry.get("ci_low"),
                entry.get("ci_high"),
                entry.get("standardised"),
                dropped.get(name) or "",
            ]
        )
    return Table("style_covariates", STYLE_COVARIATE_COLUMNS, rows)


STYLE_ITEM_COLUMNS = [
    "item",
    "source",
    "component",
    "plain_score",
    "plain_ci_low",
    "plain_ci_high",
    "plain_rank",
    "controlled_score",
    "controlled_ci_low",
    "controlled_ci_high",
    "controlled_rank",
    # What was subtracted: beta . (the item's covariates - their mean over its component).
    "adjustment",
]


def style_items_in_order(style: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The style-controlled items in the order of the controlled board, as the results page
    lists them: by comparison group, then rank, then score (an item without a rank last in its
    group)."""
    return sorted(
        style.get("items") or [],
        key=lambda row: (
            row.get("component") or 0,
            (row.get("controlled") or {}).get("rank") is None,
            (row.get("controlled") or {}).get("rank") or 0,
            -((row.get("controlled") or {}).get("value") or 0.0),
            row["item"],
        ),
    )


def style_items_table(document: dict[str, Any]) -> Table:
    """Per compared item, its Bradley-Terry score plain and style-controlled (expanded
    percentile intervals of a rater-clustered bootstrap of both stages), with the ranks each
    gives within its comparison group, in the controlled board's order."""
    style = document.get("style_control") or {}
    meta = _item_meta(document)
    rows = [
        [
            entry["item"],
            _get(meta, entry["item"], "source"),
            entry.get("component"),
            *_interval(entry.get("plain"))[:3],
            _get(entry, "plain", "rank"),
            *_interval(entry.get("controlled"))[:3],
            _get(entry, "controlled", "rank"),
            entry.get("adjustment"),
        ]
        for entry in style_items_in_order(style)
    ]
    return Table("style_items", STYLE_ITEM_COLUMNS, rows)


RELIABILITY_COLUMNS = [
    "scope",
    "group",
    "question",
    "measure",
    "k",
    "value",
    "ci_low",
    "ci_high",
    # Split-half: the median and the 2.5% / 97.5% quantiles of the correlation over random
    # splits of these raters (its spread over splits, not a confidence interval).
    "median",
    "split_q025",
    "split_q975",
    "spearman_brown",
    # k-rater: Wong & Paritosh's empirical k-rater reliability, and the items it rests on.
    "empirical",
    "empirical_items",
    "n_items",
    "n_raters",
    "n_splits_used",
    "reason",
]


def _reliability_rows(scope: str, group: str, question: Any, entry: Any) -> list[list[Any]]:
    if not isinstance(entry, dict):
        return []
    rows = []
    blank = [None] * 7
    for kind in ("pairs", "scores"):
        split = entry.get(kind)
        if not split:
            continue
        rows.append(
            [
                scope,
                group,
                question if kind == "scores" else "",
                f"split_half_{kind}",
                None,
                split.get("mean"),
                None,
                None,
                split.get("median"),
                split.get("q025"),
                split.get("q975"),
                split.get("spearman_brown"),
                None,
                None,
                split.get("n_items_mean"),
                split.get("n_raters"),
                split.get("n_splits_used"),
                split.get("reason") or "",
            ]
        )
    k_rater = entry.get("k_rater")
    if k_rater:
        counts = [k_rater.get("n_items"), k_rater.get("n_raters"), None]
        reason = k_rater.get("reason") or ""
        rows.append(
            [
                scope,
                group,
                question,
                "icc",
                None,
                k_rater.get("icc"),
                k_rater.get("icc_ci_low"),
                k_rater.get("icc_ci_high"),
                *blank[:6],
                *counts,
                reason,
            ]
        )
        at_mean = k_rater.get("at_mean")
        for measure, stats in [("k_rater_at_mean", at_mean)] + [
            ("k_rater", k) for k in k_rater.get("by_k") or []
        ]:
            if not stats:
                continue
            rows.append(
                [
                    scope,
                    group,
                    question,
                    measure,
                    _whole(stats.get("k")),
                    stats.get("value"),
                    stats.get("ci_low"),
                    stats.get("ci_high"),
                    *blank[:4],
                    stats.get("empirical"),
                    stats.get("empirical_items"),
                    *counts,
                    reason,
                ]
            )
    return rows


def _whole(value: Any) -> Any:
    """A k of raters as a whole number where it is one (3, not 3.0), in every format alike."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def reliability_table(document: dict[str, Any]) -> Table:
    """Reliability of the board, for the study (`scope` study) and per model (`scope` source):
    the split-half ranking correlation of pairs and of the primary question's item means (`value`
    is its mean over random splits, with the split spread and the Spearman-Brown step-up), and
    the k-rater reliability of the item means: ICC(1) (`k` 1), at the study's mean number of
    ratings per item and at each k, with rater-clustered bootstrap intervals. A `reason` says
    why a figure is undefined."""
    section = document.get("reliability") or {}
    question = section.get("question") or ""
    rows = _reliability_rows("study", "", question, section.get("study"))
    by_source = section.get("by_source") or {}
    for source in sorted(by_source):
        rows += _reliability_rows("source", source, question, by_source[source])
    return Table("reliability", RELIABILITY_COLUMNS, rows)


def result_tables(document: dict[str, Any], order: Sequence[str] | None = None) -> list[Table]:
    """Every table of the document, in RESULT_TABLE_NAMES order; `order` is the rubric's
    question order."""
    groups = [group_table(document, dimension, order) for dimension in GROUP_DIMENSIONS]
    tables = [
        bradley_terry_table(document),
        bradley_terry_by_level_table(document),
        bradley_terry_fit_table(document),
        pair_outcomes_table(document),
        items_table(document),
        *groups,
        agreement_table(document, order),
        agreement_by_group_table(document, order),
        agreement_per_item_table(document, order),
        turing_table(document),
        models_table(document, order),
        style_sources_table(document),
        style_covariates_table(document),
        style_items_table(document),
        reliability_table(document),
        diagnostics_table(document),
        warnings_table(document),
    ]
    assert tuple(table.name for table in tables) == RESULT_TABLE_NAMES
    return tables


def result_table(document: dict[str, Any], name: str, order: Sequence[str] | None = None) -> Table:
    """One table of the document by name (KeyError for an unknown name: callers validate against
    RESULT_TABLE_NAMES)."""
    if name == PROVENANCE:
        return provenance_table(document)
    if name.startswith("groups_") and name[len("groups_") :] in GROUP_DIMENSIONS:
        return group_table(document, name[len("groups_") :], order)
    builders = {
        "bradley_terry": lambda: bradley_terry_table(document),
        "bradley_terry_by_level": lambda: bradley_terry_by_level_table(document),
        "bradley_terry_fit": lambda: bradley_terry_fit_table(document),
        "pair_outcomes": lambda: pair_outcomes_table(document),
        "style_sources": lambda: style_sources_table(document),
        "style_covariates": lambda: style_covariates_table(document),
        "style_items": lambda: style_items_table(document),
        "reliability": lambda: reliability_table(document),
        "items": lambda: items_table(document),
        "agreement": lambda: agreement_table(document, order),
        "agreement_by_group": lambda: agreement_by_group_table(document, order),
        "agreement_per_item": lambda: agreement_per_item_table(document, order),
        "turing": lambda: turing_table(document),
        "models": lambda: models_table(document, order),
        "diagnostics": lambda: diagnostics_table(document),
        "warnings": lambda: warnings_table(document),
    }
    return builders[name]()
