"""Chinese everywhere a researcher or a rater looks: every page of both demo studies, rendered
in Simplified Chinese, shows no interface string in English.

Item texts, study names, model names, topics and other values the researcher entered are left
out (they are data, in whatever language they were written); what remains must be Chinese,
numbers, or one of the method's proper names (Bradley-Terry, Krippendorff, ...).
"""

from __future__ import annotations

import gettext
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from apps.judgments.models import ScoreResponse
from apps.raters.models import BackgroundGroup
from apps.screening.models import JudgeVerdict
from apps.studies.models import Item, Study
from tests.pages.conftest import SITE_PAGES, researcher_pages
from tests.pages.visible import visible_texts

pytestmark = pytest.mark.django_db

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.mo"
# Proper names and formats that stay as they are in Chinese text.
NAMES = {
    "laughlab",
    "bradley",
    "terry",
    "krippendorff",
    "fleiss",
    "funnyscore",
    "prolific",
    "pearson",
    "spearman",
    "fisher",
    "mcfadden",
    "csv",
    "json",
    "jsonl",
    "xlsx",
    "html",
    "pdf",
    "llm",
    "auc",
    "turing",
    "utc",
    "api",
    "url",
    "sha",
    "ctrl",
    "cos",
    "kappa",
    "alpha",
    "cohen",
    "likert",
    "https",
    "http",
    "zip",
    "nat",
    "bootstrap",
    "enter",
    # Multiple-comparison corrections named after their authors.
    "holm",
    "benjamini",
    "hochberg",
    "bonferroni",
    "wilson",
    # D_obs / D_exp in the agreement formula.
    "obs",
    "exp",
    # Spearman's rho, spelt out.
    "rho",
    # The language switch names each language in its own words.
    "english",
}
# What the catalogue once left untranslated on these pages, looked for by name.
KNOWN_ENGLISH = [
    "Exclusion speeder seconds",
    "Screening top k",
    "Exclusion max attention failures",
    "Exclusion straight line tasks",
    "Exclusion position min pairs",
    "Exclusion rules automatic",
    "Exclude items not evidence",
    "funniness",
    "surprise",
    "coherence",
    "informativeness",
    "originality",
    "fluency",
    "self_deprecating",
    "scenario_response",
    "observational",
    "traditional_industries",
    "content_operations",
    "administrative_support",
    "too_few_items",
    "disconnected_comparisons",
    "rated items",
    "separate groups",
]


def _data_values() -> list[str]:
    """Values the researcher or the data brought: shown as they are, in any language."""
    values: set[str] = set()
    for study in Study.objects.all():
        values |= {study.name, study.slug, study.description}
    for row in Item.objects.values("external_id", "text", "source", "topic", "scenario"):
        values |= {str(v) for k, v in row.items() if (v and k != "source") or v != "human"}
    for context in Item.objects.values_list("context", flat=True):
        values |= {str(turn.get("text")) for turn in context or []}
    values |= set(Study.objects.values_list("prolific_completion_code", flat=True))
    values.add(settings.DEMO_RESEARCHER_USERNAME)
    # The LLM judge's model name, as the deployment configured it.
    values |= set(JudgeVerdict.objects.values_list("model_name", flat=True))
    return sorted((v for v in values if v and len(v) > 1), key=len, reverse=True)


def _english_words(text: str) -> list[str]:
    words = re.findall(r"[A-Za-z][A-Za-z'’]{2,}", text)
    return [w for w in words if w.lower().strip("'’") not in NAMES]


def _catalogue() -> set[str]:
    """Every translated msgid that is a whole interface string (no placeholders)."""
    with CATALOGUE.open("rb") as handle:
        catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    out = set()
    for key, msgstr in catalog.items():
        msgid = key[0] if isinstance(key, tuple) else key
        msgid = msgid.split("\x04", 1)[-1]  # a context's prefix
        if "%(" in msgid or "{" in msgid or "<" in msgid or not re.search("[A-Za-z]{3}", msgid):
            continue
        if not msgstr or msgstr.strip() == msgid.strip():
            continue
        out.add(msgid.strip())
    return out


def _rater_pages(client: Client, study: Study) -> dict[str, str]:
    """The enrolment page, then every kind of task page the study gives, and the end page."""
    pages = {f"/s/{study.slug}/": client.get(f"/s/{study.slug}/").content.decode()}
    group = BackgroundGroup.objects.filter(study=study).order_by("position").first()
    assert group is not None
    enrolled = client.post(
        f"/s/{study.slug}/",
        {
            "background": group.code,
            "age_band": "25-34",
            "consent": "on",
            "languages": ["en", "zh"],
        },
    )
    assert enrolled.status_code in (200, 302)
    task = client.get(f"/s/{study.slug}/task/")
    pages[f"/s/{study.slug}/task/"] = task.content.decode()
    pages[f"/s/{study.slug}/end/"] = client.get(f"/s/{study.slug}/end/").content.decode()
    return pages


def _page_texts(study: Study) -> dict[str, str]:
    researcher = get_user_model().objects.get(username=settings.DEMO_RESEARCHER_USERNAME)
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(researcher)
    pages = {}
    for url in [*SITE_PAGES, *researcher_pages(study)]:
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.headers["Content-Language"] == "zh-hans", url
        pages[url] = response.content.decode()
    pages.update(_rater_pages(Client(HTTP_ACCEPT_LANGUAGE="zh-hans"), study))
    return pages


def _untranslated(pages: dict[str, str]) -> dict[str, list[str]]:
    data = _data_values()
    catalogue = _catalogue()
    found: dict[str, list[str]] = {}
    for url, html in pages.items():
        problems: list[str] = []
        for text in visible_texts(html):
            shown = text
            if len(shown.strip(" ,.…")) > 2 and any(shown.strip(" ,.…") in value for value in data):
                continue  # a paragraph of an item's text, or a word of it marked on its own
            if shown.endswith(("...", "…")):
                # An item text cut short for a table cell.
                start = shown.rstrip(".…")
                if any(value.startswith(start) for value in data):
                    continue
            for value in data:
                if value in shown:
                    shown = re.sub(rf"(?<![A-Za-z]){re.escape(value)}(?![A-Za-z])", " ", shown)
            # Hashes, identifiers in code style and URLs are not words.
            shown = re.sub(r"https?://\S+|\b[0-9a-f]{16,}\b|\b\w*[_/]\w*\b", " ", shown)
            if shown.strip() in catalogue and shown.strip().lower() not in NAMES:
                problems.append(f"catalogue string shown in English: {shown.strip()!r}")
            elif _english_words(shown):
                problems.append(f"{text[:120]!r} ({' '.join(_english_words(shown)[:5])})")
        low = " ".join(visible_texts(html))
        for label in KNOWN_ENGLISH:
            if re.search(rf"(?<![A-Za-z_]){re.escape(label)}(?![A-Za-z_])", low):
                problems.append(f"known English label {label!r}")
        if problems:
            found[url] = sorted(set(problems))
    return found


@pytest.mark.parametrize("which", ["humor", "content"])
def test_every_page_of_the_demo_studies_is_chinese_in_chinese(demo_site, which):
    study = getattr(demo_site, which)
    assert ScoreResponse.objects.filter(study=study).exists()
    found = _untranslated(_page_texts(study))
    report = "\n".join(f"{url}\n  " + "\n  ".join(lines) for url, lines in found.items())
    assert not found, "English on Chinese pages:\n" + report
