"""Language codes of studies, items and raters, and their names in the interface.

Items carry a language code (`lang` in the items file, "en", "zh", ...); a study lists the
languages its raters may read (`Study.languages`); a rater says which of those they read at
enrolment (`Rater.languages`). The interface itself runs in English or Simplified Chinese
(`zh-hans`), which maps onto the study code "zh".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$")
CHINESE_CODES = frozenset({"zh-cn", "zh-hans", "zh-sg", "cmn"})
# A rater who stated no languages (imported without them): their own group in the results.
UNSTATED = "unstated"

_NAMES: dict[str, Promise] = {
    "en": _("English"),
    "zh": _("Chinese"),
}


def normalise(code: str) -> str:
    """The study's code for a language: lower case, `-` separators, Chinese variants as "zh"."""
    code = code.strip().lower().replace("_", "-")
    return "zh" if code in CHINESE_CODES else code


def languages_problem(languages: object) -> str | None:
    """Why `languages` is not a valid list of study languages, or None."""
    if not isinstance(languages, list) or not languages:
        return "languages must be a non-empty list of language codes such as 'en' or 'zh'"
    for code in languages:
        if not isinstance(code, str) or not LANGUAGE_CODE.match(code):
            return f"{code!r} is not a language code such as 'en' or 'zh'"
    if len(set(languages)) != len(languages):
        return "each language may be listed once"
    return None


def from_interface(interface_language: str | None, study_languages: Sequence[str]) -> list[str]:
    """The study languages to preselect for a rater using the interface in this language."""
    code = normalise(interface_language or "")
    base = code.split("-")[0]
    for candidate in (code, base):
        if candidate in study_languages:
            return [candidate]
    return []


def name(code: str) -> str:
    """The language's name in the current interface language (the code itself if unknown)."""
    known = _NAMES.get(code)
    return str(known) if known is not None else code


def rater_key(languages: Iterable[str]) -> str:
    """A rater's languages as one results group: "en", "zh", "en+zh"; UNSTATED when none."""
    codes = sorted(set(languages))
    return "+".join(codes) if codes else UNSTATED


def rater_key_name(key: str) -> str:
    """A results group of rater languages, for a page: "English + Chinese", "not stated"."""
    if key == UNSTATED:
        return str(_("not stated"))
    return " + ".join(name(code) for code in key.split("+"))


def group_name(group: str, dimension: str) -> str:
    """A results group's name for a page: languages by name, any other group as it is."""
    if dimension == "language":
        return name(group)
    if dimension == "rater_language":
        return rater_key_name(group)
    return group
