"""The leaderboard page's pair boards: which model fitted the item board and what its ends say,
the style-controlled boards, and the reliability of the board; with their CSV files.

Read from the stored document only (`style_control`, `reliability`, `bradley_terry_fit`;
`apps/analysis/stats/boards.py` and `report.py` give their shape). Results stored before these
sections existed have none of them: every function here then returns None or an empty table,
and the page leaves the section out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.analysis import labels
from apps.dashboard.results.common import (
    Payload,
    download_url,
    group_order,
    item_index,
)
from apps.findings import charts
from apps.reports.tables import style_items_in_order
from apps.studies.models import Study

# Items listed in the page's style-controlled item table; the CSV has all of them.
STYLE_ITEMS_SHOWN = 50
# The k-rater row's columns when the stored document has none (the method's).
DEFAULT_KS = (1, 3, 5, 10, 15, 20)


# ---------------------------------------------------------------------------------------------
# The model that fitted the board, and its ends


def sentences(parts: list[str]) -> str:
    """Sentences joined as the reader's language writes them: Chinese runs them on, without a
    space after the full stop."""
    return ("" if labels.language_key() == "zh" else " ").join(part for part in parts if part)


def _fit_text(fit: Mapping[str, Any], model: str) -> str:
    n = fit.get("n_judgments") or 0
    if model == "bradley_terry":
        return _("Fitted by plain Bradley-Terry: %(n)s judgments, none “about the same”.") % {
            "n": n
        }
    parts = [
        _(
            "Fitted by %(model)s: %(ties)s of %(n)s judgments were “about the same”; tie "
            "parameter %(symbol)s = %(param)s."
        )
        % {
            "model": labels.tie_model_label(model),
            "ties": fit.get("ties") or 0,
            "n": n,
            "symbol": labels.tie_param_symbol(model),
            "param": charts.fmt_ci(fit.get("tie_param")),
        }
    ]
    reason = (fit.get("tie_param") or {}).get("reason")
    if reason:
        parts.append(labels.tie_interval_reason_label(reason))
    tie_models = fit.get("tie_models") or {}
    other = next((name for name in tie_models if name != model), None)
    if other is not None and model in tie_models:
        parts.append(
            _(
                "It has the higher likelihood: log-likelihood %(log_lik)s, against "
                "%(other_log_lik)s for %(other)s."
            )
            % {
                "log_lik": charts.fmt(tie_models[model].get("log_lik")),
                "other_log_lik": charts.fmt(tie_models[other].get("log_lik")),
                "other": labels.tie_model_label(other),
            }
        )
    return sentences(parts)


def _ends_text(fit: Mapping[str, Any]) -> str:
    undefeated, never_won = fit.get("undefeated") or 0, fit.get("never_won") or 0
    parts = []
    if not undefeated + never_won:
        parts.append(_("No item won or lost every comparison."))
    else:
        parts.append(
            _("Won every comparison: %(undefeated)s; lost every comparison: %(never_won)s.")
            % {"undefeated": undefeated, "never_won": never_won}
        )
        end_bound = fit.get("end_bound") or {}
        numbers = {
            "bounded": fit.get("end_bounds") or 0,
            "n": undefeated + never_won,
            "level": charts.fmt_pct(end_bound.get("level"), 0),
        }
        if end_bound.get("simultaneous"):
            parts.append(
                _(
                    "%(bounded)s of these %(n)s have a one-sided bound, all bounds of the board "
                    "holding together at %(level)s."
                )
                % numbers
            )
        elif end_bound:
            parts.append(
                _(
                    "%(bounded)s of these %(n)s have a one-sided bound, each holding at "
                    "%(level)s on its own."
                )
                % numbers
            )
    hidden = fit.get("scale_not_identified") or 0
    if hidden:
        parts.append(
            ngettext(
                "%(n)s item is shown but not ranked: the data do not fix its scale.",
                "%(n)s items are shown but not ranked: the data do not fix their scale.",
                hidden,
            )
            % {"n": hidden}
        )
    return sentences(parts)


def board_fit(payload: Payload, scope: str) -> dict[str, Any] | None:
    """What the page says under its title: the model, its tie parameter and both tie models'
    log-likelihoods; then the end items, how many have a bound, and the items the data cannot
    place. None for results stored before the board named its model."""
    if scope:
        fit = (payload.get("bradley_terry_fit_by_level") or {}).get(scope) or {}
    else:
        fit = payload.get("bradley_terry_fit") or {}
    model = fit.get("model")
    if not model:
        return None
    return {
        "model": model,
        "ends": (fit.get("undefeated") or 0) + (fit.get("never_won") or 0),
        "end_bounds": fit.get("end_bounds") or 0,
        "text": _fit_text(fit, model),
        "ends_text": _ends_text(fit),
    }


# ---------------------------------------------------------------------------------------------
# Style-controlled boards


def _in_source_order(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Models before the human baseline, as every other table of sources."""
    order = group_order([row["source"] for row in rows], "source")
    return sorted(rows, key=lambda row: order.index(row["source"]))


