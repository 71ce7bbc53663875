"""Writing exports: CSV, zip of CSVs, XLSX, JSON, the raw tidy CSV, the printable report (HTML)
and its PDF.

Writers take tables, rows or a prepared report context and a path or stream; they never query the
database (services gather what they need). Numbers in the data formats are unrounded; only the
printable report rounds, for reading.
"""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any

from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from apps.analysis import labels
from apps.analysis.stats.inputs import Thresholds
from apps.analysis.stats.report import RATER_DIMENSIONS
from apps.core.spreadsheet import SafeCsvWriter
from apps.findings import charts
from apps.findings.answer import study_answer
from apps.findings.document import default_items_view, items_left_out, shown_document
from apps.findings.estimands import estimand_label, group_estimand, group_means
from apps.findings.figures import alpha_level, group_order
from apps.reports import boards as board_sections
from apps.reports import sections
from apps.reports.formats import DASH, fmt, fmt_interval, fmt_percent
from apps.reports.tables import (
    PROVENANCE,
    Table,
    provenance_table,
    question_names,
)

Progress = Callable[[int], None]

# Rows written between two progress reports of the raw export.
RAW_PROGRESS_EVERY = 5000


def _cell(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def write_csv(stream: IO[str], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    writer = SafeCsvWriter(stream)
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
    return count


def table_csv(table: Table) -> str:
    buffer = io.StringIO()
    write_csv(buffer, table.columns, table.rows)
    return buffer.getvalue()


def write_tables_zip(tables: Sequence[Table], path: Path) -> None:
    """One `<table>.csv` per table in a zip; provenance.csv travels with them."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for table in tables:
            archive.writestr(f"{table.name}.csv", table_csv(table))


def _xlsx_value(sheet: Any, value: Any) -> Any:
    from openpyxl.cell import WriteOnlyCell

    value = _cell(value)
    if isinstance(value, str) and value.startswith("="):
        # openpyxl stores a string starting with "=" as a formula; an item id or a rater's
        # external id must stay text, never run in the reader's spreadsheet.
        cell = WriteOnlyCell(sheet, value)
        cell.data_type = "s"
        return cell
    return value


def write_xlsx(tables: Sequence[Table], path: Path, *, progress: Progress | None = None) -> None:
    """One sheet per table, named after it (the provenance table is passed last).

    Numbers are stored as numbers; openpyxl writes 16 significant digits, one more than Excel
    shows. The CSV and JSON exports keep every digit.
    """
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    workbook = Workbook(write_only=True)
    bold = Font(bold=True)
    for index, table in enumerate(tables):
        sheet = workbook.create_sheet(title=table.name[:31])
        sheet.freeze_panes = "A2"
        header = []
        for column in table.columns:
            cell = WriteOnlyCell(sheet, column)
            cell.font = bold
            header.append(cell)
        sheet.append(header)
        for row in table.rows:
            sheet.append([_xlsx_value(sheet, value) for value in row])
        if progress is not None:
            progress(int(100 * (index + 1) / len(tables)))
    workbook.save(path)


def write_json(document: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")


def write_raw_csv(
    rows: Iterable[Sequence[Any]],
    columns: Sequence[str],
    stream: IO[str],
    *,
    total: int = 0,
    progress: Progress | None = None,
) -> int:
    """The tidy raw table, written row by row as the rows arrive (never all in memory)."""
    writer = SafeCsvWriter(stream)
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
        if progress is not None and total and count % RAW_PROGRESS_EVERY == 0:
            progress(min(99, int(100 * count / total)))
    return count


# --- printable report --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportQuestion:
    name: str
    kind: str
    min_value: int
    max_value: int
    prompt: str = ""
    # Questions that must be answered before this one (the rubric's order constraints).
    answered_after: tuple[str, ...] = ()
    # The scale's anchors in the reader's language: ((point, text), ...), lowest point first.
    anchors: tuple[tuple[int, str], ...] = ()
    # A choice question's options in the reader's language, by stored index.
    choices: tuple[str, ...] = ()
    required: bool = True
    # A slider's step as people write it ("1/32"); "" for the integer kinds.
    step: str = ""
    # Offers "I don't get it".
    not_understood: bool = False

    @property
    def label(self) -> str:
        """The question's name in the reader's language (a custom question's own name)."""
        return labels.question_label(self.name)

    @property
    def after_labels(self) -> str:
        return ", ".join(labels.question_label(name) for name in self.answered_after)

    @property
    def is_binary(self) -> bool:
        return self.kind == "binary" or (
            self.kind != "slider" and self.max_value - self.min_value == 1
        )


@dataclass(frozen=True)
class ReportStudy:
    """What the report says about the study besides its results (gathered by the service)."""

    name: str
    slug: str
    questions: list[ReportQuestion]
    groups: list[tuple[str, str]]  # (code, label)
    session_minutes: int = 30
    pair_appearances_per_item: int = 3
    pair_min_opponents: int = 2
    min_items_per_model: int = 30
    min_raters_per_item: int = 15
    exclude_items_not_evidence: bool = True
    item_texts: dict[str, str] = field(default_factory=dict)
    # The rubric's kind ("humor" or "content"): the report speaks of jokes only on the humor one.
    rubric_kind: str = "humor"
    # The question the headline numbers follow (the rubric names it); "" when it has none.
    primary_question: str = ""
    # The data's hashes now and the software generating the report (the service fills them).
    reproducibility: sections.Reproducibility = field(default_factory=sections.Reproducibility)
    # The quality page's rater counts; None when not gathered.
    rater_counts: sections.RaterCounts | None = None
    # The stored content evaluation ({"payload", "seed", "rounds", "computed_at", "input_hash"})
    # and the screening records, where the study has them.
    content_evaluation: dict[str, Any] | None = None
    screening: dict[str, Any] | None = None


LEADERBOARD_SIZE = 10
# Items named in a list of the report; the rest are counted (the exports list them all).
NAMED_ITEMS = 50
SNIPPET_CHARS = 90


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _primary(study: ReportStudy) -> str | None:
    names = {q.name for q in study.questions}
    return study.primary_question if study.primary_question in names else None


def _summary(
    document: dict[str, Any],
    dimension: str,
    title: str,
    questions: list[ReportQuestion],
    *,
    humor: bool = True,
) -> dict[str, Any]:
    groups = (document.get("groups") or {}).get(dimension) or {}
    size = "n_raters" if dimension in RATER_DIMENSIONS else "n_items"
    headings = {
        "humor_type": _("humor type") if humor else _("type"),
        "level_humor_type": _("level × humor type") if humor else _("level × type"),
        "content_type": _("content type"),
        "source": _("source"),
        "level": _("level"),
        "background": _("background"),
        "language": _("item language"),
        "rater_language": _("rater language"),
        "n_items": _("n items"),
        "n_raters": _("n raters"),
    }
    columns = [
        headings.get(dimension, dimension.replace("_", " ")),
        headings.get(size, size.replace("_", " ")),
    ]
    # Turing accuracy belongs to items; a rater-background split has none.
    turing = dimension not in RATER_DIMENSIONS
    # Both readings of offense, named as on the results pages: the method's rule (any rater
    # flags the item) and the share of raters' answers that flagged it. The offense question's
    # own mean is that share, so it is not shown a second time under its question's name.
    # Only a rubric that asks the offense flag has them (as on the summary page); a split by
    # rater has the share only (the any-rater rule counts items).
    asked = any(q.name == "offensive" and q.is_binary for q in questions)
    offense = turing and asked and any("offense" in entry for entry in groups.values())
    # Choice questions store an option's index, whose mean means nothing (as on the pages).
    shown = [
        q
        for q in questions
        if q.kind != "choice" and not (asked and q.is_binary and q.name == "offensive")
    ]
    columns += [
        (_("%(question)s (rate)") if q.is_binary else _("%(question)s (mean)"))
        % {"question": labels.question_label(q.name)}
        for q in shown
    ]
    if offense:
        columns.append(_("Offensive items (any rater)"))
    if asked:
        columns.append(_("Offense (share of raters)"))
    if turing:
        columns.append(_("Turing accuracy"))
    rows = []
    # Per source, the model comparison's means (items and raters random), as on every page.
    means = group_means(document, dimension)
    for group in group_order(groups, dimension):
        entry = groups[group]
        row = [labels.group_label(group, dimension, humor=humor), fmt(entry.get(size))]
        for q in shown:
            stats = (means.get(group) or {}).get(q.name)
            row.append(fmt_percent(stats) if q.is_binary else fmt_interval(stats))
        if offense:
            row.append(fmt_percent((entry.get("offense") or {}).get("any_rater")))
        if asked:
            # The share of raters' answers that flagged it: the offense question's own mean.
            row.append(fmt_percent((entry.get("questions") or {}).get("offensive")))
        if turing:
            row.append(fmt_percent(entry.get("turing_accuracy")))
        rows.append(row)
    return {
        "title": title,
        "dimension": dimension,
        "columns": columns,
        "rows": rows,
        "estimand": estimand_label(group_estimand(document, dimension)),
    }


def _has_types(document: dict[str, Any]) -> bool:
    """Whether any item carries a humor type; the statistics call a missing one "unspecified"."""
    names = ((document.get("groups") or {}).get("humor_type") or {}).keys()
    return any(name not in ("", "unspecified") for name in names)


def _leaderboards(
    document: dict[str, Any], study: ReportStudy, primary: str | None
) -> list[dict[str, Any]]:
    items = {item["item"]: item for item in document.get("items") or []}
    by_level = document.get("bradley_terry_by_level") or {}
    # Levels are ranked separately (never mixed); the pooled ranking only when there is no split.
    humor = study.rubric_kind == "humor"
    scopes = [
        (labels.level_label(level, humor=humor), by_level[level])
        for level in sorted(by_level, key=_level_key)
    ] or [(_("all levels"), document.get("bradley_terry") or [])]
    boards = []
    for scope, rows in scopes:
        components = {row.get("component") for row in rows}
        board = []
        for row in rows[:LEADERBOARD_SIZE]:
            item = items.get(row["item"], {})
            stats = (item.get("questions") or {}).get(primary) if primary else None
            board.append(
                {
                    "rank": fmt(row.get("rank")),
                    "item": row["item"],
                    "text": _snippet(study.item_texts.get(row["item"], "")),
                    "source": labels.source_label(item["source"]) if "source" in item else DASH,
                    "humor_type": labels.humor_type_label(item["humor_type"])
                    if "humor_type" in item
                    else DASH,
                    # An item that won (lost) every comparison: its one-sided bound.
                    "score": board_sections.bound_text(row)
                    if row.get("bound") is not None
                    else fmt_interval(
                        {
                            "value": row.get("score"),
                            "ci_low": row.get("ci_low"),
                            "ci_high": row.get("ci_high"),
                        }
                    ),
                    "bound_side": row.get("bound_side") or "",
                    # Won or lost everything without a bound (none exists there): said so.
                    "end": next(
                        (f for f in ("undefeated", "never_won") if f in (row.get("flags") or [])),
                        "",
                    ),
                    # Held by the fit's ridge, not measured: shown, not ranked.
                    "scale_not_identified": "scale_not_identified" in (row.get("flags") or []),
                    "component": fmt(row.get("component")),
                    "primary": fmt_interval(stats),
                }
            )
        boards.append(
            {
                "scope": scope,
                "rows": board,
                "total": len(rows),
                "components": len(components),
            }
        )
    return boards


def _agreement(document: dict[str, Any], questions: list[ReportQuestion]) -> list[dict[str, Any]]:
    agreement = document.get("agreement") or {}
    thresholds = Thresholds()
    rows = []
    for name in question_names(document, [q.name for q in questions]):
        entry = agreement.get(name)
        if not entry:
            continue
        measure = alpha_level(entry)
        by_group = entry.get("krippendorff_alpha_by_group") or {}
        by_group_interval = entry.get("krippendorff_alpha_by_group_interval") or {}
        culture = sum(
            1
            for row in entry.get("per_item") or []
            if row.get("cross_group") is not None
            and row["cross_group"] < thresholds.culture_dependent_agreement
        )
        rows.append(
            {
                "name": name,
                "question": labels.question_label(name),
                "measure_label": labels.measure_label(measure),
                "n_ratings": fmt(entry.get("n_ratings")),
                "fleiss": fmt_interval(entry.get("fleiss_kappa")),
                "cohen": _cohen(entry),
                "measure": labels.measure_label(measure),
                "interval_label": labels.measure_label("interval"),
                "alpha": fmt_interval((entry.get("krippendorff_alpha") or {}).get(measure)),
                # Interval alpha, which most published work reports, beside the ordinal one.
                "alpha_interval": fmt_interval(
                    (entry.get("krippendorff_alpha") or {}).get("interval")
                )
                if measure == "ordinal"
                else None,
                "by_group": [
                    (
                        labels.background_label(group),
                        fmt_interval(by_group[group]),
                        fmt_interval(by_group_interval[group])
                        if group in by_group_interval
                        else None,
                    )
                    for group in sorted(by_group)
                ],
                "unknown_raters": entry.get("unknown_background_raters") or 0,
                "below_cross_group_line": culture,
            }
        )
    return rows


def _cohen(entry: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(weighting, "value [low, high]", "n pairs") per Cohen's kappa of a question; the value
    says why there is none when no pair of raters shares enough items."""
    cells = []
    for weighting, stats in (entry.get("cohen_kappa") or {}).items():
        pairs = stats.get("n_pairs") or 0
        if pairs:
            value = fmt_interval(stats)
            note = ngettext("%(n)s pair", "%(n)s pairs", pairs) % {"n": pairs}
        else:
            value, note = labels.no_kappa_pairs(stats.get("min_shared_items")), ""
        cells.append((labels.kappa_weights_label(weighting), value, note))
    return cells


def _turing(document: dict[str, Any]) -> list[dict[str, Any]]:
    turing = document.get("turing") or {}
    entries = []
    if turing.get("overall"):
        entries.append((_("All items"), turing["overall"]))
    by_source = turing.get("by_source") or {}
    entries += [
        (labels.source_label(source), by_source[source])
        for source in sorted(by_source, key=lambda name: (name == "human", name))
    ]
    return [
        {
            "source": source,
            "n": fmt(entry.get("n")),
            "accuracy": fmt_percent(entry.get("accuracy")),
            "judged_human": fmt_percent(entry.get("judged_human")),
            "d_prime": fmt(entry.get("d_prime")),
            "p_vs_chance": charts.fmt_p((entry.get("vs_chance") or {}).get("p_value")),
            "vs_human": fmt_percent(entry.get("vs_human")) if entry.get("vs_human") else DASH,
            "vs_human_p": charts.fmt_p_stated((entry.get("vs_human") or {}).get("p_holm"))
            if (entry.get("vs_human") or {}).get("p_holm") is not None
            else "—",
            "verdict": sections.verdict_label(entry.get("verdict")),
        }
        for source, entry in entries
    ]


def _rank_range(rank: Any) -> str:
    if not isinstance(rank, dict) or rank.get("low") is None:
        return DASH
    low, high = rank["low"], rank["high"]
    return str(low) if low == high else f"{low}\u2013{high}"


def _level_key(name: str) -> tuple[int, str]:
    """Levels in the method's order (single, multi-turn, scenario), any other after by name."""
    order = ("single", "multi_turn", "scenario")
    return (order.index(name) if name in order else len(order), name)


def _measure_label(measure: Any) -> str:
    if measure == "bt":
        return _("Bradley-Terry")
    if measure == "judged_human":
        return _("Judged human")
    return labels.question_label(str(measure))


def _models(
    document: dict[str, Any],
    questions: list[ReportQuestion],
    primary: str | None,
    *,
    humor: bool = True,
) -> list[dict[str, Any]]:
    """The model comparison, overall and per level: one table of sources, one of differences."""
    models = document.get("models") or {}
    scale = [q.name for q in questions if not q.is_binary]
    views: list[tuple[str, dict[str, Any]]] = [(_("All items"), models)]
    # The levels are the method's separate tests: each has its view, even a study's only one.
    # A finer split with a single group would repeat the overall view: it is left out.
    for level in sorted(models.get("by_level") or {}, key=_level_key):
        views.append(
            (
                _("Level: %(level)s") % {"level": labels.level_label(level, humor=humor)},
                (models.get("by_level") or {})[level],
            )
        )
    # Every pairwise difference is printed overall and per level (the method's levels are
    # separate tests); the finer views list their sources, their differences are in the exports.
    detailed = len(views)
    # The page's other views: one humor type, one item language at a time.
    by_type = models.get("by_humor_type") or {}
    for kind in sorted(by_type if len(by_type) > 1 else {}):
        views.append(
            (
                _("Humor type: %(type)s") % {"type": labels.humor_type_label(kind)}
                if humor
                else _("Type: %(type)s") % {"type": labels.humor_type_label(kind)},
                (models.get("by_humor_type") or {})[kind],
            )
        )
    by_language = models.get("by_language") or {}
    for language in sorted(by_language if len(by_language) > 1 else {}):
        views.append(
            (
                _("Item language: %(language)s")
                % {"language": labels.group_label(language, "language")},
                (models.get("by_language") or {})[language],
            )
        )
    out = []
    for index, (title, view) in enumerate(views):
        by_model = view.get("by_model") or {}
        if not by_model:
            continue
        sources = sorted(by_model, key=lambda name: (name == "human", name))
        rows = []
        for name in sources:
            entry = by_model[name]
            offense = entry.get("offense") or {}
            bt = entry.get("bt") or {}
            rows.append(
                {
                    "name": name,
                    "source": labels.source_label(name),
                    "n_items": fmt(entry.get("n_items")),
                    "n_raters": fmt(entry.get("n_raters")),
                    "rank": _rank_range(entry.get("rank")),
                    "questions": [
                        (
                            fmt_interval((entry.get("questions") or {}).get(q)),
                            fmt_interval((entry.get("fixed_items") or {}).get(q)),
                            fmt_interval((entry.get("adjusted") or {}).get(q)),
                        )
                        for q in scale
                    ],
                    "bt": _end_cell(bt) if bt.get("flag") else fmt_interval(bt),
                    "judged_human": fmt_percent(entry.get("judged_human")),
                    "offense_any": fmt_percent(offense.get("any_rater")),
                    "offense_share": fmt_percent(offense.get("share_of_raters")),
                }
            )
        shown = {*scale, "bt", "judged_human"}
        differences = [
            {
                "a": labels.source_label(str(row.get("a"))),
                "b": labels.source_label(str(row.get("b"))),
                "measure": _measure_label(row.get("question")),
                "value": _("no finite strength on one side")
                if row.get("flag") == "no_finite_strength"
                else fmt_percent(row)
                if row.get("question") == "judged_human"
                else fmt_interval(row),
                "p_holm": charts.fmt_p(row.get("p_holm")),
                "simultaneous": DASH
                if not row.get("simultaneous")
                else fmt_percent(row["simultaneous"])
                if row.get("question") == "judged_human"
                else fmt_interval(row["simultaneous"]),
                "p_a_beats_b": fmt_percent(row.get("p_a_beats_b"))
                if row.get("p_a_beats_b")
                else DASH,
            }
            for row in view.get("differences") or []
            if row.get("question") in shown
        ]
        out.append(
            {
                "title": title,
                "detail": index < detailed,
                "questions": scale,
                "question_labels": [labels.question_label(q) for q in scale],
                "rows": rows,
                "differences": differences,
                "rank_basis": view.get("rank_basis") or DASH,
            }
        )
    return out


def _diagnostics(document: dict[str, Any]) -> list[tuple[str, str]]:
    diagnostics = document.get("diagnostics") or {}
    rows = []
    bias = diagnostics.get("position_bias") or {}
    if bias:
        rows.append(
            (
                _("Left side chosen in pairs (position bias; 50% = none)"),
                f"{fmt_percent(bias.get('left_choice_rate'))}, {charts.fmt_p_stated(bias.get('p_value'))}",
            )
        )
    slope = (diagnostics.get("fatigue") or {}).get("slope")
    if slope:
        rows.append(
            (
                _("Change of the mean per minute into the session (fatigue)"),
                fmt_interval(slope, 3),
            )
        )
    if diagnostics.get("explanation_match_rate"):
        rows.append(
            (
                _("Self-explanations that name the real mechanism"),
                fmt_percent(diagnostics["explanation_match_rate"]),
            )
        )
    return rows


def headline_comparison(
    after: dict[str, Any], before: dict[str, Any], primary: str | None
) -> list[list[str]]:
    """Per model: the primary question's mean and Turing accuracy in two analyses, and the
    change. The intervals show whether the change is more than resampling noise."""
    rows = []
    for source in sorted(set(after) | set(before)):
        a, b = after.get(source) or {}, before.get(source) or {}
        a_mean = (a.get("questions") or {}).get(primary) if primary else None
        b_mean = (b.get("questions") or {}).get(primary) if primary else None
        delta = (
            a_mean["value"] - b_mean["value"]
            if isinstance(a_mean, dict)
            and isinstance(b_mean, dict)
            and a_mean.get("value") is not None
            and b_mean.get("value") is not None
            else None
        )
        rows.append(
            [
                source,
                fmt_interval(b_mean),
                fmt_interval(a_mean),
                ("+" if delta is not None and delta > 0 else "") + fmt(delta),
                fmt_percent(b.get("turing_accuracy")),
                fmt_percent(a.get("turing_accuracy")),
            ]
        )
    return rows


def _exclusions(document: dict[str, Any], primary: str | None) -> dict[str, Any]:
    """Every exclusion with its reason, how the headline table moves without the excluded data,
    and the items left out of model comparisons because they are not evidence."""
    recorded = document.get("exclusions") or {}
    before = document.get("before_exclusions") or {}
    evidence = document.get("evidence_only") or {}
    groups = (document.get("groups") or {}).get("source") or {}
    evidence_groups = ((evidence.get("results") or {}).get("groups") or {}).get("source") or {}
    return {
        "entries": recorded.get("entries") or [],
        "hash": recorded.get("hash") or "",
        "effect": headline_comparison(groups, before.get("source") or {}, primary)
        if before
        else [],
        "before_counts": before.get("counts") or {},
        # Named one by one up to NAMED_ITEMS; a study of thousands says how many more.
        "not_evidence": (evidence.get("left_out") or [])[:NAMED_ITEMS],
        "not_evidence_count": len(evidence.get("left_out") or []),
        "not_evidence_more": max(0, len(evidence.get("left_out") or []) - NAMED_ITEMS),
        "not_evidence_effect": headline_comparison(evidence_groups, groups, primary)
        if evidence
        else [],
    }


def _choice_shares(
    document: dict[str, Any], questions: list[ReportQuestion]
) -> list[dict[str, Any]]:
    """Per choice question: the share choosing each option (named in the reader's language)
    per model, with intervals: a choice has no mean."""
    names = {q.name: list(q.choices) for q in questions}
    tables = []
    for name, entry in (document.get("choices") or {}).items():
        options = names.get(name) or entry.get("names") or []
        rows = [
            (labels.source_label(source), [fmt_percent(cell) for cell in cells])
            for source, cells in sorted((entry.get("by_source") or {}).items())
        ]
        tables.append({"question": labels.question_label(name), "options": options, "rows": rows})
    return tables


def _signals(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Each behavioural signal: its rate, and how it goes with the primary question."""
    rows = []
    for name, entry in (document.get("signals") or {}).items():
        association = entry.get("association") or {}
        rows.append(
            {
                "question": labels.question_label(name),
                "rate": fmt_percent(entry.get("rate")),
                "against": labels.question_label(entry.get("against") or ""),
                "if_yes": fmt(association.get("primary_if_yes")),
                "if_no": fmt(association.get("primary_if_no")),
                "difference": fmt_interval(association.get("difference")),
                "correlation": fmt_interval(association.get("correlation")),
            }
        )
    return rows


def _not_understood(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Per question offering "I don't get it": its rate overall and per model and background."""
    section = document.get("not_understood") or {}
    tables = []
    for name, entry in (section.get("questions") or {}).items():
        rows = [(_("All items"), entry.get("overall"))]
        rows += [
            (labels.source_label(source), stats)
            for source, stats in sorted((entry.get("by_source") or {}).items())
        ]
        rows += [
            (labels.group_label(group, "background"), stats)
            for group, stats in sorted((entry.get("by_background") or {}).items())
        ]
        tables.append(
            {
                "question": labels.question_label(name),
                "rows": [
                    (
                        label,
                        (stats or {}).get("count", entry.get("count", 0)),
                        (stats or {}).get("n"),
                        fmt_percent(stats),
                    )
                    for label, stats in rows
                ],
            }
        )
    return tables


def report_context(
    document: dict[str, Any], *, study: ReportStudy, generated_at: datetime
) -> dict[str, Any]:
    """Everything the printable report shows, rounded for reading; the template only lays out."""
    questions = study.questions
    primary = _primary(study)
    humor = study.rubric_kind == "humor"
    by_name = {q.name: q for q in questions}
    # The method text speaks of surprise and coherence before funniness only when the rubric
    # used asks exactly that; any other rubric gets its own questions and order described.
    ordered_humor = (
        humor
        and "funniness" in by_name
        and {"surprise", "coherence"} <= set(by_name["funniness"].answered_after)
    )
    level = document.get("level")
    thresholds = Thresholds()
    # Every figure follows the study's setting, as every page does (apps.findings.document):
    # without the items that are not evidence about their model when the study leaves them out.
    items = default_items_view(exclude_items_not_evidence=study.exclude_items_not_evidence)
    summary_document = shown_document(document, items)
    primary_question = next((q for q in questions if q.name == primary), None)
    provenance = provenance_table(document, study=study.slug)
    computed_at = document.get("computed_at") or ""
    with contextlib.suppress(ValueError):
        computed_at = datetime.fromisoformat(computed_at).isoformat(timespec="seconds")
    return {
        "computed_at": computed_at,
        "study": study,
        "generated_at": generated_at.isoformat(timespec="seconds"),
        "document": document,
        "culture_test": labels.culture_test_shown(summary_document),
        "primary": primary,
        "questions": questions,
        "counts": summary_document.get("counts") or {},
        "level_percent": fmt(100 * level, 0) if isinstance(level, float | int) else DASH,
        "thresholds": thresholds,
        "humor": humor,
        "ordered_humor": ordered_humor,
        "unknown_background_raters": (summary_document.get("counts") or {}).get(
            "raters_unknown_background", 0
        ),
        # The summary tables follow the study's setting, as the summary page does: without the
        # items that are not evidence about their model when the study leaves them out.
        "summaries": [
            *(
                [
                    _summary(summary_document, "humor_type", _("By humor type"), questions),
                    _summary(
                        summary_document, "level_humor_type", _("By level × humor type"), questions
                    ),
                ]
                if humor
                else [
                    _summary(summary_document, "humor_type", _("By type"), questions, humor=False),
                    _summary(
                        summary_document,
                        "level_humor_type",
                        _("By level × type"),
                        questions,
                        humor=False,
                    ),
                ]
                if _has_types(summary_document)
                else []
            ),
            # Only items that carry a content type (the content rubric's articles) have this.
            *(
                [
                    _summary(
                        summary_document,
                        "content_type",
                        _("By content type"),
                        questions,
                        humor=humor,
                    )
                ]
                if (summary_document.get("groups") or {}).get("content_type")
                else []
            ),
            _summary(
                summary_document, "source", _("By source (model or human)"), questions, humor=humor
            ),
            _summary(summary_document, "level", _("By test level"), questions, humor=humor),
            _summary(
                summary_document, "background", _("By rater background"), questions, humor=humor
            ),
            # A study in several languages: the same split by the item's language and by the
            # languages its raters read.
            *(
                [
                    _summary(
                        summary_document, "language", _("By item language"), questions, humor=humor
                    ),
                    _summary(
                        summary_document,
                        "rater_language",
                        _("By rater language"),
                        questions,
                        humor=humor,
                    ),
                ]
                if len((summary_document.get("groups") or {}).get("language") or {}) > 1
                else []
            ),
        ],
        "summary_left_out": items_left_out(document) if items == "evidence" else 0,
        "answer": study_answer(
            summary_document.get("models") or {},
            question=primary if primary_question and not primary_question.is_binary else None,
            scale=(float(primary_question.min_value), float(primary_question.max_value))
            if primary_question
            else None,
            humor=humor,
            view_label=_("the whole study"),
            warnings=summary_document.get("warnings") or [],
            not_evidence=items_left_out(document),
            evidence_only=items == "evidence",
            exclusions=len((document.get("exclusions") or {}).get("entries") or []),
        ),
        "leaderboards": _leaderboards(summary_document, study, primary),
        "agreement": _agreement(summary_document, questions),
        "turing": _turing(summary_document),
        "models": _models(summary_document, questions, primary, humor=humor),
        "diagnostics": _diagnostics(summary_document),
        "warnings": labels.study_warnings(
            summary_document.get("warnings") or [], summary_document.get("items") or []
        ),
        "exclusions": _exclusions(document, primary),
        "choice_shares": _choice_shares(summary_document, questions),
        "not_understood": _not_understood(summary_document),
        "signals": _signals(summary_document),
        "pair_board": board_sections.pair_board(summary_document, humor=humor),
        "pair_outcomes": board_sections.pair_outcomes(summary_document),
        "style_control": board_sections.style_control(summary_document),
        "reliability": board_sections.reliability(summary_document),
        "provenance": [(key, fmt(value, 4)) for key, value in provenance.rows],
        "figures": sections.report_figures(
            summary_document, rubric=[(q.name, q.kind) for q in questions], humor=humor
        ),
        "reproducibility": sections.reproducibility(
            document,
            now=study.reproducibility,
            computed_at=computed_at,
            generated_at=generated_at.isoformat(timespec="seconds"),
        ),
        "turing_levels": sections.turing_levels(summary_document, humor=humor),
        "sample": sections.sample(summary_document, humor=humor),
        "safety": sections.safety(summary_document, humor=humor),
        "coverage": sections.coverage(summary_document),
        "rater_counts": study.rater_counts,
        "content": sections.content_evaluation(study.content_evaluation),
        "screening": sections.screening(study.screening),
        "seeds": [
            (
                _("Turing (overall)"),
                ((summary_document.get("turing") or {}).get("overall") or {}).get("seed"),
            ),
            (
                _("Fatigue"),
                ((summary_document.get("diagnostics") or {}).get("fatigue") or {}).get("seed"),
            ),
        ],
        "provenance_name": PROVENANCE,
    }


def render_report_html(context: dict[str, Any]) -> str:
    return render_to_string("reports/report.html", context)


def write_pdf(html: str, path: Path) -> None:
    # Imported here: WeasyPrint loads Pango at import, which only the PDF export needs.
    from weasyprint import HTML

    HTML(string=html).write_pdf(str(path))


def _end_cell(bt: dict[str, Any]) -> str:
    """A source that never lost or never won: its one-sided bound, or the flag alone."""
    undefeated = bt.get("flag") == "undefeated"
    if bt.get("bound") is None:
        return _("undefeated") if undefeated else _("never won")
    sign = "≥" if undefeated else "≤"
    note = (
        _("undefeated: at least this strong") if undefeated else _("never won: at most this strong")
    )
    return f"{sign} {charts.fmt(bt['bound'])} ({note})"
