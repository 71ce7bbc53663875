"""Every researcher table is readable: on a 375 px phone and a 1280 px desktop, in English and
in Chinese, on every researcher page of both demo studies, no word in a table cell or header is
broken across lines, no column holding Chinese is narrower than four characters (or its
shortest run of them), a table wider than its box scrolls inside the box with its first column
kept in view, no cell runs on for screens of text, and the page never scrolls sideways.

A column's width is counted in characters of its own font (the cell's content width over the
canvas width of "0", or of "中" for Chinese text), so the failures read as a reader would see
them: "2.1 characters wide for 'informativeness' (15.3)".

Every <details> on the page is measured twice: closed as the page opens, and open, so the full
texts behind a truncated cell and the tables inside disclosures are held to the same rule."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.browser.conftest import log_in_as_researcher
from tests.pages.conftest import SITE_PAGES, researcher_pages

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every problem found, one a line (git-ignored): the assertion shows the first few.
REPORT = Path(__file__).resolve().parents[2] / "test-artifacts" / "table-fit.txt"
SHOTS = REPORT.parent / "screenshots" / "test_table_fit"
MAX_SHOTS = 20
WIDTHS = (1280, 375)
LANGUAGES = ("en", "zh-hans")
# A word longer than this may break after a hyphen or a slash (a path, a long id), never inside.
WHOLE = 20
# A cell taller than this many lines of its own text holds a text to truncate, not to show whole.
MAX_LINES = 8

MEASURE = r"""(opts) => {
  const canvas = document.createElement('canvas');
  const ctx = canvas.getContext('2d');
  const CJK = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]/;
  const CJK_RUN = /[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]+/g;
  const unitCache = new Map();
  const unit = (el, ch) => {
    const s = getComputedStyle(el);
    const font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    const key = font + ch;
    if (!unitCache.has(key)) { ctx.font = font; unitCache.set(key, ctx.measureText(ch).width); }
    return unitCache.get(key);
  };
  const lineCount = (rects) => {
    const tops = rects.filter(r => r.width > 0 && r.height > 0).map(r => r.top).sort((a, b) => a - b);
    let lines = 0, last = -Infinity;
    for (const top of tops) { if (top > last + 2) { lines += 1; last = top; } }
    return lines;
  };
  // Text inside a closed disclosure is not shown (its summary is); the browser still lays it out
  // when asked for its boxes, so it is left out here and measured when the disclosures open.
  const folded = (el) => { const d = el.closest('details:not([open])'); return !!d && !el.closest('summary'); };
  const short = (text, n) => { text = text.replace(/\s+/g, ' ').trim(); return text.length > n ? text.slice(0, n - 1) + '…' : text; };
  const problems = [];
  let worst = null;  // the narrowest column for what it holds: {ratio, text}
  const note = (ratio, text) => { if (!worst || ratio < worst.ratio) worst = {ratio, text}; };
  const scroller = (el) => {
    for (let p = el; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return p;
    }
    return null;
  };
  const tables = [...document.querySelectorAll('main table')];
  tables.forEach((table, index) => {
    if (!table.getClientRects().length) return;  // inside a closed disclosure
    const classes = [...table.classList].filter(c => c !== 'table' && c !== 'compact');
    const name = table.getAttribute('aria-label') || (classes.length ? classes.join('.') : `table ${index + 1}`);
    const headers = [...table.querySelectorAll('thead tr:last-child > th')].map(th => short(th.innerText, 30));
    table.querySelectorAll('tr').forEach((row, r) => {
      [...row.children].forEach((cell, c) => {
        if (!cell.getClientRects().length) return;
        const cs = getComputedStyle(cell);
        const width = cell.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
        const where = `${name}, row ${r + 1}, column ${c + 1}` + (headers[c] && cell.tagName === 'TD' ? ` (${headers[c]})` : '') + `: "${short(cell.innerText, 40)}"`;
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node; (node = walker.nextNode()); ) {
          const parent = node.parentElement;
          if (!parent || !parent.getClientRects().length || folded(parent)) continue;
          const shape = parent.getBoundingClientRect();
          if (shape.width <= 1 || shape.height <= 1) continue;  // read by a screen reader only
          const words = /\S+/g;
          for (let m; (m = words.exec(node.data)); ) {
            const word = m[0];
            const range = document.createRange();
            if (CJK.test(word)) {
              // Chinese may break between characters, but never to fewer than four of them a line.
              for (let run; (run = CJK_RUN.exec(word)); ) {
                if (run[0].length < 2) continue;
                const need = Math.min(4, run[0].length);
                const chars = width / unit(parent, '中');
                note(chars / need, `${where}: ${chars.toFixed(1)} Chinese characters wide for ${need}`);
                if (chars < need - 0.05) {
                  problems.push(`${where}: column ${chars.toFixed(1)} Chinese characters wide, narrower than ${need} ("${short(run[0], 12)}")`);
                }
              }
              continue;
            }
            if (word.length < 2) continue;
            // A word longer than WHOLE characters (a path, a long id) may break after its hyphens
            // and slashes: each part of it is then held to the rule instead.
            const parts = word.length > opts.whole
              ? [...word.matchAll(/[^-\u2010-\u2014\/]*[-\u2010-\u2014\/]*/g)].filter(p => p[0])
              : [Object.assign([word], {index: 0})];
            for (const part of parts) {
              const piece = part[0], start = m.index + part.index;
              if (piece.length < 2) continue;
              range.setStart(node, start);
              range.setEnd(node, start + piece.length);
              const lines = lineCount([...range.getClientRects()]);
              if (!lines) continue;
              const zero = unit(parent, '0');
              const chars = width / zero;
              const box = range.getBoundingClientRect();
              const pieceChars = box.width / zero;
              const right = cell.getBoundingClientRect().right - parseFloat(cs.paddingRight);
              if (lines > 1) {
                note(0, `${where}: "${short(piece, 30)}" broken over ${lines} lines`);
                problems.push(`${where}: "${short(piece, 40)}" broken over ${lines} lines in a column ${chars.toFixed(1)} characters wide`);
              } else {
                note(chars / Math.max(pieceChars, 0.1), `${where}: ${chars.toFixed(1)} characters wide for "${short(piece, 30)}" (${pieceChars.toFixed(1)})`);
                if (box.right > right + 1) {
                  problems.push(`${where}: "${short(piece, 40)}" (${pieceChars.toFixed(1)} characters) runs out of its column, ${chars.toFixed(1)} characters wide`);
                }
              }
            }
          }
        }
        if (opts.tall) {
          // What a box inside the cell clips (a clamped text shows its first lines) is not shown.
          const clip = (el) => {
            let low = -Infinity, high = Infinity;
            for (let p = el; p && p !== cell; p = p.parentElement) {
              if (getComputedStyle(p).overflowY !== 'visible') {
                const r = p.getBoundingClientRect();
                low = Math.max(low, r.top); high = Math.min(high, r.bottom);
              }
            }
            return [low, high];
          };
          let top = Infinity, bottom = -Infinity;
          const texts = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
          for (let node; (node = texts.nextNode()); ) {
            if (!node.data.trim() || !node.parentElement || folded(node.parentElement)) continue;
            const range = document.createRange();
            range.selectNodeContents(node);
            const [low, high] = clip(node.parentElement);
            for (const rect of range.getClientRects()) {
              if (!rect.width || !rect.height || rect.top >= high || rect.bottom <= low) continue;
              top = Math.min(top, Math.max(rect.top, low));
              bottom = Math.max(bottom, Math.min(rect.bottom, high));
            }
          }
          const height = bottom > top ? bottom - top : 0;
          const line = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.5;
          if (height > MAX_LINES_PLACEHOLDER * line + 1) {
            problems.push(`${where}: ${Math.round(height / line)} lines tall; a long text is truncated with a way to read it whole`);
          }
        }
      });
    });
    // A table wider than its box scrolls inside it, and its first column stays in view.
    const box = scroller(table);
    if (!box) {
      const right = table.getBoundingClientRect().right;
      if (right > document.documentElement.clientWidth + 1) problems.push(`${name}: wider than the page and in no scrolling box`);
      return;
    }
    if (box.scrollWidth > box.clientWidth + 1) {
      const first = [...table.querySelectorAll('tbody tr > :first-child')].find(c => c.colSpan === 1);
      const before = box.scrollLeft;
      box.scrollLeft = box.scrollWidth;
      const left = box.getBoundingClientRect().left + box.clientLeft;
      const shown = first ? first.getBoundingClientRect().left : left;
      box.scrollLeft = before;
      if (first && shown < left - 1) {
        problems.push(`${name}: scrolled to its right end, the first column ("${short(first.innerText, 20)}") leaves the box`);
      }
    }
  });
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) problems.push(`the page scrolls sideways: ${doc.scrollWidth} px wide in ${doc.clientWidth} px`);
  return {problems, worst, tables: tables.length, clamps: document.querySelectorAll('main .cell-clamp').length};
}""".replace("MAX_LINES_PLACEHOLDER", str(MAX_LINES))

OPEN_DETAILS = "() => document.querySelectorAll('main details').forEach(d => { d.open = true; })"


@dataclass
class Walk:
    """What the walk found: every problem, the narrowest column for what it holds, counts."""

    problems: list[str] = field(default_factory=list)
    worst: tuple[float, str] | None = None
    pages: int = 0
    tables: int = 0
    shots: int = 0
    clamps: int = 0
    opened: int = 0  # clamped texts opened by the keyboard

    def summary(self) -> str:
        narrowest = self.worst[1] if self.worst else "-"
        return (
            f"{self.pages} pages, {self.tables} tables, {self.clamps} long texts clamped "
            f"({self.opened} opened by the keyboard); narrowest column: {narrowest}"
        )


def _open_by_keyboard(page: Any, label: str, walk: Walk) -> None:
    """A clamped text opens whole from the keyboard, and folds again."""
    button = page.locator("main .cell-more:visible").first
    if not button.count():
        return
    text = page.locator(f"#{button.get_attribute('aria-controls')}")
    shown = text.bounding_box()
    button.focus()
    page.keyboard.press("Enter")
    if button.get_attribute("aria-expanded") != "true":
        walk.problems.append(f"{label} a clamped text does not open by the keyboard")
        return
    opened = text.bounding_box()
    assert shown is not None
    assert opened is not None
    if opened["height"] <= shown["height"]:
        walk.problems.append(f"{label} an opened text shows no more than its first lines")
    page.keyboard.press("Space")
    if button.get_attribute("aria-expanded") != "false":
        walk.problems.append(f"{label} an opened text does not fold again")
    walk.opened += 1


def _measure(page: Any, url: str, label: str, walk: Walk) -> None:
    """The page as it opens, then with every disclosure open; a page with a problem is kept as a
    screenshot (as measured, its disclosures open)."""
    response = page.goto(url)
    assert response is not None
    assert response.status == 200, f"{url}: {response.status}"
    closed = page.evaluate(MEASURE, {"tall": True, "whole": WHOLE})
    walk.clamps += closed["clamps"]
    if closed["clamps"] and walk.opened < 4:
        _open_by_keyboard(page, label, walk)
    page.evaluate(OPEN_DETAILS)
    opened = page.evaluate(MEASURE, {"tall": False, "whole": WHOLE})
    found = list(dict.fromkeys([*closed["problems"], *opened["problems"]]))
    walk.pages += 1
    walk.tables += max(closed["tables"], opened["tables"])
    walk.problems.extend(f"{label} {problem}" for problem in found)
    for narrowest in (closed["worst"], opened["worst"]):
        if narrowest and (walk.worst is None or narrowest["ratio"] < walk.worst[0]):
            walk.worst = (narrowest["ratio"], f"{label} {narrowest['text']}")
    if found and walk.shots < MAX_SHOTS:
        walk.shots += 1
        SHOTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")
        page.screenshot(path=str(SHOTS / f"{walk.shots:02d}-{name}.png"), full_page=True)


# Both studies' researcher pages in two languages at two widths: a few hundred page loads.
@pytest.mark.timeout(900)
def test_every_researcher_table_fits_its_words(demo_site, browser: Browser, live_server) -> None:
    shutil.rmtree(SHOTS, ignore_errors=True)
    walk = Walk()
    urls = [*SITE_PAGES, *(url for study in demo_site.values() for url in researcher_pages(study))]
    for language in LANGUAGES:
        for width in WIDTHS:
            context = browser.new_context(
                base_url=live_server.url,
                viewport={"width": width, "height": 900},
                locale=language,
                extra_http_headers={"Accept-Language": language},
                bypass_csp=True,
            )
            page = context.new_page()
            page.set_default_timeout(15_000)
            log_in_as_researcher(page)
            for url in urls:
                _measure(page, url, f"{url} [{language}, {width} px]", walk)
            context.close()
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join([walk.summary(), *walk.problems]) + "\n", encoding="utf-8")
    print(walk.summary())
    assert walk.pages == len(urls) * len(LANGUAGES) * len(WIDTHS)
    assert walk.tables, "no table was measured"
    shown = "\n".join(walk.problems[:40])
    more = len(walk.problems) - 40
    tail = f"\n... and {more} more in {REPORT}" if more > 0 else ""
    assert not walk.problems, f"{walk.summary()}\n{len(walk.problems)} problems:\n{shown}{tail}"
