"""The records stored apart from the results document as named flat tables: the content
evaluation (apps/content) and the pre-screening (apps/screening).

Pure like `tables`: the plain values the service gathered through the apps' selectors in (the
same ones the printable report reads, `services._content_evaluation` and `services._screening`),
lists of rows out. Same conventions as the document's tables: machine-readable column names,
intervals as `<name>`, `<name>_ci_low`, `<name>_ci_high`, numbers unrounded, a missing number an
empty cell. A code column may have a `<name>_label` beside it, in the reader's language. A study
without such a record gets the tables with their header and no rows, as an empty document does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.reports.tables import CONTENT_TABLE_NAMES, SCREENING_TABLE_NAMES, Table

Record = Mapping[str, Any] | None

DIMENSIONS = ("fluency", "informativeness", "originality")
COMPOSITE = "composite"
# The independence matrices in the order of the content page.
MATRICES = ("human", "automatic", "metrics")


def _get(mapping: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(key)
    return mapping


def _ci(stats: Any) -> list[Any]:
    """`[value, ci_low, ci_high]` of a stored interval ({value, ci_low, ci_high, n})."""
    return [_get(stats, "value"), _get(stats, "ci_low"), _get(stats, "ci_high")]


def _ci_columns(name: str) -> list[str]:
    return [name, f"{name}_ci_low", f"{name}_ci_high"]


def _when(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime | date) else value


def _type_label(content_type: str) -> str:
    return labels.content_type_label(content_type) if content_type else _("No content type")


# --- the content evaluation --------------------------------------------------------------------


WEIGHT_COLUMNS = [
    "content_type",
    "content_type_label",
    *(f"{name}_weight" for name in DIMENSIONS),
    "is_default",
    "method",
    # Why a content type keeps its documented default, and the fit's warnings (English, as
    # stored and as the content page shows them).
    "reason",
    "warnings",
    "n_items",
    "n_rows",
    "n_good",
    "intercept",
    *(column for name in DIMENSIONS for column in (f"{name}_slope", f"{name}_slope_std_error")),
    "log_likelihood",
    "null_log_likelihood",
    "pseudo_r2",
    "cv_accuracy",
    "cv_auc",
    "cv_folds",
    # What "rated good" means, the outcome the weights are fitted on.
    "outcome",
    "outcome_label",
]


def content_weights_table(evaluation: Record) -> Table:
    payload = _get(evaluation, "payload") or {}
    outcome = str(_get(payload, "composite", "outcome") or "")
    rows = []
    for row in payload.get("weights") or []:
        quality = row.get("quality") or {}
        content_type = str(row.get("content_type") or "")
        warnings = quality.get("warnings")
        rows.append(
            [
                content_type,
                _type_label(content_type),
                *((row.get("weights") or {}).get(name) for name in DIMENSIONS),
                row.get("is_default"),
                row.get("method"),
                quality.get("reason") or "",
                json.dumps(warnings, ensure_ascii=False) if warnings else "",
                row.get("n_items"),
                quality.get("n_rows"),
                quality.get("n_good"),
                quality.get("intercept"),
                *(
                    value
                    for name in DIMENSIONS
                    for value in (
                        _get(quality, "slopes", name),
                        _get(quality, "std_errors", name),
                    )
                ),
                quality.get("log_likelihood"),
                quality.get("null_log_likelihood"),
                quality.get("pseudo_r2"),
                quality.get("cv_accuracy"),
                quality.get("cv_auc"),
                quality.get("cv_folds"),
                outcome,
                labels.outcome_label(outcome) if outcome else "",
            ]
        )
    return Table("content_weights", WEIGHT_COLUMNS, rows)


CORRELATION_COLUMNS = ["n", *_ci_columns("pearson"), *_ci_columns("spearman")]


def content_independence_table(evaluation: Record) -> Table:
    """Every pair of each matrix: the human dimensions, the automatic dimension scores, every
    automatic metric. `flag`: |r| or |rho| reaches `threshold` (the two measure much the same)."""
    independence = _get(evaluation, "payload", "independence") or {}
    threshold = _get(evaluation, "payload", "threshold")
    rows = []
    for matrix in [*MATRICES, *sorted(set(independence) - set(MATRICES))]:
        entry = independence.get(matrix) or {}
        for pair in entry.get("pairs") or []:
            a, b = str(pair.get("a")), str(pair.get("b"))
            rows.append(
                [
                    matrix,
                    a,
                    labels.metric_label(a),
                    b,
                    labels.metric_label(b),
                    pair.get("n"),
                    *_ci(pair.get("pearson")),
                    *_ci(pair.get("spearman")),
                    pair.get("flag"),
                    entry.get("threshold", threshold),
                ]
            )
    return Table(
        "content_independence",
        ["matrix", "a", "a_label", "b", "b_label", *CORRELATION_COLUMNS, "flag", "threshold"],
        rows,
    )


def content_against_humans_table(evaluation: Record) -> Table:
    """Each automatic score (the metrics, the dimension scores, the composite) against each human
    score; `matching` marks the human score of the same name, the one it is meant to track."""
    rows = []
    for row in _get(evaluation, "payload", "metric_vs_human") or []:
        metric = str(row.get("name"))
        against = row.get("against") or {}
        known = [name for name in (*DIMENSIONS, COMPOSITE) if name in against]
        for human in [*known, *sorted(set(against) - set(known))]:
            stats = against.get(human) or {}
            rows.append(
                [
                    metric,
                    labels.metric_label(metric),
                    human,
                    labels.question_label(human),
                    human == row.get("matching"),
                    stats.get("n"),
                    *_ci(stats.get("pearson")),
                    *_ci(stats.get("spearman")),
                ]
            )
    return Table(
        "content_against_humans",
        ["metric", "metric_label", "human", "human_label", "matching", *CORRELATION_COLUMNS],
        rows,
    )


TIER_COLUMNS = [
    "tier",
    # The tier's method as stored (English) and in the reader's language.
    "method",
    "method_label",
    *_ci_columns("agreement"),
    "agreement_n",
    # L3's split-half reliability: its Spearman-Brown step-up and the number of random splits.
    "spearman_brown",
    "splits",
    "n_items",
    "seconds",
    "items_per_second",
    "human_minutes",
]


def _tier_rows(tiers: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    rows = []
    for row in tiers:
        method = str(row.get("label") or "")
        agreement = row.get("agreement") or {}
        rows.append(
            [
                row.get("tier"),
                method,
                labels.tier_label(method),
                *_ci(agreement),
                agreement.get("n"),
                agreement.get("spearman_brown"),
                agreement.get("splits"),
                row.get("n_items"),
                row.get("seconds"),
                row.get("items_per_second"),
                row.get("human_minutes"),
            ]
        )
    return rows


def content_tiers_table(evaluation: Record) -> Table:
    return Table(
        "content_tiers", TIER_COLUMNS, _tier_rows(_get(evaluation, "payload", "tiers") or [])
    )


def content_tables(evaluation: Record) -> list[Table]:
    """The content evaluation's tables, in CONTENT_TABLE_NAMES order (rows only with one)."""
    tables = [
        content_weights_table(evaluation),
        content_independence_table(evaluation),
        content_against_humans_table(evaluation),
        content_tiers_table(evaluation),
    ]
    assert tuple(table.name for table in tables) == CONTENT_TABLE_NAMES
    return tables


