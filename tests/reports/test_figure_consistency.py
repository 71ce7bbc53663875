"""One source of truth for every figure: for both demo studies, every figure of the stored results
document is looked up in every output that shows it (the results pages, the printable report in
HTML and PDF, the XLSX workbook, the zip of CSVs and the pages' CSV downloads) and must read the
same there, at that output's rounding, under the same label (apps/analysis/labels.py).

The walk is driven by the document: `figures()` yields every figure it holds, each of a family
(a group's mean, a model's Bradley-Terry strength, a question's alpha, ...). `PLACES` says, per
family, where each output shows it, or why it does not: every family names each of the four
media (page, report, export, csv), so a new output or section is one more entry there.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import translation
from django.utils.translation import gettext

from apps.analysis import labels
from apps.analysis.stats.inputs import Thresholds
from apps.analysis.stats.report import GROUP_DIMENSIONS, RATER_DIMENSIONS
from apps.dashboard.results.boards import STYLE_ITEMS_SHOWN
from apps.dashboard.results.common import load_questions
from apps.findings.charts import fmt_p
from apps.reports import services, writers
from apps.studies.models import Study
from tests.pages.conftest import demo_site  # noqa: F401  (the seeded demo studies)
from tests.reports import outputs
from tests.reports.outputs import AMBIGUOUS, Html, Rows

pytestmark = pytest.mark.django_db

MEDIA = ("page", "report", "export", "csv")
INTERVAL = ("value", "ci_low", "ci_high")


# --- where a figure is shown -------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """A cell of an HTML table: the table under `heading` whose first column is headed `first`,
    the row found by `row` (a cell's text, the first cells' texts, or a data-* attribute), the
    column headed `column`. The figure's `parts`, formatted at `digits` (as percentages with
    `pct`), must appear there in order."""

    output: str
    heading: str
    first: str
    row: Any
    column: str
    parts: tuple[str, ...] = INTERVAL
    pct: bool = False
    # Decimals shown: 1 for a percentage, 2 otherwise, unless said.
    digits: int | None = None


@dataclass(frozen=True)
class Element:
    """The one element of a page with this class."""

    output: str
    css: str
    parts: tuple[str, ...] = INTERVAL
    pct: bool = False
    # Decimals shown: 1 for a percentage, 2 otherwise, unless said.
    digits: int | None = None


@dataclass(frozen=True)
class Marked:
    """An element marked `data-<name>="<key>"` whose text holds `text` (a sentence in the
    reader's language) and the figure's parts."""

    output: str
    name: str
    key: str
    text: str
    parts: tuple[str, ...] = ()
    # Counts by default; a rate or a correlation says its decimals (and percent).
    pct: bool = False
    digits: int = 0


@dataclass(frozen=True)
class Data:
    """A row of a table of the data formats (`export`: the XLSX sheet and the zip's CSV of that
    name; `csv:<name>`: a results page's download; `direct:<name>`: that table alone as CSV, the
    exports page's link), unrounded: `columns` hold the figure's `parts` in order."""

    output: str
    table: str
    where: dict[str, Any]
    columns: tuple[str, ...]
    parts: tuple[str, ...] = INTERVAL


@dataclass(frozen=True)
class Omit:
    """The output leaves the figure out on purpose, for this reason."""

    reason: str


Place = Cell | Element | Marked | Data | Omit


def _download(export: Data, name: str) -> Data:
    """A results page's download that is the export's table itself (same columns and rows)."""
    return Data(f"csv:{name}", name, export.where, export.columns, export.parts)


@dataclass(frozen=True)
class Figure:
    family: str
    path: tuple[Any, ...]
    value: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)


def _as_parts(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {"value": value}


# --- the study as the outputs describe it ------------------------------------------------------


@dataclass
class Ctx:
    study: Study
    document: dict[str, Any]
    humor: bool
    scale: list[str]
    binary: list[str]
    # The pages' view: "all" items, or "evidence" (without the items that are not evidence
    # about their model: a second stored document, shown by the pages and their downloads).
    view: str = "all"

    @property
    def groups(self) -> dict[str, Any]:
        return self.document.get("groups") or {}

    @property
    def has_types(self) -> bool:
        return any(name not in ("", "unspecified") for name in self.groups.get("humor_type") or {})

    @property
    def several_languages(self) -> bool:
        return len(self.groups.get("language") or {}) > 1

    @property
    def offense(self) -> bool:
        return self.humor or "offensive" in self.binary

    def group(self, name: str, dimension: str) -> str:
        return labels.group_label(name, dimension, humor=self.humor)

    def level(self, code: str) -> str:
        return labels.level_label(code, humor=self.humor)


def _page_summary_title(ctx: Ctx, dimension: str) -> tuple[str, str] | None:
    """The summary page's table of a dimension: (title, first column), None when not shown."""
    typed = ctx.humor or ctx.has_types
    titles = {
        "humor_type": ("By humor type" if ctx.humor else "By type") if typed else None,
        "level_humor_type": ("By level × humor type" if ctx.humor else "By level × type")
        if typed
        else None,
        "content_type": "By content type" if ctx.groups.get("content_type") else None,
        "source": "By source model",
        "level": "By level",
        "language": "By item language" if ctx.several_languages else None,
        "background": "By rater background",
        "rater_language": "By rater language"
        if ctx.several_languages or len(ctx.groups.get("rater_language") or {}) > 1
        else None,
    }
    title = titles.get(dimension)
    if title is None:
        return None
    first = {"background": "Background", "rater_language": "Languages read"}.get(dimension, "Group")
    return title, first


def _report_summary_title(ctx: Ctx, dimension: str) -> tuple[str, str] | None:
    titles = {
        "humor_type": ("By humor type" if ctx.humor else "By type")
        if ctx.humor or ctx.has_types
        else None,
        "level_humor_type": ("By level × humor type" if ctx.humor else "By level × type")
        if ctx.humor or ctx.has_types
        else None,
        "content_type": "By content type" if ctx.groups.get("content_type") else None,
        "source": "By source (model or human)",
        "level": "By test level",
        "background": "By rater background",
        "language": "By item language" if ctx.several_languages else None,
        "rater_language": "By rater language" if ctx.several_languages else None,
    }
    title = titles.get(dimension)
    if title is None:
        return None
    first = {
        "humor_type": "humor type" if ctx.humor else "type",
        "level_humor_type": "level × humor type" if ctx.humor else "level × type",
        "content_type": "content type",
        "language": "item language",
        "rater_language": "rater language",
    }.get(dimension, dimension)
    return title, first


# --- the walk: every figure of the document ----------------------------------------------------


def figures(ctx: Ctx) -> Iterator[Figure]:
    doc = ctx.document
    for dimension in GROUP_DIMENSIONS:
        for name, entry in sorted((ctx.groups.get(dimension) or {}).items()):
            p = {"dimension": dimension, "group": name}
            base = ("groups", dimension, name)
            size = "n_raters" if dimension in RATER_DIMENSIONS else "n_items"
            yield Figure(
                "group.size", (*base, size), _as_parts(entry.get(size)), {**p, "size": size}
            )
            for q, stats in sorted((entry.get("questions") or {}).items()):
                yield Figure("group.question", (*base, "questions", q), stats, {**p, "question": q})
            if dimension in RATER_DIMENSIONS:
                continue
            yield Figure("group.turing", (*base, "turing_accuracy"), entry["turing_accuracy"], p)
            for count in ("offensive_items", "safety_intercepted_items"):
                if count in entry:
                    yield Figure(f"group.{count}", (*base, count), _as_parts(entry[count]), p)
            for reading in ("any_rater", "share_of_raters"):
                stats = (entry.get("offense") or {}).get(reading)
                if stats:
                    yield Figure(f"group.offense_{reading}", (*base, "offense", reading), stats, p)
    models = doc.get("models") or {}
    views: list[tuple[str, str, dict[str, Any]]] = [("overall", "", models)]
    for dimension in ("by_level", "by_humor_type", "by_language"):
        views += [
            (dimension, name, view) for name, view in sorted((models.get(dimension) or {}).items())
        ]
    for dimension, name, view in views:
        key = "overall" if dimension == "overall" else f"{dimension}:{name}"
        v = {"view": dimension, "view_name": name, "view_key": key}
        for source, entry in sorted((view.get("by_model") or {}).items()):
            base = ("models", key, source)
            p = {**v, "source": source}
            for kind in ("questions", "fixed_items", "adjusted"):
                for q, stats in sorted((entry.get(kind) or {}).items()):
                    if stats:
                        yield Figure(
                            "model.question",
                            (*base, kind, q),
                            stats,
                            {**p, "kind": kind, "question": q},
                        )
            for measure in ("bt", "judged_human"):
                if entry.get(measure):
                    yield Figure(f"model.{measure}", (*base, measure), entry[measure], p)
            for reading in ("any_rater", "share_of_raters"):
                stats = (entry.get("offense") or {}).get(reading)
                if stats:
                    yield Figure(f"model.offense_{reading}", (*base, "offense", reading), stats, p)
            for count in ("n_items", "n_raters"):
                yield Figure(f"model.{count}", (*base, count), _as_parts(entry.get(count)), p)
            if entry.get("rank"):
                yield Figure("model.rank", (*base, "rank"), entry["rank"], p)
        for diff in view.get("differences") or []:
            p = {**v, "a": diff["a"], "b": diff["b"], "measure": diff["question"]}
            base = ("models", key, "differences", diff["a"], diff["b"], diff["question"])
            yield Figure("difference", base, diff, p)
            yield Figure("difference.p_holm", (*base, "p_holm"), _as_parts(diff.get("p_holm")), p)
            if diff.get("simultaneous"):
                yield Figure(
                    "difference.simultaneous", (*base, "simultaneous"), diff["simultaneous"], p
                )
            if diff.get("p_a_beats_b"):
                yield Figure(
                    "difference.p_a_beats_b", (*base, "p_a_beats_b"), diff["p_a_beats_b"], p
                )
                if diff["p_a_beats_b"].get("simultaneous"):
                    yield Figure(
                        "difference.p_a_beats_b_simultaneous",
                        (*base, "p_a_beats_b", "simultaneous"),
                        diff["p_a_beats_b"]["simultaneous"],
                        p,
                    )
    scopes = [("", doc.get("bradley_terry") or [])]
    scopes += sorted((doc.get("bradley_terry_by_level") or {}).items())
    for scope, rows in scopes:
        for position, row in enumerate(rows):
            p = {"scope": scope, "item": row["item"], "position": position}
            score = {
                "value": row.get("score"),
                "ci_low": row.get("ci_low"),
                "ci_high": row.get("ci_high"),
            }
            yield Figure("bt.score", ("bradley_terry", scope, row["item"]), score, p)
            yield Figure(
                "bt.rank",
                ("bradley_terry", scope, row["item"], "rank"),
                _as_parts(row.get("rank")),
                p,
            )
            if row.get("bound") is not None:
                # An item that won (lost) every comparison: at least (most) this strong.
                yield Figure(
                    "bt.bound",
                    ("bradley_terry", scope, row["item"], "bound"),
                    {"value": row["bound"]},
                    {**p, "side": row.get("bound_side")},
                )
        # Per source, the plain mean of its items' stored scores (with the best and the worst).
        sources = {item["item"]: item.get("source", "") for item in doc.get("items") or []}
        scores: dict[str, list[float]] = {}
        for row in rows:
            if row.get("score") is not None:
                scores.setdefault(sources.get(row["item"], ""), []).append(row["score"])
        for source, values in sorted(scores.items()):
            summary = {
                "value": sum(values) / len(values),
                "n": len(values),
                "best": max(values),
                "worst": min(values),
            }
            yield Figure(
                "bt.source",
                ("bradley_terry", scope, "by_source", source),
                summary,
                {"scope": scope, "source": source},
            )
    for item in doc.get("items") or []:
        p = {"item": item["item"], "safety": bool(item.get("safety_intercepted"))}
        base = ("items", item["item"])
        for q, stats in sorted((item.get("questions") or {}).items()):
            yield Figure("item.question", (*base, "questions", q), stats, {**p, "question": q})
        yield Figure("item.turing", (*base, "turing_accuracy"), item["turing_accuracy"], p)
        if item.get("explanation_match"):
            yield Figure(
                "item.explanation", (*base, "explanation_match"), item["explanation_match"], p
            )
        for number in ("agreement", "cross_group_agreement", "n_raters", "n_pairs"):
            yield Figure(f"item.{number}", (*base, number), _as_parts(item.get(number)), p)
    culture = _threshold(doc, "culture_dependent_items", Thresholds().culture_dependent_agreement)
    for q, entry in sorted((doc.get("agreement") or {}).items()):
        p = {"question": q, "headline": _headline(entry)}
        base = ("agreement", q)
        yield Figure(
            "agreement.n_ratings", (*base, "n_ratings"), _as_parts(entry.get("n_ratings")), p
        )
        if entry.get("fleiss_kappa"):
            yield Figure("agreement.fleiss", (*base, "fleiss_kappa"), entry["fleiss_kappa"], p)
        for level, stats in sorted((entry.get("krippendorff_alpha") or {}).items()):
            yield Figure("agreement.alpha", (*base, "alpha", level), stats, {**p, "level": level})
        for weighting, stats in sorted((entry.get("cohen_kappa") or {}).items()):
            yield Figure(
                "agreement.cohen",
                (*base, "cohen_kappa", weighting),
                stats,
                {**p, "weighting": weighting},
            )
        for key, measure in (
            ("krippendorff_alpha_by_group", p["headline"]),
            ("krippendorff_alpha_by_group_interval", "interval"),
        ):
            for group, stats in sorted((entry.get(key) or {}).items()):
                yield Figure(
                    "agreement.by_group",
                    (*base, key, group),
                    stats,
                    {**p, "group": group, "measure": measure},
                )
        flagged = sum(
            1
            for row in entry.get("per_item") or []
            if row.get("cross_group") is not None and row["cross_group"] < culture
        )
        yield Figure(
            "agreement.culture_dependent", (*base, "culture_dependent"), _as_parts(flagged), p
        )
    turing = doc.get("turing") or {}
    entries = [("overall", "", turing.get("overall"))]
    entries += [("source", n, e) for n, e in sorted((turing.get("by_source") or {}).items())]
    entries += [("level", n, e) for n, e in sorted((turing.get("by_level") or {}).items())]
    for scope, name, entry in entries:
        if not entry:
            continue
        p = {"scope": scope, "name": name}
        base = ("turing", scope, name)
        yield Figure("turing.n", (*base, "n"), _as_parts(entry.get("n")), p)
        for measure in ("accuracy", "judged_human"):
            yield Figure(f"turing.{measure}", (*base, measure), entry[measure], p)
        yield Figure("turing.d_prime", (*base, "d_prime"), _as_parts(entry.get("d_prime")), p)
        if entry.get("vs_human"):
            yield Figure("turing.vs_human", (*base, "vs_human"), entry["vs_human"], p)
            yield Figure(
                "turing.vs_human_p",
                (*base, "vs_human", "p_holm"),
                {"value": entry["vs_human"].get("p_holm")},
                p,
            )
        if entry.get("vs_chance"):
            yield Figure(
                "turing.p_vs_chance",
                (*base, "vs_chance"),
                {"value": entry["vs_chance"].get("p_value")},
                p,
            )
    for key, value in sorted((doc.get("counts") or {}).items()):
        yield Figure("count", ("counts", key), _as_parts(value), {"key": key})
    diagnostics = doc.get("diagnostics") or {}
    bias = diagnostics.get("position_bias") or {}
    if bias.get("left_choice_rate"):
        yield Figure(
            "diagnostics.left_choice", ("diagnostics", "position_bias"), bias["left_choice_rate"]
        )
        yield Figure(
            "diagnostics.position_p",
            ("diagnostics", "position_bias", "p"),
            _as_parts(bias.get("p_value")),
        )
    fatigue = diagnostics.get("fatigue") or {}
    if fatigue.get("slope"):
        yield Figure(
            "diagnostics.fatigue_slope", ("diagnostics", "fatigue", "slope"), fatigue["slope"]
        )
    for b in fatigue.get("bins") or []:
        value = {
            "value": b.get("mean"),
            "ci_low": b.get("ci_low"),
            "ci_high": b.get("ci_high"),
            "n": b.get("n"),
        }
        yield Figure(
            "diagnostics.fatigue_bin",
            ("diagnostics", "fatigue", b.get("start")),
            value,
            {"start": b.get("start"), "end": b.get("end")},
        )
    for group, count in sorted(
        ((diagnostics.get("coverage") or {}).get("items_without_group") or {}).items()
    ):
        yield Figure(
            "diagnostics.coverage",
            ("diagnostics", "coverage", group),
            {"value": count},
            {"group": group},
        )
    if diagnostics.get("explanation_match_rate"):
        yield Figure(
            "diagnostics.explanation",
            ("diagnostics", "explanation"),
            diagnostics["explanation_match_rate"],
        )
    evidence = ((doc.get("evidence_only") or {}).get("results") or {}).get("groups") or {}
    if ctx.view == "all" and evidence:
        # Per model, the primary question's mean and the Turing accuracy with and without the
        # items that are not evidence, and the change.
        primary = "funniness" if "funniness" in ctx.scale else ctx.scale[-1]
        before, after = ctx.groups.get("source") or {}, evidence.get("source") or {}
        for source in sorted(set(before) | set(after)):
            p = {"source": source, "primary": primary}
            means = [
                ((g.get(source) or {}).get("questions") or {}).get(primary) for g in (before, after)
            ]
            turing = [(g.get(source) or {}).get("turing_accuracy") for g in (before, after)]
            for part, value in (
                ("all", means[0]),
                ("evidence", means[1]),
                ("turing_all", turing[0]),
                ("turing_evidence", turing[1]),
            ):
                if value:
                    yield Figure(
                        "evidence.effect",
                        ("evidence_only", source, part),
                        value,
                        {**p, "part": part},
                    )
            if means[0] and means[1] and None not in (means[0].get("value"), means[1].get("value")):
                change = {"value": means[1]["value"] - means[0]["value"]}
                yield Figure(
                    "evidence.effect",
                    ("evidence_only", source, "change"),
                    change,
                    {**p, "part": "change"},
                )
    before_exclusions = (doc.get("before_exclusions") or {}).get("source") or {}
    if ctx.view == "all" and before_exclusions:
        # Per model, the primary question's mean and the Turing accuracy on all the data and
        # after the exclusions, and the change.
        primary = "funniness" if "funniness" in ctx.scale else ctx.scale[-1]
        after_exclusions = ctx.groups.get("source") or {}
        for source in sorted(set(before_exclusions) | set(after_exclusions)):
            p = {"source": source, "primary": primary}
            b, a = before_exclusions.get(source) or {}, after_exclusions.get(source) or {}
            b_mean = (b.get("questions") or {}).get(primary)
            a_mean = (a.get("questions") or {}).get(primary)
            for part, value in (
                ("all", b_mean),
                ("after", a_mean),
                ("turing_all", b.get("turing_accuracy")),
                ("turing_after", a.get("turing_accuracy")),
            ):
                if value:
                    yield Figure(
                        "exclusion.effect",
                        ("before_exclusions", source, part),
                        value,
                        {**p, "part": part},
                    )
            if b_mean and a_mean and None not in (b_mean.get("value"), a_mean.get("value")):
                yield Figure(
                    "exclusion.effect",
                    ("before_exclusions", source, "change"),
                    {"value": a_mean["value"] - b_mean["value"]},
                    {**p, "part": "change"},
                )
    yield from _board_figures(ctx)
    for warning in doc.get("warnings") or []:
        yield Figure(
            "warning",
            ("warnings", warning.get("code"), warning.get("subject")),
            {},
            {"warning": warning},
        )
    shown = labels.study_warnings(doc.get("warnings") or [], doc.get("items") or [])
    for flag in shown["flags"]:
        yield Figure(
            "flag", ("flags", flag["flag"]), {"value": flag["count"]}, {"flag": flag["flag"]}
        )


def _threshold(doc: dict[str, Any], code: str, default: float) -> float:
    for warning in doc.get("warnings") or []:
        if warning.get("code") == code and warning.get("threshold") is not None:
            return float(warning["threshold"])
    return default


def _headline(entry: dict[str, Any]) -> str:
    alphas = entry.get("krippendorff_alpha") or {}
    return str(entry.get("alpha_level") or ("ordinal" if "ordinal" in alphas else "nominal"))


def _board_figures(ctx: Ctx) -> Iterator[Figure]:
    """The pair board's figures: the model of each board (tie parameter, both tie models'
    log-likelihoods) and its ends, the "about the same" and "neither" rates, the style-controlled
    boards and the reliability of the board."""
    doc = ctx.document
    fits = [("", doc.get("bradley_terry_fit") or {})]
    fits += sorted((doc.get("bradley_terry_fit_by_level") or {}).items())
    ends = any(
        (fit.get("undefeated") or 0) + (fit.get("never_won") or 0)
        or fit.get("scale_not_identified")
        for _scope, fit in fits
    )
    for scope, fit in fits:
        if not fit.get("model"):
            continue
        p = {"scope": scope, "model": fit["model"], "any_ends": ends}
        base = ("bradley_terry_fit", scope or "all")
        tie_param = fit.get("tie_param") or {}
        if tie_param.get("value") is not None:
            yield Figure("fit.tie_param", (*base, "tie_param"), tie_param, p)
        for name, entry in sorted((fit.get("tie_models") or {}).items()):
            yield Figure(
                "fit.log_lik", (*base, name), {"value": entry.get("log_lik")}, {**p, "tie": name}
            )
        for count in ("undefeated", "never_won", "end_bounds", "scale_not_identified"):
            yield Figure(
                "fit.ends", (*base, count), _as_parts(fit.get(count) or 0), {**p, "count": count}
            )
    outcomes = doc.get("pair_outcomes") or {}
    kinds = [kind for kind in ("tie", "neither") if outcomes.get(kind)]
    for kind in kinds:
        entry = outcomes[kind]
        p = {"kind": kind, "kinds": kinds}
        yield Figure(
            "pair_outcome",
            ("pair_outcomes", kind, "overall"),
            entry["overall"],
            {**p, "level": "overall", "name": ""},
        )
        for level in ("source", "background"):
            for name, stats in sorted((entry.get(f"by_{level}") or {}).items()):
                yield Figure(
                    "pair_outcome",
                    ("pair_outcomes", kind, level, name),
                    stats,
                    {**p, "level": level, "name": name},
                )
        for row in entry.get("items") or []:
            yield Figure(
                "pair_outcome.item",
                ("pair_outcomes", kind, "item", row["item"]),
                {**row["rate"], "count": row.get("count")},
                {**p, "level": "item", "name": row["item"]},
            )
    style = doc.get("style_control") or {}
    for entry in style.get("sources") or []:
        for board in ("plain", "controlled"):
            yield Figure(
                "style.source",
                ("style_control", "sources", entry["source"], board),
                entry.get(board) or {},
                {"source": entry["source"], "board": board},
            )
    for entry in style.get("covariates") or []:
        value = {
            "value": entry.get("beta"),
            "ci_low": entry.get("ci_low"),
            "ci_high": entry.get("ci_high"),
        }
        yield Figure(
            "style.beta",
            ("style_control", "covariates", entry["name"]),
            value,
            {"name": entry["name"]},
        )
    shown = {row["item"] for row in _page_style_items(style)}
    for entry in style.get("items") or []:
        for board in ("plain", "controlled"):
            yield Figure(
                "style.item",
                ("style_control", "items", entry["item"], board),
                entry.get(board) or {},
                {"item": entry["item"], "board": board, "on_page": entry["item"] in shown},
            )
    if style.get("items") is not None:
        yield Figure(
            "style.item_order_changes",
            ("style_control", "item_order_changes"),
            _as_parts(style.get("item_order_changes") or 0),
        )
    reliability = doc.get("reliability") or {}
    groups = [("all", "study", "", reliability.get("study"))]
    groups += [
        (name, "source", name, entry)
        for name, entry in sorted((reliability.get("by_source") or {}).items())
    ]
    for key, scope, group, entry in groups:
        if not entry:
            continue
        p = {"key": key, "scope": scope, "group": group, "n_items": entry.get("n_items")}
        base = ("reliability", key)
        for kind in ("pairs", "scores"):
            split = entry.get(kind) or {}
            if split.get("reason") or split.get("mean") is None:
                continue
            spread = {
                "value": split["mean"],
                "ci_low": split.get("q025"),
                "ci_high": split.get("q975"),
            }
            yield Figure("reliability.split", (*base, kind), spread, {**p, "kind": kind})
            yield Figure(
                "reliability.spearman_brown",
                (*base, kind, "spearman_brown"),
                {"value": split.get("spearman_brown")},
                {**p, "kind": kind},
            )
        k_rater = entry.get("k_rater") or {}
        if k_rater.get("reason") or k_rater.get("icc") is None:
            continue
        icc = {
            "value": k_rater["icc"],
            "ci_low": k_rater.get("icc_ci_low"),
            "ci_high": k_rater.get("icc_ci_high"),
        }
        yield Figure("reliability.icc", (*base, "icc"), icc, p)
        yield Figure("reliability.at_mean", (*base, "at_mean"), k_rater.get("at_mean") or {}, p)
        for row in k_rater.get("by_k") or []:
            yield Figure("reliability.k", (*base, "k", row.get("k")), row, {**p, "k": row.get("k")})


def _page_style_items(style: dict[str, Any]) -> list[dict[str, Any]]:
    """The items the leaderboard page lists under the style-controlled boards: the controlled
    board's order (comparison group, rank, score), the first STYLE_ITEMS_SHOWN."""
    ordered = sorted(
        style.get("items") or [],
        key=lambda row: (
            row.get("component") or 0,
            (row.get("controlled") or {}).get("rank") is None,
            (row.get("controlled") or {}).get("rank") or 0,
            -((row.get("controlled") or {}).get("value") or 0.0),
            row["item"],
        ),
    )
    return ordered[:STYLE_ITEMS_SHOWN]


# --- the mapping: which output shows which figure ------------------------------------------------

RAW = "the data formats hold every figure of the document; the pages round it"
NOT_IN_REPORT_ITEMS = "the report names items only in its leaderboard; the exports list every item"


def _group_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    d, g = f.params["dimension"], f.params["group"]
    page, report = _page_summary_title(ctx, d), _report_summary_title(ctx, d)
    row = ctx.group(g, d)
    out: dict[str, Place] = {}
    family = f.family
    if family == "group.size":
        size = f.params["size"]
        column = "Raters" if size == "n_raters" else "Items"
        out["page"] = Cell("summary", *page, row, column, ("value",)) if page else Omit("no table")
        out["report"] = (
            Cell("report", *report, row, size.replace("_", " "), ("value",))
            if report
            else Omit("the report shows this split in the appendix only")
        )
        out["export"] = Data("export", f"groups_{d}", {"group": g}, (size,), ("value",))
        out["csv"] = Data(
            "csv:summary", "summary", {"dimension": d, "group": g}, (size,), ("value",)
        )
        return out
    if family == "group.question" and d == "source" and f.params["question"] in ctx.scale:
        # One view per number: per source, the summary page, its CSV and the report show the
        # model comparison's mean (items and raters random), checked as `model.question`.
        shown = Omit("per source the summary shows the model comparison's mean")
        cols = tuple(f"{f.params['question']}_{part}" for part in ("mean", "ci_low", "ci_high"))
        return {
            "page": shown,
            "report": shown,
            "csv": shown,
            "export": Data("export", f"groups_{d}", {"group": g}, cols),
        }
    if family == "group.question":
        q = f.params["question"]
        binary = q in ctx.binary
        out["page"] = (
            Omit("a flag question is shown as the offense share")
            if binary
            else Cell("summary", *page, row, labels.question_label(q))
            if page
            else Omit("the summary page shows no table of this dimension")
        )
        if report is None:
            out["report"] = Omit("the report has no table of this dimension")
        elif binary and d in RATER_DIMENSIONS:
            # A split by rater has no any-rater column: the flag's share stands alone.
            out["report"] = Cell("report", *report, row, "Offense (share of raters)", pct=True)
        elif binary:
            out["report"] = Omit("a flag question is shown as the offense share")
        else:
            out["report"] = Cell(
                "report",
                *report,
                row,
                _("%(question)s (mean)") % {"question": labels.question_label(q)},
            )
        cols = (f"{q}_mean", f"{q}_ci_low", f"{q}_ci_high")
        out["export"] = Data("export", f"groups_{d}", {"group": g}, cols)
        out["csv"] = Data("csv:summary", "summary", {"dimension": d, "group": g}, cols)
        return out
    column, export_cols, csv_cols, parts, pct = {
        "group.turing": (
            "Turing accuracy",
            ("turing_accuracy", "turing_ci_low", "turing_ci_high"),
            ("turing_accuracy", "turing_ci_low", "turing_ci_high"),
            INTERVAL,
            True,
        ),
        "group.offense_any_rater": (
            "Offensive items (any rater)",
            ("offense_any_rater_rate", "offense_any_rater_ci_low", "offense_any_rater_ci_high"),
            ("offense_any_rater_rate", "offense_any_rater_ci_low", "offense_any_rater_ci_high"),
            INTERVAL,
            True,
        ),
        "group.offense_share_of_raters": (
            "Offense (share of raters)",
            (
                "offense_share_of_raters_rate",
                "offense_share_of_raters_ci_low",
                "offense_share_of_raters_ci_high",
            ),
            (
                "offense_share_of_raters_rate",
                "offense_share_of_raters_ci_low",
                "offense_share_of_raters_ci_high",
            ),
            INTERVAL,
            True,
        ),
        "group.offensive_items": (
            "Offensive items (any rater)",
            ("offensive_items",),
            ("offensive_items",),
            ("value",),
            False,
        ),
        "group.safety_intercepted_items": (
            None,
            ("safety_intercepted_items",),
            ("safety_intercepted_items",),
            ("value",),
            False,
        ),
    }[family]
    if family == "group.safety_intercepted_items":
        shown = d in ("source", "level") and f.value["value"]
        label = ctx.group(g, d) if d == "source" else ctx.level(g)
        out["page"] = (
            Cell("safety", "Per source and level", "Group", label, "Intercepted", ("value",))
            if shown
            else Omit("the safety page lists sources and levels with intercepted items")
        )
        out["report"] = (
            Cell(
                "report",
                "Safety-intercepted items",
                "Group",
                label,
                "Intercepted items",
                ("value",),
            )
            if shown
            else Omit("the report lists sources and levels with intercepted items")
        )
    else:
        shown_offense = family == "group.turing" or ctx.offense
        out["page"] = (
            Cell("summary", *page, row, column, parts, pct)
            if page and shown_offense
            else Omit("not a table of the summary page")
        )
        out["report"] = (
            Cell("report", *report, row, column, parts, pct)
            if report and shown_offense and family != "group.offensive_items"
            else Omit("the report gives the share, the exports the count")
            if family == "group.offensive_items"
            else Omit("the report has no table of this dimension")
        )
    out["export"] = Data("export", f"groups_{d}", {"group": g}, export_cols, parts)
    out["csv"] = Data("csv:summary", "summary", {"dimension": d, "group": g}, csv_cols, parts)
    return out


def _report_model_view(ctx: Ctx, p: dict[str, Any], *, differences: bool = False) -> str | None:
    """The title of the report's table of a model-comparison view: overall and every level
    (with their differences), then each humor type and item language when there are several."""
    view, name = p["view"], p["view_name"]
    models = ctx.document.get("models") or {}
    if view == "overall":
        return "All items"
    if view == "by_level":
        return _("Level: %(level)s") % {"level": ctx.level(name)}
    if differences or len(models.get(view) or {}) < 2:
        return None
    if view == "by_humor_type":
        title = _("Humor type: %(type)s") if ctx.humor else _("Type: %(type)s")
        return title % {"type": labels.humor_type_label(name)}
    return _("Item language: %(language)s") % {"language": labels.group_label(name, "language")}


def _model_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    p = f.params
    page_out = f"models:{p['view_key']}"
    report_heading = _report_model_view(ctx, p)
    row = labels.source_label(p["source"])
    measure = {
        "model.bt": "bt",
        "model.judged_human": "judged_human",
        "model.offense_any_rater": "offense_any_rater",
        "model.offense_share_of_raters": "offense_share_of_raters",
    }.get(f.family)
    where = {"view": p["view"], "group": p["view_name"], "row": "source", "source": p["source"]}
    out: dict[str, Place] = {}
    if f.family == "model.question":
        q, kind = p["question"], p["kind"]
        measure = q if kind == "questions" else f"{q}_{kind}"
        if q in ctx.binary:
            out["page"] = out["report"] = Omit("a flag question is shown as the offense share")
        else:
            out["page"] = Cell(
                page_out, "Model comparison", "Source", row, f"{labels.question_label(q)} [95% CI]"
            )
            if kind == "questions" and p["view"] == "overall":
                # The same number is each source's mean on the summary page, in its CSV and in
                # the report's summary table (one view per number).
                source = ctx.group(p["source"], "source")
                summary = _page_summary_title(ctx, "source")
                report_summary = _report_summary_title(ctx, "source")
                assert summary
                assert report_summary
                out["page:summary"] = Cell("summary", *summary, source, labels.question_label(q))
                out["report:summary"] = Cell(
                    "report",
                    *report_summary,
                    source,
                    _("%(question)s (mean)") % {"question": labels.question_label(q)},
                )
                out["csv:summary"] = Data(
                    "csv:summary",
                    "summary",
                    {"dimension": "source", "group": p["source"]},
                    (f"{q}_mean", f"{q}_ci_low", f"{q}_ci_high"),
                )
            out["report"] = (
                Cell("report", report_heading, "Source", row, labels.question_label(q))
                if report_heading
                else Omit(
                    "the report lists a finer view of the comparison only when it has several groups"
                )
            )
    elif f.family in ("model.n_items", "model.n_raters", "model.rank"):
        column = {
            "model.n_items": "Rated items",
            "model.n_raters": "Raters",
            "model.rank": "Rank range",
        }[f.family]
        parts = ("low", "high") if f.family == "model.rank" else ("value",)
        # A rank range of one rank reads "2", not "2–2".
        shown = parts[:1] if f.value.get("low") == f.value.get("high") else parts
        out["page"] = Cell(page_out, "Model comparison", "Source", row, column, shown)
        out["report"] = (
            Cell("report", report_heading, "Source", row, column, shown)
            if report_heading
            else Omit(
                "the report lists a finer view of the comparison only when it has several groups"
            )
        )
        if f.family == "model.rank":
            data = Data(
                "export", "models", {**where, "measure": "rank"}, ("ci_low", "ci_high"), parts
            )
        else:
            data = Data("export", "models", {**where, "measure": "bt"}, (f.family[6:],), parts)
        out["export"] = data
        out["csv"] = Data("csv:models", "models", data.where, data.columns, parts)
        return out
    else:
        pct = f.family != "model.bt"
        column = {
            "model.bt": ("Bradley-Terry [95% CI]", "Bradley-Terry"),
            "model.judged_human": ("Judged human [95% CI]", "Judged human"),
            "model.offense_any_rater": ("Offensive items (any rater)",) * 2,
            "model.offense_share_of_raters": ("Offense (share of raters)",) * 2,
        }[f.family]
        out["page"] = Cell(
            page_out, "Model comparison", "Source", row, column[0], INTERVAL, pct, 1 if pct else 2
        )
        out["report"] = (
            Cell("report", report_heading, "Source", row, column[1], INTERVAL, pct, 1 if pct else 2)
            if report_heading
            else Omit(
                "the report lists a finer view of the comparison only when it has several groups"
            )
        )
    cols = ("value", "ci_low", "ci_high")
    out["export"] = Data("export", "models", {**where, "measure": measure}, cols)
    out["csv"] = Data("csv:models", "models", {**where, "measure": measure}, cols)
    return out


def measure_name(measure: str) -> str:
    return {"bt": "Bradley-Terry", "judged_human": "Judged human"}.get(
        measure, labels.question_label(measure)
    )


def _difference_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    p = f.params
    m = p["measure"]
    shown = m in (*ctx.scale, "bt", "judged_human")
    row = (labels.source_label(p["a"]), labels.source_label(p["b"]), measure_name(m))
    report_heading = _report_model_view(ctx, p, differences=True)
    where = {
        "view": p["view"],
        "group": p["view_name"],
        "row": "difference",
        "source": p["a"],
        "other": p["b"],
    }
    if f.family == "difference":
        column, parts, pct, digits = (
            "A − B [95% CI]",
            INTERVAL,
            m == "judged_human",
            1 if m == "judged_human" else 2,
        )
        data = Data("export", "models", {**where, "measure": m}, ("value", "ci_low", "ci_high"))
    elif f.family == "difference.p_holm":
        column, parts, pct, digits = "p (Holm)", ("value",), False, 3
        data = Data("export", "models", {**where, "measure": m}, ("p_holm",), ("value",))
    elif f.family == "difference.simultaneous":
        column, parts, pct, digits = (
            "A − B, simultaneous 95% CI",
            INTERVAL,
            m == "judged_human",
            1 if m == "judged_human" else 2,
        )
        data = Data(
            "export",
            "models",
            {**where, "measure": m},
            ("value", "simultaneous_ci_low", "simultaneous_ci_high"),
        )
    elif f.family == "difference.p_a_beats_b_simultaneous":
        data = Data(
            "export",
            "models",
            {**where, "measure": "p_a_beats_b"},
            ("value", "simultaneous_ci_low", "simultaneous_ci_high"),
        )
        reason = Omit(
            "the pages give each pair's probability with its own interval; the simultaneous "
            "ones are in the data exports"
        )
        return {
            "page": reason,
            "report": reason,
            "export": data,
            "csv": Data("csv:models", "models", data.where, data.columns, data.parts),
        }
    else:
        column, parts, pct, digits = "P(A's item beats B's) [95% CI]", INTERVAL, True, 1
        data = Data(
            "export", "models", {**where, "measure": "p_a_beats_b"}, ("value", "ci_low", "ci_high")
        )
    page_out = f"models:{p['view_key']}"
    return {
        "page": Cell(page_out, "Differences between sources", "A", row, column, parts, pct, digits)
        if shown
        else Omit("the page compares the rating scales, Bradley-Terry and judged human"),
        "report": Cell("report", report_heading, "A", row, column, parts, pct, digits)
        if shown and report_heading
        else Omit(
            "the report compares models overall and per level, on the rating scales, "
            "Bradley-Terry and judged human"
        ),
        "export": data,
        "csv": Data("csv:models", "models", data.where, data.columns, data.parts),
    }


def _bt_source_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    scope, source = f.params["scope"], f.params["source"]
    row = labels.source_label(source)
    table = (f"leaderboard:{scope}", "By source model", "Source", row)
    parts = ("n", "value", "best", "worst")
    return {
        "page": Cell(*table, "Items", ("n",)),
        "page:mean": Cell(*table, "Mean score", ("value",)),
        "page:best": Cell(*table, "Best", ("best",)),
        "page:worst": Cell(*table, "Worst", ("worst",)),
        "report": Omit(
            "a plain average of stored scores; the report compares models by their fitted strength"
        ),
        "export": Omit(
            "a plain average of stored scores; the models table has each model's fitted strength"
        ),
        "csv": Data(
            "csv:leaderboard-by-source",
            "leaderboard-by-source",
            {"level_scope": scope or "all", "source": source},
            ("n_items", "mean_score", "max_score", "min_score"),
            parts,
        ),
    }


def _bt_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    scope, item, position = f.params["scope"], f.params["item"], f.params["position"]
    by_level = bool(ctx.document.get("bradley_terry_by_level"))
    in_report = position < writers.LEADERBOARD_SIZE and (bool(scope) or not by_level)
    report_heading = ctx.level(scope) if scope else "all levels"
    rank = f.family == "bt.rank"
    parts = ("value",) if rank else INTERVAL
    page: Place = Cell(
        f"leaderboard:{scope}",
        "All scored items",
        "Rank",
        ("data-item", item),
        "Rank" if rank else "Score [95% CI]",
        parts,
    )
    if scope:
        data = Data(
            "export",
            "bradley_terry_by_level",
            {"scope_level": scope, "item": item},
            ("rank",) if rank else ("score", "ci_low", "ci_high"),
            parts,
        )
        csv_place = Data(
            "csv:leaderboard-by-level",
            "leaderboard-by-level",
            {"level_scope": scope, "item": item},
            data.columns,
            parts,
        )
    else:
        data = Data(
            "export",
            "bradley_terry",
            {"item": item},
            ("rank",) if rank else ("score", "ci_low", "ci_high"),
            parts,
        )
        csv_place = Data(
            "csv:leaderboard",
            "leaderboard",
            {"level_scope": "all", "item": item},
            data.columns,
            parts,
        )
    return {
        "page": page,
        "page:items": Cell("items", "Items", "Item", ("data-item", item), "BT score", ("value",))
        if not scope and not rank
        else Omit("the items table shows the pooled score"),
        "report": Cell("report", report_heading, "#", item, "#" if rank else "BT score", parts)
        if in_report
        else Omit(f"the report lists the top {writers.LEADERBOARD_SIZE} of each level"),
        "export": data,
        "csv": csv_place,
    }


TURING_ITEM = ("turing_accuracy", "turing_ci_low", "turing_ci_high", "turing_n")
EXPLANATION = ("explanation_match", "explanation_ci_low", "explanation_ci_high", "explanation_n")


def _item_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    item = f.params["item"]
    row = ("data-item", item)
    family = f.family
    if family == "item.question":
        q = f.params["question"]
        binary = q in ctx.binary
        parts = ("value",) if binary else INTERVAL
        cols = (
            (f"{q}_mean", f"{q}_ci_low", f"{q}_ci_high")[: len(parts)]
            if binary
            else (f"{q}_mean", f"{q}_ci_low", f"{q}_ci_high")
        )
        cell = Cell(
            "items",
            "Items",
            "Item",
            row,
            labels.question_label(q),
            parts,
            binary,
            1 if binary else 2,
        )
        return {
            "page": cell,
            "page:safety": Cell(
                "safety",
                "Safety-intercepted items",
                "Item",
                row,
                labels.question_label(q),
                parts,
                binary,
                1 if binary else 2,
            )
            if f.params["safety"]
            else Omit("the safety page lists intercepted items"),
            "report": Omit(NOT_IN_REPORT_ITEMS),
            "export": Data("export", "items", {"item": item}, cols, parts),
            "csv": Data("csv:items", "items", {"item": item}, cols, parts),
        }
    column, export_cols, csv_cols, parts, pct, digits = {
        "item.turing": ("Turing accuracy", TURING_ITEM, TURING_ITEM, (*INTERVAL, "n"), True, 1),
        "item.explanation": (
            "Explanation match",
            EXPLANATION,
            EXPLANATION,
            (*INTERVAL, "n"),
            True,
            1,
        ),
        "item.agreement": ("Agreement", ("agreement",), ("agreement",), ("value",), False, 2),
        "item.cross_group_agreement": (
            "Cross-group",
            ("cross_group_agreement",),
            ("cross_group_agreement",),
            ("value",),
            False,
            2,
        ),
        "item.n_raters": ("Raters", ("n_raters",), ("n_raters",), ("value",), False, 0),
        "item.n_pairs": ("Pairs", ("n_pairs",), ("n_pairs",), ("value",), False, 0),
    }[family]
    out: dict[str, Place] = {
        "page": Cell("items", "Items", "Item", row, column, parts, pct, digits),
        "report": Omit(NOT_IN_REPORT_ITEMS),
        "export": Data("export", "items", {"item": item}, export_cols, parts),
        "csv": Data("csv:items", "items", {"item": item}, csv_cols, parts),
    }
    if family in ("item.turing", "item.explanation"):
        # The page shows the share alone ("62.5% (n=8)"); the intervals are in the downloads.
        out["page"] = Cell("items", "Items", "Item", row, column, ("value",), True, 1)
    culture = _threshold(
        ctx.document, "culture_dependent_items", Thresholds().culture_dependent_agreement
    )
    value = next(
        (i.get("cross_group_agreement") for i in ctx.document["items"] if i["item"] == item), None
    )
    if family in ("item.agreement", "item.cross_group_agreement"):
        out["page:agreement"] = (
            Cell(
                "agreement",
                "Culture-dependent items",
                "Item",
                row,
                "Cross-group agreement"
                if family == "item.cross_group_agreement"
                else "Within-item agreement",
                ("value",),
            )
            if value is not None and value < culture
            else Omit("the agreement page lists the culture-dependent items")
        )
    return out


COHEN_COLUMNS = {"unweighted": "Cohen's kappa", "quadratic": "Cohen's kappa (quadratic)"}
ALPHA_COLUMNS = {
    "nominal": "Alpha (nominal)",
    "ordinal": "Alpha (ordinal)",
    "interval": "Alpha (interval)",
}


def _agreement_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    q, headline = f.params["question"], f.params["headline"]
    row = labels.question_label(q)
    page = ("agreement", "Per question", "Question", row)
    report = ("report", "Agreement per question", "Question", row)
    family = f.family
    if family == "agreement.n_ratings":
        return {
            "page": Cell(*page, "Ratings", ("value",)),
            "report": Cell(*report, "Ratings", ("value",)),
            "export": Data("export", "agreement", {"question": q}, ("n_ratings",), ("value",)),
            "csv": Data(
                "csv:agreement",
                "agreement",
                {"question": q, "measure": f"krippendorff_alpha_{headline}"},
                ("n_ratings",),
                ("value",),
            ),
        }
    if family == "agreement.fleiss":
        return {
            "page": Cell(*page, "Fleiss' kappa"),
            "report": Cell(*report, "Fleiss' kappa"),
            "export": Data(
                "export",
                "agreement",
                {"question": q},
                ("fleiss_kappa", "fleiss_kappa_ci_low", "fleiss_kappa_ci_high"),
            ),
            "csv": Data(
                "csv:agreement",
                "agreement",
                {"question": q, "measure": "fleiss_kappa"},
                ("value", "ci_low", "ci_high"),
            ),
        }
    if family == "agreement.alpha":
        level = f.params["level"]
        in_report = level == headline or (level == "interval" and headline == "ordinal")
        return {
            "page": Cell(*page, ALPHA_COLUMNS[level]),
            "report": Cell(*report, "Krippendorff's alpha")
            if in_report
            else Omit(
                "the report gives the alpha that fits the scale, and interval alpha beside ordinal"
            ),
            "export": Data(
                "export",
                "agreement",
                {"question": q},
                (f"alpha_{level}", f"alpha_{level}_ci_low", f"alpha_{level}_ci_high"),
            ),
            "csv": Data(
                "csv:agreement",
                "agreement",
                {"question": q, "measure": f"krippendorff_alpha_{level}"},
                ("value", "ci_low", "ci_high"),
            ),
        }
    if family == "agreement.cohen":
        weighting = f.params["weighting"]
        prefix = "cohen_kappa" if weighting == "unweighted" else f"cohen_kappa_{weighting}"
        # Without a pair of raters sharing enough items the cells say so in words.
        shown = (*INTERVAL, "n_pairs") if f.value.get("n_pairs") else ()
        return {
            "page": Cell(*page, COHEN_COLUMNS[weighting], shown),
            "report": Cell(*report, "Cohen's kappa", shown),
            "export": Data(
                "export",
                "agreement",
                {"question": q},
                (prefix, f"{prefix}_ci_low", f"{prefix}_ci_high", f"{prefix}_pairs"),
                (*INTERVAL, "n_pairs"),
            ),
            "csv": Data(
                "csv:agreement",
                "agreement",
                {"question": q, "measure": f"cohen_kappa_{weighting}"},
                ("value", "ci_low", "ci_high", "n"),
                (*INTERVAL, "n_pairs"),
            ),
        }
    if family == "agreement.by_group":
        group, measure = f.params["group"], f.params["measure"]
        return {
            "page": Cell(
                "agreement",
                "Alpha per background group",
                "Question",
                f"{row} ({labels.measure_label(measure)})",
                labels.background_label(group),
            ),
            "report": Cell(*report, "Alpha within each background"),
            "export": Data(
                "export",
                "agreement_by_group",
                {"question": q, "group": group, "measure": measure},
                ("alpha", "ci_low", "ci_high"),
            ),
            "csv": Data(
                "csv:agreement-by-group",
                "agreement-by-group",
                {"question": q, "group": group, "measure": f"krippendorff_alpha_{measure}"},
                ("value", "ci_low", "ci_high"),
            ),
        }
    assert family == "agreement.culture_dependent"
    return {
        "page": Cell(*page, "Below the cross-group line", ("value",)),
        "report": Cell(*report, "Below the cross-group line", ("value",)),
        "export": Omit("a count of the agreement_per_item rows below the threshold"),
        "csv": Omit("a count of the cross-group download's rows below the threshold"),
    }


VS_HUMAN = tuple(
    f"judged_human_minus_human_items{suffix}" for suffix in ("", "_ci_low", "_ci_high", "_p_holm")
)


def _turing_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    scope, name = f.params["scope"], f.params["name"]
    if scope == "level":
        page_table, row = ("Per level", "Level"), ctx.level(name)
    else:
        page_table, row = (
            ("Per source", "Source"),
            "All items" if scope == "overall" else labels.source_label(name),
        )
    column, export_cols, parts, pct, digits = {
        "turing.n": (("Judgments", "Judgments"), ("n",), ("value",), False, 0),
        "turing.accuracy": (
            ("Accuracy [95% CI]", "Accuracy"),
            ("accuracy", "accuracy_ci_low", "accuracy_ci_high"),
            INTERVAL,
            True,
            1,
        ),
        "turing.judged_human": (
            ("Judged human [95% CI]", "Judged human"),
            ("judged_human", "judged_human_ci_low", "judged_human_ci_high"),
            INTERVAL,
            True,
            1,
        ),
        "turing.d_prime": (("d′", "d′"), ("d_prime",), ("value",), False, 2),
        "turing.p_vs_chance": (
            ("p against 50%", "p against 50%"),
            ("p_vs_chance",),
            ("value",),
            False,
            4,
        ),
        "turing.vs_human": (
            ("Judged human minus human items [95% CI]",) * 2,
            VS_HUMAN[:3],
            INTERVAL,
            True,
            1,
        ),
        "turing.vs_human_p": (
            ("Judged human minus human items [95% CI]",) * 2,
            VS_HUMAN[3:],
            ("value",),
            False,
            3,
        ),
    }[f.family]
    # The tests (against chance, against the human items) are per source, not per level.
    test = f.family in ("turing.p_vs_chance", "turing.vs_human", "turing.vs_human_p")
    page: Place = Cell("turing", *page_table, row, column[0], parts, pct, digits)
    if test and scope == "level":
        page = Omit(
            "the per-level table gives the estimates and verdicts; the tests are per source"
        )
    report: Place = Cell(
        "report", "Turing judgment per model", "Source", row, column[1], parts, pct, digits
    )
    if test and scope == "level":
        report = Omit("the report's table per level gives the estimates and the verdicts")
    elif scope == "level":
        report = (
            Omit("the report's table per level gives the estimates and the verdicts")
            if f.family == "turing.d_prime"
            else Cell("report", "Per level", "Level", row, column[1], parts, pct, digits)
        )
    overall: Place = Omit("the list above the table gives the overall figures")
    stat = {
        "turing.n": "Judgments",
        "turing.accuracy": "Accuracy",
        "turing.d_prime": "d′",
        "turing.p_vs_chance": "p against 50%",
    }.get(f.family)
    if scope == "overall" and stat:
        overall = Cell(
            "turing", "AI or person? (Turing judgment)", "", stat, "value", ("value",), pct, digits
        )
    return {
        "page": page,
        "page:overall": overall,
        "report": report,
        "export": Data(
            "export", "turing", {"scope": scope, "group": name or "all"}, export_cols, parts
        ),
        "csv": Data(
            "csv:turing", "turing", {"scope": scope, "name": name or "overall"}, export_cols, parts
        ),
    }


COUNT_LABELS = {
    "items": "Items",
    "raters": "Raters",
    "score_answers": "Scorecard answers",
    "pair_judgments": "Pair judgments",
    "turing_judgments": "Turing judgments",
}


# Pair answers that pick no side: the report's sample and the summary's block count them where
# the study's raters gave them.
PAIR_ANSWER_COUNTS = {
    "pair_ties": ("tie", "Pairs answered “about the same”"),
    "pair_neither": ("neither", "Pairs answered “neither”"),
}


def _count_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    key = f.params["key"]
    label = COUNT_LABELS.get(key)
    shown = "the pages and the report show the numbers of items, raters and judgments"
    if key in PAIR_ANSWER_COUNTS:
        kind, report_label = PAIR_ANSWER_COUNTS[key]
        given = bool(f.value["value"])
        none = Omit("nobody gave this answer: the study shows no such count")
        return {
            "page": Marked("summary", "outcome", kind, labels.pair_outcome_label(kind), ("value",))
            if given
            else none,
            "report": Cell("report", "Sample", "", report_label, "value", ("value",))
            if given
            else none,
            "export": Data("export", "provenance", {"key": f"count_{key}"}, ("value",), ("value",)),
            "csv": Omit(
                "the pages' downloads are tables of results; the counts travel in provenance"
            ),
        }
    return {
        "page": Cell("summary", "Results summary", "", label, "value", ("value",))
        if label
        else Omit(shown),
        "report": Cell("report", "Sample", "", label, "value", ("value",))
        if label
        else Omit(shown),
        "export": Data("export", "provenance", {"key": f"count_{key}"}, ("value",), ("value",)),
        "csv": Omit("the pages' downloads are tables of results; the counts travel in provenance"),
    }


def _diagnostics_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    family = f.family
    if family == "diagnostics.coverage":
        group = f.params["group"]
        return {
            "page": Cell(
                "quality",
                "Coverage by background",
                "Background group",
                labels.background_label(group),
                "Items it has not rated",
                ("value",),
            ),
            "report": Cell(
                "report",
                "Coverage by background",
                "Background group",
                labels.background_label(group),
                "Items it has not rated",
                ("value",),
            ),
            "export": Data(
                "export",
                "diagnostics",
                {"measure": "items_without_group", "subject": group},
                ("value",),
                ("value",),
            ),
            "csv": Omit("the quality page has no download of its coverage"),
        }
    if family == "diagnostics.fatigue_bin":
        start, end = f.params["start"], f.params["end"]
        return {
            "page": Omit("drawn as the fatigue chart; its download has the numbers"),
            "report": Omit("the report gives the fatigue slope"),
            "export": Data(
                "export",
                "diagnostics",
                {"measure": "fatigue_mean_by_minute", "subject": f"{start}-{end}"},
                ("value", "ci_low", "ci_high", "n"),
                (*INTERVAL, "n"),
            ),
            "csv": Data(
                "csv:fatigue",
                "fatigue",
                {"start_minute": start},
                ("mean", "ci_low", "ci_high", "n"),
                (*INTERVAL, "n"),
            ),
        }
    css, label, measure, parts, pct, digits, csv_place = {
        "diagnostics.left_choice": (
            "position",
            "Left side chosen in pairs (position bias; 50% = none)",
            "position_bias_left_choice_rate",
            INTERVAL,
            True,
            1,
            Data(
                "csv:position-bias",
                "position-bias",
                {"measure": "left_choice_rate"},
                ("value", "ci_low", "ci_high"),
            ),
        ),
        "diagnostics.position_p": (
            "p-value",
            "Left side chosen in pairs (position bias; 50% = none)",
            "position_bias_p_value",
            ("value",),
            False,
            3,
            Data(
                "csv:position-bias",
                "position-bias",
                {"measure": "left_choice_rate"},
                ("p_value",),
                ("value",),
            ),
        ),
        "diagnostics.fatigue_slope": (
            "slope",
            "Change of the mean per minute into the session (fatigue)",
            "fatigue_slope_per_minute",
            INTERVAL,
            False,
            3,
            Omit(
                "the fatigue download has the minute bins; the slope is in the export's diagnostics"
            ),
        ),
        "diagnostics.explanation": (
            "explanation-rate",
            "Self-explanations that name the real mechanism",
            "explanation_match_rate",
            INTERVAL,
            True,
            1,
            Omit("the quality page has no download of it; the export's diagnostics have it"),
        ),
    }[family]
    return {
        "page": Element("quality", css, parts, pct, digits),
        "report": Cell("report", "Data quality", "", label, "value", parts, pct, digits),
        "export": Data(
            "export",
            "diagnostics",
            {"measure": measure},
            ("value", "ci_low", "ci_high")[: len(parts)],
            parts,
        ),
        "csv": csv_place,
    }


def _warning_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    warning = f.params["warning"]
    code = str(warning.get("code"))
    if code == "too_few_raters" and warning.get("subject") != "items":
        old = Omit("a per-item warning of older results, counted among the item flags")
        return dict.fromkeys(MEDIA, old)
    text = labels.warning_text(warning)
    return {
        "page": Marked("summary", "code", code, text),
        "report": Marked("report", "code", code, text),
        "export": Data(
            "export",
            "warnings",
            {"code": code, "subject": warning.get("subject") or "", "text": text},
            (),
            (),
        ),
        "csv": Omit("the pages' downloads are tables of results; warnings travel in the export"),
    }


def _flag_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    flag = f.params["flag"]
    return {
        "page": Marked("summary", "flag", flag, labels.flag_label(flag), ("value",)),
        "report": Cell(
            "report", "Warnings", "Item flag", labels.flag_label(flag), "Items", ("value",)
        ),
        "export": Omit("counted from the items table's flags column"),
        "csv": Omit("counted from the items download's flags column"),
    }


def _evidence_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    primary, part = labels.question_label(f.params["primary"]), f.params["part"]
    column = {
        "all": f"{primary} ({_('all items')})",
        "evidence": f"{primary} ({_('evidence only')})",
        "change": "change",
        "turing_all": "Turing accuracy (all items)",
        "turing_evidence": "Turing accuracy (evidence only)",
    }[part]
    pct = part.startswith("turing")
    parts = ("value",) if part == "change" else INTERVAL
    row = labels.source_label(f.params["source"])
    return {
        "page": Cell("summary", "", "source", row, column, parts, pct),
        "report": Cell(
            "report",
            "Items that are not evidence about their model",
            "source",
            row,
            column,
            parts,
            pct,
        ),
        "export": Omit("the JSON document holds both views; the tables hold all items"),
        "csv": Omit("each download holds the view it was asked for"),
    }


def _exclusion_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    primary, part = labels.question_label(f.params["primary"]), f.params["part"]
    column = {
        "all": f"{primary} ({_('all data')})",
        "after": f"{primary} ({_('after exclusions')})",
        "change": "change",
        "turing_all": "Turing accuracy (all data)",
        "turing_after": "Turing accuracy (after exclusions)",
    }[part]
    pct = part.startswith("turing")
    parts = ("value",) if part == "change" else INTERVAL
    row = labels.source_label(f.params["source"])
    after = "the pages show the results after the exclusions; the exclusions page lists them"
    tables = "the tables hold the results after the exclusions; the JSON document holds both"
    return {
        "page": Omit(after),
        "report": Cell(
            "report",
            "Headline numbers with and without the exclusions",
            "source",
            row,
            column,
            parts,
            pct,
        ),
        "export": Omit(tables),
        "csv": Omit(tables),
    }


# The exports page's one-table CSVs are the export's tables: all items, whatever the view.
EXPORT_TABLES_ALL_ITEMS = "the exports page's table holds all items (the JSON has both documents)"


def _fit_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    """The model of each board and its ends: the sentence under the leaderboard's title, the
    report's tables of the pair board, and the bradley_terry_fit table (the exports page links
    it as one CSV; the leaderboard's own downloads are its rows)."""
    p = f.params
    scope = p["scope"]
    where = {"scope_level": scope or "all"}
    page_out = f"leaderboard:{scope}"
    row = ("data-board", scope or "all")
    if f.family == "fit.tie_param":
        page: Place = Element(page_out, "board-fit")
        report: Place = Cell(
            "report", "The model of each board", "Board", row, "Tie parameter [95% CI]"
        )
        columns: tuple[str, ...] = ("tie_param", "tie_param_ci_low", "tie_param_ci_high")
        parts: tuple[str, ...] = INTERVAL
    elif f.family == "fit.log_lik":
        page = Element(page_out, "board-fit", ("value",))
        column = gettext("Log-likelihood, %(model)s") % {"model": labels.tie_model_label(p["tie"])}
        report = Cell("report", "The model of each board", "Board", row, column, ("value",))
        columns, parts = (f"{p['tie']}_log_lik",), ("value",)
    else:
        count = p["count"]
        page = (
            Element(page_out, "board-ends", ("value",))
            if f.value["value"]
            else Omit("the sentence under the title names the counts that are not 0")
        )
        column = {
            "undefeated": "Undefeated",
            "never_won": "Never won",
            "end_bounds": "With a one-sided bound",
            "scale_not_identified": "Not placed on the scale",
        }[count]
        report = (
            Cell("report", "The ends of each board", "Board", row, column, ("value",))
            if p["any_ends"]
            else Omit("no board has an end: the report says nothing of ends")
        )
        columns, parts = (count,), ("value",)
    return {
        "page": page,
        "report": report,
        "export": Data("export", "bradley_terry_fit", where, columns, parts),
        "csv": Data("direct:bradley_terry_fit", "bradley_terry_fit", where, columns, parts)
        if ctx.view == "all"
        else Omit(EXPORT_TABLES_ALL_ITEMS),
    }


def _bt_bound_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    """An end item's one-sided bound: where the leaderboard shows its score, in the report's
    leaderboard (top ten) and its list of bounded end items, and the bound column."""
    scope, item, position = f.params["scope"], f.params["item"], f.params["position"]
    by_level = bool(ctx.document.get("bradley_terry_by_level"))
    in_report = position < writers.LEADERBOARD_SIZE and (bool(scope) or not by_level)
    table = "bradley_terry_by_level" if scope else "bradley_terry"
    where = {"scope_level": scope, "item": item} if scope else {"item": item}
    return {
        "page": Cell(
            f"leaderboard:{scope}",
            "All scored items",
            "Rank",
            ("data-item", item),
            "Score [95% CI]",
            ("value",),
        ),
        "report": Cell(
            "report", ctx.level(scope) if scope else "all levels", "#", item, "BT score", ("value",)
        )
        if in_report
        else Omit(f"the report lists the top {writers.LEADERBOARD_SIZE} of each level"),
        "report:ends": Cell(
            "report",
            "The ends of each board",
            "Item",
            ("data-item", item),
            "One-sided bound",
            ("value",),
        )
        if bool(scope) or not by_level
        else Omit("the report lists the bounded items of the boards it shows, each level's"),
        "export": Data("export", table, where, ("bound",), ("value",)),
        "csv": Data(f"direct:{table}", table, where, ("bound",), ("value",))
        if ctx.view == "all"
        else Omit(EXPORT_TABLES_ALL_ITEMS),
    }


def _pair_outcome_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    """A rate of "about the same" or "neither": the summary page's block, the report's table of
    the pair board, the pair_outcomes table and the summary's pair-outcomes download."""
    p = f.params
    kind, level, name = p["kind"], p["level"], p["name"]
    label = labels.pair_outcome_label(kind)
    counts = ("count", "n")
    parts = (*INTERVAL, "n", "count")
    export = Data(
        "export",
        "pair_outcomes",
        {"outcome": kind, "level": level, "group": name},
        ("rate", "ci_low", "ci_high", "n", "count"),
        parts,
    )
    csv_place = _download(export, "pair-outcomes")
    if level == "item":
        return {
            "page": Omit(
                "the summary gives the rates per model and background; the download every item's"
            ),
            "report": Omit(NOT_IN_REPORT_ITEMS),
            "export": export,
            "csv": csv_place,
        }
    heading = " / ".join(labels.pair_outcome_label(k) for k in p["kinds"])
    column = gettext("%(answer)s [95%% CI]") % {"answer": label}
    row = (
        gettext("All judgments")
        if level == "overall"
        else labels.source_label(name)
        if level == "source"
        else labels.background_label(name)
    )
    report_heading = "“About the same” and “neither”"
    out: dict[str, Place] = {
        "report": Cell("report", report_heading, "Group", row, column, INTERVAL, True),
        "report:count": Cell("report", report_heading, "Group", row, column, counts),
        "export": export,
        "csv": csv_place,
    }
    if level == "overall":
        # A sentence: "About the same: 197 of 1200 pair judgments, 16.4% [...]" (in Chinese
        # the total comes first), so the count and the total are looked for one by one.
        out["page"] = Marked("summary", "outcome", kind, label, INTERVAL, True, 1)
        out["page:count"] = Marked("summary", "outcome", kind, label, ("count",))
        out["page:n"] = Marked("summary", "outcome", kind, label, ("n",))
    else:
        page_row = (f"data-{level}", name)
        out["page"] = Cell("summary", heading, "Group", page_row, label, INTERVAL, True)
        out["page:count"] = Cell("summary", heading, "Group", page_row, label, counts)
    return out


def _style_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    """The style-controlled boards: the leaderboard page's section, the report's, and the
    style_* tables of the exports and their downloads."""
    p = f.params
    if f.family == "style.source":
        source, board = p["source"], p["board"]
        row = ("data-source", source)
        columns = (board, f"{board}_ci_low", f"{board}_ci_high")
        return {
            "page": Cell(
                "leaderboard:",
                "Sources",
                "Source",
                row,
                "Plain [95% CI]" if board == "plain" else "Style-controlled [95% CI]",
            ),
            "report": Cell(
                "report",
                "Sources, plain and style-controlled",
                "Source",
                row,
                "Plain Bradley-Terry [95% CI]" if board == "plain" else "Style-controlled [95% CI]",
            ),
            "export": (
                export := Data(
                    "export", "style_sources", {"row": "source", "source": source}, columns
                )
            ),
            "csv": _download(export, "style-sources"),
        }
    if f.family == "style.beta":
        row = ("data-covariate", p["name"])
        columns = ("beta", "ci_low", "ci_high")
        return {
            "page": Cell("leaderboard:", "Covariates", "Covariate", row, "Effect [95% CI]"),
            "report": Cell(
                "report",
                "What raters reward besides what is measured",
                "Covariate",
                row,
                "Beta (log-odds) [95% CI]",
            ),
            "export": (
                export := Data("export", "style_covariates", {"covariate": p["name"]}, columns)
            ),
            "csv": _download(export, "style-covariates"),
        }
    if f.family == "style.item_order_changes":
        counted = "a count of the pairs of style_items rows whose separated order changes"
        # The page's sentence carries the count as data-count (none changes: in words).
        count = f.value["value"]
        return {
            "page": Marked("leaderboard:", "count", str(count), "", ("value",) if count else ()),
            "report": Element("report", "style-item-changes", ("value",)),
            "export": Omit(counted),
            "csv": Omit(counted),
        }
    item, board = p["item"], p["board"]
    prefix = "plain" if board == "plain" else "controlled"
    columns = (f"{prefix}_score", f"{prefix}_ci_low", f"{prefix}_ci_high", f"{prefix}_rank")
    parts = (*INTERVAL, "rank")
    return {
        "page": Cell(
            "leaderboard:",
            "Items",
            "Item",
            ("data-item", item),
            "Plain [95% CI]" if board == "plain" else "Style-controlled [95% CI]",
        )
        if p["on_page"]
        else Omit(f"the page lists the first {STYLE_ITEMS_SHOWN} items of the controlled board"),
        "report": Omit(NOT_IN_REPORT_ITEMS),
        "export": (export := Data("export", "style_items", {"item": item}, columns, parts)),
        "csv": _download(export, "style-items"),
    }


def _reliability_places(ctx: Ctx, f: Figure) -> dict[str, Place]:
    """The reliability of the board: the leaderboard page's tables (rows marked by group), the
    report's, the reliability table and the page's reliability download."""
    p = f.params
    key, scope, group = p["key"], p["scope"], p["group"]
    label = gettext("All items") if key == "all" else labels.source_label(key)
    report_row = ("data-group", key)
    where = {"scope": scope, "group": group}
    if f.family in ("reliability.split", "reliability.spearman_brown"):
        kind = p["kind"]
        measure = f"split_half_{kind}"
        if f.family == "reliability.split":
            parts: tuple[str, ...] = INTERVAL
            columns: tuple[str, ...] = ("value", "split_q025", "split_q975")
            column = (
                "Split-half, pairs (middle 95% of splits)"
                if kind == "pairs"
                else "Split-half, item means (middle 95% of splits)"
            )
        else:
            parts, columns = ("value",), ("spearman_brown",)
            column = "Spearman-Brown, pairs" if kind == "pairs" else "Spearman-Brown, item means"
        return {
            "page": Marked("leaderboard:", "group", key, label, parts, digits=2),
            "report": Cell(
                "report", "Reliability of the board", "Source", report_row, column, parts
            ),
            "export": (
                export := Data(
                    "export", "reliability", {**where, "measure": measure}, columns, parts
                )
            ),
            "csv": _download(export, "reliability"),
        }
    columns = ("value", "ci_low", "ci_high")
    if f.family == "reliability.icc":
        measure, column = "icc", "ICC(1) [95% CI]"
    elif f.family == "reliability.at_mean":
        measure, column = "k_rater_at_mean", "Mean of k raters [95% CI]"
    else:
        measure, column = "k_rater", "Reliability [95% CI]"
        # The export writes a whole k as one (3), as stored otherwise.
        k = p["k"]
        export_k = {"k": int(k) if float(k).is_integer() else k}
    page: Place = Marked("leaderboard:", "group", key, label, INTERVAL, digits=2)
    report: Place = Cell("report", "Reliability of the board", "Source", report_row, column)
    if f.family == "reliability.k":
        # The page's table per k gives the values; their intervals are in its download.
        page = Marked("leaderboard:", "group", key, label, ("value",), digits=2)
        heading = gettext("Reliability of the mean of k raters' scores of %(question)s") % {
            "question": labels.question_label(str(ctx.document["reliability"].get("question")))
        }
        report = (
            Cell("report", heading, "k", ("data-k", f"{float(p['k']):.0f}"), column)
            if scope == "study"
            else Omit("the report gives the mean of k raters at each k for the whole study")
        )
    return {
        "page": page,
        "report": report,
        "export": (
            export := Data(
                "export",
                "reliability",
                {**where, "measure": measure, **(export_k if f.family == "reliability.k" else {})},
                columns,
            )
        ),
        "csv": _download(export, "reliability"),
    }


PLACES: dict[str, Callable[[Ctx, Figure], dict[str, Place]]] = {
    "evidence.": _evidence_places,
    "exclusion.": _exclusion_places,
    "group.": _group_places,
    "model.": _model_places,
    "difference": _difference_places,
    "bt.source": _bt_source_places,
    "bt.bound": _bt_bound_places,
    "bt.": _bt_places,
    "item.": _item_places,
    "agreement.": _agreement_places,
    "turing.": _turing_places,
    "count": _count_places,
    "diagnostics.": _diagnostics_places,
    "warning": _warning_places,
    "flag": _flag_places,
    "fit.": _fit_places,
    "pair_outcome": _pair_outcome_places,
    "style.": _style_places,
    "reliability.": _reliability_places,
}


def places(ctx: Ctx, figure: Figure) -> dict[str, Place]:
    prefix = next(prefix for prefix in PLACES if figure.family.startswith(prefix))
    found = PLACES[prefix](ctx, figure)
    # The report shows the view the study's setting asks for, as the pages do by default; the
    # export tables hold all items.
    summary_view = (
        "evidence"
        if ctx.study.exclude_items_not_evidence and ctx.document.get("evidence_only")
        else "all"
    )
    # The whole report follows the study's setting, as every page does by default.
    report_view = summary_view
    # The table of headline numbers with and without the exclusions reads the full document.
    if ctx.view != report_view and not figure.family.startswith("exclusion."):
        for key in [k for k in found if k.split(":")[0] == "report"]:
            found[key] = Omit(f"the report shows this section for {report_view} items")
    if ctx.view == "evidence":
        evidence = Omit("the export tables hold all items (the JSON has both documents)")
        found = {k: evidence if k.split(":")[0] == "export" else p for k, p in found.items()}
    missing = [m for m in MEDIA if not any(key.split(":")[0] == m for key in found)]
    assert not missing, f"{figure.family}: the mapping names no place in {missing}"
    return found


# --- reading the outputs -----------------------------------------------------------------------


class Outputs:
    """Every output of one study, built or fetched once, in English."""

    PAGES = {
        "summary": "results/?view=all",
        "items": "results/items/?view=all",
        "agreement": "results/agreement/?view=all",
        "turing": "results/turing/?view=all",
        "quality": "results/quality/?view=all",
        "safety": "results/safety/?view=all",
    }

    def __init__(self, study: Study, folder: Path, view: str = "all", language: str = "en") -> None:
        self.view = view
        self.language = language
        self.study = study
        self.folder = folder
        researcher = get_user_model().objects.get(username=settings.DEMO_RESEARCHER_USERNAME)
        self.client = Client(HTTP_ACCEPT_LANGUAGE=language)
        self.client.force_login(researcher)
        self._html: dict[str, Html] = {}
        self._data: dict[str, dict[str, Rows]] = {}
        self.report_html = ""

    def _get(self, path: str) -> str:
        path = path.replace("view=all", f"view={self.view}")
        # A request leaves its own language active: the caller's is restored after it.
        with translation.override(translation.get_language()):
            response = self.client.get(f"/studies/{self.study.slug}/{path}")
        assert response.status_code == 200, path
        return response.content.decode()

    def html(self, name: str) -> Html:
        if name not in self._html:
            if name == "report":
                with translation.override(self.language):
                    self.report_html = services.study_report_html(study=self.study)
                text = self.report_html
            elif name.startswith("models:"):
                text = self._get(f"results/models/?view=all&view_of={name[7:]}")
            elif name in ("content", "screening"):
                text = self._get(f"{name}/")
            elif name == "judge":
                text = self._get("screening/judge/")
            elif name.startswith("leaderboard:"):
                text = self._get(f"results/leaderboard/?view=all&level={name[12:]}")
            else:
                text = self._get(self.PAGES[name])
            self._html[name] = outputs.read_html(text)
        return self._html[name]

    def data(self, name: str) -> dict[str, Rows]:
        if name not in self._data:
            if name in ("xlsx", "tables"):
                path = self.folder / f"{self.study.slug}.{name}"
                services.export_write(study=self.study, fmt=name, path=path)
                read = outputs.xlsx_tables if name == "xlsx" else outputs.zip_tables
                self._data[name] = read(path)
            elif name.startswith("direct:"):
                # One table of the exports as CSV, as the exports page links it.
                table = name.split(":", 1)[1]
                text = self._get(f"exports/direct/csv?table={table}")
                self._data[name] = {table: outputs.csv_rows(text)}
            else:
                csv_name = name.split(":", 1)[1]
                text = self._get(f"results/data/{csv_name}.csv?view=all")
                self._data[name] = {csv_name: outputs.csv_rows(text)}
        return self._data[name]

    def pdf(self) -> str:
        path = self.folder / f"{self.study.slug}.pdf"
        writers.write_pdf(self.report_html or services.study_report_html(study=self.study), path)
        return outputs.pdf_text(path)


# --- comparing ---------------------------------------------------------------------------------


def _shown(value: Any, digits: int, pct: bool) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int) and not pct:
        return str(value)
    number = 100 * float(value) if pct else float(value)
    text = f"{number:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


# p-values print with three decimals, "< 0.001" below that (apps.findings.charts.fmt_p).
P_VALUES = {
    "difference.p_holm",
    "turing.p_vs_chance",
    "turing.vs_human_p",
    "diagnostics.position_p",
}


def _expected(figure: Figure, parts: tuple[str, ...], digits: int | None, pct: bool) -> list[str]:
    if figure.family in P_VALUES and parts == ("value",):
        value = figure.value.get("value")
        return [] if value is None else outputs.numbers(fmt_p(value))
    digits = (1 if pct else 2) if digits is None else digits
    values = [figure.value.get(part) for part in parts]
    counts = ("n", "n_pairs", "low", "high")
    return [
        _shown(v, 0 if part in counts else digits, pct and part not in counts)
        for part, v in zip(parts, values, strict=True)
        if v is not None
    ]


def _contains(found: list[str], wanted: list[str]) -> bool:
    return any(found[i : i + len(wanted)] == wanted for i in range(len(found) - len(wanted) + 1))


def _(text: Any) -> Any:
    """A heading of the mapping in the reader's language: the outputs' own words are msgids;
    a label already in the reader's language (from labels.py) passes through."""
    if not isinstance(text, str) or not text:
        return text
    shown = gettext(text)
    if shown == text and "%" in text:
        # A template's {% translate %} stores "%" as "%%" in its msgid.
        shown = gettext(text.replace("%", "%%")).replace("%%", "%")
    return shown


def _check_cell(out: Outputs, figure: Figure, place: Cell) -> str | None:
    html = out.html(place.output)
    place = Cell(
        place.output,
        _(place.heading),
        _(place.first),
        tuple(_(r) for r in place.row)
        if isinstance(place.row, tuple) and not str(place.row[0]).startswith("data-")
        else _(place.row),
        _(place.column),
        place.parts,
        place.pct,
        place.digits,
    )
    table = html.table(place.heading, place.first)
    if table is None:
        headings = sorted(f"{h!r}/{f!r}" for h, f in html.tables)
        return f"no table {place.heading!r} (first column {place.first!r}) in {place.output}; tables: {headings}"
    row = table.index().get(place.row)
    if row is None or row is AMBIGUOUS:
        rows = [cells[0] for _a, cells in table.rows][:12]
        return f"{'two rows' if row is AMBIGUOUS else 'no row'} {place.row!r} in {place.output} {place.heading!r}; rows: {rows}"
    if place.column not in row:
        return f"no column {place.column!r} in {place.output} {place.heading!r}; columns: {table.header}"
    wanted = _expected(figure, place.parts, place.digits, place.pct)
    found = outputs.numbers(row[place.column])
    if wanted and not _contains(found, wanted):
        return f"{place.output} {place.heading!r} {place.row!r} {place.column!r} shows {row[place.column]!r}, the document {wanted}"
    return None


def _check_element(out: Outputs, figure: Figure, place: Element) -> str | None:
    text = out.html(place.output).element(place.css)
    if text is None:
        return f"no single .{place.css} on {place.output}"
    wanted = _expected(figure, place.parts, place.digits, place.pct)
    if not _contains(outputs.numbers(text), wanted):
        return f"{place.output} .{place.css} shows {text!r}, the document {wanted}"
    return None


def _check_marked(out: Outputs, figure: Figure, place: Marked) -> str | None:
    texts = out.html(place.output).marked(place.name).get(place.key) or []
    wanted = _expected(figure, place.parts, place.digits, place.pct)
    if not any(
        outputs.squash(place.text) in t and _contains(outputs.numbers(t), wanted) for t in texts
    ):
        return f"{place.output} data-{place.name}={place.key!r} shows {texts}, the document {place.text!r} {wanted}"
    return None


def _same(cell: Any, value: Any) -> bool:
    if cell in ("", None):
        return value is None
    if value is None:
        return False
    if isinstance(value, bool):
        return str(cell).lower() in ("true", "1") if value else str(cell).lower() in ("false", "0")
    if isinstance(value, int | float):
        return math.isclose(float(cell), float(value), rel_tol=1e-12, abs_tol=1e-15)
    return str(cell) == str(value)


def _check_data(out: Outputs, figure: Figure, place: Data, source: str) -> str | None:
    tables = out.data(source)
    rows = tables.get(place.table)
    if rows is None:
        return f"no table {place.table!r} in {source}"
    matched = [
        row
        for row in rows
        if all(
            str("" if row.get(k) is None else row.get(k)) == str(v) for k, v in place.where.items()
        )
    ]
    if len(matched) != 1:
        return f"{len(matched)} rows {place.where} in {source} {place.table}"
    row = matched[0]
    for column, part in zip(place.columns, place.parts, strict=True):
        if column not in row:
            return f"no column {column!r} in {source} {place.table}"
        if not _same(row[column], figure.value.get(part)):
            return f"{source} {place.table} {place.where} {column} = {row[column]!r}, the document {figure.value.get(part)!r}"
    return None


def check(out: Outputs, figure: Figure, place: Place) -> list[str]:
    if isinstance(place, Omit):
        return []
    if isinstance(place, Cell):
        problems = [_check_cell(out, figure, place)]
    elif isinstance(place, Element):
        problems = [_check_element(out, figure, place)]
    elif isinstance(place, Marked):
        problems = [_check_marked(out, figure, place)]
    else:
        sources = ["xlsx", "tables"] if place.output == "export" else [place.output]
        problems = [_check_data(out, figure, place, source) for source in sources]
    return [f"{'/'.join(map(str, figure.path))}: {p}" for p in problems if p]


def _context(study: Study, view: str) -> Ctx:
    document = services.study_result_document(study=study)
    questions = load_questions(study, document)
    if view == "evidence":
        # As the pages read it (apps/dashboard/results/views.py): the second document over the first.
        assert document.get("evidence_only"), "the demo study has items that are not evidence"
        document = {**document, **document["evidence_only"]["results"]}
    return Ctx(
        study=study,
        document=document,
        humor=study.rubric.kind == "humor",
        scale=questions.scale,
        binary=questions.binary,
        view=view,
    )


@pytest.mark.parametrize(
    ("language", "view"), [("en", "all"), ("en", "evidence"), ("zh-hans", "all")]
)
@pytest.mark.parametrize("which", ["humor", "content"])
def test_every_output_shows_every_figure_as_the_stored_results_do(
    demo_site,  # noqa: F811
    which,
    language,
    view,
    tmp_path,
):
    _compare_every_figure(getattr(demo_site, which), view, language, tmp_path)


def _compare_every_figure(study: Study, view: str, language: str, tmp_path: Path) -> set[str]:
    """Every figure of the study's stored document in every output; the families compared."""
    ctx = _context(study, view)
    out = Outputs(study, tmp_path, view, language)
    problems: list[str] = []
    checked: dict[str, int] = {}
    families: set[str] = set()
    compared: set[str] = set()
    for figure in figures(ctx):
        # Each request sets its own language; the labels are read in the reader's.
        with translation.override(language):
            found_places = places(ctx, figure)
        for medium, place in found_places.items():
            with translation.override(language):
                found = check(out, figure, place)
            problems += found
            if not isinstance(place, Omit):
                checked[medium] = checked.get(medium, 0) + 1
                compared.add(figure.family)
        families.add(figure.family)
    # Every medium was compared on many figures: a mapping that matched nothing cannot pass.
    # The export tables hold all items; the report, the study's items view.
    report_view = (
        "evidence"
        if study.exclude_items_not_evidence and ctx.document.get("evidence_only")
        else "all"
    )
    shown_in = [
        m
        for m in MEDIA
        if (m != "export" or view == "all") and (m != "report" or view == report_view)
    ]
    by_medium: Counter[str] = Counter()
    for medium, count in checked.items():
        by_medium[medium.split(":")[0]] += count
    assert all(by_medium.get(m, 0) > 20 for m in shown_in), checked
    # ... and every kind of figure the document holds was looked up somewhere.
    assert families == compared, sorted(families - compared)
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:80])
    return families


