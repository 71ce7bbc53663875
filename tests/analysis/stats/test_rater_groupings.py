"""The results' rater groupings (background, languages read) share one resample of the raters.

Every grouping of a question's means whose intervals resample raters reads the same draws
(report._group_tables through bootstrap.grouped_mean_ci_many). The raters' languages were once
bootstrapped on their own, which on a crowd set of 75,000 one-grade raters drew 75 million
rater counts more per question.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apps.analysis.stats import bootstrap
from apps.analysis.stats.inputs import StudyInputs
from apps.analysis.stats.report import compute_results
from tests.analysis.stats.golden_inputs import golden_inputs

ROOT = Path(__file__).resolve().parents[3]
LANGUAGES = ("en", "zh", "en+zh", "unstated")


def _with_languages(inputs: StudyInputs) -> StudyInputs:
    return replace(
        inputs, rater_languages=[LANGUAGES[r % 3 if r % 7 else 3] for r in range(inputs.n_raters)]
    )


def _counting_draws(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    drawn: list[int] = []
    real = bootstrap.multiplicities

    def counted(rng: np.random.Generator, n_units: int, r: int) -> np.ndarray:
        drawn.append(n_units * r)
        return real(rng, n_units, r)

    monkeypatch.setattr(bootstrap, "multiplicities", counted)
    return drawn


def test_the_raters_languages_draw_no_raters_of_their_own(monkeypatch: pytest.MonkeyPatch):
    drawn = _counting_draws(monkeypatch)
    compute_results(golden_inputs(), seed=7, rounds=40)
    without = sum(drawn)
    drawn.clear()
    result = compute_results(_with_languages(golden_inputs()), seed=7, rounds=40)
    assert set(result["groups"]["rater_language"]) == set(LANGUAGES)
    assert sum(drawn) == without


def _other_groupings(groups: dict[str, Any]) -> dict[str, Any]:
    return {
        dimension: table for dimension, table in groups.items() if dimension != "rater_language"
    }


def test_the_languages_grouping_changes_no_other_groupings_figures():
    plain = compute_results(golden_inputs(), seed=7, rounds=40)
    with_languages = compute_results(_with_languages(golden_inputs()), seed=7, rounds=40)
    assert "rater_language" not in plain["groups"]
    assert _other_groupings(with_languages["groups"]) == plain["groups"]


def test_each_language_split_holds_its_raters_means_inside_their_interval():
    inputs = _with_languages(golden_inputs())
    table = compute_results(inputs, seed=7, rounds=200)["groups"]["rater_language"]
    language = np.array(inputs.rater_languages)[inputs.score_rater]
    for q, question in enumerate(inputs.questions):
        rows = inputs.score_question == q
        for name in LANGUAGES:
            mine = rows & (language == name)
            cell = table[name]["questions"][question.name]
            assert cell["n"] == int(mine.sum())
            assert cell["value"] == pytest.approx(float(inputs.score_value[mine].mean()), abs=1e-3)
            assert cell["ci_low"] <= cell["value"] <= cell["ci_high"]
    for name in LANGUAGES:
        assert table[name]["n_raters"] == inputs.rater_languages.count(name)


def _runs_clean(code: str) -> None:
    """Run `code` in a fresh Python process with the test settings; it must exit with 0."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, check=False, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_the_aggregation_does_not_import_scipy_stats():
    """scipy.stats takes about half a second to import; the aggregation needs none of it."""
    code = (
        "import sys, django; django.setup(); "
        "import apps.analysis.services, apps.exclusions.services; "
        "from apps.analysis.stats.report import compute_study_document; "
        "from tests.analysis.stats.golden_inputs import golden_inputs; "
        "compute_study_document(golden_inputs(), seed=7, rounds=20); "
        "sys.exit(3 if 'scipy.stats' in sys.modules else 0)"
    )
    _runs_clean(code)


def test_loading_the_aggregation_does_not_import_scipy_optimize():
    """scipy.optimize takes a tenth of a second to import; only the profile-likelihood ends of
    an undefeated item use it, so a process that aggregates a study without one (each
    `manage.py aggregate`) does not pay for it."""
    code = (
        "import sys, django; django.setup(); "
        "import apps.analysis.services, apps.exclusions.services; "
        "from apps.analysis.stats.report import compute_study_document; "
        "sys.exit(3 if 'scipy.optimize' in sys.modules else 0)"
    )
    _runs_clean(code)