# --- the pre-screening -------------------------------------------------------------------------


RUN_COLUMNS = [
    "run",
    "status",
    "status_label",
    "top_k",
    "l1_keep",
    "l1_min_score",
    "judge_model",
    "judge_min",
    "rerun_of",
    "created_at",
    "finished_at",
    # Items the offense filter holds now, in the study (not only this run's).
    "held_items",
]


def screening_run_table(screening: Record) -> Table:
    """The latest screening run's settings, one row (none before any run)."""
    run = _get(screening, "run")
    rows = []
    if run:
        rows.append(
            [
                run.get("pk"),
                run.get("status_code"),
                run.get("status"),
                run.get("top_k"),
                run.get("l1_keep"),
                run.get("l1_min_score"),
                run.get("judge_model"),
                run.get("judge_min"),
                run.get("rerun_of"),
                _when(run.get("started")),
                _when(run.get("finished_at")),
                _get(screening, "held"),
            ]
        )
    return Table("screening_run", RUN_COLUMNS, rows)


def screening_stages_table(screening: Record) -> Table:
    """What the latest run kept and dropped at each stage of the sieve."""
    run = _get(screening, "run") or {}
    rows = [
        [
            run.get("pk"),
            row.get("stage"),
            str(row.get("label")),
            row.get("kept"),
            row.get("dropped"),
        ]
        for row in _get(screening, "stages") or []
    ]
    return Table("screening_stages", ["run", "stage", "stage_label", "kept", "dropped"], rows)


