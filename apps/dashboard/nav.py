"""The study's navigation, in the order a study runs: prepare the items, collect ratings, read
the results, export them. Each page belongs to one entry, so the group a page is in is known
even on the pages below an entry (a prompt set under Generation, an import under Set-up)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from apps.dashboard.context import RESULT_SECTIONS
from apps.studies.models import Study

# The results section that is about collecting (who rated what), not about the findings.
COLLECT_SECTIONS = ("quality",)


@dataclass(frozen=True)
class Entry:
    label: str | Promise
    url: str
    current: bool = False  # this very page
    within: bool = False  # a page below this entry


@dataclass(frozen=True)
class Group:
    key: str
    label: str | Promise
    entries: list[Entry]

    @property
    def current(self) -> bool:
        return any(entry.current or entry.within for entry in self.entries)

    @property
    def url(self) -> str:
        return self.entries[0].url


def _section(slug: str, key: str) -> str:
    return reverse("dashboard:results_section", args=[slug, key])


def study_nav(*, study: Study, path: str) -> list[Group]:
    """The study's pages in four labelled groups, the page at `path` marked: the entry whose
    URL it is, or else the entry with the longest URL it starts with (the study's own page,
    a prefix of every other, only by an exact match). Imports belong to the set-up."""
    slug = study.slug
    sections = dict(RESULT_SECTIONS)
    prepare = [
        (_("Set-up"), reverse("dashboard:settings", args=[slug])),
        (_("Generation"), reverse("generation:overview", args=[slug])),
        (_("Offense filter"), reverse("screening:offense", args=[slug])),
        (_("Screening"), reverse("screening:overview", args=[slug])),
        (_("LLM judge"), reverse("screening:judge", args=[slug])),
    ]
    if study.rubric.kind == "content":
        prepare.append((_("Content evaluation"), reverse("content:evaluation", args=[slug])))
    overview = reverse("dashboard:overview", args=[slug])
    collect = [
        (_("Progress"), overview),
        *((sections[key], _section(slug, key)) for key in COLLECT_SECTIONS),
        (_("Exclusions"), reverse("exclusions:page", args=[slug])),
        (_("Prolific"), reverse("dashboard:prolific", args=[slug])),
    ]
    results = [
        (_("Summary"), reverse("dashboard:results", args=[slug])),
        *(
            (label, _section(slug, key))
            for key, label in RESULT_SECTIONS
            if key not in COLLECT_SECTIONS
        ),
    ]
    exports = [(_("Exports"), reverse("reports:exports", args=[slug]))]
    groups = [
        ("prepare", _("Prepare"), prepare),
        ("collect", _("Collect"), collect),
        ("results", _("Results"), results),
        ("exports", _("Exports"), exports),
    ]
    urls = [url for _group, _label, entries in groups for _entry, url in entries]
    lookup = f"{overview}settings/" if path.startswith(f"{overview}imports/") else path
    below = [url for url in urls if url != overview and lookup.startswith(url)]
    parent = max(below, key=len) if below and path not in urls else None
    return [
        Group(
            key=key,
            label=label,
            entries=[
                Entry(label=text, url=url, current=url == path, within=url == parent)
                for text, url in entries
            ],
        )
        for key, label, entries in groups
    ]
