"""The offense filter's page: items it holds and why, items researchers released, a re-scan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.contrib import messages
from django.contrib.auth.models import User
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from apps.core.errors import DomainError
from apps.screening.models import OffenseMatch
from apps.screening.offense import Excerpt, excerpt
from apps.screening.services.offense import (
    item_offense_release,
    offense_rescan_study,
    scanned_text,
)
from apps.studies.access import study_view
from apps.studies.models import Item, Study


@dataclass(frozen=True)
class MatchRow:
    term: str
    category: str
    where: str
    excerpt: Excerpt


@dataclass(frozen=True)
class ItemRow:
    item: Item
    matches: list[MatchRow]


def _where_label(where: str) -> str:
    if where.startswith("context:"):
        index = where.partition(":")[2]
        if index.isdigit():
            return _("Dialogue turn %(n)d") % {"n": int(index) + 1}
    return {"text": _("Text"), "scenario": _("Scenario")}.get(where, where)


def _rows(items: QuerySet[Item]) -> list[ItemRow]:
    matches = Prefetch("offense_matches", queryset=OffenseMatch.objects.select_related("term"))
    rows: list[ItemRow] = []
    for item in items.prefetch_related(matches):
        found: list[MatchRow] = []
        for match in item.offense_matches.all():
            text = scanned_text(item, match.where)
            shown = (
                excerpt(text, start=match.start, length=len(match.matched))
                if text
                else Excerpt(before="", matched=match.matched, after="")
            )
            found.append(
                MatchRow(
                    term=match.term.term if match.term else _("(deleted term)"),
                    category=match.term.category if match.term else "",
                    where=_where_label(match.where),
                    excerpt=shown,
                )
            )
        rows.append(ItemRow(item=item, matches=found))
    return rows


def _page(request: HttpRequest, study: Study, *, status: int = 200) -> HttpResponse:
    items = Item.objects.filter(study=study)
    context = {
        "study": study,
        "held": _rows(items.filter(stage=Item.Stage.HELD).order_by("external_id")),
        "released": _rows(
            items.filter(offense_released_at__isnull=False)
            .select_related("offense_released_by")
            .order_by("-offense_released_at", "external_id")
        ),
    }
    return render(request, "screening/offense.html", context, status=status)


@study_view
@require_GET
def offense_page(request: HttpRequest, study: Study) -> HttpResponse:
    return _page(request, study)


@study_view
@require_POST
def offense_rescan(request: HttpRequest, study: Study) -> HttpResponse:
    held = offense_rescan_study(study=study)
    messages.success(
        request,
        ngettext(
            "All items were scanned again; %(held)d is held by the offense filter.",
            "All items were scanned again; %(held)d are held by the offense filter.",
            held,
        )
        % {"held": held},
    )
    return HttpResponseRedirect(reverse("screening:offense", args=[study.slug]))


@study_view
@require_POST
def offense_release(request: HttpRequest, study: Study) -> HttpResponse:
    raw = request.POST.get("item_id", "").strip()
    try:
        # Longer numbers are no item's id, and would overflow the database's integer.
        if not raw.isdecimal() or len(raw) > 18:
            raise DomainError(_("Choose a held item to release."), field="item_id")
        # study_view lets only logged-in users through.
        user = cast(User, request.user)
        item = item_offense_release(study=study, item_id=int(raw), user=user)
    except DomainError as exc:
        messages.error(request, exc.message)
        return _page(request, study, status=exc.status_code)
    messages.success(
        request,
        _("Item %(item)s was released and is back where it was: %(stage)s.")
        % {"item": item.external_id, "stage": item.get_stage_display()},
    )
    return HttpResponseRedirect(reverse("screening:offense", args=[study.slug]))


urlpatterns: list[URLPattern] = [
    path("offense/", offense_page, name="offense"),
    path("offense/rescan/", offense_rescan, name="offense_rescan"),
    path("offense/release/", offense_release, name="offense_release"),
]