@pytest.mark.parametrize("which", ["humor", "content"])
def test_with_an_exclusion_every_output_shows_every_figure_and_the_headline_table_before_it(
    demo_site,  # noqa: F811
    which,
    tmp_path,
):
    """The demo studies have no exclusions: one rater is excluded through the service and the
    results recomputed, so the report's table of the headline numbers with and without the
    exclusions is compared too (and every other figure, after the exclusion)."""
    from apps.analysis.services import study_aggregate
    from apps.exclusions.services import exclusion_create
    from apps.raters.models import Rater

    study = getattr(demo_site, which)
    before = services.study_result_document(study=study)
    rater = Rater.objects.filter(study=study).order_by("external_id").first()
    assert rater is not None
    exclusion_create(
        study=study,
        user=None,
        target="rater",
        subject=rater.external_id,
        reason="answers copied from another rater",
        request_results=False,
    )
    study_aggregate(study=study)
    document = services.study_result_document(study=study)
    assert document["counts"]["raters"] == before["counts"]["raters"] - 1
    assert document["before_exclusions"]["counts"]["raters"] == before["counts"]["raters"]
    families = _compare_every_figure(study, "all", "en", tmp_path)
    assert "exclusion.effect" in families


@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("which", ["humor", "content"])
def test_the_pdf_shows_every_number_and_heading_of_the_html_report(
    demo_site,  # noqa: F811
    which,
    language,
    tmp_path,
):
    """The PDF is the HTML report printed: every number of its tables (with its multiplicity)
    and every table's title and column headings are in the PDF's text, none cut off a page."""
    study = getattr(demo_site, which)
    out = Outputs(study, tmp_path, language=language)
    html = out.html("report")
    shown = outputs.table_numbers(html)
    text = out.pdf()
    missing = Counter(shown) - Counter(outputs.numbers(text))
    assert len(shown) > 100
    assert not missing, f"numbers of the HTML report missing from the PDF: {dict(missing)}"
    flat = "".join(text.split())
    headings = {
        h
        for (heading, first), table in html.tables.items()
        for h in (heading, *(table.header if first else ()))  # a list of terms has no header
    }
    # Word by word: a heading that wraps in a narrow column is read in the PDF's reading order,
    # its lines between those of its neighbours; a hyphenated word may wrap at its hyphen.
    lost = sorted(
        h for h in headings if not all(word in flat for word in re.split(r"[\s-]+", h) if word)
    )
    assert not lost, f"headings of the HTML report missing from the PDF: {lost}"


