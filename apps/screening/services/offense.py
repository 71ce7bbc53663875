"""The offense filter's writes: scan items against the active terms, hold what matches, release.

An item is never deleted for what it says. A match holds it (stage "held", remembering the stage
it came from) so that no rater sees it; a researcher who reads it may release it, and a released
item stays released through later scans while its matches stay on record.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from apps.analysis.services import study_results_request
from apps.core.errors import Conflict, NotFound
from apps.screening.models import OffenseMatch, OffenseTerm
from apps.screening.offense import Hit, Matcher, matcher_for, normalize_term
from apps.studies.models import Item, Study

# Rows per query: SQLite caps the parameters of one statement.
_CHUNK = 500
_MATCHED_MAX = OffenseMatch._meta.get_field("matched").max_length or 128


def _active_terms() -> tuple[Matcher, dict[tuple[str, str], int]]:
    rows = OffenseTerm.objects.filter(is_active=True).values_list("pk", "language", "term")
    ids: dict[tuple[str, str], int] = {}
    for pk, language, term in rows:
        ids.setdefault((language, normalize_term(term)), pk)
    return matcher_for(ids.keys()), ids


def _scanned_texts(item: Item) -> list[tuple[str, str]]:
    """(where, text) for everything a rater reads with the item. A dialogue turn is
    "context:<index>", its position in `item.context`."""
    texts = [("text", item.text)]
    for index, turn in enumerate(item.context or []):
        text = turn.get("text") if isinstance(turn, dict) else turn
        if isinstance(text, str) and text:
            texts.append((f"context:{index}", text))
    if item.scenario:
        texts.append(("scenario", item.scenario))
    return texts


def offense_candidates(texts: Sequence[tuple[int, list[str]]]) -> list[int]:
    """Of (item id, texts a rater reads with it), the ids whose texts the active terms might
    match: only those need offense_scan_items when the items are new (nothing matched or
    released before). Reads no item from the database."""
    matcher, _ = _active_terms()
    return [pk for pk, parts in texts if any(matcher.could_match(part) for part in parts)]


def scanned_text(item: Item, where: str) -> str:
    """The text a match's `where` points to ("" when the item no longer has it)."""
    return dict(_scanned_texts(item)).get(where, "")


def _item_matches(
    item: Item, matcher: Matcher, ids: dict[tuple[str, str], int]
) -> list[OffenseMatch]:
    found: list[OffenseMatch] = []
    for where, text in _scanned_texts(item):
        hit: Hit
        for hit in matcher.find(text):
            found.append(
                OffenseMatch(
                    item=item,
                    term_id=ids.get((hit.language, hit.term)),
                    matched=hit.matched[:_MATCHED_MAX],
                    where=where,
                    start=hit.start,
                )
            )
    return found


@transaction.atomic
def offense_scan_items(
    *,
    items: Sequence[Item] = (),
    item_ids: Sequence[int] = (),
    request_results: bool = True,
) -> int:
    """Replace these items' matches with what the active terms find now, and hold or free them.

    `items` or `item_ids` name them. `request_results=False`: the caller asks for fresh results
    itself (an import, which has just added the items).

    An item with matches that no researcher released is held (its stage remembered); a held item
    without matches any more goes back to the stage it was held from; a released item stays
    where it is. Returns how many of these items are held after the scan.
    """
    matcher, ids = _active_terms()
    pks = sorted({item.pk for item in items} | set(item_ids))
    now = timezone.now()
    held = 0
    # Studies whose human-study items changed: a hold takes an item out of the results, a
    # freed one puts it back.
    changed_studies: set[int] = set()
    for offset in range(0, len(pks), _CHUNK):
        chunk = pks[offset : offset + _CHUNK]
        # Locked in id order, so a release or another scan of the same items waits its turn
        # instead of deciding on a stage that is about to change.
        locked = list(
            Item.objects.select_for_update()
            .filter(pk__in=chunk)
            .only(
                "pk",
                "study_id",
                "stage",
                "held_from_stage",
                "offense_released_at",
                "text",
                "context",
                "scenario",
            )
            .order_by("pk")
        )
        OffenseMatch.objects.filter(item_id__in=chunk).delete()
        matches: list[OffenseMatch] = []
        changed: list[Item] = []
        for item in locked:
            found = _item_matches(item, matcher, ids)
            matches.extend(found)
            if found and item.offense_released_at is None and item.stage != Item.Stage.HELD:
                item.held_from_stage = item.stage
                item.stage = Item.Stage.HELD
                changed.append(item)
                if item.held_from_stage == Item.Stage.STUDY:
                    changed_studies.add(item.study_id)
            elif not found and item.stage == Item.Stage.HELD:
                item.stage = item.held_from_stage or Item.Stage.STUDY
                item.held_from_stage = ""
                changed.append(item)
                if item.stage == Item.Stage.STUDY:
                    changed_studies.add(item.study_id)
            if item.stage == Item.Stage.HELD:
                held += 1
        for item in changed:
            item.updated_at = now
        Item.objects.bulk_update(changed, ["stage", "held_from_stage", "updated_at"])
        OffenseMatch.objects.bulk_create(matches)
    for study_id in sorted(changed_studies if request_results else ()):
        study_results_request(study_id=study_id)
    return held


@transaction.atomic
def offense_rescan_study(*, study: Study) -> int:
    """Scan every item of the study again, after the term lists changed; returns items held."""
    items = list(Item.objects.filter(study=study).only("pk"))
    return offense_scan_items(items=items)


@transaction.atomic
def item_offense_release(*, study: Study, item_id: int, user: User) -> Item:
    """Let a held item back to the stage it was held from; later scans leave it there."""
    try:
        item = Item.objects.select_for_update().get(study=study, pk=item_id)
    except Item.DoesNotExist:
        raise NotFound(f"no item {item_id} in this study", field="item_id") from None
    if item.stage != Item.Stage.HELD:
        raise Conflict(
            f"item {item.external_id!r} is not held by the offense filter", field="item_id"
        )
    item.stage = item.held_from_stage or Item.Stage.STUDY
    item.held_from_stage = ""
    item.offense_released_at = timezone.now()
    item.offense_released_by = user
    item.save(
        update_fields=[
            "stage",
            "held_from_stage",
            "offense_released_at",
            "offense_released_by",
            "updated_at",
        ]
    )
    if item.stage == Item.Stage.STUDY:
        study_results_request(study_id=study.pk)
    return item
