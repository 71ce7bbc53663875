"""Form controls are told apart by their names and elements by their ids: on every researcher and
rater page of both demo studies, no form holds two controls of one name (a radio group, a set of
checkboxes or submit buttons that share a name are one control), no page holds two elements
with one id, and on the exports page no two controls share a name at all (its report language
and the interface language were both `language`)."""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from tests.pages.conftest import SITE_PAGES, researcher_pages
from tests.pages.test_chinese_pages import _rater_pages

pytestmark = pytest.mark.django_db

CONTROLS = {"input", "select", "textarea", "button"}
# Controls that share a name by design: one answer among them is sent, or a set of values.
GROUPED = {"radio", "checkbox", "submit"}
# One in every form that posts, by Django's design: each form sends its own.
PER_FORM = {"csrfmiddlewaretoken"}


class Controls(HTMLParser):
    """The named controls of each form (and of the page), and every id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: Counter[str] = Counter()
        self.forms: list[list[tuple[str, str]]] = []
        self.page: list[tuple[str, str]] = []
        self._open: list[tuple[str, str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        if values.get("id"):
            self.ids[values["id"]] += 1
        if tag == "form":
            self._open = []
            self.forms.append(self._open)
        elif tag in CONTROLS and values.get("name"):
            kind = values.get("type", "submit" if tag == "button" else "text").lower()
            control = (values["name"], kind if tag in {"input", "button"} else tag)
            self.page.append(control)
            if self._open is not None:
                self._open.append(control)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._open = None


def _clashes(controls: list[tuple[str, str]]) -> list[str]:
    kinds: dict[str, list[str]] = {}
    for name, kind in controls:
        kinds.setdefault(name, []).append(kind)
    return [
        f"{name} ({', '.join(found)})"
        for name, found in kinds.items()
        if len(found) > 1 and not (len(set(found)) == 1 and found[0] in GROUPED)
    ]


def _problems(url: str, html: str) -> list[str]:
    parsed = Controls()
    parsed.feed(html)
    problems = [f"{url}: id {ident!r} {n} times" for ident, n in parsed.ids.items() if n > 1]
    for number, form in enumerate(parsed.forms, 1):
        problems += [f"{url}: form {number} has {clash}" for clash in _clashes(form)]
    if "/exports/" in url:
        page = [control for control in parsed.page if control[0] not in PER_FORM]
        problems += [f"{url}: the page has {clash}" for clash in _clashes(page)]
    return problems


def _pages(study) -> dict[str, str]:  # type: ignore[no-untyped-def]
    researcher = get_user_model().objects.get(username=settings.DEMO_RESEARCHER_USERNAME)
    client = Client()
    client.force_login(researcher)
    pages = {}
    for url in [*SITE_PAGES, *researcher_pages(study)]:
        response = client.get(url)
        assert response.status_code == 200, url
        pages[url] = response.content.decode()
    pages.update(_rater_pages(Client(), study))
    return pages


@pytest.mark.parametrize("which", ["humor", "content"])
def test_no_form_repeats_a_control_name_and_no_page_repeats_an_id(demo_site, which):
    pages = _pages(getattr(demo_site, which))
    assert any("/exports/" in url for url in pages)
    assert any("/task/" in url for url in pages)
    problems = [problem for url, html in pages.items() for problem in _problems(url, html)]
    assert not problems, "\n".join(problems)


def test_the_checks_catch_a_repeated_name_and_id():
    html = (
        '<form><select name="language" id="a"></select><input type="radio" name="r">'
        '<input type="radio" name="r"></form><form><input name="language" id="a"></form>'
    )
    assert _problems("/exports/", html) == [
        "/exports/: id 'a' 2 times",
        "/exports/: the page has language (select, text)",
    ]
    assert _problems("/x/", '<form><input name="q"><input type="hidden" name="q"></form>') == [
        "/x/: form 1 has q (text, hidden)"
    ]