# --- the content evaluation: stored apart from the results document, exported beside it --------

DIMENSIONS = ("fluency", "informativeness", "originality")
MATRIX_TITLES = {
    "human": "Are the human dimensions independent?",
    "automatic": "Are the automatic dimension scores independent?",
    "metrics": "Every automatic metric, pair by pair",
}


def content_figures(payload: dict[str, Any]) -> Iterator[Figure]:
    """Every figure of a stored content evaluation (apps/content)."""
    for row in payload.get("weights") or []:
        p = {"content_type": row.get("content_type", "")}
        base = ("content", "weights", p["content_type"])
        for name in DIMENSIONS:
            yield Figure(
                "content.weight",
                (*base, name),
                {"value": (row.get("weights") or {}).get(name)},
                {**p, "dimension": name},
            )
        quality = row.get("quality") or {}
        yield Figure("content.weight_items", (*base, "n_items"), {"n": row.get("n_items")}, p)
        for measure in ("pseudo_r2", "cv_accuracy", "cv_auc", "log_likelihood"):
            yield Figure(
                "content.weight_quality",
                (*base, measure),
                {"value": quality.get(measure)},
                {**p, "measure": measure},
            )
        yield Figure(
            "content.weight_rows",
            (*base, "n_rows"),
            {"n": quality.get("n_rows") or 0, "high": quality.get("n_good") or 0},
            p,
        )
    for key in MATRIX_TITLES:
        for pair in ((payload.get("independence") or {}).get(key) or {}).get("pairs") or []:
            p = {"matrix": key, "a": str(pair.get("a")), "b": str(pair.get("b"))}
            base = ("content", "independence", key, p["a"], p["b"])
            yield Figure("content.pair_n", (*base, "n"), {"n": pair.get("n")}, p)
            for measure in ("pearson", "spearman"):
                if pair.get(measure):
                    yield Figure(
                        "content.pair", (*base, measure), pair[measure], {**p, "measure": measure}
                    )
    for row in payload.get("metric_vs_human") or []:
        for human, stats in sorted((row.get("against") or {}).items()):
            for measure in ("spearman", "pearson"):
                if (stats or {}).get(measure):
                    yield Figure(
                        "content.against",
                        ("content", "metric_vs_human", row["name"], human, measure),
                        stats[measure],
                        {"metric": str(row["name"]), "human": human, "measure": measure},
                    )
    for row in payload.get("tiers") or []:
        p = {"tier": row.get("tier")}
        base = ("content", "tiers", p["tier"])
        if row.get("agreement"):
            yield Figure("content.tier_agreement", (*base, "agreement"), row["agreement"], p)
        yield Figure("content.tier_items", (*base, "n_items"), {"n": row.get("n_items")}, p)
        for measure, digits in (("items_per_second", 4), ("human_minutes", 1)):
            yield Figure(
                "content.tier_cost",
                (*base, measure),
                {"value": row.get(measure)},
                {**p, "measure": measure, "digits": digits},
            )
    counts = payload.get("counts") or {}
    for key in ("items", "scorecards"):
        yield Figure(
            "content.counts", ("content", "counts", key), {"n": counts.get(key)}, {"key": key}
        )