COEFFICIENTS = ("a", "b", "c", "intercept")
CALIBRATION_COLUMNS = [
    "scope",
    "scope_label",
    "kind",
    "kind_label",
    "is_default",
    "applicable",
    "applied",
    "not_applicable_reason",
    "n_items",
    *_ci_columns("cv_spearman"),
    *_ci_columns("top_quartile_kept"),
    "current_rho",
    "beats_current",
    "cv_repeats",
    "cv_folds",
    "r2",
    *(column for name in COEFFICIENTS for column in _ci_columns(name)),
    "data_hash",
    "created_at",
]


def screening_calibration_table(screening: Record) -> Table:
    """The current FunnyScore calibration, one row per scope ("all", then by humor type and
    level): cross-validated Spearman's rho and each coefficient with their 95% intervals."""
    rows = []
    for row in _get(screening, "calibrations") or []:
        scope = str(row.get("scope") or "")
        intervals = row.get("intervals") or {}
        coefficients: list[Any] = []
        for name in COEFFICIENTS:
            bounds = intervals.get(name)
            low, high = (
                bounds if isinstance(bounds, list | tuple) and len(bounds) == 2 else [None] * 2
            )
            coefficients += [row.get(name), low, high]
        validation = row.get("validation") or {}
        kept = validation.get("top_quartile_kept") or {}
        kind = str(row.get("kind") or "")
        rows.append(
            [
                scope,
                labels.scope_label(scope),
                kind,
                labels.l1_kind_label(kind),
                row.get("is_default"),
                row.get("applicable"),
                row.get("applied"),
                row.get("not_applicable_reason") or "",
                row.get("n_items"),
                row.get("cv_spearman"),
                row.get("cv_spearman_low"),
                row.get("cv_spearman_high"),
                kept.get("value"),
                kept.get("ci_low"),
                kept.get("ci_high"),
                validation.get("current_rho"),
                validation.get("beats_current"),
                validation.get("repeats"),
                validation.get("folds"),
                row.get("r2"),
                *coefficients,
                row.get("data_hash") or "",
                _when(row.get("created_at")),
            ]
        )
    return Table("screening_calibration", CALIBRATION_COLUMNS, rows)


JUDGE_COLUMNS = [
    "model",
    "question",
    # "humor_type" rows (humor_type empty: items without a type), then the model's "overall".
    "scope",
    "humor_type",
    "humor_type_label",
    "n",
    "judge_mean",
    "human_mean",
    *_ci_columns("mean_diff"),
    *_ci_columns("rho"),
    "flag",
    "seed",
    "rounds",
    "computed_at",
]


def screening_judge_table(screening: Record) -> Table:
    """The LLM judge against the humans, per judge model: per humor type, then overall."""
    rows = []
    for comparison in _get(screening, "comparisons") or []:
        entries: list[tuple[str, str, Mapping[str, Any]]] = [
            ("humor_type", str(row.get("humor_type") or ""), row)
            for row in comparison.get("by_humor_type") or []
        ]
        if comparison.get("overall"):
            entries.append(("overall", "", comparison["overall"]))
        for scope, humor_type, row in entries:
            label = (
                _("All types")
                if scope == "overall"
                else labels.humor_type_label(humor_type)
                if humor_type
                else _("(no type)")
            )
            rows.append(
                [
                    comparison.get("model_name"),
                    comparison.get("question"),
                    scope,
                    humor_type,
                    label,
                    row.get("n"),
                    row.get("judge_mean"),
                    row.get("human_mean"),
                    *_ci(row.get("mean_diff")),
                    *_ci(row.get("rho")),
                    row.get("flag") or "",
                    comparison.get("seed"),
                    comparison.get("rounds"),
                    _when(comparison.get("computed_at")),
                ]
            )
    return Table("screening_judge", JUDGE_COLUMNS, rows)


