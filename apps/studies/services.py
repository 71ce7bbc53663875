"""Writes for studies and items."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext_noop

from apps.analysis.services import study_results_request
from apps.core.bulk import bulk_insert
from apps.core.bulk_references import references_checked_in_bulk
from apps.core.collector import cyclic_collector_paused
from apps.core.errors import Conflict, DomainError, ImportRejected, LineError, NotFound
from apps.core.lines import Record, read_records
from apps.core.progress import ImportProgress, reporting
from apps.core.sentences import Sentence
from apps.raters.models import DEFAULT_BACKGROUNDS, UNKNOWN_BACKGROUND, BackgroundGroup
from apps.screening.services.offense import offense_candidates, offense_scan_items
from apps.studies.images import ImageRefused, PreparedImage, image_prepare, image_store
from apps.studies.importing import ITEM_JSON_COLUMNS, ItemRow, parse_items
from apps.studies.item_zip import ItemsZip, is_zip, items_zip_open
from apps.studies.languages import languages_problem
from apps.studies.models import Item, Rubric, Study, StudyMembership
from apps.studies.rubrics import rubric_create
from apps.studies.rules import (
    TASK_KINDS,
    quotas_problem,
    study_settings_problem,
    task_mix_problem,
)

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
    "meta",
    "image_sha256",
    "image_alt",
)
# ItemRow's fields, which are the Item model's field names.
_ITEM_ROW_FIELDS = tuple(name for name in ItemRow.__dataclass_fields__ if name != "line")
# Interchange names of model fields, for error messages that speak the file's language.
_FILE_NAME = {"language": "lang", "is_attention_check": "attention_check"}


@dataclass(frozen=True)
class ImportSummary:
    created: int
    unchanged: int
    # New items the offense filter held out of the human study.
    held: int = 0

    @property
    def total(self) -> int:
        return self.created + self.unchanged


@transaction.atomic
def study_create(
    *,
    slug: str,
    rubric_slug: str = "",
    rubric_spec: dict[str, Any] | None = None,
    name: str = "",
    languages: list[str] | None = None,
    backgrounds: list[tuple[str, dict[str, str]]] | None = None,
    owner: User | None = None,
    **settings: Any,
) -> Study:
    """A draft study (no quotas until a researcher sets them).

    The rubric is a stored one (`rubric_slug`) or a custom one created from `rubric_spec`
    (apps.studies.rubrics). `backgrounds` are the study's rater groups, (code, labels per
    language); None gives the method's four, an empty list none (every rater unknown).
    """
    if slugify(slug) != slug or not slug:
        raise DomainError(
            f"slug {slug!r} must be lowercase letters, digits and hyphens", field="slug"
        )
    groups = DEFAULT_BACKGROUNDS if backgrounds is None else backgrounds_validate(backgrounds)
    if Study.objects.filter(slug=slug).exists():
        raise Conflict(f"a study with slug {slug!r} already exists", field="slug")
    if rubric_spec is not None:
        rubric = rubric_create(spec=rubric_spec)
    else:
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
        problem = languages_problem(languages)
        if problem:
            raise DomainError(problem, field="languages")
        study.languages = languages
    if study.allow_cross_language_pairs and not study.asks_languages:
        raise DomainError(
            "cross-language pairs need a study with several languages",
            field="allow_cross_language_pairs",
        )
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError as exc:
        raise Conflict(f"study {slug!r} could not be created: {exc}", field="slug") from exc
    BackgroundGroup.objects.bulk_create(
        BackgroundGroup(study=study, code=code, label=label, position=index)
        for index, (code, label) in enumerate(groups)
    )
    if owner is not None:
        StudyMembership.objects.create(study=study, user=owner, role=StudyMembership.Role.OWNER)
    return study


def backgrounds_validate(
    backgrounds: list[tuple[str, dict[str, str]]],
) -> list[tuple[str, dict[str, str]]]:
    """A study's background groups: distinct slug codes, none called 'unknown' (what imports
    say when they do not know), labels in both languages (the code where one is missing)."""
    seen: set[str] = set()
    out = []
    for index, (code, label) in enumerate(backgrounds):
        where = f"backgrounds[{index}]"
        if (
            not isinstance(code, str)
            or slugify(code).replace("-", "_") != code.replace("-", "_")
            or not code
        ):
            raise DomainError(
                f"{where}: {code!r} must be a code of lowercase letters, digits, _ or -",
                field="backgrounds",
            )
        if code == UNKNOWN_BACKGROUND:
            raise DomainError(
                f"{where}: {UNKNOWN_BACKGROUND!r} is reserved for raters whose background is not known",
                field="backgrounds",
            )
        if code in seen:
            raise DomainError(f"{where}: repeats group {code!r}", field="backgrounds")
        seen.add(code)
        labels = label if isinstance(label, dict) else {}
        out.append(
            (code, {lang: str(labels.get(lang) or code).strip() or code for lang in ("en", "zh")})
        )
    return out


def _differences(item: Item, row: ItemRow) -> list[str]:
    fields = row.model_fields()
    return [name for name in ITEM_COMPARED_FIELDS if getattr(item, name) != fields[name]]


def study_items_import(
    *,
    study: Study,
    data: bytes,
    filename: str,
    as_candidates: bool = False,
    progress: ImportProgress | None = None,
) -> ImportSummary:
    """Import item lines (JSONL or CSV, or a zip of one such file and the pictures it names).
    All lines, and every picture, are checked before anything is written.

    Importing the same file twice changes nothing: an item already stored with the same content
    counts as unchanged; one stored with different content is an error on that line (its
    judgments were made on what is stored). With `as_candidates`, new items wait for a screening
    run instead of going straight into the human study.
    """
    pictures: ItemsZip | None = None
    if is_zip(filename):
        pictures = items_zip_open(data)
        data, filename = pictures.items_data, pictures.items_name
    records = read_records(data, filename=filename, json_columns=ITEM_JSON_COLUMNS)
    return study_items_import_records(
        study=study,
        records=records,
        as_candidates=as_candidates,
        progress=progress,
        pictures=pictures,
    )


def study_items_import_records(
    *,
    study: Study,
    records: Iterable[Record | LineError],
    as_candidates: bool = False,
    progress: ImportProgress | None = None,
    pictures: ItemsZip | None = None,
) -> ImportSummary:
    """Check every line, then write the new items in one transaction (or nothing). The lines
    are checked before it begins: checking writes nothing, and a background import's progress
    (committed as it reads) stays visible meanwhile."""
    # Tens of thousands of rows of small objects (apps/core/collector.py).
    with cyclic_collector_paused():
        rows, errors = parse_items(reporting(records, progress))
        rows, prepared = _pictures_resolve(rows, errors, pictures)
        if progress is not None:
            progress.storing()
        return _items_store(study, rows, errors, as_candidates=as_candidates, pictures=prepared)


def _pictures_resolve(
    rows: list[ItemRow], errors: list[LineError], pictures: ItemsZip | None
) -> tuple[list[ItemRow], list[PreparedImage]]:
    """Each line's picture read from the zip and checked (errors on its line); the rows name
    their pictures by storage name and hash from here on."""
    out: list[ItemRow] = []
    prepared: dict[str, PreparedImage] = {}
    for row in rows:
        if not row.image:
            out.append(row)
            continue
        if pictures is None:
            errors.append(
                LineError.said(
                    row.line,
                    "image_file",
                    Sentence(
                        gettext_noop("names a picture; pictures come in a zip with the items file")
                    ),
                )
            )
            continue
        data = pictures.picture(row.image)
        if data is None:
            errors.append(
                LineError.said(
                    row.line,
                    "image_file",
                    Sentence(
                        gettext_noop("the zip has no file %(name)s"), {"name": repr(row.image)}
                    ),
                )
            )
            continue
        try:
            picture = image_prepare(data)
        except ImageRefused as exc:
            errors.append(LineError.said(row.line, "image_file", exc.sentence))
            continue
        prepared[picture.storage_name] = picture
        out.append(
            dataclasses.replace(row, image=picture.storage_name, image_sha256=picture.sha256)
        )
    return out, list(prepared.values())


@transaction.atomic
def _items_store(
    study: Study,
    rows: list[ItemRow],
    errors: list[LineError],
    *,
    as_candidates: bool,
    pictures: Sequence[PreparedImage] = (),
) -> ImportSummary:
    if not rows and not errors:
        raise ImportRejected(
            [LineError.said(0, "(file)", Sentence(gettext_noop("contains no items")))]
        )
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
                LineError.said(
                    row.line,
                    _FILE_NAME.get(changed[0], changed[0]),
                    Sentence(
                        gettext_noop(
                            "item %(item)s is already in the study with a different %(fields)s"
                        ),
                        {"item": repr(row.external_id), "fields": names},
                    ),
                )
            )
    if errors:
        raise ImportRejected(sorted(errors, key=lambda error: error.line))
    # Every line is good: the pictures go to storage (once per content) before their rows.
    for picture in pictures:
        image_store(picture)
    stage = Item.Stage.CANDIDATE if as_candidates else Item.Stage.STUDY
    now = timezone.now()
    columns = (
        "study_id",
        "stage",
        "held_from_stage",
        *_ITEM_ROW_FIELDS,
        "created_at",
        "updated_at",
    )
    try:
        # A savepoint, so a concurrent import of the same ids surfaces as a clear conflict.
        with transaction.atomic(), references_checked_in_bulk():
            created = bulk_insert(
                Item,
                columns,
                (
                    (
                        study.pk,
                        stage,
                        "",
                        *(getattr(row, name) for name in _ITEM_ROW_FIELDS),
                        now,
                        now,
                    )
                    for row in new_rows
                ),
                returning=True,
            )
    except IntegrityError as exc:
        raise Conflict(
            "another import added some of these items at the same time; try again"
        ) from exc
    # In the same transaction: no rater can be handed an offending item between its import and
    # its hold.
    # Only new items whose texts might match need the full scan (matches, holds): the others
    # have no matches to replace and none to add.
    held = offense_scan_items(
        item_ids=offense_candidates(
            [
                (pk, [row.text, row.scenario, *(turn["text"] for turn in row.context)])
                for pk, row in zip(created, new_rows, strict=True)
            ]
        ),
        request_results=False,
    )
    if not as_candidates and created:
        # New items of the human study are part of its results (counted per model, rated or not);
        # marked stale only, computed once by the worker or `manage.py aggregate`.
        study_results_request(study_id=study.pk, inline=False)
    return ImportSummary(created=len(new_rows), unchanged=len(rows) - len(new_rows), held=held)


EDITABLE_SETTINGS = (
    "name",
    "description",
    "session_minutes",
    "tasks_per_session",
    "target_scorecards_per_item",
    "pair_appearances_per_item",
    "pair_min_opponents",
    "turing_judgments_per_item",
    "attention_check_rate",
    "adaptive_pairing",
    "allow_cross_language_pairs",
    "pair_offers_tie",
    "pair_offers_neither",
    "style_covariates",
    "min_items_per_model",
    "min_raters_per_item",
    "prolific_completion_code",
    "prolific_screenout_code",
    "prolific_no_consent_code",
    "prolific_bonus_per_attention_pass",
    "prolific_bonus_on_completion",
    "screening_top_k",
    "exclusion_max_attention_failures",
    "exclusion_speeder_seconds",
    "exclusion_straight_line_tasks",
    "exclusion_position_min_pairs",
    "exclusion_rules_automatic",
    "exclude_items_not_evidence",
    "count_held_items",
    "culture_fdr",
)
# Settings the statistics read: changing one makes the stored results stale.
ANALYSIS_SETTINGS = (
    "style_covariates",
    "min_items_per_model",
    "min_raters_per_item",
    "culture_fdr",
    "count_held_items",
)


@transaction.atomic
def study_configure(
    *, study: Study, task_mix: dict[str, float] | None = None, **changes: Any
) -> Study:
    """Change a study's settings; every rule is checked before anything is saved."""
    unknown = set(changes) - set(EDITABLE_SETTINGS)
    if unknown:
        raise DomainError(f"unknown setting {sorted(unknown)[0]!r}", field=sorted(unknown)[0])
    locked = Study.objects.select_for_update().get(pk=study.pk)
    before = {name: getattr(locked, name) for name in ANALYSIS_SETTINGS}
    for name, value in changes.items():
        setattr(locked, name, value)
    if task_mix is not None:
        problem = task_mix_problem(task_mix)
        if problem:
            raise DomainError(problem, field="task_mix")
        locked.task_mix = {kind: float(task_mix.get(kind, 0.0)) for kind in TASK_KINDS}
    settings_problem = study_settings_problem(locked)
    if settings_problem:
        raise DomainError(settings_problem[1], field=settings_problem[0])
    if not locked.name.strip():
        raise DomainError("the study needs a name", field="name")
    if locked.allow_cross_language_pairs and not locked.asks_languages:
        raise DomainError(
            "cross-language pairs need a study with several languages",
            field="allow_cross_language_pairs",
        )
    analysis_changed = any(getattr(locked, name) != before[name] for name in ANALYSIS_SETTINGS)
    locked.save()
    if analysis_changed:
        study_results_request(study_id=locked.pk, inline=False)
    return locked


