"""Server-side SVG charts for the results pages, and the number formats the pages share.

Pure functions: plain values in, an SVG string out (marked safe for templates; every piece of
text inside is escaped here). No JavaScript: the charts print, work without scripts and are read
by screen readers through `role="img"`, an `aria-label` and a `<title>` on the chart and on each
mark. Coordinates live in a fixed viewBox and the page's CSS scales the drawing.

The callers bound the number of rows (the leaderboard passes its top 50 and bottom 10), so the
size of a chart never grows with the study.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

WIDTH = 720
LABEL_WIDTH = 170
VALUE_WIDTH = 170
ROW_HEIGHT = 18
TOP = 36
BOTTOM = 14
INK = "#1f2933"
MUTED = "#6b7280"
ACCENT = "#2f5fd0"
BAND = "#c9d6f5"


# ---------------------------------------------------------------------------------------------
# Number formats: one definition, used by the pages, the charts and the tests.


def fmt(value: float | None, digits: int = 2) -> str:
    """A number as shown on the pages: fixed decimals, "—" when missing, no "-0.00"."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    text = f"{value:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return text


# Below this a p-value prints as "< 0.001": more digits claim a precision the model lacks.
P_FLOOR = 0.001


def fmt_p(value: float | None) -> str:
    """A p-value: three decimals, "< 0.001" below that."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"< {P_FLOOR}" if value < P_FLOOR else fmt(value, 3)


def fmt_p_stated(value: float | None) -> str:
    """ "p = 0.023" or "p < 0.001", for a p-value inside a sentence."""
    text = fmt_p(value)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def fmt_pct(value: float | None, digits: int = 1) -> str:
    """A proportion in [0, 1] as a percentage."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{fmt(100 * value, digits)}%"


def fmt_interval(
    value: float | None,
    low: float | None,
    high: float | None,
    *,
    digits: int = 2,
    pct: bool = False,
) -> str:
    """ "3.50 [3.00, 4.15]" (or "74.4% [64.0%, 83.8%]" with `pct`); the bracket is left out when
    the interval is undefined."""

    def show(x: float | None) -> str:
        return fmt_pct(x, digits) if pct else fmt(x, digits)

    if value is None:
        return "—"
    if low is None or high is None:
        return show(value)
    return f"{show(value)} [{show(low)}, {show(high)}]"


def fmt_ci(interval: Mapping[str, Any] | None, digits: int = 2, *, pct: bool = False) -> str:
    """A stored interval {"value", "ci_low", "ci_high", "n"} as "value [low, high]"."""
    if not interval:
        return "—"
    return fmt_interval(
        interval.get("value"),
        interval.get("ci_low"),
        interval.get("ci_high"),
        digits=digits,
        pct=pct,
    )


# ---------------------------------------------------------------------------------------------
# Chart data


@dataclass(frozen=True)
class Row:
    """One line of an interval chart: a point (or bar) with an optional interval.

    `value` None draws the label with "no estimate" instead of a mark (a gap marker, or an item
    without a score). `heading` draws a section heading instead of a data row.
    """

    label: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    detail: str = ""
    heading: bool = False


@dataclass(frozen=True)
class Reference:
    """A vertical reference line, e.g. chance (0.5) or a threshold."""

    value: float
    label: str
    dashed: bool = True


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _n(x: float) -> str:
    """A coordinate: short, stable text."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if abs(x) < 1e9 else "0"


def _finite(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _nice_step(span: float, target: int = 5) -> float:
    raw = span / max(1, target)
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    step = _nice_step(hi - lo, target)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    k = 0
    while start + k * step <= hi + 1e-9 and k < 50:
        ticks.append(round(start + k * step, 10))
        k += 1
    return ticks


def _tick_text(tick: float, percent: bool) -> str:
    if percent:
        return f"{100 * tick:g}%"
    return f"{tick:g}"


def _domain(rows: Sequence[Row], references: Sequence[Reference]) -> tuple[float, float]:
    values = _finite([v for r in rows if not r.heading for v in (r.value, r.low, r.high)])
    values += [ref.value for ref in references]
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    pad = 0.04 * (hi - lo)
    return lo - pad, hi + pad


def _svg_open(width: float, height: float, label: str, css: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css}" viewBox="0 0 {_n(width)} {_n(height)}" '
        f'width="{_n(width)}" height="{_n(height)}" role="img" aria-label="{_e(label)}" '
        f'font-family="system-ui, sans-serif" font-size="11">'
        f"<title>{_e(label)}</title>"
    )


def _empty(label: str, message: str) -> SafeString:
    height = 40
    return mark_safe(
        _svg_open(WIDTH, height, label, "empty")
        + f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" fill="{MUTED}">{_e(message)}</text></svg>'
    )


def interval_chart(
    rows: Sequence[Row],
    *,
    label: str,
    axis_label: str = "",
    domain: tuple[float, float] | None = None,
    references: Sequence[Reference] = (),
    bars: bool = False,
    percent: bool = False,
    digits: int = 2,
    empty_message: str | None = None,
) -> SafeString:
    """Horizontal rows, top to bottom as given: a dot (or a bar from 0) per row with its
    interval as a whisker, reference lines across, and the value written at the right.

    x = x0 + (v - lo) / (hi - lo) * (x1 - x0): positions are proportional to the values over the
    domain (given, or spanning every value, bound and reference line).
    """
    if not rows:
        return _empty(label, empty_message or _("No data yet."))
    lo, hi = domain if domain is not None else _domain(rows, references)
    x0, x1 = float(LABEL_WIDTH), float(WIDTH - VALUE_WIDTH)
    height = TOP + ROW_HEIGHT * len(rows) + BOTTOM

    def x(v: float) -> float:
        v = min(max(v, lo), hi)
        return x0 + (v - lo) / (hi - lo) * (x1 - x0)

    def show(v: float | None) -> str:
        return fmt_pct(v, max(0, digits - 1)) if percent else fmt(v, digits)

    parts = [_svg_open(WIDTH, height, label, "interval-chart")]
    plot_bottom = TOP + ROW_HEIGHT * len(rows)
    # Axis ticks along the top, faint grid lines down.
    for tick in _ticks(lo, hi):
        tx = x(tick)
        parts.append(
            f'<line class="grid" x1="{_n(tx)}" y1="{TOP - 4}" x2="{_n(tx)}" y2="{_n(plot_bottom)}" stroke="#e5e7eb"/>'
            f'<text class="tick" x="{_n(tx)}" y="{TOP - 8}" text-anchor="middle" fill="{MUTED}">{_e(_tick_text(tick, percent))}</text>'
        )
    if axis_label:
        parts.append(
            f'<text class="axis-label" x="{_n(x0)}" y="11" fill="{MUTED}">{_e(axis_label)}</text>'
        )
    baseline = 0.0 if lo <= 0 <= hi else lo
    for i, row in enumerate(rows):
        y = TOP + ROW_HEIGHT * i
        mid = y + ROW_HEIGHT / 2
        if row.heading:
            parts.append(
                f'<text class="heading" x="4" y="{_n(mid + 4)}" font-weight="600" fill="{INK}">{_e(row.label)}</text>'
            )
            continue
        short = row.label if len(row.label) <= 26 else row.label[:25] + "…"
        tooltip = row.label + (f" — {row.detail}" if row.detail else "")
        parts.append(f'<g class="row"><title>{_e(tooltip)}</title>')
        parts.append(
            f'<text class="label" x="{LABEL_WIDTH - 6}" y="{_n(mid + 4)}" text-anchor="end" fill="{INK}">{_e(short)}</text>'
        )
        if row.value is None or not math.isfinite(row.value):
            parts.append(
                f'<text class="none" x="{_n(x0 + 4)}" y="{_n(mid + 4)}" fill="{MUTED}">{_e(row.detail or "—")}</text></g>'
            )
            continue
        vx = x(row.value)
        if bars:
            bx = x(baseline)
            parts.append(
                f'<rect class="bar" x="{_n(min(bx, vx))}" y="{_n(y + 3)}" width="{_n(abs(vx - bx))}" '
                f'height="{ROW_HEIGHT - 6}" fill="{BAND}"/>'
            )
        if (
            row.low is not None
            and row.high is not None
            and math.isfinite(row.low)
            and math.isfinite(row.high)
        ):
            lx, hx = x(row.low), x(row.high)
            parts.append(
                f'<line class="ci" x1="{_n(lx)}" y1="{_n(mid)}" x2="{_n(hx)}" y2="{_n(mid)}" stroke="{INK}" stroke-width="1.2"/>'
                f'<line class="ci-cap" x1="{_n(lx)}" y1="{_n(mid - 4)}" x2="{_n(lx)}" y2="{_n(mid + 4)}" stroke="{INK}"/>'
                f'<line class="ci-cap" x1="{_n(hx)}" y1="{_n(mid - 4)}" x2="{_n(hx)}" y2="{_n(mid + 4)}" stroke="{INK}"/>'
            )
        parts.append(f'<circle class="dot" cx="{_n(vx)}" cy="{_n(mid)}" r="3.5" fill="{ACCENT}"/>')
        text = show(row.value)
        if row.low is not None and row.high is not None:
            text += f" [{show(row.low)}, {show(row.high)}]"
        parts.append(
            f'<text class="value" x="{_n(x1 + 8)}" y="{_n(mid + 4)}" fill="{INK}">{_e(text)}</text></g>'
        )
    for ref in references:
        rx = x(ref.value)
        dash = ' stroke-dasharray="4 3"' if ref.dashed else ""
        parts.append(
            f'<g class="ref"><title>{_e(ref.label)}</title>'
            f'<line x1="{_n(rx)}" y1="{TOP - 2}" x2="{_n(rx)}" y2="{_n(plot_bottom)}" stroke="#b42318"{dash}/>'
            f'<text x="{_n(rx)}" y="{_n(plot_bottom + 11)}" text-anchor="middle" fill="#b42318">{_e(ref.label)}</text></g>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))


def leaderboard_chart(
    rows: Sequence[Row], *, label: str, empty_message: str | None = None
) -> SafeString:
    """Bradley-Terry scores (log-strengths, centred at 0) with their intervals; 0 marked."""
    return interval_chart(
        rows,
        label=label,
        axis_label=_("Bradley-Terry score (log-strength)"),
        references=[Reference(0.0, "0", dashed=False)],
        empty_message=empty_message,
    )


def proportion_chart(
    rows: Sequence[Row],
    *,
    label: str,
    references: Sequence[Reference] = (Reference(0.5, "50%"),),
    axis_label: str = "",
    empty_message: str | None = None,
) -> SafeString:
    """Proportions as bars from 0 on a fixed 0-100% axis with interval whiskers and references."""
    return interval_chart(
        rows,
        label=label,
        axis_label=axis_label,
        domain=(0.0, 1.0),
        references=references,
        bars=True,
        percent=True,
        digits=2,
        empty_message=empty_message,
    )


def turing_chart(
    rows: Sequence[Row], *, label: str, empty_message: str | None = None
) -> SafeString:
    """Turing accuracy: chance at 50% (the machine passes) and 70% (still reads as machine-made)."""
    return proportion_chart(
        rows,
        label=label,
        references=(Reference(0.5, "50%"), Reference(0.7, "70%")),
        empty_message=empty_message,
    )


def fatigue_chart(
    bins: Sequence[Mapping[str, Any]],
    *,
    label: str,
    x_label: str | None = None,
    y_label: str | None = None,
    empty_message: str | None = None,
) -> SafeString:
    """Mean score per time bin as a line, its interval as a shaded band, a dot per bin.

    A bin without an interval breaks the band (no band is drawn through it).
    """
    points = [b for b in bins if b.get("mean") is not None]
    if not points:
        return _empty(label, empty_message or _("No data yet."))
    height = 260
    left, right, top, bottom = 48.0, 16.0, 16.0, 36.0
    x0, x1 = left, WIDTH - right
    y0, y1 = height - bottom, top  # y grows downwards: y0 is the bottom of the plot
    x_lo = min(float(b.get("start", 0.0)) for b in points)
    x_hi = max(float(b.get("end", b.get("start", 0.0) + 1)) for b in points)
    if x_hi - x_lo < 1e-9:
        x_hi = x_lo + 1
    ys = _finite([v for b in points for v in (b.get("mean"), b.get("ci_low"), b.get("ci_high"))])
    y_lo, y_hi = min(ys), max(ys)
    if y_hi - y_lo < 1e-9:
        y_lo, y_hi = y_lo - 1, y_hi + 1
    pad = 0.05 * (y_hi - y_lo)
    y_lo, y_hi = y_lo - pad, y_hi + pad

    def px(v: float) -> float:
        return x0 + (v - x_lo) / (x_hi - x_lo) * (x1 - x0)

    def py(v: float) -> float:
        return y0 - (v - y_lo) / (y_hi - y_lo) * (y0 - y1)

    def mid(b: Mapping[str, Any]) -> float:
        return (float(b["start"]) + float(b.get("end", b["start"]))) / 2

    x_label = _("minutes into the session") if x_label is None else x_label
    y_label = _("mean score") if y_label is None else y_label
    parts = [_svg_open(WIDTH, height, label, "line-chart")]
    for tick in _ticks(y_lo, y_hi):
        ty = py(tick)
        parts.append(
            f'<line class="grid" x1="{_n(x0)}" y1="{_n(ty)}" x2="{_n(x1)}" y2="{_n(ty)}" stroke="#e5e7eb"/>'
            f'<text class="tick" x="{_n(x0 - 6)}" y="{_n(ty + 4)}" text-anchor="end" fill="{MUTED}">{_e(fmt(tick, 1))}</text>'
        )
    for tick in _ticks(x_lo, x_hi, 10):
        tx = px(tick)
        parts.append(
            f'<text class="tick" x="{_n(tx)}" y="{_n(y0 + 14)}" text-anchor="middle" fill="{MUTED}">{_e(fmt(tick, 0))}</text>'
        )
    parts.append(
        f'<text class="axis-label" x="{_n((x0 + x1) / 2)}" y="{_n(height - 4)}" text-anchor="middle" fill="{MUTED}">{_e(x_label)}</text>'
        f'<text class="axis-label" x="4" y="{_n(top - 4)}" fill="{MUTED}">{_e(y_label)}</text>'
    )
    # The band, one polygon per run of consecutive bins that all have an interval.
    runs: list[list[Mapping[str, Any]]] = [[]]
    for b in points:
        if b.get("ci_low") is None or b.get("ci_high") is None:
            runs.append([])
        else:
            runs[-1].append(b)
    for run in runs:
        if len(run) < 2:
            continue
        upper = [f"{_n(px(mid(b)))},{_n(py(float(b['ci_high'])))}" for b in run]
        lower = [f"{_n(px(mid(b)))},{_n(py(float(b['ci_low'])))}" for b in reversed(run)]
        parts.append(
            f'<polygon class="band" points="{" ".join(upper + lower)}" fill="{BAND}" opacity="0.7"/>'
        )
    line = " ".join(f"{_n(px(mid(b)))},{_n(py(float(b['mean'])))}" for b in points)
    parts.append(
        f'<polyline class="line" points="{line}" fill="none" stroke="{ACCENT}" stroke-width="2"/>'
    )
    for b in points:
        tip = _("%(start)s–%(end)s min: %(interval)s, n = %(n)s") % {
            "start": fmt(b.get("start"), 0),
            "end": fmt(b.get("end"), 0),
            "interval": fmt_interval(b.get("mean"), b.get("ci_low"), b.get("ci_high")),
            "n": b.get("n", ""),
        }
        parts.append(
            f'<circle class="dot" cx="{_n(px(mid(b)))}" cy="{_n(py(float(b["mean"])))}" r="3" fill="{ACCENT}">'
            f"<title>{_e(tip)}</title></circle>"
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))


__all__ = [
    "Reference",
    "Row",
    "fatigue_chart",
    "fmt",
    "fmt_ci",
    "fmt_interval",
    "fmt_pct",
    "interval_chart",
    "leaderboard_chart",
    "proportion_chart",
    "turing_chart",
]