def _data(
    table: str, where: dict[str, Any], columns: tuple[str, ...], parts: tuple[str, ...]
) -> dict[str, Place]:
    """The figure's row in the workbook and the zip (`export`) and in its table's own CSV."""
    return {
        "export": Data("export", table, where, columns, parts),
        "csv": Data(f"direct:{table}", table, where, columns, parts),
    }


def _content_places(f: Figure) -> dict[str, Place]:
    family, p = f.family, f.params
    if family.startswith("content.weight"):
        heading, first = "Weights per content type", "Content type"
        row = ("data-content-type", p["content_type"])
        column, parts, pct, digits = "", INTERVAL[:1], False, None
        where = {"content_type": p["content_type"]}
        if family == "content.weight":
            column = labels.question_label(p["dimension"])
            apart = _data("content_weights", where, (f"{p['dimension']}_weight",), parts)
        elif family == "content.weight_items":
            column, parts = "Items", ("n",)
            apart = _data("content_weights", where, ("n_items",), parts)
        elif family == "content.weight_rows":
            page = Cell("content", heading, first, row, "Scorecards (good)", ("n", "high"))
            why = "the report gives the items a content type's fit rests on, not its scorecards"
            data = _data("content_weights", where, ("n_rows", "n_good"), ("n", "high"))
            return {"page": page, "report": Omit(why), **data}
        else:
            measure = p["measure"]
            apart = _data("content_weights", where, (measure,), parts)
            column = {
                "pseudo_r2": "McFadden R²",
                "cv_accuracy": "CV accuracy",
                "cv_auc": "CV AUC",
                "log_likelihood": "Log-likelihood",
            }[measure]
            pct = measure == "cv_accuracy"
            digits = 1 if measure == "log_likelihood" else None
            if measure == "log_likelihood":
                page = Cell("content", heading, first, row, column, parts, pct, digits)
                why = "the report gives a fit's quality as McFadden's R², not its log-likelihood"
                return {"page": page, "report": Omit(why), **apart}
        return {
            "page": Cell("content", heading, first, row, column, parts, pct, digits),
            "report": Cell("report", heading, first, row, column, parts, pct, digits),
            **apart,
        }
    if family.startswith("content.pair"):
        heading = MATRIX_TITLES[p["matrix"]]
        row = f"{labels.metric_label(p['a'])} · {labels.metric_label(p['b'])}"
        where = {"matrix": p["matrix"], "a": p["a"], "b": p["b"]}
        if family == "content.pair_n":
            column, parts = "Items", ("n",)
            data = _data("content_independence", where, ("n",), parts)
        else:
            column = {"pearson": "Pearson's r", "spearman": "Spearman's rho"}[p["measure"]]
            parts = INTERVAL
            columns = (p["measure"], f"{p['measure']}_ci_low", f"{p['measure']}_ci_high")
            data = _data("content_independence", where, columns, parts)
        found: dict[str, Place] = {
            "page": Cell(
                "content", heading, "Pair", ("data-pair", f"{p['a']}|{p['b']}"), column, parts
            ),
            "report": Cell("report", heading, "Pair", row, column, parts),
            **data,
        }
        if p["matrix"] == "metrics":
            found["report"] = Omit(
                "the report shows the dimensions' matrices; every metric pair is on the page"
            )
        return found
    if family == "content.against":
        human = gettext("human %(label)s") % {"label": labels.question_label(p["human"])}
        heading, first = "Automatic scores against the humans", "Automatic score"
        page = Cell("content", heading, first, ("data-metric", p["metric"]), human)
        report: Place = Cell("report", heading, first, labels.metric_label(p["metric"]), human)
        if p["measure"] == "pearson":
            report = Omit("the report gives Spearman's rho against the humans; the page both")
        elif p["metric"] not in (*DIMENSIONS, "composite"):
            report = Omit(
                "the report shows the dimension scores and the composite; the page every metric"
            )
        where = {"metric": p["metric"], "human": p["human"]}
        columns = (p["measure"], f"{p['measure']}_ci_low", f"{p['measure']}_ci_high")
        return {
            "page": page,
            "report": report,
            **_data("content_against_humans", where, columns, INTERVAL),
        }
    if family.startswith("content.tier"):
        heading, first, row = "Tiers", "Tier", ("data-tier", p["tier"])
        column, parts, digits, columns = _tier_columns(f)
        return {
            "page": Cell("content", heading, first, row, column, parts, digits=digits),
            "report": Cell("report", heading, first, row, column, parts, digits=digits),
            **_data("content_tiers", {"tier": p["tier"]}, columns, parts),
        }
    assert family == "content.counts", family
    return {
        "page": Element("content", "provenance", ("n",)),
        "report": Omit("the report's content section gives its seed, rounds and input hash"),
        **_data("provenance", {"key": f"content_count_{p['key']}"}, ("value",), ("n",)),
    }


