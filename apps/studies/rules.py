"""The rules a study's settings obey together, checked in one place for every way they change:
the set-up page and the API (through the services) and the admin (through Study.clean).

Every numeric setting must be a finite number in its range: NaN slips past comparisons, and
1e308 shares pass one by one but add up to infinity, which made every rater's task page fail.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

if TYPE_CHECKING:
    from apps.studies.models import Study

TASK_KINDS = ("scorecard", "pair", "turing")
# A share is a relative weight; the largest one a study needs is far below this.
MAX_TASK_SHARE = 1000.0
# Enrolment quota per background group (None = no limit).
MAX_QUOTA = 1_000_000

# (low, high, what) of every numeric setting.
RANGES: dict[str, tuple[float, float, str]] = {
    "session_minutes": (1, 240, "session length in minutes"),
    "tasks_per_session": (1, 500, "tasks per session"),
    "target_scorecards_per_item": (0, 10_000, "the target scorecards per item"),
    "pair_appearances_per_item": (1, 10_000, "the pair appearances per item"),
    "pair_min_opponents": (1, 10_000, "the minimum opponents per item"),
    "turing_judgments_per_item": (0, 10_000, "the Turing judgments per item"),
    "attention_check_rate": (0, 0.5, "the attention-check rate"),
    "min_items_per_model": (1, 10_000, "the minimum items per model"),
    "min_raters_per_item": (1, 10_000, "the minimum raters per item"),
    "screening_top_k": (1, 1000, "candidates kept per model"),
    "exclusion_max_attention_failures": (0, 100, "attention failures allowed"),
    "exclusion_speeder_seconds": (0, 600, "the speeder threshold in seconds"),
    "exclusion_straight_line_tasks": (2, 1000, "the straight-line run"),
    "exclusion_position_min_pairs": (2, 1000, "the pairs needed for the position rule"),
}


# (low, high, what) of settings that must lie strictly between their bounds.
OPEN_RANGES: dict[str, tuple[float, float, str]] = {
    "culture_fdr": (0, 1, gettext_noop("the culture test's false-discovery rate q")),
}


# Prolific bonus rules: an amount in the study's Prolific currency, to the cent.
BONUS_SETTINGS: dict[str, str] = {
    "prolific_bonus_per_attention_pass": gettext_noop("the bonus per passed attention check"),
    "prolific_bonus_on_completion": gettext_noop("the bonus for a completed session"),
}
MAX_BONUS = Decimal("100")


def bonus_problem(name: str, value: Any) -> str | None:
    """An amount from 0 to 100 with at most two decimals, else the problem."""
    amount: Decimal | None = None
    if isinstance(value, Decimal | int | float | str) and not isinstance(value, bool):
        try:
            amount = Decimal(str(value))
        except InvalidOperation:
            amount = None
    if (
        amount is None
        or not amount.is_finite()
        or not 0 <= amount <= MAX_BONUS
        or amount != amount.quantize(Decimal("0.01"))
    ):
        return _("%(what)s must be an amount from 0 to %(high)s with at most two decimals") % {
            "what": _(BONUS_SETTINGS[name]),
            "high": f"{MAX_BONUS:g}",
        }
    return None


def _real(value: Any) -> float | None:
    """The value as a finite float, or None when it is not a finite real number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def number_problem(name: str, value: Any) -> str | None:
    low, high, what = RANGES[name]
    number = _real(value)
    if number is None or not low <= number <= high:
        return _("%(what)s must be a number from %(low)s to %(high)s") % {
            "what": what,
            "low": f"{low:g}",
            "high": f"{high:g}",
        }
    return None


def open_number_problem(name: str, value: Any) -> str | None:
    low, high, what = OPEN_RANGES[name]
    number = _real(value)
    if number is None or not low < number < high:
        return _("%(what)s must be a number greater than %(low)s and less than %(high)s") % {
            "what": _(what),
            "low": f"{low:g}",
            "high": f"{high:g}",
        }
    return None


def task_mix_problem(task_mix: Any) -> str | None:
    if not isinstance(task_mix, dict) or set(task_mix) - set(TASK_KINDS):
        return _("task_mix takes scorecard, pair and turing shares")
    shares = [_real(share) for share in task_mix.values()]
    if any(share is None or not 0 <= share <= MAX_TASK_SHARE for share in shares):
        return _("task_mix shares must be numbers from 0 to %(max)s") % {
            "max": f"{MAX_TASK_SHARE:g}"
        }
    if sum(share or 0.0 for share in shares) <= 0:
        return _("task_mix shares must not all be zero")
    return None


def quotas_problem(quotas: dict[str, Any]) -> tuple[str, str] | None:
    """(field, message) for the first bad quota; all groups closed at 0 is refused too."""
    for code, quota in quotas.items():
        if quota is None:
            continue
        if isinstance(quota, bool) or not isinstance(quota, int) or not 0 <= quota <= MAX_QUOTA:
            return f"quota_{code}", _(
                "%(code)s: a quota must be a whole number from 0 to %(max)s"
            ) % {
                "code": code,
                "max": MAX_QUOTA,
            }
    if quotas and all(quota == 0 for quota in quotas.values()):
        return "quotas", _("at least one background group needs a quota above 0")
    return None


def study_settings_problem(study: Study) -> tuple[str, str] | None:
    """(field, message) for the first rule the study's settings break together, else None."""
    for name in RANGES:
        problem = number_problem(name, getattr(study, name))
        if problem:
            return name, problem
    for name in OPEN_RANGES:
        problem = open_number_problem(name, getattr(study, name))
        if problem:
            return name, problem
    for name in BONUS_SETTINGS:
        problem = bonus_problem(name, getattr(study, name))
        if problem:
            return name, problem
    if study.pair_min_opponents > study.pair_appearances_per_item:
        return "pair_min_opponents", _(
            "pairs need at least one opponent and no more opponents than appearances"
        )
    problem = task_mix_problem(study.task_mix)
    if problem:
        return "task_mix", problem
    problem = style_covariates_problem(study.style_covariates)
    if problem:
        return "style_covariates", problem
    return None


MAX_STYLE_COVARIATES = 8


def style_covariates_problem(value: object) -> str | None:
    """A list of at most 8 distinct metadata keys of 1 to 64 characters, else the problem."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        return _("style covariates must be a list of item metadata keys")
    if len(value) > MAX_STYLE_COVARIATES:
        return _("at most %(n)s style covariates") % {"n": MAX_STYLE_COVARIATES}
    for name in value:
        if not 1 <= len(name.strip()) <= 64 or name != name.strip():
            return _("each style covariate is a metadata key of 1 to 64 characters")
    if len(set(value)) != len(value):
        return _("a style covariate is named twice")
    return None
