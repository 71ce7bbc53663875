"""L1 / L2 / L3 against the humans for a humor study, and loading recorded judge verdicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from apps.core.errors import DomainError
from apps.screening.models import JudgeVerdict, ScreeningTiers
from apps.screening.selectors import human_means
from apps.screening.services.judge import judge_verdicts_load
from apps.screening.services.tiers import screening_tiers_compute
from apps.studies.models import Item
from tests.screening.test_runs import features_for

pytestmark = pytest.mark.django_db

VERDICTS = Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "judge_verdicts.jsonl"
MODEL = "simulated-judge (demo)"


def test_the_tiers_compare_funnyscore_the_judge_and_the_raters_with_the_humans(demo_study):
    rng = np.random.default_rng(4)
    means = human_means(study=demo_study)
    for item in Item.objects.filter(pk__in=list(means)):
        # A FunnyScore that follows the humans loosely, with a measured compute time.
        f = features_for(item, means[item.pk][0] + float(rng.normal(0, 1.0)), 0.0, 0.0)
        f.compute_seconds = 0.02
        f.save(update_fields=["compute_seconds"])
    lines = [line for line in VERDICTS.read_bytes().splitlines() if b'"j' in line[:12]]
    assert judge_verdicts_load(study=demo_study, data=b"\n".join(lines), seed=1, rounds=200) == len(
        lines
    )
    stored = ScreeningTiers.objects.get(study=demo_study)  # refreshed by the judge comparison
    rows = {row["tier"]: row for row in stored.payload["tiers"]}
    assert set(rows) == {"L1", "L2", "L3"}
    # The screening tests run without the prior: the documented defaults score.
    assert rows["L1"]["label"] == "L1 (defaults)"
    assert rows["L2"]["label"] == f"LLM judge ({MODEL})"

    ids = sorted(means)
    human = [means[pk][0] for pk in ids]
    judge = dict(
        JudgeVerdict.objects.filter(item_id__in=ids).values_list("item_id", "scores__funniness")
    )
    expected = stats.spearmanr([judge[pk] for pk in ids], human).statistic
    assert rows["L2"]["agreement"]["value"] == pytest.approx(expected, rel=1e-9)
    assert rows["L2"]["agreement"]["ci_low"] < expected < rows["L2"]["agreement"]["ci_high"]
    assert rows["L1"]["agreement"]["value"] > 0.3
    assert rows["L1"]["items_per_second"] == pytest.approx(50.0)
    assert rows["L1"]["human_minutes"] == 0.0
    assert rows["L3"]["agreement"]["value"] is not None
    assert stored.seed == demo_study.random_seed
    again = screening_tiers_compute(study=demo_study, rounds=200)
    assert again.payload == screening_tiers_compute(study=demo_study, rounds=200).payload


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "line 2: not a JSON object"),
        (b'{"item": "nope", "model": "m", "scores": {"funniness": 3}}', "line 2: no item 'nope'"),
        (b'{"item": "j001", "model": "", "scores": {"funniness": 3}}', "line 2: model is missing"),
        (b'{"item": "j001", "model": "m", "scores": {"funniness": 3.5}}', "line 2: scores"),
    ],
)
def test_a_bad_verdict_line_is_named_and_nothing_is_stored(demo_study, line, message):
    good = b'{"item": "j002", "model": "m", "scores": {"funniness": 3}}'
    with pytest.raises(DomainError, match=message):
        judge_verdicts_load(study=demo_study, data=good + b"\n" + line, seed=1, rounds=50)
    assert not JudgeVerdict.objects.exists()