def _tier_columns(f: Figure) -> tuple[str, tuple[str, ...], int | None, tuple[str, ...]]:
    """A tier's figure on the pages (column, parts, digits) and in its table (columns)."""
    if f.family.endswith("tier_agreement"):
        columns = ("agreement", "agreement_ci_low", "agreement_ci_high")
        return "Agreement with humans (Spearman)", INTERVAL, None, columns
    if f.family.endswith("tier_items"):
        return "Items", ("n",), None, ("n_items",)
    measure = f.params["measure"]
    column = {"items_per_second": "Items per second", "human_minutes": "Human minutes"}[measure]
    return column, ("value",), f.params["digits"], (measure,)


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_content_evaluation_reads_the_same_on_its_page_in_the_report_and_its_pdf(
    demo_site,  # noqa: F811
    language,
    tmp_path,
):
    from apps.content.selectors import content_evaluation_get

    study = demo_site.content
    evaluation = content_evaluation_get(study=study)
    assert evaluation is not None, "the content demo has a stored content evaluation"
    out = Outputs(study, tmp_path, language=language)
    problems: list[str] = []
    checked: Counter[str] = Counter()
    pdf_wanted: Counter[str] = Counter()
    families: set[str] = set()
    for figure in content_figures(evaluation.payload):
        families.add(figure.family)
        with translation.override(language):
            found_places = _content_places(figure)
        assert set(found_places) == set(MEDIA), figure.family
        for medium, place in found_places.items():
            with translation.override(language):
                problems += check(out, figure, place)
            if not isinstance(place, Omit):
                checked[medium] += 1
            if medium == "report" and isinstance(place, Cell):
                pdf_wanted.update(_expected(figure, place.parts, place.digits, place.pct))
    # The PDF is the report printed: every figure the report shows is in its text.
    missing = pdf_wanted - Counter(outputs.numbers(out.pdf()))
    assert checked["page"] > 40, checked
    assert checked["report"] > 20, checked
    # Every figure is in the workbook, the zip and its table's CSV, none left out.
    assert (
        checked["export"] == checked["csv"] == sum(1 for _f in content_figures(evaluation.payload))
    )
    assert {
        "content.weight",
        "content.pair",
        "content.against",
        "content.tier_agreement",
    } <= families
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:80])
    assert not missing, f"content figures of the report missing from the PDF: {dict(missing)}"


