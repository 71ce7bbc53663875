"""The text a reader sees on a page: text nodes outside scripts and styles, and the attributes
that are shown (title, placeholder, alt, aria-label, value of buttons)."""

from __future__ import annotations

from html.parser import HTMLParser

SHOWN_ATTRIBUTES = ("title", "placeholder", "alt", "aria-label")
# Scripts and styles are not shown; <code> holds identifiers (item ids, table and file names,
# slugs) that a reader types as they are; a <textarea> holds a value the researcher edits (the
# custom rubric's JSON, whose keys are the interchange format's).
HIDDEN = {"script", "style", "template", "code", "kbd", "textarea"}
VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "track",
    "wbr",
}


class _Visible(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.hidden = 0
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if not self.hidden:
            for name in SHOWN_ATTRIBUTES:
                if values.get(name):
                    self.texts.append(str(values[name]))
            if (
                tag == "input"
                and values.get("type") in ("submit", "button")
                and values.get("value")
            ):
                self.texts.append(str(values["value"]))
        if tag in VOID:
            return
        self.stack.append(tag)
        if tag in HIDDEN:
            self.hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        while self.stack:
            top = self.stack.pop()
            if top in HIDDEN:
                self.hidden -= 1
            if top == tag:
                break

    def handle_data(self, data: str) -> None:
        if not self.hidden and data.strip():
            self.texts.append(" ".join(data.split()))


def visible_texts(html: str) -> list[str]:
    parser = _Visible()
    parser.feed(html)
    return parser.texts
