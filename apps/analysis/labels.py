"""What a stored code means in the reader's language: questions, humor and content types,
background groups, test levels, item flags, agreement measures, content metrics, and the
study's warnings (stored as a code with parameters, rendered here).

The pages, the printable report and the spreadsheet exports read their labels from here, so a
figure carries the same name everywhere. A code nobody has named (a custom rubric's question, a
type an import brought) is shown as it is: it is the researcher's own word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from django.utils.translation import get_language, ngettext, pgettext
from django.utils.translation import gettext as _


def language_key() -> str:
    """The key of per-language values ({"en": ..., "zh": ...}) for the reader's language."""
    return "zh" if (get_language() or "en").lower().startswith("zh") else "en"


_language_key = language_key


def localized(labels: Mapping[str, Any] | None, fallback: str) -> str:
    """A per-language value ({"en": ..., "zh": ...}) in the reader's language."""
    labels = labels or {}
    return str(labels.get(_language_key()) or labels.get("en") or fallback)


def question_label(name: str) -> str:
    """A built-in question's name ("funniness" -> "好笑程度" in Chinese)."""
    labels = {
        "surprise": pgettext("question", "surprise"),
        "coherence": pgettext("question", "coherence"),
        "funniness": pgettext("question", "funniness"),
        "offensive": pgettext("question", "offensive"),
        "fluency": pgettext("question", "fluency"),
        "informativeness": pgettext("question", "informativeness"),
        "originality": pgettext("question", "originality"),
        "overall": pgettext("question", "overall"),
        "composite": pgettext("question", "composite"),
        # The method's behavioural signals (the humor-signals rubric).
        "retell": pgettext("question", "would retell"),
        "follow_up": pgettext("question", "would reply or follow up"),
    }
    return labels.get(name, name)


def humor_type_label(code: str) -> str:
    labels = {
        "pun": pgettext("humor type", "pun"),
        "callback": pgettext("humor type", "callback"),
        "observational": pgettext("humor type", "observational"),
        "absurd": pgettext("humor type", "absurd"),
        "self_deprecating": pgettext("humor type", "self-deprecating"),
        "scenario_response": pgettext("humor type", "scenario response"),
        "wordplay": pgettext("humor type", "wordplay"),
        "irony": pgettext("humor type", "irony"),
        "satire": pgettext("humor type", "satire"),
        "unspecified": pgettext("humor type", "unspecified"),
        "": pgettext("humor type", "unspecified"),
    }
    return labels.get(code, code)


def rank_basis_label(basis: str | None) -> str:
    """What the model comparison's ranks are ordered by: the model-level Bradley-Terry strength
    ("bt") when pairs were judged, else the mean of the study's primary question."""
    if not basis:
        return "—"
    if basis == "bt":
        return _("the Bradley-Terry strength")
    return _("the mean of %(question)s") % {"question": question_label(basis)}


def content_type_label(code: str) -> str:
    labels = {
        "news": pgettext("content type", "news"),
        "analysis": pgettext("content type", "analysis"),
        "creative": pgettext("content type", "creative"),
        "": pgettext("content type", "none"),
    }
    return labels.get(code, code)