# --- the pre-screening: stored apart from the results document, exported beside it -------------


def screening_figures(study: Study) -> Iterator[Figure]:
    """Every figure of the study's stored pre-screening: the latest run, the FunnyScore
    calibrations, the judge against the humans and the tiers."""
    from apps.screening.selectors import (
        calibrations_current,
        judge_comparisons,
        screening_run_latest,
        screening_tiers_of,
        sieve_audit_of,
    )

    run = screening_run_latest(study=study)
    if run is not None:
        yield Figure(
            "screening.run",
            ("screening", "run", "pk"),
            {"n": run.pk},
            {"field": "Run", "column": "run"},
        )
        yield Figure(
            "screening.run",
            ("screening", "run", "top_k"),
            {"n": run.top_k},
            {"field": "Top K per model", "column": "top_k"},
        )
    for row in calibrations_current(study=study):
        p = {"scope": row.scope, "kind": row.kind}
        base = ("screening", "calibration", row.scope, row.kind)
        if not row.is_default:
            yield Figure("screening.calibration_n", (*base, "n"), {"n": row.n_items}, p)
        yield Figure(
            "screening.calibration_rho",
            (*base, "cv_spearman"),
            {
                "value": row.cv_spearman,
                "ci_low": row.cv_spearman_low,
                "ci_high": row.cv_spearman_high,
            },
            {**p, "column": "Held-out rho", "name": "cv_spearman"},
        )
        kept = (row.validation or {}).get("top_quartile_kept")
        if kept and kept.get("value") is not None:
            yield Figure(
                "screening.calibration_kept",
                (*base, "top_quartile_kept"),
                kept,
                {**p, "column": "Top quarter kept", "name": "top_quartile_kept"},
            )
        names = [("current_rho", "Scorer in place"), ("r2", "R²")]
        if row.kind != "learned":  # the learned L1 has no a, b, c
            names += [("a", "a"), ("b", "b"), ("c", "c")]
        names.append(("intercept", "Intercept"))
        for name, column in names:
            value = (
                (row.validation or {}).get(name) if name == "current_rho" else getattr(row, name)
            )
            yield Figure(
                "screening.calibration",
                (*base, name),
                {"value": value},
                {**p, "column": column, "name": name},
            )
    audit = sieve_audit_of(study=study)
    if audit and audit.get("n") and (audit.get("top_quartile_kept") or {}).get("value") is not None:
        yield Figure(
            "screening.audit_kept",
            ("screening", "audit", "top_quartile_kept"),
            audit["top_quartile_kept"],
            {"css": "audit-kept", "name": "top_quartile_kept"},
        )
        yield Figure(
            "screening.audit_n", ("screening", "audit", "n"), {"n": audit["n"]}, {"css": "audit-n"}
        )
    for comparison in judge_comparisons(study=study):
        rows = [(str(r.get("humor_type") or ""), r) for r in comparison["by_humor_type"]]
        if comparison.get("overall"):
            rows.append(("overall", comparison["overall"]))
        for humor_type, row in rows:
            p = {"model": comparison["model_name"], "humor_type": humor_type}
            base = ("screening", "judge", p["model"], humor_type)
            yield Figure("screening.judge_n", (*base, "n"), {"n": row.get("n")}, p)
            for name, column in (("judge_mean", "Judge mean"), ("human_mean", "Human mean")):
                yield Figure(
                    "screening.judge_mean",
                    (*base, name),
                    {"value": row.get(name)},
                    {**p, "column": column, "name": name},
                )
            for name, column in (("mean_diff", "Mean difference"), ("rho", "Spearman's rho")):
                if row.get(name):
                    yield Figure(
                        "screening.judge_interval",
                        (*base, name),
                        row[name],
                        {**p, "column": column, "name": name},
                    )
    tiers = screening_tiers_of(study=study)
    for row in ((tiers.payload or {}).get("tiers") or []) if tiers is not None else []:
        p = {"tier": row.get("tier")}
        base = ("screening", "tiers", p["tier"])
        if row.get("agreement"):
            yield Figure("screening.tier_agreement", (*base, "agreement"), row["agreement"], p)
        yield Figure("screening.tier_items", (*base, "n_items"), {"n": row.get("n_items")}, p)
        for measure, digits in (("items_per_second", 4), ("human_minutes", 1)):
            yield Figure(
                "screening.tier_cost",
                (*base, measure),
                {"value": row.get(measure)},
                {**p, "measure": measure, "digits": digits},
            )