@transaction.atomic
def study_quotas_set(*, study: Study, quotas: dict[str, int | None]) -> None:
    """Set enrolment quotas per background group (None = no limit); never below places taken."""
    groups = {g.code: g for g in BackgroundGroup.objects.select_for_update().filter(study=study)}
    problem = quotas_problem({**{code: g.quota for code, g in groups.items()}, **quotas})
    if problem:
        raise DomainError(problem[1], field=problem[0])
    for code, quota in quotas.items():
        group = groups.get(code)
        if group is None:
            raise DomainError(f"unknown background group {code!r}", field=f"quota_{code}")
        if quota is not None and quota < group.filled:
            raise DomainError(
                f"{code}: {group.filled} raters are already enrolled; the quota cannot be lower",
                field=f"quota_{code}",
            )
    for code, quota in quotas.items():
        BackgroundGroup.objects.filter(pk=groups[code].pk).update(quota=quota)


@transaction.atomic
def study_status_set(*, study: Study, status: str) -> Study:
    """Open or close a study. Opening needs items; a closed study can be reopened."""
    if status not in Study.Status.values:
        raise DomainError(f"unknown status {status!r}", field="status")
    locked = Study.objects.select_for_update().get(pk=study.pk)
    if (
        status == Study.Status.OPEN
        and not Item.objects.filter(study=locked, stage=Item.Stage.STUDY).exists()
    ):
        raise DomainError(
            "a study needs items in the human study before it can open", field="status"
        )
    if status == Study.Status.DRAFT and locked.status != Study.Status.DRAFT:
        raise Conflict(
            "a study that has been opened cannot go back to draft; close it instead", field="status"
        )
    locked.status = status
    locked.save(update_fields=["status", "updated_at"])
    return locked


@transaction.atomic
def study_member_add(
    *, study: Study, user: User, role: str = StudyMembership.Role.MEMBER
) -> StudyMembership:
    membership, _ = StudyMembership.objects.get_or_create(
        study=study, user=user, defaults={"role": role}
    )
    return membership


@transaction.atomic
def study_settings_update(
    *,
    study: Study,
    quotas: dict[str, int | None] | None = None,
    task_mix: dict[str, float] | None = None,
    **changes: Any,
) -> Study:
    """Settings, task mix and quotas checked and saved together: a refused quota leaves no
    half-saved settings behind (the settings page and the API both change them in one go)."""
    if changes or task_mix is not None:
        study = study_configure(study=study, task_mix=task_mix, **changes)
    if quotas is not None:
        study_quotas_set(study=study, quotas=quotas)
    return study
