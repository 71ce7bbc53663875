"""Template helpers for the researcher pages."""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from apps.analysis import labels
from apps.dashboard.selectors import Coverage

register = template.Library()


@register.filter
def label(labels: dict[str, str] | str) -> str:
    """A {"en": ..., "zh": ...} label in the page's language."""
    if isinstance(labels, str):
        return labels
    key = "zh" if (get_language() or "en").lower().startswith("zh") else "en"
    return labels.get(key) or labels.get("en") or next(iter(labels.values()), "")


MAX_HEATMAP_ROWS = 400


def _binned(rows: list[tuple[str, list[int]]]) -> list[tuple[str, list[int]]]:
    """At most MAX_HEATMAP_ROWS rows: neighbouring items (already sorted by coverage) share a
    row that shows the least-covered of them, so a gap is never hidden by averaging."""
    if len(rows) <= MAX_HEATMAP_ROWS:
        return rows
    size = -(-len(rows) // MAX_HEATMAP_ROWS)
    binned = []
    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        label = f"{chunk[0][0]} … {chunk[-1][0]}" if len(chunk) > 1 else chunk[0][0]
        binned.append(
            (label, [min(column) for column in zip(*(counts for _, counts in chunk), strict=True)])
        )
    return binned


@register.simple_tag
def coverage_heatmap(coverage: Coverage, cell_height: int = 3) -> SafeString:
    """Items x groups as an SVG heat map; shade = share of the group's part of the target."""
    groups, rows = coverage.groups, coverage.rows
    if not rows or not groups:
        return mark_safe("<p class='muted'>—</p>")
    cell_width, label_height = 90, 0
    height = label_height + cell_height * len(rows)
    width = cell_width * len(groups)
    aria_label = escape(_("coverage heat map"))
    names = [labels.background_label(code) for code in groups]
    # The column names are HTML above the map, one fixed-width cell per group that wraps its
    # words, so long names never run into each other (SVG text does not wrap). Their width,
    # `cell_width`, is in dashboard.css: the pages' policy forbids inline styles.
    parts = [
        '<div class="heatmap-wrap"><div class="heatmap-labels">'
        + "".join(
            f'<span data-group="{escape(code)}">{escape(name)}</span>'
            for code, name in zip(groups, names, strict=True)
        )
        + "</div>",
        f'<svg class="heatmap" viewBox="0 0 {width} {height}" width="{width}" height="{min(height, 600)}" '
        f'preserveAspectRatio="none" role="img" aria-label="{aria_label}">',
    ]
    target = max(1, coverage.per_group_target)
    for r, (label_text, counts) in enumerate(_binned(rows)):
        y = label_height + r * cell_height
        for g, count in enumerate(counts):
            share = min(1.0, count / target)
            # Light to dark blue; an empty cell stays near-white so gaps stand out.
            lightness = 96 - int(share * 60)
            parts.append(
                f'<rect x="{g * cell_width}" y="{y}" width="{cell_width - 1}" height="{cell_height}" '
                f'fill="hsl(222,60%,{lightness}%)"><title>{escape(label_text)} · {escape(names[g])}: {count}</title></rect>'
            )
    parts.append("</svg></div>")
    return mark_safe("".join(parts))