def _screening_places(f: Figure, models: int) -> dict[str, Place]:
    from apps.findings.templatetags.charts import humor_type_label

    family, p = f.family, f.params
    if family == "screening.run":
        return {
            "page": Cell("screening", "Latest run", "", p["field"], "value", ("n",)),
            "report": Element("report", "screening-run", ("n",)),
            **_data("screening_run", {}, (p["column"],), ("n",)),
        }
    if family.startswith("screening.calibration"):
        heading, first = "Calibration against the study's ratings", "Scope"
        pct = False
        if family == "screening.calibration_n":
            column, parts, digits = "n", ("n",), None
            columns: tuple[str, ...] = ("n_items",)
        elif family == "screening.calibration_rho":
            column, parts, digits = p["column"], INTERVAL, 3
            columns = ("cv_spearman", "cv_spearman_ci_low", "cv_spearman_ci_high")
        elif family == "screening.calibration_kept":
            column, parts, digits, pct = p["column"], INTERVAL, 0, True
            columns = ("top_quartile_kept", "top_quartile_kept_ci_low", "top_quartile_kept_ci_high")
        else:
            column, parts, digits = p["column"], ("value",), 3
            columns = (p["name"],)
        row = ("data-row", f"{p['scope']}/{p['kind']}")
        return {
            "page": Cell("screening", heading, first, row, column, parts, pct=pct, digits=digits),
            "report": Cell("report", heading, first, row, column, parts, pct=pct, digits=digits),
            **_data(
                "screening_calibration", {"scope": p["scope"], "kind": p["kind"]}, columns, parts
            ),
        }
    if family.startswith("screening.audit"):
        if family == "screening.audit_n":
            parts, digits, pct, columns = ("n",), None, False, ("n_items",)
        else:
            parts, digits, pct = INTERVAL, 0, True
            columns = ("top_quartile_kept", "top_quartile_kept_ci_low", "top_quartile_kept_ci_high")
        return {
            "page": Element("screening", p["css"], parts, pct=pct, digits=digits),
            "report": Element("report", p["css"], parts, pct=pct, digits=digits),
            **_data("screening_audit", {}, columns, parts),
        }
    if family.startswith("screening.judge"):
        if family == "screening.judge_n":
            column, parts, columns = "Items", ("n",), ("n",)
        elif family == "screening.judge_mean":
            column, parts, columns = p["column"], ("value",), (p["name"],)
        else:
            column, parts = p["column"], INTERVAL
            columns = (p["name"], f"{p['name']}_ci_low", f"{p['name']}_ci_high")
        humor_type = p["humor_type"]
        label = (
            _("All types")
            if humor_type == "overall"
            else humor_type_label(humor_type)
            if humor_type
            else _("(no type)")
        )
        page_row = ("data-humor-type", humor_type)
        report: Place = Cell(
            "report", "The judge against the humans", "Humor type", label, column, parts
        )
        if models > 1:
            report = Omit("with several judges the report's tables share one heading")
        where = {
            "model": p["model"],
            "scope": "overall" if humor_type == "overall" else "humor_type",
            "humor_type": "" if humor_type == "overall" else humor_type,
        }
        return {
            "page": Cell("judge", p["model"], "Humor type", page_row, column, parts),
            "report": report,
            **_data("screening_judge", where, columns, parts),
        }
    assert family.startswith("screening.tier"), family
    heading, first, row = "L1, L2 and L3 against the humans", "Tier", ("data-tier", p["tier"])
    column, parts, digits, columns = _tier_columns(f)
    return {
        "page": Cell("judge", heading, first, row, column, parts, digits=digits),
        "report": Cell("report", heading, first, row, column, parts, digits=digits),
        **_data("screening_tiers", {"tier": p["tier"]}, columns, parts),
    }


