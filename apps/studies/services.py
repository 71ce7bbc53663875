"""Writes for studies and items."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from apps.core.errors import Conflict, DomainError, ImportRejected, LineError, NotFound
from apps.core.lines import Record, read_records
from apps.raters.models import DEFAULT_BACKGROUNDS, BackgroundGroup
from apps.studies.importing import ITEM_JSON_COLUMNS, ItemRow, parse_items
from apps.studies.models import Item, Rubric, Study

ITEM_COMPARED_FIELDS = (
    "text",
    "source",
    "level",
    "humor_type",
    "topic",
    "language",
    "context",
    "scenario",
    "explanation",
    "safety_intercepted",
    "generation",
    "content_type",
    "is_attention_check",
    "attention_expected",
)
# Interchange names of model fields, for error messages that speak the file's language.
_FILE_NAME = {"language": "lang", "is_attention_check": "attention_check"}


@dataclass(frozen=True)
class ImportSummary:
    created: int
    unchanged: int

    @property
    def total(self) -> int:
        return self.created + self.unchanged


@transaction.atomic
def study_create(
    *,
    slug: str,
    rubric_slug: str,
    name: str = "",
    languages: list[str] | None = None,
    backgrounds: list[tuple[str, dict[str, str]]] | None = None,
    **settings: Any,
) -> Study:
    """A draft study with the default background groups (no quotas until a researcher sets them)."""
    if slugify(slug) != slug or not slug:
        raise DomainError(
            f"slug {slug!r} must be lowercase letters, digits and hyphens", field="slug"
        )
    try:
        rubric = Rubric.objects.get(slug=rubric_slug)
    except Rubric.DoesNotExist:
        known = ", ".join(Rubric.objects.order_by("slug").values_list("slug", flat=True))
        raise NotFound(
            f"no rubric {rubric_slug!r}; known rubrics: {known}", field="rubric"
        ) from None
    if Study.objects.filter(slug=slug).exists():
        raise Conflict(f"a study with slug {slug!r} already exists", field="slug")
    study = Study(slug=slug, name=name or slug, rubric=rubric, **settings)
    if languages is not None:
        study.languages = languages
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError as exc:
        raise Conflict(f"study {slug!r} could not be created: {exc}", field="slug") from exc
    BackgroundGroup.objects.bulk_create(
        BackgroundGroup(study=study, code=code, label=label, position=index)
        for index, (code, label) in enumerate(backgrounds or DEFAULT_BACKGROUNDS)
    )
    return study


def _differences(item: Item, row: ItemRow) -> list[str]:
    fields = row.model_fields()
    return [name for name in ITEM_COMPARED_FIELDS if getattr(item, name) != fields[name]]


def study_items_import(*, study: Study, data: bytes, filename: str) -> ImportSummary:
    """Import item lines (JSONL or CSV). All lines are checked before anything is written.

    Importing the same file twice changes nothing: an item already stored with the same content
    counts as unchanged; one stored with different content is an error on that line (its
    judgments were made on what is stored).
    """
    records = read_records(data, filename=filename, json_columns=ITEM_JSON_COLUMNS)
    return study_items_import_records(study=study, records=records)


@transaction.atomic
def study_items_import_records(
    *, study: Study, records: Iterable[Record | LineError]
) -> ImportSummary:
    rows, errors = parse_items(records)
    if not rows and not errors:
        raise ImportRejected([LineError(0, "(file)", "contains no items")])
    existing = {
        item.external_id: item
        for item in Item.objects.filter(
            study=study, external_id__in=[row.external_id for row in rows]
        )
    }
    new_rows: list[ItemRow] = []
    for row in rows:
        stored = existing.get(row.external_id)
        if stored is None:
            new_rows.append(row)
            continue
        changed = _differences(stored, row)
        if changed:
            names = ", ".join(_FILE_NAME.get(name, name) for name in changed)
            errors.append(
                LineError(
                    row.line,
                    _FILE_NAME.get(changed[0], changed[0]),
                    f"item {row.external_id!r} is already in the study with a different {names}",
                )
            )
    if errors:
        raise ImportRejected(sorted(errors, key=lambda error: error.line))
    try:
        # A savepoint, so a concurrent import of the same ids surfaces as a clear conflict.
        with transaction.atomic():
            Item.objects.bulk_create(
                [Item(study=study, **row.model_fields()) for row in new_rows], batch_size=1000
            )
    except IntegrityError as exc:
        raise Conflict(
            "another import added some of these items at the same time; try again"
        ) from exc
    return ImportSummary(created=len(new_rows), unchanged=len(rows) - len(new_rows))
