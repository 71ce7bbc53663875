"""How the printable report writes a number: the pages' rounding (apps.findings.charts), an
interval as `estimate [low, high]`, a proportion as a percentage, a dash for a missing value.

The report's sections (writers.py, boards.py) share these, so a figure reads the same in every
table of the report.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from apps.findings import charts

DASH = "—"


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # The pages' rounding (apps/dashboard/charts.py::fmt), so a figure reads the same in the
        # report: fixed decimals, no "-0.00", a dash for a number that is not finite.
        return charts.fmt(value, digits)
    return str(value)


def fmt_interval(stats: Any, digits: int = 2) -> str:
    """`3.50 [2.95, 4.10]`: the estimate and its bootstrap interval.

    The space inside the brackets does not break, so a narrow column wraps the interval as a
    whole under the estimate.
    """
    if not isinstance(stats, dict) or stats.get("value") is None:
        return DASH
    low, high = stats.get("ci_low"), stats.get("ci_high")
    if low is None or high is None:
        return fmt(stats["value"], digits)
    return f"{fmt(stats['value'], digits)} [{fmt(low, digits)},\u00a0{fmt(high, digits)}]"


def fmt_percent(stats: Any) -> str:
    """`65.1% [59.3, 71.1]` for a proportion."""
    if not isinstance(stats, dict) or stats.get("value") is None:
        return DASH
    scaled = {
        key: (None if stats.get(key) is None else 100 * stats[key])
        for key in ("value", "ci_low", "ci_high")
    }
    text = fmt_interval(scaled, 1)
    head, _sep, tail = text.partition(" ")
    return f"{head}%" + (f" {tail}" if tail else "")
