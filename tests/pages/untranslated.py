"""Finding interface strings left in English on a page rendered in Chinese.

Item texts, study names, model names, topics and other values the researcher entered are left
out (they are data, in whatever language they were written); what remains must be Chinese,
numbers, or one of the method's proper names (Bradley-Terry, Krippendorff, ...). The Chinese
pages test and the Chinese report test both read their findings from here.
"""

from __future__ import annotations

import gettext
import re
from pathlib import Path

from django.conf import settings

from apps.screening.models import JudgeVerdict
from apps.studies.models import Item, Study
from tests.pages.visible import visible_texts

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


def untranslated(pages: dict[str, str]) -> dict[str, list[str]]:
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
