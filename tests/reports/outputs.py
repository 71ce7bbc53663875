"""Reading back what each output of a study shows: HTML tables and marked elements (the pages
and the printable report), the PDF's text, and the rows of the XLSX sheets and CSV files.

Only layout is read here; which figure sits where is declared by test_figure_consistency.py.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

# A number as a reader sees it: not part of an identifier ("j001", "laughter-7b"), a hash or a
# version ("1.2.3"); one that ends a sentence ("lost every comparison: 6.") is a number.
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)")
# Elements whose text is a cell of its own: read apart from the next one, as on the screen.
CELLS = {"td", "th", "dt", "dd", "li"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
HIDDEN = {"script", "style", "template", "svg", "title"}
AMBIGUOUS = object()


def numbers(text: str) -> list[str]:
    return NUMBER.findall(text.replace("\u2212", "-"))


def squash(text: str) -> str:
    return " ".join(text.replace("\u00a0", " ").split())


@dataclass
class HtmlTable:
    heading: str
    header: list[str]
    rows: list[tuple[dict[str, str], list[str]]] = field(default_factory=list)

    def index(self) -> dict[Any, Any]:
        """Rows by every cell's text, by their first two and three cells, and by their data-*
        attributes (("data-item", "j001")); a key that names two rows is ambiguous."""
        found: dict[Any, Any] = {}
        for attrs, cells in self.rows:
            keys: list[Any] = [*cells, tuple(cells[:2]), tuple(cells[:3])]
            keys += [(name, value) for name, value in attrs.items() if name.startswith("data-")]
            row = dict(zip(self.header, cells, strict=False))
            for key in dict.fromkeys(keys):
                found[key] = AMBIGUOUS if key in found and found[key] is not row else row
        return found


class _Reader(HTMLParser):
    """Tables keyed by (the heading above them, their first column's header), and the text of
    every element that carries a class or a data-* attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str], list[str]]] = []
        self.hidden = 0
        self.heading = ""
        self.heading_depth: int | None = None
        self.tables: list[HtmlTable] = []
        self.elements: list[tuple[str, dict[str, str], str]] = []
        self.table: HtmlTable | None = None
        self.in_head = False
        self.cells: list[str] | None = None
        self.row_attrs: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag in VOID:
            if tag == "br":
                self.handle_data(" ")
            return
        if tag in HIDDEN:
            self.hidden += 1
        if tag in ("h1", "h2", "h3"):
            self.heading = ""
            self.heading_depth = len(self.stack) + 1
        elif tag == "table":
            self.table = HtmlTable(heading=self.heading, header=[])
        elif tag == "thead":
            self.in_head = True
        elif tag == "tr":
            self.cells, self.row_attrs = [], values
        elif tag == "dl" and self.table is None:
            # A list of terms reads as a two-column table: term, value.
            self.table = HtmlTable(heading=self.heading, header=["", "value"])
        elif tag == "dt" and self.table is not None:
            self.cells, self.row_attrs = [], values
        self.stack.append((tag, values, []))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        while self.stack:
            top, attrs, parts = self.stack.pop()
            text = squash("".join(parts))
            # The estimand named under a column's header is not part of the column's name.
            note = self.in_head and "estimand" in attrs.get("class", "").split()
            if self.stack and not note:
                inner = "".join(parts)
                siblings = self.stack[-1][2]
                # A number at the edge of an element is read apart from its neighbour's text
                # ("0.39" and a spread "0.18 to 0.58" or "各分半间 …" on its own line): two
                # numbers, or a number and a word, never one run of characters.
                previous = siblings[-1] if siblings else ""
                if (
                    previous
                    and inner
                    and not previous[-1].isspace()
                    and not inner[0].isspace()
                    and (previous[-1].isdigit() or re.match(r"-?\d", inner))
                ):
                    siblings.append(" ")
                siblings.append(inner)
                if top in CELLS:
                    siblings.append(" ")
            if top in HIDDEN:
                self.hidden -= 1
            self._closed(top, attrs, text)
            if top == tag:
                break

    def _closed(self, tag: str, attrs: dict[str, str], text: str) -> None:
        if tag in ("h1", "h2", "h3"):
            self.heading_depth = None
        if tag in ("th", "td", "dt") and self.cells is not None:
            self.cells.append(text.rstrip(" ▲▼"))
        elif tag == "dd" and self.table is not None and self.cells is not None:
            self.cells.append(text)
            self.table.rows.append((self.row_attrs, self.cells))
            self.cells = None
        elif tag == "tr" and self.table is not None and self.cells is not None:
            if self.in_head:
                self.table.header = self.cells
            else:
                self.table.rows.append((self.row_attrs, self.cells))
            self.cells = None
        elif tag == "thead":
            self.in_head = False
        elif tag in ("table", "dl") and self.table is not None:
            self.tables.append(self.table)
            self.table = None
        if attrs.get("class") or any(name.startswith("data-") for name in attrs):
            self.elements.append((tag, attrs, text))

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        if self.heading_depth is not None and len(self.stack) == self.heading_depth:
            self.heading += data
        if self.stack:
            self.stack[-1][2].append(data)


