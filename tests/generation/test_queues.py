"""Queues that don't block each other: with a worker per queue over Redis, a generation run
whose model holds every call for many seconds occupies only the external queue; an export and
an aggregation of another study, asked for while the slow call is in flight, finish before it
returns. The workers are real processes, one per queue as docker-compose runs them, on the
PostgreSQL test database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from apps.analysis.models import StudyResult
from apps.analysis.services import study_results_request
from apps.generation.models import GenerationOutput
from apps.generation.services import generation_run_start
from apps.judgments.services import study_judgments_import
from apps.reports.models import ExportJob
from apps.reports.services import export_job_create
from apps.studies.models import Item, Study
from apps.studies.services import study_create
from config.celery import app
from tests.faults.test_worker_killed import _database_url, _stop
from tests.generation.conftest import FakeProvider
from tests.generation.helpers import make_endpoint, make_set, single
from tests.generation.test_worker import redis_app, wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

__all__ = ["redis_app"]

SLOW_SECONDS = 12.0


def test_every_task_has_a_queue_and_the_slow_ones_go_to_external() -> None:
    app.loader.import_default_modules()  # every app's tasks module, as a worker loads them
    route = app.amqp.router.route
    queues = {name: route({}, name)["queue"].name for name in app.tasks if name.startswith("apps.")}
    assert set(queues.values()) <= {"rater", "research", "external"}
    assert queues["apps.generation.tasks.generation_lane_task"] == "external"
    assert queues["apps.screening.tasks.features.item_features_compute_task"] == "external"
    assert queues["apps.analysis.tasks.study_aggregate_task"] == "rater"
    assert queues["apps.reports.tasks.export_job_run_task"] == "research"
    assert queues["apps.imports.tasks.import_job_run_task"] == "research"


def _rated_study() -> Study:
    study = study_create(slug="other", rubric_slug="humor", backgrounds=[])
    for i in range(6):
        Item.objects.create(study=study, external_id=f"t{i}", text=f"joke {i}", source="human")
    lines = [
        {
            "kind": "score",
            "rater": f"r{r}",
            "background": "unknown",
            "item": f"t{i}",
            "surprise": 3,
            "coherence": 3,
            "funniness": 1 + (i + r) % 7,
            "offensive": 0,
        }
        for r in range(4)
        for i in range(6)
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    study_judgments_import(study=study, data=data, filename="j.jsonl")
    return study


def _worker(queues: str, broker_url: str, media: Path, log: Path) -> subprocess.Popen[bytes]:
    """A real worker process for these queues, as docker-compose runs one per queue."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="queue-test-worker",
        DEBUG="0",
        DATABASE_URL=_database_url(),
        REDIS_URL=broker_url,
        MEDIA_ROOT=str(media),
        AGGREGATE_DEBOUNCE_SECONDS="0",
        BOOTSTRAP_ROUNDS="50",
        # The model stand-in listens on 127.0.0.1.
        OUTBOUND_ALLOWED_NETWORKS="127.0.0.0/8",
        OMP_NUM_THREADS="1",
    )
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues]
    command += ["--pool=solo", "-n", f"{queues.replace(',', '-')}@%h", "-l", "INFO"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    return subprocess.Popen(
        command,
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def test_a_slow_model_delays_only_its_own_queue(
    postgres_only: None,
    redis_app: Any,
    provider: FakeProvider,
    builtin_rubrics: None,
    settings: Any,
    tmp_path: Path,
) -> None:
    media = tmp_path / "media"
    settings.MEDIA_ROOT = media
    provider.hold_seconds = SLOW_SECONDS
    generating = study_create(slug="slow-gen", rubric_slug="humor")
    # Two prompts and two calls at once allowed: two lane tasks, as many as there are workers.
    # Were the queues shared, both workers would sit in the slow calls and the jobs would wait.
    prompts = make_set(generating, single("p0", "joke number 0"), single("p1", "joke number 1"))
    model = make_endpoint(generating, provider.url, max_concurrency=2, timeout_seconds=60)
    other = _rated_study()
    broker = str(redis_app.conf.broker_url)
    log = tmp_path / "workers.log"
    workers = [
        _worker("external", broker, media, log),
        _worker("rater,research", broker, media, log),
    ]
    try:
        run = generation_run_start(
            study=generating, prompt_set_ids=[prompts.pk], endpoint_ids=[model.pk], explain=False
        )
        wait_for(lambda: provider.in_flight == 1, seconds=90)
        time.sleep(1.0)  # time for a second lane to start, were anyone free to take it
        assert provider.in_flight == 1, log.read_text()[-3000:]  # only the external worker
        asked_at = time.monotonic()
        job = export_job_create(study=other, user=None, fmt="raw")
        study_results_request(study_id=other.pk)
        wait_for(
            lambda: (
                ExportJob.objects.get(pk=job.pk).status == ExportJob.Status.DONE
                and StudyResult.objects.filter(study=other).exists()
            ),
            seconds=SLOW_SECONDS * 3,
        )
        waited = time.monotonic() - asked_at
        # The slow call is still in flight: neither job waited for it.
        still_slow = provider.in_flight == 1
        outputs_done = run.outputs.filter(status=GenerationOutput.Status.DONE).count()
    finally:
        for worker in workers:
            _stop(worker)
    assert ExportJob.objects.get(pk=job.pk).status == ExportJob.Status.DONE, log.read_text()[-3000:]
    assert StudyResult.objects.filter(study=other).exists()
    assert still_slow, f"the jobs took {waited:.1f} s, as long as the slow call"
    assert outputs_done == 0
