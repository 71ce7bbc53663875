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

from apps.analysis.labels import ITEM_FLAGS
from apps.generation.models import Prompt, PromptSet
from apps.raters.models import DEFAULT_BACKGROUNDS, BackgroundGroup
from apps.screening.models import JudgeVerdict
from apps.studies.models import Item, Question, Study
from tests.pages.visible import visible_texts

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.mo"
# Proper names and formats that stay as they are in Chinese text.
NAMES = {
    "laughlab",
    # File formats, named as their makers name them.
    "jsonl",
    "csv",
    "zip",
    "jpeg",
    "png",
    "webp",
    "bradley",
    "terry",
    "krippendorff",
    "fleiss",
    "funnyscore",
    # The shipped L1 prior is named after the data set it was trained on.
    "humicroedit",
    "prolific",
    "pearson",
    "spearman",
    # The tie models of the pair board (Davidson 1970, Rao & Kupper 1967).
    "davidson",
    "rao",
    "kupper",
    "fisher",
    "mcfadden",
    "json",
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
    # The chat-completions protocol's maker, as the endpoints are known.
    "openai",
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


# Stored codes that must never reach a page as they are: each has a label in the reader's
# language (apps/analysis/labels.py). Identifiers in code style (snake_case, paths) are otherwise
# left alone, so these are looked for by name, short ones ("bt") included.
CODES = {
    # humor types
    "pun",
    "callback",
    "observational",
    "absurd",
    "self_deprecating",
    "scenario_response",
    "wordplay",
    "irony",
    "satire",
    "unspecified",
    # test levels
    "single",
    "multi_turn",
    "scenario",
    # warnings
    "too_few_items",
    "too_few_raters",
    "controversial_question",
    "culture_dependent_items",
    "disconnected_comparisons",
    "items_never_paired",
    "bt_not_converged",
    "bt_disconnected_rounds",
    "bt_unbounded_items",
    "controversial",
    "culture_dependent",
    *ITEM_FLAGS,
    # what the model comparison's ranks are ordered by
    "bt",
    # background groups
    *(code for code, _labels in DEFAULT_BACKGROUNDS),
}


def _codes() -> set[str]:
    """The fixed codes, and the stored ones: every question's and background group's name."""
    codes = set(CODES)
    codes |= set(Question.objects.values_list("name", flat=True))
    codes |= set(BackgroundGroup.objects.values_list("code", flat=True))
    return codes


def _data_values() -> list[str]:
    """Values the researcher or the data brought: shown as they are, in any language."""
    values: set[str] = set()
    for study in Study.objects.all():
        values |= {study.name, study.slug, study.description}
    for row in Item.objects.values(
        "external_id", "text", "source", "topic", "scenario", "explanation"
    ):
        values |= {str(v) for k, v in row.items() if (v and k != "source") or v != "human"}
    for context in Item.objects.values_list("context", flat=True):
        values |= {str(turn.get("text")) for turn in context or []}
    values |= set(Study.objects.values_list("prolific_completion_code", flat=True))
    values.add(settings.DEMO_RESEARCHER_USERNAME)
    # The LLM judge's model name, as the deployment configured it.
    values |= set(JudgeVerdict.objects.values_list("model_name", flat=True))
    # Prompt sets and their prompts: the researcher's (or the example sets') own words.
    values |= set(PromptSet.objects.values_list("name", flat=True))
    for row in Prompt.objects.values("external_id", "text", "topic", "scenario"):
        values |= {str(v) for v in row.values() if v}
    for context in Prompt.objects.values_list("context", flat=True):
        values |= {str(turn.get("text")) for turn in context or []}
    for constraints in Prompt.objects.values_list("constraints", flat=True):
        values |= {str(line) for line in constraints or []}
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
    codes = _codes()
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
            shown = re.sub(r"https?://\S+", " ", shown)
            raw = sorted({w for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", shown) if w in codes})
            if raw:
                problems.append(f"{text[:120]!r} (raw code {' '.join(raw)})")
            # Hashes, other identifiers in code style and paths are not words.
            shown = re.sub(r"\b[0-9a-f]{16,}\b|\b\w*[_/]\w*\b", " ", shown)
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
