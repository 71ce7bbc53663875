"""Sections of the printable report beyond the results tables: the figures (drawn by the same
code as the results pages), the reproducibility block, data quality, safety, the content
evaluation and screening.

Pure like the rest of the report's context: stored documents and values the service gathered in,
rounded text out (the template only lays out). Labels come from `apps.analysis.labels`, so every
code is named in the reader's language as on the pages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.core.sentences import stored_text
from apps.findings import figures
from apps.findings.charts import fmt as fmt_number
from apps.findings.charts import fmt_ci, fmt_pct
from apps.findings.templatetags.charts import verdict_label

Payload = Mapping[str, Any]
LEVELS = ("single", "multi_turn", "scenario")


# --- figures -----------------------------------------------------------------------------------


def report_figures(
    document: Payload, *, rubric: Sequence[tuple[str, str]], humor: bool
) -> dict[str, Any]:
    """Every chart of the results pages, in their default view: the leaderboard of each level
    (its largest comparison group, as the page opens), agreement, Turing, fatigue and position."""
    by_level = document.get("bradley_terry_by_level") or {}
    levels = sorted(by_level, key=lambda n: (LEVELS.index(n) if n in LEVELS else len(LEVELS), n))
    boards = [
        {
            "scope": labels.level_label(level, humor=humor),
            "figure": figures.leaderboard_figure(document, scope=level, humor=humor),
        }
        for level in levels
    ]
    if not boards and document.get("bradley_terry"):
        boards = [
            {
                "scope": _("All levels"),
                "figure": figures.leaderboard_figure(document, scope="", humor=humor),
            }
        ]
    turing = figures.turing_figures(document, humor=humor)
    scale, binary = figures.questions_shown(rubric, document)
    diagnostics = document.get("diagnostics") or {}
    return {
        "leaderboards": boards,
        "agreement": figures.agreement_figure(document, [*scale, *binary])
        if document.get("agreement")
        else None,
        "turing_accuracy": turing["accuracy"] if document.get("turing") else None,
        "turing_judged_human": turing["judged_human"] if document.get("turing") else None,
        # As on the page: the level chart names the humor method's levels.
        "turing_level": turing["level"] if humor and turing["level"].meta["rows"] else None,
        "fatigue": figures.fatigue_figure(document, humor=humor)
        if (diagnostics.get("fatigue") or {}).get("bins")
        else None,
        "position": figures.position_figure(document, humor=humor)
        if (diagnostics.get("position_bias") or {}).get("left_choice_rate")
        else None,
    }


# --- reproducibility ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Reproducibility:
    """What the service knows besides the document: the data's hashes now, and the software
    the report is generated with."""

    input_hash_now: str | None = None
    exclusion_hash_now: str | None = None
    software_now: dict[str, str] = field(default_factory=dict)


SOFTWARE_NAMES = {
    "python": "Python",
    "django": "Django",
    "numpy": "NumPy",
    "scipy": "SciPy",
    "choix": "choix",
    "laughlab": "LaughLab",
    "commit": "LaughLab commit",
}


def reproducibility(
    document: Payload, *, now: Reproducibility, computed_at: str, generated_at: str
) -> dict[str, Any]:
    """The block a reader needs to reproduce every number: seed, rounds, the two input hashes
    (and whether the study's data still give them), software versions, and when."""
    level = document.get("level")
    stored_exclusions = document.get("exclusion_hash") or (document.get("exclusions") or {}).get(
        "hash", ""
    )
    rows = [
        ("seed", _("Seed (every random step draws from it)"), fmt_number(document.get("seed"), 0)),
        ("rounds", _("Bootstrap rounds"), fmt_number(document.get("rounds"), 0)),
        (
            "confidence_level",
            _("Confidence level"),
            fmt_pct(level, 0) if isinstance(level, int | float) else "—",
        ),
        ("input_hash", _("Input hash (items and judgments as analysed, sha256)"), ""),
        ("exclusion_hash", _("Exclusion-set hash (sha256)"), ""),
        ("computed_at", _("Results computed at"), computed_at),
        ("generated_at", _("Report generated at"), generated_at),
    ]
    hashes = {
        "input_hash": document.get("input_hash") or "",
        "exclusion_hash": stored_exclusions or "",
    }
    if now.input_hash_now is None:
        status = ""
    elif (
        now.input_hash_now == hashes["input_hash"]
        and now.exclusion_hash_now == hashes["exclusion_hash"]
    ):
        status = "current"
    else:
        status = "stale"
    stored_software = document.get("software") or {}
    software = [
        {
            "key": key,
            "name": _("LaughLab commit") if key == "commit" else name,
            "computed": stored_software.get(key) or "—",
            "now": now.software_now.get(key) or "—",
        }
        for key, name in SOFTWARE_NAMES.items()
        if stored_software.get(key) or now.software_now.get(key)
    ]
    return {
        "rows": [
            {"key": key, "label": label, "value": hashes.get(key, value), "code": key in hashes}
            for key, label, value in rows
        ],
        "status": status,
        "software": software,
        "software_stored": bool(stored_software),
        "seeds": [
            (
                _("Turing (overall)"),
                ((document.get("turing") or {}).get("overall") or {}).get("seed"),
            ),
            (_("Fatigue"), ((document.get("diagnostics") or {}).get("fatigue") or {}).get("seed")),
        ],
    }


# --- Turing per level --------------------------------------------------------------------------


def turing_levels(document: Payload, *, humor: bool) -> list[dict[str, str]]:
    by_level = (document.get("turing") or {}).get("by_level") or {}
    names = sorted(by_level, key=lambda n: (LEVELS.index(n) if n in LEVELS else len(LEVELS), n))
    return [
        {
            "name": name,
            "label": labels.level_label(name, humor=humor),
            "n": fmt_number(by_level[name].get("n"), 0),
            "accuracy": fmt_ci(by_level[name].get("accuracy"), 1, pct=True),
            "judged_human": fmt_ci(by_level[name].get("judged_human"), 1, pct=True),
            "verdict": verdict_label(by_level[name].get("verdict")),
        }
        for name in names
    ]


# --- sample ------------------------------------------------------------------------------------


def sample(document: Payload, *, humor: bool) -> dict[str, Any]:
    """Who rated what: the counts, raters per background, items per level and source."""
    counts = document.get("counts") or {}
    groups = document.get("groups") or {}

    def split(dimension: str, size: str) -> list[dict[str, Any]]:
        table = groups.get(dimension) or {}
        return [
            {
                "name": name,
                "label": labels.group_label(name, dimension, humor=humor),
                "n": fmt_number(table[name].get(size), 0),
            }
            for name in figures.group_order(table, dimension)
        ]

    return {
        "counts": [
            (_("Items"), counts.get("items")),
            (_("Raters"), counts.get("raters")),
            (_("Scorecard answers"), counts.get("score_answers")),
            (_("Pair judgments"), counts.get("pair_judgments")),
            (_("Turing judgments"), counts.get("turing_judgments")),
            # Pair answers that are not a side, where the study offered them (not counted in
            # the pair judgments above, which are decisive).
            *(
                [(_("Pairs answered “about the same”"), counts.get("pair_ties"))]
                if (document.get("pair_outcomes") or {}).get("tie")
                else []
            ),
            *(
                [(_("Pairs answered “neither”"), counts.get("pair_neither"))]
                if (document.get("pair_outcomes") or {}).get("neither")
                else []
            ),
        ],
        "by_background": split("background", "n_raters"),
        "by_level": split("level", "n_items"),
        "by_source": split("source", "n_items"),
        "unknown_background": counts.get("raters_unknown_background") or 0,
    }


# --- safety ------------------------------------------------------------------------------------


def safety(document: Payload, *, humor: bool) -> dict[str, Any]:
    """Items cut by a safety filter during generation, counted per source and level (the items
    table of the exports lists them): product-safety events, not humor failures."""
    items = [item for item in document.get("items") or [] if item.get("safety_intercepted")]
    groups = document.get("groups") or {}

    def split(dimension: str) -> list[dict[str, Any]]:
        table = groups.get(dimension) or {}
        return [
            {
                "name": name,
                "label": labels.group_label(name, dimension, humor=humor),
                "intercepted": table[name].get("safety_intercepted_items"),
                "n_items": table[name].get("n_items"),
            }
            for name in figures.group_order(table, dimension)
            if table[name].get("safety_intercepted_items")
        ]

    return {"n_items": len(items), "by_source": split("source"), "by_level": split("level")}


# --- data quality ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RaterCounts:
    """The quality page's rater counts (apps.exclusions.evidence.rater_quality), gathered by the
    service from the raw judgments."""

    raters: int = 0
    attention_failures: int = 0
    speeders: int = 0
    straight_liners: int = 0
    speeder_seconds: float = 0.0
    straight_line_run: int = 0


def coverage(document: Payload) -> list[dict[str, Any]]:
    found = (document.get("diagnostics") or {}).get("coverage") or {}
    missing = found.get("items_without_group") or {}
    return [
        {"group": group, "label": labels.background_label(group), "missing": missing.get(group)}
        for group in found.get("groups") or []
    ]


# --- content evaluation ------------------------------------------------------------------------


def _type_label(content_type: str) -> str:
    return labels.content_type_label(content_type) if content_type else _("No content type")


def content_evaluation(evaluation: Payload | None) -> dict[str, Any] | None:
    """The stored content evaluation (apps/content): weights per content type, independence of
    the dimensions, the automatic scores against the humans, and the tiers."""
    if not evaluation:
        return None
    payload = evaluation.get("payload") or {}
    dimensions = ("fluency", "informativeness", "originality")
    weights = []
    for row in payload.get("weights") or []:
        quality = row.get("quality") or {}
        weights.append(
            {
                "content_type": row.get("content_type", ""),
                "label": _type_label(str(row.get("content_type", ""))),
                "weights": [fmt_number((row.get("weights") or {}).get(d)) for d in dimensions],
                "is_default": bool(row.get("is_default")),
                "n_items": fmt_number(row.get("n_items"), 0),
                "n_rows": fmt_number(quality.get("n_rows"), 0),
                "pseudo_r2": fmt_number(quality.get("pseudo_r2")),
                "cv_accuracy": fmt_pct(quality.get("cv_accuracy")),
                "cv_auc": fmt_number(quality.get("cv_auc")),
            }
        )
    independence = payload.get("independence") or {}
    titles = {
        "human": _("Are the human dimensions independent?"),
        "automatic": _("Are the automatic dimension scores independent?"),
    }
    matrices = [
        {
            "key": key,
            "title": title,
            "pairs": [
                {
                    "a": labels.metric_label(str(pair.get("a"))),
                    "b": labels.metric_label(str(pair.get("b"))),
                    "n": fmt_number(pair.get("n"), 0),
                    "pearson": fmt_ci(pair.get("pearson")),
                    "spearman": fmt_ci(pair.get("spearman")),
                    "flag": bool(pair.get("flag")),
                }
                for pair in (independence.get(key) or {}).get("pairs") or []
            ],
        }
        for key, title in titles.items()
    ]
    human_names = [*dimensions, "composite"]
    against = [
        {
            "name": labels.metric_label(str(row.get("name"))),
            "cells": [
                {
                    "spearman": fmt_ci(
                        ((row.get("against") or {}).get(name) or {}).get("spearman")
                    ),
                    "matching": name == row.get("matching"),
                }
                for name in human_names
            ],
        }
        for row in payload.get("metric_vs_human") or []
        if str(row.get("name")) in (*dimensions, "composite")
    ]
    tiers = [
        {
            "tier": row.get("tier"),
            "label": labels.tier_label(str(row.get("label", ""))),
            "agreement": fmt_ci(row.get("agreement")),
            "n_items": fmt_number(row.get("n_items"), 0),
            "items_per_second": fmt_number(row.get("items_per_second"), 4),
            "human_minutes": fmt_number(row.get("human_minutes"), 1),
        }
        for row in payload.get("tiers") or []
    ]
    return {
        "dimensions": [labels.question_label(d) for d in dimensions],
        "human_names": [labels.question_label(n) for n in human_names],
        "weights": weights,
        "outcome": labels.outcome_label(str((payload.get("composite") or {}).get("outcome", ""))),
        "matrices": matrices,
        "threshold": fmt_number(payload.get("threshold", 0.4), 1),
        "against": against,
        "tiers": tiers,
        "seed": evaluation.get("seed"),
        "rounds": evaluation.get("rounds"),
        "input_hash": evaluation.get("input_hash") or "",
        "computed_at": evaluation.get("computed_at") or "",
        "counts": payload.get("counts") or {},
    }


# --- screening ---------------------------------------------------------------------------------


def screening(found: Payload | None) -> dict[str, Any] | None:
    """The study's automatic pre-screening, as its pages show it: the latest run's decisions per
    stage, the FunnyScore calibration, the LLM judge against the humans and the tiers."""
    if not found:
        return None
    run = found.get("run")
    calibrations = [
        {
            "scope": labels.scope_label(str(row.get("scope"))),
            "row": f"{row.get('scope')}/{row.get('kind') or 'features'}",
            "kind": labels.l1_kind_label(str(row.get("kind") or "features")),
            "is_default": bool(row.get("is_default")),
            "applied": bool(row.get("applied")),
            "n_items": fmt_number(row.get("n_items"), 0) if not row.get("is_default") else "—",
            "cv_spearman": fmt_ci(
                {
                    "value": row.get("cv_spearman"),
                    "ci_low": row.get("cv_spearman_low"),
                    "ci_high": row.get("cv_spearman_high"),
                },
                3,
            ),
            "top_quartile_kept": fmt_ci(
                (row.get("validation") or {}).get("top_quartile_kept"), 0, pct=True
            ),
            "current_rho": fmt_number((row.get("validation") or {}).get("current_rho"), 3),
            "r2": fmt_number(row.get("r2"), 3),
            # The learned L1 has no a, b, c: its weights are on the embedding and the features.
            "coefficients": [
                "—"
                if row.get("kind") == "learned" and name != "intercept"
                else fmt_number(row.get(name), 3)
                for name in ("a", "b", "c", "intercept")
            ],
        }
        for row in found.get("calibrations") or []
    ]

    def judged(row: Payload, label: str) -> dict[str, Any]:
        return {
            "label": label,
            "n": fmt_number(row.get("n"), 0),
            "judge_mean": fmt_number(row.get("judge_mean")),
            "human_mean": fmt_number(row.get("human_mean")),
            "mean_diff": fmt_ci(row.get("mean_diff")),
            "rho": fmt_ci(row.get("rho")),
            "flag": {"over-rates": _("over-rates"), "under-rates": _("under-rates")}.get(
                str(row.get("flag")), ""
            ),
        }

    comparisons = [
        {
            "model_name": comparison.get("model_name"),
            "rows": [
                judged(
                    row,
                    labels.humor_type_label(str(row["humor_type"]))
                    if row.get("humor_type")
                    else _("(no type)"),
                )
                for row in comparison.get("by_humor_type") or []
            ]
            + (
                [judged(comparison["overall"], _("All types"))] if comparison.get("overall") else []
            ),
        }
        for comparison in found.get("comparisons") or []
    ]
    tiers = [
        {
            "tier": row.get("tier"),
            "label": labels.tier_label(str(row.get("label", ""))),
            "agreement": fmt_ci(row.get("agreement")),
            "n_items": fmt_number(row.get("n_items"), 0),
            "items_per_second": fmt_number(row.get("items_per_second"), 4),
            "human_minutes": fmt_number(row.get("human_minutes"), 1),
        }
        for row in found.get("tiers") or []
    ]
    if not (run or calibrations or comparisons or tiers):
        return None
    return {
        "run": run,
        "stages": found.get("stages") or [],
        "calibrations": calibrations,
        "comparisons": comparisons,
        "tiers": tiers,
        "held": found.get("held") or 0,
        "audit": _audit(found.get("audit")),
        "scorer": _scorer(found.get("default_scorer") or {}),
    }


def _audit(audit: Payload | None) -> dict[str, Any] | None:
    """The sieve audit as the screening page shows it."""
    if not audit or not audit.get("n"):
        return None
    share = audit.get("suggested_keep_share")
    return {
        "scorer": labels.l1_kind_label(str(audit.get("scorer_kind") or "")),
        "n": fmt_number(audit.get("n"), 0),
        "kept": fmt_ci(audit.get("top_quartile_kept"), 0, pct=True),
        "chance": fmt_pct(audit.get("chance"), 0),
        "rho": fmt_ci(audit.get("rho")),
        "better_than_chance": audit.get("better_than_chance"),
        "suggested": (
            _("the top %(share)s of each model and level") % {"share": fmt_pct(share, 0)}
            if share
            else _("every candidate (L1 passes 0)")
        ),
        "reason": stored_text(audit.get("reason_message"), audit.get("reason") or ""),
    }


def _scorer(scorer: Payload) -> dict[str, Any]:
    """The default scorer and, for the prior, what it was trained on and how well it did."""
    quality = scorer.get("quality") or {}
    return {
        "kind": labels.l1_kind_label(str(scorer.get("kind") or "")),
        "prior": scorer.get("prior") or "",
        "n_holdout": fmt_number(scorer.get("n_holdout"), 0),
        "rho": fmt_ci(quality.get("rho")),
        "kept": fmt_ci(quality.get("top_quartile_kept"), 0, pct=True),
    }