AUDIT_COLUMNS = [
    "scorer_kind",
    "scorer_label",
    "n_items",
    "top_share",
    "keep_share",
    *_ci_columns("top_quartile_kept"),
    "chance",
    "better_than_chance",
    *_ci_columns("rho"),
    "suggested_keep_share",
    "reason",
]


def screening_audit_table(screening: Record) -> Table:
    """The sieve audit: of the humans' top quartile among rated items, the share a top-half sieve
    by the L1 scorer in place keeps (95% bootstrap interval), against chance (one half)."""
    audit = _get(screening, "audit") or {}
    rows = []
    if audit.get("n"):
        kept = audit.get("top_quartile_kept") or {}
        rho = audit.get("rho") or {}
        kind = str(audit.get("scorer_kind") or "")
        rows.append(
            [
                kind,
                labels.l1_kind_label(kind),
                audit.get("n"),
                audit.get("top_share"),
                audit.get("keep_share"),
                kept.get("value"),
                kept.get("ci_low"),
                kept.get("ci_high"),
                audit.get("chance"),
                audit.get("better_than_chance"),
                rho.get("value"),
                rho.get("ci_low"),
                rho.get("ci_high"),
                audit.get("suggested_keep_share"),
                audit.get("reason") or "",
            ]
        )
    return Table("screening_audit", AUDIT_COLUMNS, rows)


def screening_tiers_table(screening: Record) -> Table:
    """L1 (FunnyScore), L2 (the LLM judge) and L3 (the raters' split half) against the humans."""
    return Table("screening_tiers", TIER_COLUMNS, _tier_rows(_get(screening, "tiers") or []))


def screening_tables(screening: Record) -> list[Table]:
    """The pre-screening's tables, in SCREENING_TABLE_NAMES order (rows only with records)."""
    tables = [
        screening_run_table(screening),
        screening_stages_table(screening),
        screening_calibration_table(screening),
        screening_audit_table(screening),
        screening_judge_table(screening),
        screening_tiers_table(screening),
    ]
    assert tuple(table.name for table in tables) == SCREENING_TABLE_NAMES
    return tables


BUILDERS: dict[str, Callable[[Record], Table]] = {
    "content_weights": content_weights_table,
    "content_independence": content_independence_table,
    "content_against_humans": content_against_humans_table,
    "content_tiers": content_tiers_table,
    "screening_run": screening_run_table,
    "screening_stages": screening_stages_table,
    "screening_calibration": screening_calibration_table,
    "screening_audit": screening_audit_table,
    "screening_judge": screening_judge_table,
    "screening_tiers": screening_tiers_table,
}


def stored_provenance_rows(*, content: Record, screening: Record) -> list[list[Any]]:
    """The provenance of the stored records, for the provenance table: the content evaluation's
    seed, rounds, input hash, time and counts; the screening tiers' seed, rounds and time."""
    rows: list[list[Any]] = []
    if content:
        payload = content.get("payload") or {}
        rows += [
            ["content_seed", content.get("seed")],
            ["content_rounds", content.get("rounds")],
            ["content_confidence_level", payload.get("level")],
            ["content_input_hash", content.get("input_hash")],
            ["content_computed_at", _when(content.get("computed_at"))],
        ]
        rows += [
            [f"content_count_{key}", value]
            for key, value in sorted((payload.get("counts") or {}).items())
        ]
    tiers = _get(screening, "tiers_record")
    if tiers:
        rows += [
            [f"screening_tiers_{key}", _when(tiers.get(key))]
            for key in ("question", "rated_items", "seed", "rounds", "computed_at")
        ]
    return rows