@dataclass
class Html:
    tables: dict[tuple[str, str], HtmlTable]
    elements: list[tuple[str, dict[str, str], str]]

    def table(self, heading: str, first: str) -> HtmlTable | None:
        return self.tables.get((heading, first))

    def element(self, css: str) -> str | None:
        """The text of the one element whose class list holds `css`."""
        found = [
            text for _tag, attrs, text in self.elements if css in attrs.get("class", "").split()
        ]
        return found[0] if len(found) == 1 else None

    def marked(self, name: str) -> dict[str, list[str]]:
        """Texts of the elements carrying `data-<name>`, by its value."""
        out: dict[str, list[str]] = {}
        for _tag, attrs, text in self.elements:
            if f"data-{name}" in attrs:
                out.setdefault(attrs[f"data-{name}"], []).append(text)
        return out


def read_html(html: str) -> Html:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    tables: dict[tuple[str, str], HtmlTable] = {}
    for table in reader.tables:
        key = (squash(table.heading), table.header[0] if table.header else "")
        if key in tables:  # a second table under the same heading: its rows join the first's
            tables[key].rows += table.rows
        else:
            tables[key] = table
    return Html(tables=tables, elements=reader.elements)


def table_numbers(html: Html) -> list[str]:
    """Every number in the tables' cells."""
    return [
        n
        for table in html.tables.values()
        for _a, cells in table.rows
        for c in cells
        for n in numbers(c)
    ]


def pdf_text(path: Path) -> str:
    # Page footers ("3 / 12") are the PDF's own, not figures.
    text = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(path), "-"], check=True, capture_output=True, text=True
    ).stdout
    return "\n".join(
        line for line in text.splitlines() if not re.fullmatch(r"\s*\d+ / \d+\s*", line)
    )


Rows = list[dict[str, Any]]


def csv_rows(text: str) -> Rows:
    return list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))


def zip_tables(path: Path) -> dict[str, Rows]:
    with zipfile.ZipFile(path) as archive:
        return {
            name.removesuffix(".csv"): csv_rows(archive.read(name).decode("utf-8"))
            for name in archive.namelist()
        }


def xlsx_tables(path: Path) -> dict[str, Rows]:
    from openpyxl import load_workbook

    workbook = load_workbook(path, read_only=True)
    out: dict[str, Rows] = {}
    for sheet in workbook.worksheets:
        rows: Iterable[tuple[Any, ...]] = sheet.iter_rows(values_only=True)
        values = list(rows)
        header = [str(name) for name in values[0]] if values else []
        # A row's trailing empty cells may not be stored: they read as empty, not as missing.
        out[sheet.title] = [
            dict(zip(header, (*row, *[None] * (len(header) - len(row))), strict=False))
            for row in values[1:]
        ]
    workbook.close()
    return out
