"""What a question accepts, as one rule for the rater's submit, the early answer, imports and the
API: integer points for likert, binary and choice questions; min + k·step for a slider.

A slider's answers are stored as float64 without rounding: a grid of binary fractions (Jester's
1/32) is exact, and a decimal step (0.01) keeps the value the rater or the file gave, checked to
lie on the grid within a relative tolerance far below any step a person can set.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext_noop

from apps.core.sentences import Sentence

# Points of one slider at most: −10..10 by 1/32 is 641; 0..100 by 0.001 is 100,001.
MAX_SLIDER_POINTS = 1_000_000
# How far from a grid point a value may lie, in steps: floating-point noise, never a real offset.
GRID_TOLERANCE = 1e-6


def parse_step(value: Any) -> float | None:
    """A step as a spec gives it: a positive number, or a fraction as text ("1/32"); None when
    it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(Fraction(value.strip()))
        except (ValueError, ZeroDivisionError):
            return None
    else:
        return None
    return number if math.isfinite(number) and number > 0 else None


def step_text(step: float) -> str:
    """A step as people write it: "1/32" for a binary fraction, "0.01", "1"."""
    fraction = Fraction(step).limit_denominator(1 << 20)
    if fraction.numerator == 1 and fraction.denominator > 1 and float(fraction) == step:
        denominator = fraction.denominator
        if denominator & (denominator - 1) == 0:
            return f"1/{denominator}"
    return f"{step:g}"


def grid_points(low: float, high: float, step: float) -> float:
    """How many steps span the scale (an integer when the step divides it)."""
    return (high - low) / step


def off_grid(value: float, low: float, step: float) -> bool:
    steps = (value - low) / step
    return abs(steps - round(steps)) > GRID_TOLERANCE


def _bounds(low: float, high: float, **more: str) -> dict[str, str]:
    """A message's parameters: the scale's ends as a page shows them, and `more`. Built only
    for a value that is refused."""
    return {"low": f"{low:g}", "high": f"{high:g}", **more}


def problem_sentence(
    *, kind: str, low: float, high: float, step: float | None, value: float
) -> Sentence | None:
    """Why `value` is not an answer to this question, as a sentence a page shows in its reader's
    language (None when it is an answer)."""
    if not math.isfinite(value):
        return Sentence(
            gettext_noop("must be a finite number, got %(value)s"), {"value": repr(value)}
        )
    if kind == "slider" and step is not None:
        if not low <= value <= high:
            return Sentence(
                gettext_noop("must be from %(low)s to %(high)s, got %(value)s"),
                _bounds(low, high, value=f"{value:g}"),
            )
        if off_grid(value, low, step):
            return Sentence(
                gettext_noop(
                    "must lie on the scale's steps of %(step)s from %(low)s to %(high)s, "
                    "got %(value)s"
                ),
                _bounds(low, high, step=step_text(step), value=repr(value)),
            )
        return None
    if not float(value).is_integer():
        return Sentence(
            gettext_noop("must be an integer from %(low)s to %(high)s, got %(value)s"),
            _bounds(low, high, value=repr(value)),
        )
    if not low <= value <= high:
        return Sentence(
            gettext_noop("must be from %(low)s to %(high)s, got %(value)s"),
            _bounds(low, high, value=f"{value:g}"),
        )
    return None


def problem(*, kind: str, low: float, high: float, step: float | None, value: float) -> str:
    """Why `value` is not an answer to this question ("" when it is one), in English (the API's
    text)."""
    found = problem_sentence(kind=kind, low=low, high=high, step=step, value=value)
    return found.english() if found is not None else ""


def plain(value: float | int | None) -> float | int | None:
    """A stored answer as it was given: 3 for an integer point (stored as 3.0), 0.21875 as is."""
    if value is None:
        return None
    number = float(value)
    return int(number) if number.is_integer() else number
