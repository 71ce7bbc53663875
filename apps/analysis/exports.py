"""Serialising stored results to the interchange formats (json, jsonl, csv).

The other formats (xlsx, tables, raw judgments, printable report) live in apps/reports.
"""

from __future__ import annotations

import io
import json
from typing import Any

from apps.analysis.models import StudyResult
from apps.core.spreadsheet import write_dict_rows

FORMATS = ("json", "jsonl", "csv")


def _with_item_meta(payload: dict[str, Any], study_id: int) -> dict[str, Any]:
    """Each item of the results with its own metadata (`meta`), unchanged as imported, and its
    picture's storage name and hash (`image`, `image_sha256`) when it has one.

    Read from the items, not stored with the results: metadata is not evidence, so it never
    takes part in computing them (nor in their input hash)."""
    items = payload.get("items")
    if not items:
        return payload
    from apps.studies.models import Item

    stored = {
        external_id: (meta, image, sha)
        for external_id, meta, image, sha in Item.objects.filter(study_id=study_id).values_list(
            "external_id", "meta", "image", "image_sha256"
        )
    }
    out = []
    for item in items:
        meta, image, sha = stored.get(item["item"], ({}, "", ""))
        extra: dict[str, Any] = {"meta": meta or {}}
        if image:
            extra.update(image=image, image_sha256=sha)
        out.append({**item, **extra})
    return {**payload, "items": out}


def result_document(result: StudyResult) -> dict[str, Any]:
    """The stored payload with the provenance a reader needs to trust and reproduce it."""
    return {
        **_with_item_meta(result.payload, result.study_id),
        "seed": result.seed,
        "rounds": result.rounds,
        "input_hash": result.input_hash,
        "exclusion_hash": result.exclusion_hash,
        "computed_at": result.computed_at.isoformat(),
    }


def _meta_cell(value: Any) -> str:
    """An item's metadata as one JSON cell ("" when it has none), as in the raw export."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else ""


def item_rows(document: dict[str, Any], *, meta_as_text: bool = True) -> list[dict[str, Any]]:
    """One row per item: its means with intervals, Bradley-Terry score, Turing accuracy, flags,
    and last its metadata (a JSON text cell for tables; the object itself with `meta_as_text`
    off, for JSON lines)."""
    bt = {row["item"]: row for row in document.get("bradley_terry", [])}
    questions = sorted({name for item in document.get("items", []) for name in item["questions"]})
    # Only a study with pictures has their columns, so other studies' tables are unchanged.
    pictures = any(item.get("image") for item in document.get("items", []))
    rows = []
    for item in document.get("items", []):
        row: dict[str, Any] = {
            key: item.get(key, "")
            for key in (
                "item",
                "source",
                "level",
                "humor_type",
                "content_type",
                "topic",
                "n_raters",
                "n_pairs",
            )
        }
        for name in questions:
            stats = item["questions"].get(name, {})
            row[f"{name}_mean"] = stats.get("value")
            row[f"{name}_ci_low"] = stats.get("ci_low")
            row[f"{name}_ci_high"] = stats.get("ci_high")
            row[f"{name}_n"] = stats.get("n")
        entry = bt.get(item["item"], {})
        row.update(
            {
                "bt_score": entry.get("score"),
                "bt_ci_low": entry.get("ci_low"),
                "bt_ci_high": entry.get("ci_high"),
                "bt_rank": entry.get("rank"),
                "bt_component": entry.get("component"),
                "turing_accuracy": item["turing_accuracy"].get("value"),
                "turing_n": item["turing_accuracy"].get("n"),
                "agreement": item.get("agreement"),
                "cross_group_agreement": item.get("cross_group_agreement"),
                "offensive": item["offensive"],
                "safety_intercepted": item["safety_intercepted"],
                "flags": ";".join(item["flags"]),
                # Appended, as on the items page: the Turing interval, the share of revealed
                # self-explanations raters said name the real mechanism, the item's language.
                "turing_ci_low": item["turing_accuracy"].get("ci_low"),
                "turing_ci_high": item["turing_accuracy"].get("ci_high"),
                "explanation_match": (item.get("explanation_match") or {}).get("value"),
                "explanation_ci_low": (item.get("explanation_match") or {}).get("ci_low"),
                "explanation_ci_high": (item.get("explanation_match") or {}).get("ci_high"),
                "explanation_n": (item.get("explanation_match") or {}).get("n"),
                "language": item.get("language", ""),
                # Why cross_group_agreement is empty: too few raters per group, no variation.
                "cross_group_reason": item.get("cross_group_reason") or "",
                # An undefeated item's lower bound, a never-winning item's upper bound.
                "bt_bound": entry.get("bound"),
                "bt_bound_side": entry.get("bound_side") or "",
                **(
                    {
                        "image": item.get("image") or "",
                        "image_sha256": item.get("image_sha256") or "",
                    }
                    if pictures
                    else {}
                ),
                # Last: the item's own metadata, unchanged.
                "meta": _meta_cell(item.get("meta"))
                if meta_as_text
                else dict(item.get("meta") or {}),
            }
        )
        rows.append(row)
    return rows


def render(result: StudyResult, fmt: str) -> str:
    document = result_document(result)
    if fmt == "json":
        return json.dumps(document, ensure_ascii=False, indent=2)
    rows = item_rows(document, meta_as_text=fmt != "jsonl")
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    if fmt == "csv":
        buffer = io.StringIO()
        write_dict_rows(buffer, rows)
        return buffer.getvalue()
    raise ValueError(f"unknown format {fmt!r}")