def background_label(code: str, groups: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """A background group's label: the study's own (per language) when given, else the method's
    four default groups by name."""
    from apps.raters.models import DEFAULT_BACKGROUNDS

    if groups and code in groups:
        return localized(groups[code], code)
    if code == "unknown":
        return pgettext("background", "unknown")
    return localized(dict(DEFAULT_BACKGROUNDS).get(code), code)


def level_label(code: str, *, humor: bool = True) -> str:
    labels = {
        "single": _("Single joke") if humor else _("Single text"),
        "multi_turn": _("Multi-turn reply"),
        "scenario": _("Scenario response"),
    }
    return labels.get(code, code)


def flag_label(flag: str) -> str:
    labels = {
        "culture_dependent": _("culture-dependent"),
        "controversial": _("controversial"),
        "offensive": _("offensive"),
        "safety_intercepted": _("safety-intercepted"),
        "too_few_raters": _("too few raters"),
        "held": _("held by the offense filter"),
    }
    return labels.get(flag, flag)


def measure_label(measure: str) -> str:
    labels = {
        "ordinal": pgettext("agreement measure", "ordinal"),
        "nominal": pgettext("agreement measure", "nominal"),
        "interval": pgettext("agreement measure", "interval"),
    }
    return labels.get(measure, measure)


def kappa_weights_label(weighting: str) -> str:
    """Cohen's kappa's weighting: plain (unweighted) or quadratic-weighted."""
    labels = {
        "unweighted": pgettext("kappa weights", "unweighted"),
        "linear": pgettext("kappa weights", "linear weights"),
        "quadratic": pgettext("kappa weights", "quadratic weights"),
    }
    return labels.get(weighting, weighting)


def no_kappa_pairs(min_shared: Any) -> str:
    """Said instead of a Cohen's kappa when no pair of raters shares enough items."""
    return _("no pair of raters shares %(n)s items") % {"n": min_shared}


def culture_test_shown(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """The culture test's setting and outcome, with q written as entered (0.1, 0.025)."""
    test = document.get("culture_test")
    if not test:
        return None
    fdr = test.get("fdr")
    return {**test, "fdr_text": f"{fdr:g}" if fdr is not None else ""}


def metric_label(name: str) -> str:
    """A content metric (apps/content/metrics.py) or a dimension score."""
    labels = {
        "sentence_length_cv": _("sentence-length variation"),
        "paragraph_cv": _("paragraph-length variation"),
        "entity_density": _("entity density"),
        "number_density": _("number density"),
        "adjacent_redundancy": _("adjacent-sentence redundancy"),
        "distinct_2": _("distinct bigrams"),
        "stopword_ratio": _("stop-word ratio"),
        "semantic_novelty": _("semantic novelty"),
    }
    return labels.get(name) or question_label(name)


def scope_label(scope: str) -> str:
    """A screening calibration's scope: "all", "humor_type:<t>" or "level:<l>"."""
    if scope == "all":
        return _("all items")
    kind, _sep, value = scope.partition(":")
    if kind == "humor_type":
        return humor_type_label(value)
    if kind == "level":
        return level_label(value)
    return scope


def offense_category_label(category: str) -> str:
    """A category of the offense filter's word list (apps/screening/offense_defaults.py)."""
    labels = {
        "hate": pgettext("offense category", "hate"),
        "insult": pgettext("offense category", "insult"),
        "profanity": pgettext("offense category", "profanity"),
        "self_harm": pgettext("offense category", "self-harm"),
        "sexual": pgettext("offense category", "sexual"),
        "violence": pgettext("offense category", "violence"),
    }
    return labels.get(category, category)


def tier_label(label: str) -> str:
    """A content evaluation tier's stored name (apps/content/tiers.py) in the reader's words."""
    known = {
        "automatic metrics": _("automatic metrics"),
        "LLM judge": _("LLM judge"),
        "LLM judge (no verdicts)": _("LLM judge (no verdicts)"),
        "human raters (split-half ceiling)": _("human raters (split-half ceiling)"),
        "FunnyScore (L1 features)": _("FunnyScore (L1 features)"),
        "L1 (defaults)": _("L1: FunnyScore with the documented defaults"),
        "L1 (prior)": _("L1: prior trained on public crowd ratings"),
        "L1 (features)": _("L1: FunnyScore fitted on this study"),
        "L1 (learned)": _("L1: learned L1 fitted on this study"),
    }
    if label in known:
        return known[label]
    match = re.fullmatch(r"LLM judge \((.+)\)", label)
    if match:
        return _("LLM judge (%(model)s)") % {"model": match.group(1)}
    return label


def outcome_label(outcome: str) -> str:
    """The content weights' outcome as stored ("overall answer >= 4")."""
    match = re.fullmatch(r"(\w+) answer >= ([\d.]+)", outcome)
    if match:
        return _("%(question)s answer ≥ %(value)s") % {
            "question": question_label(match.group(1)),
            "value": match.group(2),
        }
    return outcome


def group_label(name: str, dimension: str, *, humor: bool = True) -> str:
    """A row of a by-group table, whatever its dimension."""
    if dimension == "level":
        return level_label(name, humor=humor)
    if dimension == "level_humor_type" and "/" in name:
        level, kind = name.split("/", 1)
        return f"{level_label(level, humor=humor)} · {humor_type_label(kind)}"
    if dimension == "humor_type":
        return humor_type_label(name)
    if dimension == "content_type":
        return content_type_label(name)
    if dimension == "background":
        return background_label(name)
    if dimension == "source" and name == "human":
        return _("human")
    if dimension in ("language", "rater_language"):
        from apps.studies.languages import group_name

        return group_name(name, dimension)
    return name


def l1_kind_label(kind: str) -> str:
    """An L1 scorer's kind (FunnyScoreCalibration.Kind) in the reader's words."""
    known = {
        "defaults": _("FunnyScore, documented defaults"),
        "prior": _("prior from public crowd ratings"),
        "features": _("FunnyScore fitted on this study"),
        "learned": _("learned L1 fitted on this study"),
    }
    return str(known.get(kind, kind))


def source_label(name: str) -> str:
    """A source: a model's name as it is, the human baseline in the reader's language."""
    return _("human") if name == "human" else name


# --------------------------------------------------------------------------------------------
# warnings


def _number(value: Any, digits: int = 2) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def _params(warning: Mapping[str, Any]) -> dict[str, Any]:
    """The stored parameters; results stored before warnings had any get them from the
    warning's subject, value and threshold."""
    params = dict(warning.get("params") or {})
    subject, value, threshold = (
        warning.get("subject"),
        warning.get("value"),
        warning.get("threshold"),
    )
    defaults = {
        "model": subject,
        "item": subject,
        "question": subject,
        "subject": subject,
        "n": value,
        "count": value,
        "groups": value,
        "value": value,
        "min": threshold,
        "threshold": threshold,
        "measure": "ordinal",
    }
    for key, default in defaults.items():
        params.setdefault(key, default)
    return params


def warning_text(warning: Mapping[str, Any]) -> str:
    """One stored warning as a sentence in the reader's language."""
    code = warning.get("code")
    p = _params(warning)
    n = int(p["n"]) if isinstance(p["n"], int | float) else 0
    count = int(p["count"]) if isinstance(p["count"], int | float) else 0
    if code == "too_few_items":
        return ngettext(
            "%(model)s has %(n)s rated item; at least %(min)s are needed before its scores "
            "can be compared.",
            "%(model)s has %(n)s rated items; at least %(min)s are needed before its scores "
            "can be compared.",
            n,
        ) % {"model": source_label(str(p["model"])), "n": n, "min": _number(p["min"])}
    if code == "too_few_raters" and warning.get("scope") == "items":
        return ngettext(
            "%(count)s item has fewer than %(min)s raters, too few for a stable mean and "
            "agreement.",
            "%(count)s items have fewer than %(min)s raters, too few for a stable mean and "
            "agreement.",
            count,
        ) % {"count": count, "min": _number(p["min"])}
    if code == "too_few_raters":
        return ngettext(
            "Item %(item)s has %(n)s rater; at least %(min)s are needed for a stable mean and "
            "agreement.",
            "Item %(item)s has %(n)s raters; at least %(min)s are needed for a stable mean and "
            "agreement.",
            n,
        ) % {"item": p["item"], "n": n, "min": _number(p["min"])}
    if code == "held_items_counted":
        return ngettext(
            "%(count)s item held by the offense filter is counted: its ratings are in every "
            "figure (a study setting; marked “held”).",
            "%(count)s items held by the offense filter are counted: their ratings are in every "
            "figure (a study setting; marked “held”).",
            count,
        ) % {"count": count}
    if code == "controversial_question":
        return _(
            "Agreement on %(question)s (%(measure)s Krippendorff's alpha) is %(value)s, below "
            "%(threshold)s: too controversial to rank on."
        ) % {
            "question": question_label(str(p["question"])),
            "measure": measure_label(str(p["measure"])),
            "value": _number(p["value"]),
            "threshold": _number(p["threshold"]),
        }
    if code == "culture_dependent_items":
        return ngettext(
            "%(count)s item has cross-group agreement below %(threshold)s: culture-dependent, "
            "not evidence about the model.",
            "%(count)s items have cross-group agreement below %(threshold)s: "
            "culture-dependent, not evidence about the model.",
            count,
        ) % {"count": count, "threshold": _number(p["threshold"])}
    if code == "disconnected_comparisons":
        return _(
            "The pair comparisons form %(groups)s separate groups; scores are comparable only "
            "within a group."
        ) % {"groups": _number(p["groups"])}
    if code == "items_never_paired":
        return ngettext(
            "%(count)s item appears in no pair judgment and has no Bradley-Terry score.",
            "%(count)s items appear in no pair judgment and have no Bradley-Terry score.",
            count,
        ) % {"count": count}
    if code == "bt_not_converged":
        return _("The Bradley-Terry fit did not converge; its scores are not final.")
    if code == "bt_disconnected_rounds":
        return _(
            "%(count)s of %(rounds)s bootstrap rounds split the comparisons into separate "
            "groups: the design is too sparse for the intervals to be trusted fully."
        ) % {"count": _number(p["count"]), "rounds": _number(p["rounds"])}
    if code == "bt_unbounded_items":
        return ngettext(
            "%(count)s item won or lost every comparison: no finite Bradley-Terry score; "
            "%(bounded)s have a one-sided bound (at least or at most this strong) and the rank "
            "that follows from it.",
            "%(count)s items won or lost every comparison: no finite Bradley-Terry score; "
            "%(bounded)s have a one-sided bound (at least or at most this strong) and the rank "
            "that follows from it.",
            count,
        ) % {"count": count, "bounded": _number(p.get("bounded") or 0)}
    if code == "bt_scale_not_identified":
        return ngettext(
            "%(count)s item is compared only in ways the data cannot place on a scale "
            "(through items that won or lost everything): its score is held by the fit's "
            "ridge, shown but not ranked.",
            "%(count)s items are compared only in ways the data cannot place on a scale "
            "(through items that won or lost everything): their scores are held by the fit's "
            "ridge, shown but not ranked.",
            count,
        ) % {"count": count}
    if code == "controversial":
        return _(
            "%(subject)s: agreement %(value)s is below %(threshold)s; too controversial to rank on."
        ) % {
            "subject": question_label(str(p["subject"])),
            "value": _number(p["value"]),
            "threshold": _number(p["threshold"]),
        }
    if code == "culture_dependent":
        return _(
            "%(subject)s: agreement across background groups %(value)s is below "
            "%(threshold)s; the reaction depends on the audience, not evidence about the model."
        ) % {
            "subject": p["subject"],
            "value": _number(p["value"]),
            "threshold": _number(p["threshold"]),
        }
    if code == "session_drift":
        return _(
            "Late answers differ: within a session, %(question)s changes by %(size)s points per "
            "10 minutes (95%% interval %(low)s to %(high)s; each rater compared with "
            "themselves). The method keeps sessions under %(best)s minutes; scores drop after "
            "%(drop)s."
        ) % {
            "question": question_label(str(p.get("question") or "")),
            "size": _number(p.get("size")),
            "low": _number(p.get("low")),
            "high": _number(p.get("high")),
            "best": _number(p.get("best")),
            "drop": _number(p.get("drop")),
        }
    return str(warning.get("message") or code)


def warning_title(code: str) -> str:
    """A short name for a warning's kind, shown as its badge."""
    titles = {
        "too_few_items": _("too few items"),
        "too_few_raters": _("too few raters"),
        "controversial_question": _("controversial question"),
        "culture_dependent_items": _("culture-dependent items"),
        "disconnected_comparisons": _("separate comparison groups"),
        "items_never_paired": _("items never paired"),
        "bt_not_converged": _("fit not converged"),
        "bt_disconnected_rounds": _("sparse comparisons"),
        "bt_unbounded_items": _("undefeated or never winning items"),
        "bt_scale_not_identified": _("scale not fixed by the data"),
        "controversial": _("controversial"),
        "culture_dependent": _("culture-dependent"),
        "held_items_counted": _("held items counted"),
        "session_drift": _("drift within sessions"),
    }
    return titles.get(code, code)


ITEM_FLAGS = (
    "culture_dependent",
    "controversial",
    "offensive",
    "safety_intercepted",
    "too_few_raters",
    "held",
)


def study_warnings(
    warnings: Iterable[Mapping[str, Any]], items: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """The warnings as the pages and the report show them: study-level warnings first, each
    with its sentence in the reader's language; then the warnings that count items (each with
    the item flag the item table filters on); then every per-item flag as a count.

    Results stored before warnings were summarised listed one warning per item: those are
    counted into the per-item flags, never listed one by one.
    """
    study: list[dict[str, Any]] = []
    per_item: list[dict[str, Any]] = []
    for warning in warnings:
        code = str(warning.get("code"))
        if code == "too_few_raters" and warning.get("subject") != "items":
            continue  # one of the per-item warnings of older results: counted below
        shown = {"code": code, "title": warning_title(code), "text": warning_text(warning)}
        if warning.get("scope") == "items":
            per_item.append({**shown, "flag": warning.get("flag")})
        else:
            study.append(shown)
    counts = dict.fromkeys(ITEM_FLAGS, 0)
    for item in items:
        for flag in item.get("flags") or []:
            counts[flag] = counts.get(flag, 0) + 1
    flags = [
        {"flag": flag, "label": flag_label(flag), "count": count}
        for flag, count in counts.items()
        if count
    ]
    return {"study": study, "items": per_item, "flags": flags}


def warning_export(warning: Mapping[str, Any]) -> dict[str, Any]:
    """A warning as the exports write it: code, parameters, the sentence in English (for
    scripts) and in the reader's language."""
    from django.utils import translation

    with translation.override("en"):
        english = warning_text(warning)
    return {
        "code": warning.get("code"),
        "scope": warning.get("scope") or "study",
        "params": _params(warning) if warning.get("params") is None else warning.get("params"),
        "message": english,
        "text": warning_text(warning),
    }


def exclusion_target_label(target: str) -> str:
    """What an exclusion leaves out (rater, judgment, item) in the reader's language."""
    from apps.exclusions.models import Exclusion

    return str(dict(Exclusion.Target.choices).get(target, target))


def exclusion_rule_label(rule: str) -> str:
    """The automatic rule that proposed an exclusion; "" for a researcher's own."""
    from apps.exclusions.models import Rule

    return str(dict(Rule.choices).get(rule, rule)) if rule else ""


# --------------------------------------------------------------------------------------------
# pair boards: tie models, style control, reliability, pair outcomes


def tie_model_label(model: str) -> str:
    """The model that fitted the item board (``bradley_terry_fit.model``)."""
    labels = {
        "bradley_terry": _("plain Bradley-Terry"),
        "davidson": _("Davidson's tie model"),
        "rao_kupper": _("Rao-Kupper's tie model"),
    }
    return labels.get(model, model)


def tie_param_symbol(model: str) -> str:
    """The tie parameter's usual letter: Davidson's nu, Rao-Kupper's theta."""
    return {"davidson": "ν", "rao_kupper": "θ"}.get(model, "")


def covariate_label(name: str) -> str:
    """A covariate of the style-controlled boards (``style_control.covariates[].name``)."""
    labels = {
        "log_length": _("Length (log, own units)"),
        "language_zh": _("Chinese item"),
        "offensive": _("Flagged offensive"),
        "judged_human": _("Judged human (share of Turing guesses)"),
    }
    if name in labels:
        return labels[name]
    if name.startswith("level_"):
        return level_label(name.removeprefix("level_"))
    if name.startswith("meta:"):
        return _("Metadata: %(key)s") % {"key": name.removeprefix("meta:")}
    return name


def covariate_scale_label(standardised: bool) -> str:
    """What one unit of a covariate's effect is: one standard deviation, or having it."""
    return _("per SD") if standardised else _("for having it")


def covariate_dropped_label(reason: str) -> str:
    """Why a covariate was left out of the style-controlled fit (``style_control.dropped``)."""
    labels = {
        "constant": _("the same for every compared item"),
        "collinear": _("already explained by the sources and the covariates before it"),
    }
    return labels.get(reason, reason)


def tie_interval_reason_label(reason: str | None) -> str:
    """Why the tie parameter has no interval (``bradley_terry_fit.tie_param.reason``)."""
    if reason == "resamples_far_from_estimate":
        return _(
            "The tie parameter has no interval: its bootstrap resamples lie almost all on one "
            "side of the estimate, so they do not describe its sampling error."
        )
    return reason or ""


def style_reason_label(reason: str | None) -> str:
    """Why the style-controlled boards have no intervals, or no boards at all."""
    if not reason:
        return ""
    if reason == "sources_not_connected":
        return _(
            "the sources are not linked by comparisons between them: their strengths share no scale"
        )
    # Results stored before the code was a code held the sentence.
    if reason == "too_few_raters" or reason.startswith("fewer than 2 raters"):
        return _("there are fewer than 2 raters, and a rater-clustered interval needs two")
    return reason


def style_flag_label(flag: str | None) -> str:
    """Why a source has no style-controlled strength (``style_control.sources[].flag``)."""
    if not flag:
        return ""
    labels = {
        "no_pairs": _("in no comparison"),
        "no_cross_source_pairs": _("never compared with another source"),
        "undefeated": _("never lost to another source: no finite strength"),
        "never_won": _("never beat another source: no finite strength"),
    }
    return labels.get(flag, flag)


def order_change_sentence(change: str, a: str, b: str) -> str:
    """One order change of the style-controlled board, in the reader's language: ``a`` and
    ``b`` are the stored names (``a`` the one above before control for "flipped" and
    "separation_lost", after control for "separation_gained")."""
    names = {"a": source_label(a), "b": source_label(b)}
    if change == "separation_lost":
        return _("Controlling for style, %(a)s and %(b)s are no longer separated.") % names
    if change == "flipped":
        return _("Controlling for style, %(b)s now ranks above %(a)s.") % names
    if change == "separation_gained":
        return _("Controlling for style, %(a)s and %(b)s are now separated: %(a)s above %(b)s.") % (
            names
        )
    return f"{change}: {a}, {b}"


def reliability_reason_label(code: str | None) -> str:
    """Why a reliability figure is undefined (``reliability`` reasons); "no_pairs" and
    "no_scores" name a part the study has no data for."""
    if not code:
        return ""
    from apps.analysis.stats.reliability import MIN_RATERS

    labels = {
        "too_few_raters": _("too few raters (at least %(n)s are needed)") % {"n": MIN_RATERS},
        "too_few_items": _("too few items in common between the halves"),
        "no_variation": _("no variation: the boards are constant"),
        "too_few_ratings_per_item": _("fewer than 2 ratings per item on average"),
        "zero_variance": _("no variance in the ratings"),
        "no_pairs": _("no pair judgments"),
        "no_scores": _("no scorecard answers to the primary question"),
    }
    return labels.get(code, code)


def cross_group_reason_label(code: str | None) -> str:
    """Why an item has no cross-group agreement (``cross_group_reason``)."""
    if not code:
        return ""
    from apps.analysis.stats.report import CROSS_GROUP_MIN_RATERS

    labels = {
        "too_few_raters_per_group": _(
            "fewer than two background groups with %(n)s raters of the item each"
        )
        % {"n": CROSS_GROUP_MIN_RATERS},
        "no_variation": _("every answer to this question is the same"),
    }
    return labels.get(code, code)


def pair_outcome_label(kind: str) -> str:
    """An A/B answer that picks no side: "tie" (about the same) or "neither"."""
    labels = {
        "tie": pgettext("pair outcome", "About the same"),
        "neither": pgettext("pair outcome", "Neither"),
    }
    return labels.get(kind, kind)