@pytest.mark.parametrize(
    ("language", "calibrated"), [("en", False), ("zh-hans", False), ("en", True)]
)
def test_the_pre_screening_reads_the_same_on_its_pages_in_the_report_and_its_pdf(
    demo_site,  # noqa: F811
    language,
    calibrated,
    tmp_path,
):
    from apps.screening.selectors import judge_comparisons
    from apps.screening.services.calibration import funnyscore_calibrate

    study = demo_site.humor
    if calibrated:
        # The humor demo stores no FunnyScore fit: one is fitted through the service.
        assert funnyscore_calibrate(study=study)
    out = Outputs(study, tmp_path, language=language)
    models = len(judge_comparisons(study=study))
    problems: list[str] = []
    checked: Counter[str] = Counter()
    pdf_wanted: Counter[str] = Counter()
    families: set[str] = set()
    for figure in screening_figures(study):
        families.add(figure.family)
        with translation.override(language):
            found_places = _screening_places(figure, models)
        assert set(found_places) == set(MEDIA), figure.family
        for medium, place in found_places.items():
            with translation.override(language):
                problems += check(out, figure, place)
            if not isinstance(place, Omit):
                checked[medium] += 1
            if medium == "report" and isinstance(place, Cell):
                pdf_wanted.update(_expected(figure, place.parts, place.digits, place.pct))
    missing = pdf_wanted - Counter(outputs.numbers(out.pdf()))
    assert checked["page"] > 20, checked
    assert checked["report"] > 20, checked
    # Every figure is in the workbook, the zip and its table's CSV, none left out.
    assert checked["export"] == checked["csv"] == sum(1 for _f in screening_figures(study))
    assert {"screening.run", "screening.judge_interval", "screening.tier_agreement"} <= families
    assert calibrated == ("screening.calibration" in families)
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:80])
    assert not missing, f"screening figures of the report missing from the PDF: {dict(missing)}"


def test_the_jokes_demo_compares_the_pair_boards_figures_in_every_output(
    demo_site,  # noqa: F811
    tmp_path,
):
    """The jokes demo's raters answer "about the same" and "neither": its boards are fitted by a
    tie model, and the tie parameter, both tie models' likelihoods, the ends, the tie and
    neither rates, the style-controlled boards and the reliability of the board are looked up
    in every output. (A tie model's board has no one-sided bounds: those are compared where a
    plain board has them, tests/reports/test_report_boards.py.)"""
    families = _compare_every_figure(demo_site.humor, "all", "en", tmp_path)
    assert {
        "fit.tie_param",
        "fit.log_lik",
        "fit.ends",
        "pair_outcome",
        "pair_outcome.item",
        "style.source",
        "style.beta",
        "style.item",
        "style.item_order_changes",
        "reliability.split",
        "reliability.spearman_brown",
        "reliability.icc",
        "reliability.at_mean",
        "reliability.k",
    } <= families
