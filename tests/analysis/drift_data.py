"""A humor study whose sessions drift: imported scorecards with their seconds into the session,
funniness falling by a known amount a minute within every rater's session."""

from __future__ import annotations

import json

import numpy as np

from apps.judgments.services import study_judgments_import
from apps.studies.models import Item, Study
from apps.studies.services import study_create

# Points of funniness a minute, within every session.
PLANTED_PER_MINUTE = -0.1


def drifting_study(slug: str = "drifting", *, raters: int = 40, items: int = 20) -> Study:
    """Each rater scores every item in their own random order, a card every 50-90 seconds."""
    study = study_create(slug=slug, rubric_slug="humor", name="Drifting sessions")
    for i in range(items):
        Item.objects.create(study=study, external_id=f"joke-{i}", text=f"joke {i}", source="m")
    rng = np.random.default_rng(7)
    rows = []
    for r in range(raters):
        level = rng.normal(0.0, 0.7)
        seconds = np.cumsum(rng.uniform(50, 90, size=items))
        for i, at in zip(rng.permutation(items), seconds, strict=True):
            funny = 4.5 + level + PLANTED_PER_MINUTE * at / 60 + rng.normal(0.0, 0.8)
            rows.append(
                {
                    "kind": "score",
                    "rater": f"r{r}",
                    "background": "technical",
                    "item": f"joke-{i}",
                    "seconds_into_session": round(float(at), 1),
                    "surprise": 3,
                    "coherence": 3,
                    "funniness": int(np.clip(round(funny), 1, 7)),
                    "offensive": 0,
                }
            )
    data = "\n".join(json.dumps(row) for row in rows).encode()
    study_judgments_import(study=study, data=data, filename="drifting.jsonl")
    return study