def style_context(request: HttpRequest, study: Study, payload: Payload) -> dict[str, Any] | None:
    """The "Style-controlled boards" section; None without pair judgments (or for results
    stored before the section existed)."""
    style = payload.get("style_control")
    if not style:
        return None
    reason = style.get("reason")
    items = item_index(payload)
    ordered = style_items_in_order(style)
    return {
        "reason": reason,
        "reason_text": labels.style_reason_label(reason),
        # Sources not linked by comparisons: the section has nothing but the reason.
        "fitted": reason != "sources_not_connected",
        "n_pairs": style.get("n_pairs"),
        "n_raters": style.get("n_raters"),
        "sources": [
            {
                **row,
                "label": labels.source_label(row["source"]),
                "flag_text": labels.style_flag_label(row.get("flag")),
            }
            for row in _in_source_order(style.get("sources") or [])
        ],
        "covariates": [
            {
                **row,
                "label": labels.covariate_label(row["name"]),
                "scale": labels.covariate_scale_label(bool(row.get("standardised"))),
                "interval": {
                    "value": row.get("beta"),
                    "ci_low": row.get("ci_low"),
                    "ci_high": row.get("ci_high"),
                },
            }
            for row in style.get("covariates") or []
        ],
        "dropped": [
            {
                "name": name,
                "label": labels.covariate_label(name),
                "reason": labels.covariate_dropped_label(why),
            }
            for name, why in (style.get("dropped") or {}).items()
        ],
        "changes": [
            labels.order_change_sentence(change["change"], change["a"], change["b"])
            for change in style.get("order_changes") or []
        ],
        "item_order_changes": style.get("item_order_changes") or 0,
        "items": [
            {**row, "source": (items.get(row["item"]) or {}).get("source", "")}
            for row in ordered[:STYLE_ITEMS_SHOWN]
        ],
        "n_items": len(ordered),
        "several_components": len({row.get("component") for row in ordered}) > 1,
        "download_sources": download_url(request, study, "style-sources"),
        "download_covariates": download_url(request, study, "style-covariates"),
        "download_items": download_url(request, study, "style-items"),
    }


# ---------------------------------------------------------------------------------------------
# Reliability of the board


def _split_half(part: Mapping[str, Any] | None, missing: str) -> dict[str, Any]:
    """A split-half cell: the mean, the spread over splits and the full-data value, or the
    reason it is undefined (never a number then)."""
    if part is None:
        return {"reason": missing, "reason_text": labels.reliability_reason_label(missing)}
    reason = part.get("reason")
    if reason or part.get("mean") is None:
        code = reason or "no_variation"
        return {"reason": code, "reason_text": labels.reliability_reason_label(code)}
    return {
        "reason": None,
        "mean": part.get("mean"),
        "q025": part.get("q025"),
        "q975": part.get("q975"),
        "spearman_brown": part.get("spearman_brown"),
        "n_splits_used": part.get("n_splits_used"),
    }


def _k_rater(part: Mapping[str, Any] | None, ks: list[float]) -> dict[str, Any]:
    if part is None:
        return {"reason": "no_scores", "reason_text": labels.reliability_reason_label("no_scores")}
    reason = part.get("reason")
    if reason or part.get("icc") is None:
        code = reason or "zero_variance"
        return {"reason": code, "reason_text": labels.reliability_reason_label(code)}
    by_k = {float(row["k"]): row for row in part.get("by_k") or []}
    return {
        "reason": None,
        "icc": {
            "value": part.get("icc"),
            "ci_low": part.get("icc_ci_low"),
            "ci_high": part.get("icc_ci_high"),
        },
        "k_mean": part.get("k_mean"),
        "at_mean": part.get("at_mean"),
        "by_k": [by_k.get(float(k)) for k in ks],
    }


def _ks(reliability: Mapping[str, Any]) -> list[float]:
    found: set[float] = set()
    for entry in [reliability.get("study"), *(reliability.get("by_source") or {}).values()]:
        k_rater = (entry or {}).get("k_rater") or {}
        found.update(float(row["k"]) for row in k_rater.get("by_k") or [])
    return sorted(found) or [float(k) for k in DEFAULT_KS]


def _reliability_groups(reliability: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """("all", the study's entry) first, then each source in the pages' order."""
    by_source = reliability.get("by_source") or {}
    groups: list[tuple[str, Mapping[str, Any]]] = []
    if reliability.get("study"):
        groups.append(("all", reliability["study"]))
    groups += [(name, by_source[name]) for name in group_order(by_source, "source")]
    return groups


def reliability_context(
    request: HttpRequest, study: Study, payload: Payload
) -> dict[str, Any] | None:
    """The "Reliability of the board" section; None for results stored before it existed."""
    reliability = payload.get("reliability")
    if not reliability:
        return None
    ks = _ks(reliability)
    rows = []
    for name, entry in _reliability_groups(reliability):
        rows.append(
            {
                "name": name,
                "label": _("All items") if name == "all" else labels.source_label(name),
                "n_items": entry.get("n_items"),
                "pairs": _split_half(entry.get("pairs"), "no_pairs"),
                "scores": _split_half(entry.get("scores"), "no_scores"),
                "k_rater": _k_rater(entry.get("k_rater"), ks),
            }
        )
    return {
        "question": reliability.get("question"),
        "splits": reliability.get("splits"),
        "ks": [int(k) if float(k).is_integer() else k for k in ks],
        "rows": rows,
        "download": download_url(request, study, "reliability"),
    }
