"""Shared set-up for the benchmarks: a throwaway database and a synthetic study of any size."""

from __future__ import annotations

import os

# Before numpy is imported: one BLAS thread, as the workers run (see config/celery.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import subprocess
import sys
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def setup_django(postgres: bool) -> None:
    folder = Path(tempfile.mkdtemp(prefix="laughlab-bench-"))
    os.environ.update(
        {
            "DEBUG": "1",
            "LAUGHLAB_VAR_DIR": str(folder),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            # Django's test client, which the page benchmark uses, calls itself "testserver".
            "ALLOWED_HOSTS": "localhost,127.0.0.1,testserver",
            "LOG_LEVEL": "WARNING",
        }
    )
    # The prepared text models stay where `make install` put them, not in the throwaway folder.
    os.environ.setdefault("TEXT_MODEL_DIR", str(ROOT / "var" / "models"))
    if postgres:
        # Its own name per checkout when several run on one machine (BENCH_DB_NAME).
        name = os.environ.get("BENCH_DB_NAME", "laughlab_bench")
        for command in (["dropdb", "--if-exists"], ["createdb"]):
            subprocess.run([*command, "-h", "127.0.0.1", "-U", "postgres", name], check=True)
        os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{name}"
    else:
        os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_study(
    slug: str,
    *,
    n_items: int,
    n_raters: int,
    n_scorecards: int,
    n_pairs: int,
    topic_size: int,
    seed: int,
) -> Any:
    from django.utils import timezone

    from apps.judgments.models import PairJudgment, ScoreAnswer, ScoreResponse
    from apps.raters.models import Rater, RaterSession
    from apps.studies.models import Item, Question
    from apps.studies.services import study_create

    rng = np.random.default_rng(seed)
    study = study_create(slug=slug, rubric_slug="humor", random_seed=seed)
    groups = list(study.background_groups.order_by("position"))
    sources = ["model-a", "model-b", "model-c", "human"]
    strength = rng.normal(0, 1, n_items)
    items = Item.objects.bulk_create(
        [
            Item(
                study=study,
                external_id=f"i{i:05d}",
                text=f"item {i}",
                source=sources[i % 4],
                level=["single", "multi_turn", "scenario"][i % 3],
                humor_type=["pun", "callback", "absurd", "self_deprecating"][(i // 3) % 4],
                topic=f"t{i // topic_size}",
                context=[{"role": "user", "text": "hi"}] if i % 3 == 1 else [],
                scenario="a situation" if i % 3 == 2 else "",
            )
            for i in range(n_items)
        ],
        batch_size=2000,
    )
    raters = Rater.objects.bulk_create(
        [
            Rater(
                study=study,
                external_id=f"r{r:04d}",
                background=groups[r % 4],
                consent_at=timezone.now(),
            )
            for r in range(n_raters)
        ]
    )
    now = timezone.now()
    sessions = RaterSession.objects.bulk_create(
        [
            RaterSession(rater=r, started_at=now, deadline=now + timedelta(minutes=30))
            for r in raters
        ]
    )
    leniency = rng.normal(0, 0.5, n_raters)

    def common(r: int) -> dict[str, Any]:
        return {
            "study": study,
            "rater": raters[r],
            "session": sessions[r],
            "idempotency_key": uuid.uuid4().hex,
            "seconds_into_session": float(rng.uniform(0, 1800)),
        }

    if n_scorecards:
        per_rater = n_scorecards // n_raters
        responses, owners = [], []
        for r in range(n_raters):
            for i in rng.choice(n_items, size=per_rater, replace=False):
                responses.append(ScoreResponse(item=items[i], **common(r)))
                owners.append((r, int(i)))
        responses = ScoreResponse.objects.bulk_create(responses, batch_size=5000)
        questions = list(Question.objects.filter(rubric=study.rubric).order_by("position"))
        answers = []
        for response, (r, i) in zip(responses, owners, strict=True):
            base = strength[i] + leniency[r]
            for q in questions:
                if q.kind == "binary":
                    value = int(rng.random() < 0.03)
                else:
                    mid = (q.min_value + q.max_value) / 2
                    value = int(
                        np.clip(round(mid + base + rng.normal(0, 1)), q.min_value, q.max_value)
                    )
                answers.append(ScoreAnswer(response=response, question=q, value=value))
        ScoreAnswer.objects.bulk_create(answers, batch_size=10000)

    if n_pairs:
        per_rater = n_pairs // n_raters
        n_topics = n_items // topic_size
        pairs = []
        for r in range(n_raters):
            seen: set[tuple[int, int]] = set()
            while len(seen) < per_rater:
                topic = int(rng.integers(n_topics))
                a, b = (topic * topic_size + rng.choice(topic_size, size=2, replace=False)).tolist()
                key = (min(a, b), max(a, b))
                if key in seen:
                    continue
                seen.add(key)
                p_left = 1 / (1 + np.exp(strength[b] - strength[a]))
                winner = a if rng.random() < p_left else b
                pairs.append(
                    PairJudgment(
                        left=items[a],
                        right=items[b],
                        outcome="left" if winner == a else "right",
                        winner=items[winner],
                        **common(r),
                    )
                )
        PairJudgment.objects.bulk_create(pairs, batch_size=5000)
    return study


def make_full_study(slug: str, *, scale: int, seed: int) -> Any:
    """The study of the aggregation, page and task-choice benchmarks: 2,000 items, 600 raters,
    50,000 scorecards (200,000 answers) and 100,000 pair judgments in topics of 20, divided by
    `scale` (10 for --quick)."""
    return make_study(
        slug,
        n_items=2000 // scale,
        n_raters=600 // scale,
        n_scorecards=50_000 // scale,
        n_pairs=100_000 // scale,
        topic_size=20,
        seed=seed,
    )
